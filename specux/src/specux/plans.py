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

The operations beyond the FFT (stft, istft, the features, cqt, fftconvolve ...) have op-level plans: the
threads per block of their generated kernels around the FFT, per operation, problem, dtype and device
(:mod:`specux._runtime.op_tuning`). :func:`autotune_op` times the choices and persists the fastest;
:func:`op_plans` lists the plans in memory (at most 512) and :func:`clear_caches` forgets them too.
"""

from __future__ import annotations

import dataclasses
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
    """Forget memoised plans (the FFT's and the op-level ones), rendered sources and every open device
    runtime's compiled kernels and tables.

    The runtimes are kernelkit's, shared with other users of the same device (vidmag): their compiled
    objects go too and are reloaded from the disk cache on next use. The on-disk kernel cache
    (``KERNELKIT_CACHE_DIR``) is left alone.
    """
    fft_plan.plan.cache_clear()
    op_tuning = sys.modules.get("specux._runtime.op_tuning")  # the op-level plans, once an op has run
    if op_tuning is not None:
        op_tuning.clear()
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


#: the block sizes autotune_op tries by default (those past the device's limit are left out)
OP_CANDIDATES = (64, 128, 256, 512, 1024)
#: operations whose (first) array argument is a complex spectrum, and those that want a magnitude
_COMPLEX_INPUT = ("istft", "icqt")
_MAGNITUDE_INPUT = ("power_to_db", "amplitude_to_db")


def _shapes(op: str, shape: Any) -> tuple[tuple[int, ...], ...]:
    """The array arguments' shapes: ``shape`` itself, or fftconvolve's pair of shapes."""
    pair = op == "fftconvolve"
    want = "a pair of shapes (two tuples of positive ints)" if pair else "a tuple of positive ints"
    try:
        shapes = tuple(tuple(s) for s in shape) if pair else (tuple(shape),)
        ok = (len(shapes) == 2 if pair else True) and all(
            len(s) >= 1 and all(isinstance(v, (int, np.integer)) and v >= 1 for v in s) for s in shapes
        )
    except TypeError:
        ok = False
    if not ok:
        raise ValueError(f"autotune_op: shape must be {want} for op={op!r}; got {shape!r}")
    return tuple(tuple(int(v) for v in s) for s in shapes)


def _op_inputs(op: str, shapes: tuple[tuple[int, ...], ...], dtype: str) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    out = []
    for s in shapes:
        if op in _COMPLEX_INPUT:
            if dtype == "float16":
                raise ValueError(
                    f"autotune_op: dtype must be 'float32' or 'float64' for op={op!r} (its input is complex, "
                    "and numpy has no complex half); got 'float16'"
                )
            cdtype = np.complex128 if dtype == "float64" else np.complex64
            out.append((rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(cdtype))
        else:
            x = rng.standard_normal(s)
            out.append((np.abs(x) if op in _MAGNITUDE_INPUT else x).astype(dtype))
    return tuple(out)


def _rel_error(got: np.ndarray, want: np.ndarray) -> float:
    """Relative L2 distance over the finite entries; inf when NaNs or infinities sit in other places."""
    if got.shape != want.shape or not np.array_equal(np.isfinite(got), np.isfinite(want)):
        return float("inf")
    finite = np.isfinite(want)
    g, w = got[finite].astype(np.complex128), want[finite].astype(np.complex128)
    scale = float(np.linalg.norm(w))
    diff = float(np.linalg.norm(g - w))
    return diff / scale if scale else diff


def autotune_op(
    op: str,
    shape: Any,
    dtype: Any = "float32",
    *,
    backend: str,
    repeat: int = 5,
    blocks: Any = None,
    **params: Any,
) -> dict[str, Any]:
    """Time the block sizes of an operation's generated kernels on a backend's device and persist the fastest.

    The operation runs once through its public function (``specux.<op>(x, backend=backend, **params)``) on
    a random input of ``shape``, which resolves its parameters as every call does; then its generated kernels
    around the FFT (framing, spectrum modes, overlap-add, filter banks, dB, resampling, padding and products;
    the FFT's own plans are :func:`autotune`'s) run with each candidate block. Every candidate's result is
    checked against the default plan's (block 256) and is only eligible when it matches within float
    rounding (relative L2 1e-6, 1e-12 in float64; the blocks change no arithmetic, so in practice the
    results are bit-identical); the fastest eligible one (best of ``repeat`` calls) is stored in the
    ``"specux.ops"`` section of kernelkit's tuning file under
    ``op|target|device|shape|dtype``, and every later call of that operation with the same shapes and
    parameters on that device uses it, in this process and later ones.

    Parameters
    ----------
    op : str
        The operation: one of ``"stft"``, ``"istft"``, ``"melspectrogram"``, ``"mfcc"``, ``"lfcc"``,
        ``"chroma_stft"``, ``"power_to_db"``, ``"amplitude_to_db"``, ``"cqt"``, ``"vqt"``, ``"chroma_cqt"``,
        ``"icqt"``, ``"fftconvolve"``.
    shape : tuple of int, or pair of tuples of int
        Shape of the array argument (a signal ``(..., n)``; istft's and icqt's complex spectrum; a
        spectrogram for the dB conversions); for fftconvolve the shapes of ``in1`` and ``in2``.
    dtype : {"float32", "float64", "float16"} or numpy dtype
        Real precision of the input (complex64 / complex128 for istft and icqt, which refuse float16).
    backend : {"opencl", "cuda", "metal"}
        Which generated backend's device to tune on (it must be available).
    repeat : int
        Timed calls per candidate (the best is kept).
    blocks : sequence of int, optional
        The block sizes to try, each one of 32, 64, 128, 256, 512, 1024; None: 64 to 1024. Those past the
        device's limit are left out; the default (256) is always tried.
    **params
        Keyword arguments of the operation (``n_fft``, ``hop_length``, ``sr``, ``mode`` ...), as its public
        function takes them; they are part of the problem the plan is stored for.

    Returns
    -------
    dict
        ``op``, ``shape``, ``dtype``, ``backend``, ``key`` (the tuning store's key), ``chosen``
        (``{"block": int}``) and ``candidates``: one entry per block with ``block``, ``seconds`` (best call;
        inf for a candidate that did not match), ``rel_l2`` against the default plan's result and
        ``identical`` (bit for bit).

    Raises
    ------
    ValueError
        An ``op`` that cannot be tuned, a ``shape``, ``dtype``, ``repeat`` or ``blocks`` out of range, a
        ``backend`` that is not a generated one (``"cpu"``), or parameters the operation refuses.
    specux.BackendUnavailableError
        When the backend cannot run here.
    RuntimeError
        When the operation ran no generated kernels, or no candidate matched the default plan (nothing is
        stored then).

    Examples
    --------
    >>> import specux
    >>> report = specux.autotune_op("stft", (16, 160000), "float32", backend="opencl",
    ...                             n_fft=512)                       # doctest: +SKIP
    >>> report["chosen"]                                            # doctest: +SKIP
    {'block': 128}
    """
    import importlib

    from specux._backends.generated import _lock
    from specux._codegen import blocks as _blocks
    from specux._runtime import device_array as da
    from specux._runtime import launch, op_tuning

    if op not in op_tuning.TUNABLE:
        raise ValueError(f"autotune_op: op must be one of {list(op_tuning.TUNABLE)}; got {op!r}")
    dtype = _precision(dtype, "autotune_op")
    shapes = _shapes(op, shape)
    repeat = _validate.positive_int(repeat, "repeat", "autotune_op")
    try:
        chosen_blocks = OP_CANDIDATES if blocks is None else tuple(blocks)
        for b in chosen_blocks:
            _blocks.check_block(b, "autotune_op: every entry of blocks")
    except TypeError:
        raise ValueError(f"autotune_op: blocks must be a sequence of block sizes; got {blocks!r}") from None
    rt = _runtime_of(backend)
    tried = sorted({_blocks.DEFAULT_BLOCK, *(b for b in chosen_blocks if b <= rt.max_block())})

    public = getattr(importlib.import_module("specux"), op)
    host = _op_inputs(op, shapes, dtype)
    with op_tuning.capture() as seen:
        public(*host, backend=backend, **params)
    calls = [c for c in seen if c[0] == op]
    if not calls:
        raise RuntimeError(f"autotune_op: {op} ran no generated kernels on {backend} for these arguments")
    _, rt, fn, inputs, resolved, shape_class, device_dtype = calls[-1]

    def run(block: int) -> Any:
        with launch.using_block(block):
            return fn(rt, inputs, resolved)

    tol = 1e-12 if dtype == "float64" else 1e-6
    rows = []
    with _lock(rt):
        want = da.download(rt, run(_blocks.DEFAULT_BLOCK))
        for block in tried:
            got = da.download(rt, run(block))
            err = _rel_error(got, want)
            best = float("inf")
            if err <= tol:
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    run(block)
                    rt.synchronize()
                    best = min(best, time.perf_counter() - t0)
            identical = bool(np.array_equal(got, want, equal_nan=True))
            rows.append({"block": block, "seconds": best, "rel_l2": err, "identical": identical})
    winner = min(rows, key=lambda r: r["seconds"])
    if winner["seconds"] == float("inf"):
        raise RuntimeError(
            f"autotune_op: no block matched the default plan of {op} on {backend}; nothing stored"
        )
    op_tuning.store(rt, op, shape_class, device_dtype, winner["block"])
    return {
        "op": op,
        "shape": shapes if op == "fftconvolve" else shapes[0],
        "dtype": dtype,
        "backend": backend,
        "key": op_tuning.key(rt, op, shape_class, device_dtype),
        "chosen": {"block": winner["block"]},
        "candidates": rows,
    }


def op_plans() -> list[dict[str, Any]]:
    """The op-level plans in memory (least recently used first; at most 512), as dicts.

    Returns
    -------
    list of dict
        ``op``, ``target``, ``device``, ``shape`` (the problem's class, see :func:`autotune_op`), ``dtype``,
        ``block`` and ``tuned`` (True when the block came from the tuning store) of every plan an operation
        on a generated backend has looked up since the last :func:`clear_caches`.
    """
    op_tuning = sys.modules.get("specux._runtime.op_tuning")
    if op_tuning is None:  # no generated operation has run: no plan was made
        return []
    return [dataclasses.asdict(p) for p in op_tuning.plans()]
