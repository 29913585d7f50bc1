"""The compiled-kernel cache (memory and disk), source dumps and the error a failed compile raises.

One cache serves every runtime (CUDA cubins, OpenCL program binaries, Metal libraries, SPIR-V). Keys hash
everything that can change the compiled bytes: a schema version (bumped when the layout or the meaning of a
key changes), kernelkit's version, the source, the compiler options, the compiler's version and the target
architecture. A stale entry can therefore never be picked up after an upgrade; it is just never asked for
again.

Each disk entry carries a header with its payload's length and SHA-256. A truncated, empty or garbage file
(a full disk, a killed writer on a file system without atomic rename, a user's editor) is therefore never
handed to a driver, where a bad binary can crash the process (PoCL asserts on a truncated ``.clbin``): it is
deleted and the kernel is rebuilt.

Environment variables:

``KERNELKIT_CACHE_DIR``
    Directory of the on-disk cache (default ``$XDG_CACHE_HOME/kernelkit`` or ``~/.cache/kernelkit``); an empty
    value, ``off`` or ``0`` disables the disk cache (the in-memory cache stays).
``KERNELKIT_DUMP_SOURCE``
    ``1`` writes every source compiled to ``<cache dir>/source/``; any other value but ``0`` and empty is
    taken as the directory to write them to. Sources of failed compiles are always written (to ``failed/``).

Earlier builds read these as ``SPECUX_CACHE_DIR`` and ``SPECUX_DUMP_SOURCE`` (:data:`RENAMED`). Those names
are no longer read, and one still set is not silently ignored: :func:`check_renamed` raises
:class:`RenamedVariableError` naming it and its new name, unless it asks for what the new variable already
gives (the same value, or for ``SPECUX_DUMP_SOURCE`` the default: blank or ``0``). The getters below do not
raise, so a device probe that compiles through the cache never records it as a device failure; the runtimes'
entry points and the libraries' backend choice call :func:`check_renamed`.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: bump when the layout of the cache or the meaning of a key changes
SCHEMA_VERSION = 2

CACHE_DIR_ENV = "KERNELKIT_CACHE_DIR"
DUMP_SOURCE_ENV = "KERNELKIT_DUMP_SOURCE"

#: disk entry: magic, payload length (uint64 little-endian), SHA-256 of the payload, payload
_MAGIC = b"KKBIN\x00\x01\x00"
_HEADER = struct.Struct("<8sQ32s")


def package_version() -> str:
    try:
        from importlib.metadata import version

        return version("kernelkit")
    except Exception:  # running from a source tree that is not installed
        return "0+unknown"


class KernelCompileError(RuntimeError):
    """A kernel failed to compile: ``log`` is the compiler's output, ``source_path`` the dumped source."""

    def __init__(self, target: str, name: str, log: str, source_path: Path | None):
        self.target = target
        self.kernel = name
        self.log = log
        self.source_path = source_path
        where = f"; source written to {source_path}" if source_path else ""
        super().__init__(f"{target} compile of {name!r} failed{where}\n{log}")


class RenamedVariableError(RuntimeError):
    """An environment variable of an earlier build is still set, with a value the variable that replaced it
    does not give: it would be silently ignored. ``problems`` holds one sentence per such variable, each
    naming the old and the new name and what to do."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


_UNSET = object()


def _cache_dir_meaning(value: str | None) -> object:
    if value is None:
        return _UNSET
    return "off" if value.strip().lower() in ("", "off", "0") else value.strip()


def _dump_source_meaning(value: str | None) -> object:
    return None if value is None or value.strip() in ("", "0") else value.strip()


@dataclass(frozen=True)
class RenamedVariable:
    """``old``, the name an earlier build read, is now ``new``; ``meaning`` maps a value (None: unset) to
    what it asks for, so that two spellings of one setting (``off`` and ``0``) agree."""

    old: str
    new: str
    meaning: Callable[[str | None], object]

    def problem(self) -> str | None:
        """Why ``old`` cannot be left as it is, or None (unset, or asking for what ``new`` gives)."""
        value = os.environ.get(self.old)
        if value is None:
            return None
        current = os.environ.get(self.new)
        if self.meaning(value) == self.meaning(current):
            return None
        setting = f"{self.old}={value!r}"
        if current is None:
            return (
                f"{setting} is set, but {self.old} is no longer read (it was renamed {self.new}): set "
                f"{self.new}={value!r} instead, and unset {self.old}"
            )
        return (
            f"{setting} and {self.new}={current!r} disagree: {self.old} is no longer read (it was renamed "
            f"{self.new}), {self.new} alone is; unset {self.old} (or set it to the same value)"
        )


#: the cache's variables under the names of earlier builds (specux's), now kernelkit's
RENAMED: tuple[RenamedVariable, ...] = (
    RenamedVariable("SPECUX_CACHE_DIR", CACHE_DIR_ENV, _cache_dir_meaning),
    RenamedVariable("SPECUX_DUMP_SOURCE", DUMP_SOURCE_ENV, _dump_source_meaning),
)


def renamed_problems(renamed: Iterable[RenamedVariable] = RENAMED) -> list[str]:
    """One sentence per variable of ``renamed`` still set to something its new name does not give (read at
    every call; empty when there is nothing to say)."""
    return [problem for variable in renamed if (problem := variable.problem()) is not None]


def check_renamed(renamed: Iterable[RenamedVariable] = RENAMED) -> None:
    """Raise :class:`RenamedVariableError` when :func:`renamed_problems` has anything to say."""
    problems = renamed_problems(renamed)
    if problems:
        raise RenamedVariableError(problems)


def cache_dir() -> Path | None:
    """Directory of the disk cache, or None when disabled by ``KERNELKIT_CACHE_DIR=""`` / ``off`` / ``0``."""
    value = os.environ.get(CACHE_DIR_ENV)
    if value is not None:
        return None if value.strip().lower() in ("", "off", "0") else Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kernelkit"


def _scratch_dir() -> Path:
    return cache_dir() or Path(tempfile.gettempdir()) / "kernelkit"


def dump_dir() -> Path | None:
    """Where ``KERNELKIT_DUMP_SOURCE`` asks sources to be written, or None."""
    value = os.environ.get(DUMP_SOURCE_ENV, "").strip()
    if value in ("", "0"):
        return None
    if value == "1":
        return _scratch_dir() / "source"
    return Path(value)


def cache_key(source: str, options: tuple[str, ...], compiler: str, arch: str) -> str:
    """Hex digest naming one compiled object."""
    blob = json.dumps(
        [SCHEMA_VERSION, package_version(), source, list(options), compiler, arch], separators=(",", ":")
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def dump_source(source: str, name: str, key: str, suffix: str, force: bool = False) -> Path | None:
    """Write ``source`` when dumping is on (or ``force``, for failed compiles); returns the path written."""
    directory = dump_dir()
    if directory is None:
        if not force:
            return None
        directory = _scratch_dir() / "failed"
    path = directory / f"{name}-{key[:16]}{suffix}"
    try:
        atomic_write(path, source.encode())
    except OSError:
        return None
    return path


class LRU:
    """A thread-safe least-recently-used map bounded by entry count and by a total of per-entry sizes."""

    def __init__(self, max_entries: int, max_bytes: int | None = None):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._data: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any | None:
        with self._lock:
            item = self._data.get(key)
            if item is None:
                return None
            self._data.move_to_end(key)
            return item[0]

    def put(self, key: Any, value: Any, nbytes: int = 0) -> None:
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._data[key] = (value, nbytes)
            self._bytes += nbytes
            while len(self._data) > self.max_entries or (
                self.max_bytes is not None and self._bytes > self.max_bytes and len(self._data) > 1
            ):
                _, (_, size) = self._data.popitem(last=False)
                self._bytes -= size

    def get_or_make(self, key: Any, make: Callable[[], tuple[Any, int]]) -> Any:
        value = self.get(key)
        if value is None:
            value, nbytes = make()
            self.put(key, value, nbytes)
        return value

    def values(self) -> list[Any]:
        with self._lock:
            return [v for v, _ in self._data.values()]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._data)

    @property
    def nbytes(self) -> int:
        return self._bytes


def _entry_path(key: str, suffix: str) -> Path | None:
    directory = cache_dir()
    return None if directory is None else directory / "kernels" / f"{key}{suffix}"


def pack(payload: bytes) -> bytes:
    """A disk entry: header (magic, length, SHA-256) followed by ``payload``."""
    return _HEADER.pack(_MAGIC, len(payload), hashlib.sha256(payload).digest()) + payload


def unpack(data: bytes) -> bytes | None:
    """The payload of a disk entry, or None when the entry is truncated, padded, empty or not ours."""
    if len(data) < _HEADER.size:
        return None
    magic, length, digest = _HEADER.unpack_from(data)
    payload = data[_HEADER.size:]
    if magic != _MAGIC or length != len(payload) or hashlib.sha256(payload).digest() != digest:
        return None
    return payload


def disk_get(key: str, suffix: str) -> bytes | None:
    """Compiled bytes stored under ``key``, or None; a damaged entry is deleted so that it gets rebuilt."""
    path = _entry_path(key, suffix)
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    payload = unpack(data)
    if payload is None:
        discard(key, suffix)
    return payload


def disk_put(key: str, suffix: str, data: bytes) -> None:
    """Store compiled bytes; a read-only or full disk only costs the next process a recompile."""
    path = _entry_path(key, suffix)
    if path is None:
        return
    try:
        atomic_write(path, pack(data))
    except OSError:
        pass


def discard(key: str, suffix: str) -> None:
    """Remove the entry under ``key`` (one the driver refused, or one that failed its checksum)."""
    path = _entry_path(key, suffix)
    if path is None:
        return
    try:
        path.unlink()
    except OSError:
        pass
