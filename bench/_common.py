"""Small helpers shared by the bench scripts: timing, a record of the machine, JSON and markdown tables.

Nothing here knows about any library under test; each bench script imports what it compares.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import os
import platform
import resource
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

#: environment variables that change how many threads numerical libraries use (recorded, never changed)
THREAD_ENV = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "OPENBLAS_CORETYPE",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)


def best_of(fn: Callable[[], Any], repeat: int = 3, warmup: int = 1) -> dict[str, Any]:
    """Time ``fn()``: ``warmup`` untimed calls, then ``repeat`` timed calls.

    Returns
    -------
    dict
        ``best`` and ``median`` wall-clock seconds, ``cpu_best`` (the least process CPU time of one call, all
        threads together, seconds: steadier than wall time on a loaded machine, but it counts every thread's
        work), ``runs`` (every timed call's wall time) and ``result`` (the value of the last call, so callers
        can check it without another run).
    """
    result = None
    for _ in range(warmup):
        result = fn()
    runs, cpu = [], []
    for _ in range(max(1, repeat)):
        c0, t0 = time.process_time(), time.perf_counter()
        result = fn()
        runs.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {"best": min(runs), "median": statistics.median(runs), "cpu_best": min(cpu), "runs": runs,
            "result": result}


def interleaved(
    fns: dict[str, Callable[[], Any]], repeat: int = 3, warmup: int = 1
) -> dict[str, dict[str, Any]]:
    """Time several callables in turns: each warmed up, then ``repeat`` rounds of one call to each.

    Taking turns spreads any disturbance from other programs over all of them rather than over whichever ran
    at the wrong moment. Returns, per name, what :func:`best_of` returns for one callable.
    """
    results = {name: fn() for name, fn in fns.items() for _ in range(max(1, warmup))}
    runs: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(max(1, repeat)):
        for name, fn in fns.items():
            c0, t0 = time.process_time(), time.perf_counter()
            results[name] = fn()
            runs[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    return {
        name: {"best": min(runs[name]), "median": statistics.median(runs[name]), "cpu_best": min(cpu[name]),
               "runs": runs[name], "result": results[name]}
        for name in fns
    }


def in_blocks(
    fns: dict[str, Callable[[], Any]], repeat: int = 3, warmup: int = 1, pause: float = 0.5, rounds: int = 1
) -> dict[str, dict[str, Any]]:
    """Time several callables one after the other: each warmed up, then called ``repeat`` times in a row.

    Between two callables the process sleeps ``pause`` seconds, so that one library's idle worker threads
    (OpenBLAS's keep spinning for a while after a multi-threaded product) have stopped before the next library
    runs: taking turns call by call charged that spinning to whichever library came next (torchaudio's
    melspectrogram measured 102 ms right after numpy work, 55 ms without it). With ``rounds`` > 1 the blocks
    take turns that many times (A B A B ...), so that a slow spell of a shared machine does not fall on one
    callable's only block. Returns, per name, what :func:`best_of` returns for one callable, over all its
    blocks.
    """
    out: dict[str, dict[str, Any]] = {}
    for r in range(max(1, rounds)):
        for name, fn in fns.items():
            time.sleep(pause)
            block = best_of(fn, repeat=repeat, warmup=warmup if r == 0 else 0)
            if name not in out:
                out[name] = block
                continue
            merged = out[name]
            merged["runs"] = merged["runs"] + block["runs"]
            merged["best"] = min(merged["runs"])
            merged["median"] = statistics.median(merged["runs"])
            merged["cpu_best"] = min(merged["cpu_best"], block["cpu_best"])
            merged["result"] = block["result"]
    return out


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MiB (``ru_maxrss``: KiB on Linux, bytes on macOS)."""
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def cpu_model() -> str:
    """The processor's model name (Linux /proc/cpuinfo, else :func:`platform.processor`), with its x86 family
    and model numbers where the name alone does not tell generations apart (a virtual machine's "AMD EPYC" is
    a Zen 1 at family 23 model 1, a Zen 3 at family 25)."""
    try:
        fields: dict[str, str] = {}
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if not key.strip() and fields:
                break  # the end of the first processor's block
            fields.setdefault(key.strip(), value.strip())
        if "model name" in fields:
            name = fields["model name"]
            if "cpu family" in fields and "model" in fields:
                name += f" (family {fields['cpu family']}, model {fields['model']})"
            return name
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions(names: Iterable[str]) -> dict[str, str | None]:
    """``__version__`` of each importable module in ``names``; None for those that do not import."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = str(getattr(importlib.import_module(name), "__version__", "unknown"))
        except Exception:  # a peer that fails to import is recorded as absent, whatever the reason
            out[name] = None
    return out


def machine() -> dict[str, Any]:
    """Where and when a bench ran: CPU, cores usable by this process, load average, thread variables, date."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    info: dict[str, Any] = {
        "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "usable_cores": usable,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "thread_env": {k: os.environ.get(k) for k in THREAD_ENV},
    }
    if hasattr(os, "getloadavg"):
        info["loadavg_start"] = list(os.getloadavg())
    return info


def threadpools() -> list[dict[str, Any]]:
    """The native thread pools loaded so far (BLAS, OpenMP) and their sizes, through threadpoolctl if present.

    Call it after the libraries under test are imported: pools appear as their libraries load.
    """
    try:
        import threadpoolctl
    except ImportError:
        return []
    keys = ("user_api", "internal_api", "num_threads", "prefix")
    return [{k: p.get(k) for k in keys} for p in threadpoolctl.threadpool_info()]


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``, or None when either is missing."""
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def fmt_seconds(t: float | None) -> str:
    """A time for a table: ms below 10 s, else s; "-" when missing."""
    if t is None:
        return "-"
    return f"{t * 1e3:.1f} ms" if t < 10 else f"{t:.2f} s"


def fmt_ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub-flavoured markdown table (cells converted with ``str``)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """Write ``data`` as indented JSON, to a temporary name first, then renamed into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(tmp, path)
    return path


def command_line(script: str, argv: Sequence[str] | None = None) -> str:
    """The command that ran a bench, as one would type it from the repository root.

    Parameters
    ----------
    script : str
        The bench script's path (its ``__file__``); only its name is kept, under ``bench/``.
    argv : sequence of str, optional
        The arguments given to the script's ``main``; None: ``sys.argv[1:]``, what the shell passed.

    Returns
    -------
    str
        ``python bench/NAME.py`` followed by the arguments, quoted for a POSIX shell.

    Examples
    --------
    >>> command_line("/repo/bench/specux_fft.py", ["--quick", "--out", "a b.json"])
    "python bench/specux_fft.py --quick --out 'a b.json'"
    """
    args = sys.argv[1:] if argv is None else [str(a) for a in argv]
    return shlex.join(["python", f"bench/{Path(script).name}", *args])


def finish_machine(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` (a :func:`machine` record taken before the run) with the load average at its end added.

    The pair of load averages says how busy the machine was while the bench ran, which a single reading
    taken at the start does not.
    """
    if hasattr(os, "getloadavg"):
        info["loadavg_end"] = list(os.getloadavg())
    return info
