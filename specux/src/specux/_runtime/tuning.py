"""Persisted autotuning results: which :class:`~specux._codegen.fft_plan.Tuning` won for a length on a device.

Stored as one JSON object in ``<SPECUX_CACHE_DIR>/tuning.json`` keyed by ``target|architecture|n|precision``,
rewritten atomically. Without a disk cache directory the results live for the process only. Lookups happen on
every planned call, so the file is read once and kept in memory.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from specux._codegen.fft_plan import Tuning
from specux._runtime import cache

_lock = threading.Lock()
_table: dict[str, dict[str, Any]] | None = None


def _key(rt: Any, n: int, prec: str) -> str:
    return f"{rt.dialect.name}|{rt.arch()}|{n}|{prec}"


def _path():
    directory = cache.cache_dir()
    return None if directory is None else directory / "tuning.json"


def _load() -> dict[str, dict[str, Any]]:
    global _table
    if _table is None:
        _table = {}
        path = _path()
        if path is not None and path.is_file():
            try:
                _table = dict(json.loads(path.read_text()))
            except (OSError, ValueError):
                _table = {}
    return _table


def lookup(rt: Any, n: int, prec: str) -> Tuning | None:
    """The stored winner for length ``n`` on ``rt``'s device, or None (use the default plan)."""
    with _lock:
        entry = _load().get(_key(rt, n, prec))
    if not entry:
        return None
    split = entry.get("split")
    return Tuning(entry.get("threads"), entry.get("rows"), tuple(split) if split else None)


def store(rt: Any, n: int, prec: str, tuning: Tuning) -> None:
    """Remember ``tuning`` for length ``n`` on ``rt``'s device (in memory; on disk too with a cache dir)."""
    with _lock:
        table = _load()
        table[_key(rt, n, prec)] = {"threads": tuning.threads, "rows": tuning.rows, "split": tuning.split}
        path = _path()
        if path is not None:
            try:
                cache.atomic_write(path, json.dumps(table, indent=1, sort_keys=True).encode())
            except OSError:
                pass


def forget() -> None:
    """Drop the in-memory copy (the next lookup rereads the file)."""
    global _table
    with _lock:
        _table = None
