"""The compiled-kernel cache (memory and disk), source dumps and the error a failed compile raises.

Keys hash everything that can change the compiled bytes: a schema version (bumped when the cache layout or the
meaning of a key changes), specux's version, the generated source, the compiler options, the compiler's
version and the target architecture. A stale entry can therefore never be picked up after an upgrade; it is
just never asked for again.

Environment variables:

``SPECUX_CACHE_DIR``
    Directory of the on-disk cache (default ``$XDG_CACHE_HOME/specux`` or ``~/.cache/specux``); an empty value
    or ``off`` disables the disk cache (the in-memory cache stays).
``SPECUX_DUMP_SOURCE``
    ``1`` writes every generated source to ``<cache dir>/source/``; any other non-empty value other than ``0``
    is taken as the directory to write them to. Sources of failed compiles are always written.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: bump when the layout of the cache or the meaning of a key changes
SCHEMA_VERSION = 1


def package_version() -> str:
    try:
        from importlib.metadata import version

        return version("specux")
    except Exception:  # running from a source tree that is not installed
        return "0+unknown"


class KernelCompileError(RuntimeError):
    """A generated kernel failed to compile: ``log`` is the compiler's output, ``source_path`` the source."""

    def __init__(self, target: str, name: str, log: str, source_path: Path | None):
        self.target = target
        self.kernel = name
        self.log = log
        self.source_path = source_path
        where = f"; source written to {source_path}" if source_path else ""
        super().__init__(f"{target} compile of kernel {name!r} failed{where}\n{log}")


def cache_dir() -> Path | None:
    """Directory of the disk cache, or None when disabled by ``SPECUX_CACHE_DIR=""`` / ``off``."""
    value = os.environ.get("SPECUX_CACHE_DIR")
    if value is not None:
        return None if value.strip().lower() in ("", "off", "0") else Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "specux"


def dump_dir() -> Path | None:
    """Where ``SPECUX_DUMP_SOURCE`` asks sources to be written, or None."""
    value = os.environ.get("SPECUX_DUMP_SOURCE", "").strip()
    if value in ("", "0"):
        return None
    if value == "1":
        return (cache_dir() or Path(tempfile.gettempdir()) / "specux") / "source"
    return Path(value)


def cache_key(source: str, options: tuple[str, ...], compiler: str, arch: str) -> str:
    """Hex digest naming one compiled kernel."""
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
        directory = (cache_dir() or Path(tempfile.gettempdir()) / "specux") / "failed"
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

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._data)

    @property
    def nbytes(self) -> int:
        return self._bytes


def disk_get(key: str, suffix: str) -> bytes | None:
    """Compiled bytes stored under ``key``, or None."""
    directory = cache_dir()
    if directory is None:
        return None
    try:
        return (directory / "kernels" / f"{key}{suffix}").read_bytes()
    except OSError:
        return None


def disk_put(key: str, suffix: str, data: bytes) -> None:
    """Store compiled bytes; a read-only or full disk only costs the next process a recompile."""
    directory = cache_dir()
    if directory is None:
        return
    try:
        atomic_write(directory / "kernels" / f"{key}{suffix}", data)
    except OSError:
        pass
