"""The memory guard: a call whose arrays cannot fit in the memory available is refused before it allocates.

A parameter given by mistake (``n_fft=2**31``, ``hop_length=1`` on hours of audio, ``n=2**40``) asks for more
memory than the machine has. On Linux the allocation itself usually succeeds (memory is overcommitted) and the
kernel's OOM killer ends this process, or another one, once the pages are touched. So every public entry that
sizes an allocation from a parameter estimates the bytes of the large arrays it will make and calls
:func:`check` first, which raises :class:`specux.errors.MemoryLimitError` (a ``MemoryError`` and a
``ValueError``) naming the parameter, the bytes needed and the bytes available.

``SPECUX_MEMORY_LIMIT`` changes the limit, read at every call: a number of bytes (``8000000000``, or with a
binary suffix: ``512M``, ``8G``, ``1T``; ``K`` / ``KiB`` / ``KB`` alike) replaces the memory available;
``off`` lifts the guard. Unset or empty: the memory available now, which on Linux is ``MemAvailable`` of
/proc/meminfo capped by the room left under the memory limits of the process's cgroup and its ancestors (a
container's limit, not the host's memory, is what its OOM killer enforces); elsewhere the available (or,
failing that, physical) pages of ``os.sysconf``; where neither is known (Windows), no limit unless the
variable sets one. Requests under 64 MiB are not compared with the system's memory (reading it costs more
than a small transform), only with a limit the variable sets. Device arrays (a CUDA tensor, a cupy array)
are not checked: their libraries raise their own out-of-memory errors, and host memory says nothing about a
GPU's.

The estimates count the arrays that dominate (outputs, padded copies, spectra, banks), not every small
temporary: they are meant to stop requests that cannot succeed, not to predict a peak to the byte.
"""

from __future__ import annotations

import functools
import math
import os
import re

from specux.errors import MemoryLimitError

__all__ = ["ENV", "available", "check", "limit", "product"]

ENV = "SPECUX_MEMORY_LIMIT"
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_LIMIT = re.compile(r"^(\d+)\s*([KMGT]?)(I?B)?$", re.IGNORECASE)


def product(values) -> int:
    """The product of a sequence of sizes as a Python int (no overflow, 1 for an empty one)."""
    return math.prod(int(v) for v in values)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _meminfo() -> int | None:
    text = _read("/proc/meminfo")
    match = re.search(r"^MemAvailable:\s+(\d+)\s*kB", text or "", re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def _stat(text: str | None, key: str) -> int:
    match = re.search(rf"^{key}\s+(\d+)", text or "", re.MULTILINE)
    return int(match.group(1)) if match else 0


@functools.lru_cache(maxsize=1)
def _cgroup_limits() -> tuple[tuple[str, int, tuple[str, str]], ...]:
    """``(folder, limit, (usage file, reclaimable key in memory.stat))`` of every memory limit set on this
    process's cgroup and its ancestors (v1 or v2), found once: the hierarchy and its limits stay put while a
    process runs, and walking it costs more than a small transform."""
    found = []
    for line in (_read("/proc/self/cgroup") or "").splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2
            root, files = "/sys/fs/cgroup", ("memory.max", "memory.current", "inactive_file")
        elif "memory" in controllers.split(","):  # v1
            root = "/sys/fs/cgroup/memory"
            files = ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
        else:
            continue
        parts = [p for p in path.split("/") if p]
        for depth in range(len(parts), -1, -1):
            folder = "/".join([root, *parts[:depth]])
            text = (_read(f"{folder}/{files[0]}") or "").strip()
            # "max" (v2) or v1's "unlimited" (2**63 rounded to pages) set no limit
            if text.isdigit() and int(text) < 1 << 62:
                found.append((folder, int(text), files[1:]))
    return tuple(found)


def _cgroup_room() -> int | None:
    """Bytes left under the tightest cgroup memory limit, not counting reclaimable page cache as used; None
    when no limit is set or none can be read."""
    rooms = []
    for folder, limit, (usage, reclaimable) in _cgroup_limits():
        used = (_read(f"{folder}/{usage}") or "").strip()
        if used.isdigit():
            used_bytes = int(used) - _stat(_read(f"{folder}/memory.stat"), reclaimable)
            rooms.append(max(0, limit - max(0, used_bytes)))
    return min(rooms) if rooms else None


def _sysconf() -> int | None:
    names = getattr(os, "sysconf_names", {})
    for pages in ("SC_AVPHYS_PAGES", "SC_PHYS_PAGES"):
        if pages in names and "SC_PAGE_SIZE" in names:
            try:
                count, size = os.sysconf(pages), os.sysconf("SC_PAGE_SIZE")
            except (OSError, ValueError):
                continue
            if count > 0 and size > 0:
                return count * size
    return None


def available() -> int | None:
    """Bytes of memory available to this process now (see the module docstring), or None when unknown."""
    found = [v for v in (_meminfo(), _cgroup_room()) if v is not None]
    return min(found) if found else _sysconf()


def limit() -> tuple[int | None, str]:
    """``(bytes a call may allocate, or None for no limit; where the number comes from)``."""
    raw = os.environ.get(ENV, "").strip()
    if raw.lower() == "off":
        return None, f"{ENV}=off"
    if raw:
        match = _LIMIT.match(raw)
        if match is None:
            raise ValueError(
                f"{ENV} must be a number of bytes (e.g. 8000000000, 512M, 8G) or 'off'; got {raw!r}"
            )
        return int(match.group(1)) * _UNITS[match.group(2).upper()], f"allowed by {ENV}={raw}"
    return available(), "available"


def _human(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


_NO_VALUE = object()
#: below this, the system's memory is not read (a read of /proc costs more than a small transform): only a
#: number set in SPECUX_MEMORY_LIMIT is compared
_SMALL = 1 << 26


def check(
    nbytes: int,
    *,
    public: str,
    parameter: str,
    value: object = _NO_VALUE,
    detail: str = "",
    advice: str = "",
    subject: str = "",
) -> None:
    """Raise :class:`MemoryLimitError` when ``nbytes`` exceeds the memory limit (see the module docstring).

    Parameters
    ----------
    nbytes : int
        Bytes the call is about to allocate (its large arrays together).
    public : str
        The public function, as the message names it (``"stft"``, ``"fft.fft"``).
    parameter : str
        The parameter that sets the size (``"n_fft"``, ``"n"``, ``"in1 and in2"``), first in the message.
    value : object
        Its value, shown as ``parameter=value``; a string is shown as it is.
    detail : str
        What the size comes from (``"1 frame(s) of n_fft=... for 1 signal(s) of 16000 samples"``).
    advice : str
        What to change; default ``"use a smaller <parameter>"``.
    subject : str
        What the message starts with, when two parameters set the size together (``"n_mels=4096 with
        n_fft=8192"``); default ``parameter=value``.
    """
    raw = os.environ.get(ENV, "").strip()
    if nbytes < _SMALL and not (raw and raw.lower() != "off"):
        return
    allowed, source = limit()
    if allowed is None or nbytes <= allowed:
        return
    if subject:
        pass
    elif value is _NO_VALUE:
        subject = parameter
    else:
        subject = f"{parameter}={value if isinstance(value, str) else repr(value)}"
    raise MemoryLimitError(
        f"{public}: {subject} needs about {nbytes:,} bytes ({_human(nbytes)}) of memory"
        f"{f' ({detail})' if detail else ''}, but {allowed:,} bytes ({_human(allowed)}) are {source}; "
        f"{advice or f'use a smaller {parameter}'}, or set {ENV}=<bytes> (or 'off') to change the limit",
        parameter=parameter,
        needed=int(nbytes),
        available=int(allowed),
    )
