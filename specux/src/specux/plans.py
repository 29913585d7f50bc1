"""FFT plans of the generated-kernel backends (cuda, metal, opencl): inspect, autotune, clear their caches.

A plan is the decomposition of a one-axis transform of length n into generated kernels, chosen by n and the
precision (see :mod:`specux._codegen.fft_plan`): one shared-memory Stockham kernel, a four-step pair of
kernels for lengths past one block, or Bluestein's chirp-z convolution for lengths with a prime factor
above 13.

Plans are memoised (at most 512), compiled kernels (at most 512 per device) and constant tables (at most
256 MiB per device) are kept in least-recently-used caches, so their memory is bounded however many lengths
a program uses. :func:`autotune` times a few alternatives to the default plan of a length on a device and
persists the fastest (in kernelkit's tuning store, ``<KERNELKIT_CACHE_DIR>/tuning.json``); later calls of
that length on that device use it.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np

from specux import _memory, _validate
from specux._codegen import fft_plan

_PRECISIONS = {"float16": ("f32", "f16"), "float32": ("f32", "f32"), "float64": ("f64", "f64")}


def _precision(dtype: Any, public: str) -> str:
    """The real precision named by ``dtype``: a string, a numpy dtype or scalar type (``np.float32``), or
    their complex counterparts."""
    try:
        name = np.dtype(dtype).name if dtype is not None else None
    except TypeError:
        name = None
    name = {"complex64": "float32", "complex128": "float64"}.get(name, name)
    if name not in _PRECISIONS:
        raise ValueError(
            f"{public}: dtype must be one of {sorted(_PRECISIONS)} (a name or a numpy dtype); got {dtype!r}"
        )
    return name


def describe(n: int, dtype: Any = "float32") -> dict[str, Any]:
    """The plan a generated backend uses for a length-``n`` transform.

    Parameters
    ----------
    n : int
        Transform length (>= 1).
    dtype : {"float16", "float32", "float64"} or numpy dtype
        Real precision of the data (float16 is storage only and computes in float32), as a name, a numpy
        dtype or scalar type (``np.float32``); complex64 / complex128 mean float32 / float64.

    Returns
    -------
    dict
        ``kind`` ("local", "four-step" or "bluestein"), ``n``, the factors or convolution length, the radices
        of every Stockham pass and the number of kernels launched per transform.
    """
    n = _validate.positive_int(n, "n", "describe")
    prec, storage = _PRECISIONS[_precision(dtype, "describe")]
    node = fft_plan.plan(n, prec, storage, storage)
    return _describe(node)


def _describe(node: Any) -> dict[str, Any]:
    if isinstance(node, fft_plan.LocalPlan):
        return {"kind": "local", "n": node.n, "radices": list(node.kernel.radices), "kernels": 1}
    if isinstance(node, fft_plan.FourStepPlan):
        return {
            "kind": "four-step",
            "n": node.n,
            "n1": node.n1,
            "n2": node.n2,
            "radices": [list(node.column.radices), list(node.row.radices)],
            "kernels": 2,
        }
    inner = _describe(node.conv)
    return {
        "kind": "bluestein",
        "n": node.n,
        "m": node.m,
        "convolution": inner,
        "kernels": 3 + 2 * inner["kernels"],
    }


def clear_caches() -> None:
    """Forget memoised plans, rendered sources and every open device runtime's compiled kernels and tables.

    The runtimes are kernelkit's, shared with other users of the same device (vidmag): their compiled
    objects go too and are reloaded from the disk cache on next use. The on-disk kernel cache
    (``KERNELKIT_CACHE_DIR``) is left alone.
    """
    fft_plan.plan.cache_clear()
    launch = sys.modules.get("specux._runtime.launch")  # every kernel family's rendered programs
    if launch is not None:
        launch.program.cache_clear()
    runtime = sys.modules.get("kernelkit.runtime")  # loaded with the first device runtime
    if runtime is not None:
        for rt in runtime.open_runtimes():
            rt.clear_caches()


def _runtime_of(backend: str) -> Any:
    from specux._backends import registry

    if backend not in ("cuda", "metal", "opencl"):
        raise ValueError(
            f"backend must be 'cuda', 'metal' or 'opencl' (the generated backends); got {backend!r}"
        )
    return registry.get(backend).runtime


def autotune(
    n: int, dtype: str = "float32", *, backend: str = "opencl", batch: int | None = None, repeat: int = 5
) -> dict[str, Any]:
    """Time the candidate plans of length ``n`` on a backend's device and persist the fastest.

    Candidates are the default plan and a few alternatives: other thread / row counts per block for a
    one-kernel plan, other ``n1 x n2`` splits for a four-step plan (Bluestein lengths have none). Each
    candidate is checked against numpy before it is timed; one that is wrong is never chosen.

    Parameters
    ----------
    n : int
        Transform length.
    dtype : {"float16", "float32", "float64"} or numpy dtype
        Precision (float16 tunes the float32 compute path); as in :func:`describe`.
    backend : {"opencl", "cuda", "metal"}
        Which generated backend's device to tune on (it must be available).
    batch : int, optional
        Transforms per timed call; None: enough for about 2**20 points.
    repeat : int
        Timed calls per candidate (the best is kept).

    Returns
    -------
    dict
        ``n``, ``dtype``, ``backend``, ``chosen`` (the winning tuning as a dict) and ``candidates``: one entry
        per candidate with its ``tuning``, ``seconds`` (best call) and ``rel_l2`` error against numpy.

    Examples
    --------
    >>> import specux
    >>> result = specux.autotune(4096, "float32", backend="opencl")   # doctest: +SKIP
    >>> sorted(result)                                                 # doctest: +SKIP
    ['backend', 'candidates', 'chosen', 'dtype', 'n']
    """
    from specux._runtime import fft_exec, tuning

    dtype = _precision(dtype, "autotune")
    n = _validate.positive_int(n, "n", "autotune")
    repeat = _validate.positive_int(repeat, "repeat", "autotune")
    batch = max(1, (1 << 20) // n) if batch is None else _validate.positive_int(batch, "batch", "autotune")
    prec = _PRECISIONS[dtype][0]
    itemsize = 16 if prec == "f64" else 8
    # the input, numpy's reference (complex128) and each candidate's result, on the host
    _memory.check(
        batch * n * (2 * itemsize + 16),
        public="autotune",
        parameter="n" if batch == 1 else "batch",
        value=n if batch == 1 else batch,
        detail=f"{batch} transform(s) of n={n}",
    )
    rt = _runtime_of(backend)
    rng = np.random.default_rng(0)
    cdtype = np.complex128 if prec == "f64" else np.complex64
    x = (rng.standard_normal((batch, n)) + 1j * rng.standard_normal((batch, n))).astype(cdtype)
    want = np.fft.fft(x.astype(np.complex128), axis=1)
    src = rt.upload(x)
    dst = rt.alloc(x.nbytes)
    io = fft_exec.IO(batch, 1, n, n, 0, 0, 0, 1.0)
    tol = 1e-12 if prec == "f64" else 1e-5
    rows = []
    for cand in fft_plan.candidates(int(n), prec):
        node = fft_plan.plan(int(n), prec, prec, prec, cand)
        with rt.batch():
            fft_exec.execute(rt, node, src, dst, io)
        got = rt.download(dst, np.empty_like(x))
        err = float(np.linalg.norm(got - want) / np.linalg.norm(want))
        best = float("inf")
        if err <= tol:
            for _ in range(repeat):
                t0 = time.perf_counter()
                with rt.batch():
                    fft_exec.execute(rt, node, src, dst, io)
                rt.synchronize()
                best = min(best, time.perf_counter() - t0)
        rows.append({"tuning": _as_dict(cand), "seconds": best, "rel_l2": err, "_cand": cand})
    winner = min(rows, key=lambda r: r["seconds"])
    if winner["seconds"] == float("inf"):
        raise RuntimeError(f"autotune: no candidate plan of n={n} matched numpy on {backend}; nothing stored")
    tuning.store(rt, int(n), prec, winner["_cand"])
    for r in rows:
        del r["_cand"]
    return {"n": int(n), "dtype": dtype, "backend": backend, "chosen": winner["tuning"], "candidates": rows}


def _as_dict(t: fft_plan.Tuning) -> dict[str, Any]:
    return {"threads": t.threads, "rows": t.rows, "split": t.split}
