"""Persisted autotuning results: which :class:`~specux._codegen.fft_plan.Tuning` won for a length on a device.

A thin adapter over :class:`kernelkit.tuning.TuningStore`: specux's results are the ``"specux.fft"`` section
of ``<KERNELKIT_CACHE_DIR>/tuning.json``, keyed by ``target|device|n|precision``, each entry
``{"threads": int | null, "rows": int | null, "split": [n1, n2] | null}``. An entry of another shape, or one
that does not fit its length (a split that does not factor ``n``, geometry past a block's limits), is ignored
with a :class:`kernelkit.tuning.TuningFileWarning` naming the file, and the default plan is used: a bad file
never breaks a transform. Fields other than these three are ignored (a later version may add some).
"""

from __future__ import annotations

from typing import Any

from kernelkit.tuning import TuningStore
from specux._codegen import fft_plan
from specux._codegen.fft_plan import Tuning

SECTION = "specux.fft"
#: threads per row and rows per block never exceed one block of the largest group any target allows
_MAX_GEOMETRY = 1024


def _key(rt: Any, n: int, prec: str) -> str:
    return f"{rt.dialect.name}|{rt.arch()}|{n}|{prec}"


def _positive(entry: dict[str, Any], name: str) -> None:
    value = entry.get(name)
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= _MAX_GEOMETRY:
        raise ValueError(f"{name} must be null or an integer in [1, {_MAX_GEOMETRY}]; got {value!r}")


def validate(key: str, entry: dict[str, Any]) -> None:
    """Raise ValueError when ``entry`` is not a tuning of the length and precision named by ``key``."""
    _positive(entry, "threads")
    _positive(entry, "rows")
    split = entry.get("split")
    parts = key.rsplit("|", 2)  # the device name may itself contain "|"
    try:
        n, prec = int(parts[-2]), parts[-1]
    except (IndexError, ValueError):
        raise ValueError("the key does not end in |n|precision") from None
    if prec not in ("f32", "f64"):
        raise ValueError(f"precision must be f32 or f64; got {prec!r}")
    if split is not None:
        ok = (
            isinstance(split, list)
            and len(split) == 2
            and all(isinstance(s, int) and not isinstance(s, bool) and s >= 2 for s in split)
        )
        if not ok:
            raise ValueError(f"split must be null or [n1, n2] of integers >= 2; got {split!r}")
        limit = fft_plan.local_max(prec)
        if split[0] * split[1] != n or max(split) > limit:
            raise ValueError(f"split {split} does not factor n={n} into parts <= {limit}")


STORE = TuningStore(SECTION, validate)


def lookup(rt: Any, n: int, prec: str) -> Tuning | None:
    """The stored winner for length ``n`` on ``rt``'s device, or None (use the default plan)."""
    entry = STORE.lookup(_key(rt, n, prec))
    if not entry:
        return None
    split = entry.get("split")
    return Tuning(entry.get("threads"), entry.get("rows"), tuple(split) if split else None)


def store(rt: Any, n: int, prec: str, tuning: Tuning) -> None:
    """Remember ``tuning`` for length ``n`` on ``rt``'s device (in memory; on disk too with a cache dir)."""
    split = list(tuning.split) if tuning.split else None
    STORE.store(_key(rt, n, prec), {"threads": tuning.threads, "rows": tuning.rows, "split": split})


def forget() -> None:
    """Drop the in-memory copy (the next lookup rereads the file)."""
    STORE.forget()
