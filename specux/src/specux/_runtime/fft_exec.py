"""Run a plan of :mod:`specux._codegen.fft_plan` on any kernelkit device runtime
(:class:`kernelkit.runtime.DeviceRuntime`: OpenCL, CUDA or Metal).

Each kernel spec becomes a kernelkit :class:`~kernelkit.program.Program` (rendered once per spec and
dialect) and is launched with ``LaunchConfig((groups,), (block,))``; the runtime compiles it through
kernelkit's caches.
The caller's array is seen as (outer, axis, inner), contiguous: element ``g`` of row (o, j) sits at
``o * axis_len * inner + g * inner + j``. Intermediates (the four-step scratch, Bluestein's padded rows) are
complex arrays of the compute precision laid out the same way, allocated per call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kernelkit.dialects import Dialect
from kernelkit.program import Program
from kernelkit.runtime import DeviceRuntime
from specux._codegen import fft_kernels, fft_plan
from specux._codegen.fft_kernels import COMPLEX, ELEMENTWISE_BLOCK, HALF_SPECTRUM, HERMITIAN, REAL
from specux._codegen.fft_plan import BluesteinPlan, FourStepPlan, LocalPlan, Plan
from specux._runtime import device_array, launch

#: int32 indexing in the kernels: element offsets (in scalars) must stay below this
MAX_INDEX = launch.MAX_INDEX

#: (in_mode, out_mode, flags) of each transform kind; flags bit 0 / 1 conjugate on load / store, which
#: turns the generated forward transform into the inverse one
MODES = {
    ("c2c", False): (COMPLEX, COMPLEX, 0),
    ("c2c", True): (COMPLEX, COMPLEX, 3),
    ("r2c", False): (REAL, HALF_SPECTRUM, 0),
    ("c2r", True): (HERMITIAN, REAL, 3),
}


@dataclass(frozen=True)
class IO:
    """Layout and mode of one transform call (see :mod:`specux._codegen.fft_kernels` for the meanings)."""

    outer: int
    inner: int
    in_len: int  # length of the input's transformed axis (n, or n // 2 + 1 for a half-spectrum)
    out_len: int
    in_mode: int
    out_mode: int
    flags: int
    scale: float


def program(spec: object, dialect: Dialect) -> Program:
    """The kernelkit program of one FFT kernel spec in ``dialect`` (memoised with every family's, in
    :func:`specux._runtime.launch.program`)."""
    return launch.program(fft_kernels.render, spec, dialect)


def _launch(rt: DeviceRuntime, spec: object, groups: int, args: list[Any]) -> None:
    """Run ``groups`` blocks of the spec's kernel (compiled on first use) with ``args`` in parameter order."""
    launch.run(rt, program(spec, rt.dialect), groups, args)


def _table(rt: DeviceRuntime, kind: str, *args: Any) -> Any:
    make = {"tw": fft_plan.twiddles, "chirp": fft_plan.chirp, "filter": fft_plan.bluestein_filter}[kind]
    return rt.table((kind, *args), lambda: make(*args))


def _stockham(
    rt: DeviceRuntime,
    spec: Any,
    src: Any,
    dst: Any,
    tw2: Any,
    nbatch: int,
    io: IO,
    in_dist: int,
    out_dist: int,
    in_mode: int,
    out_mode: int,
    flags: int,
    scale: float,
) -> None:
    tw = _table(rt, "tw", spec.n, spec.prec)
    args = [
        src,
        dst,
        tw,
        tw if tw2 is None else tw2,
        nbatch,
        io.inner,
        in_dist,
        out_dist,
        in_mode,
        out_mode,
        flags,
        scale,
    ]
    _launch(rt, spec, launch.groups(nbatch, spec.rows), args)


def execute(rt: DeviceRuntime, node: Plan, src: Any, dst: Any, io: IO) -> None:
    """Enqueue the kernels of ``node`` reading ``src`` and writing ``dst`` (distinct buffers)."""
    inner = io.inner
    csize = fft_plan.complex_bytes(node.specs()[0].prec)
    if isinstance(node, LocalPlan):
        _stockham(
            rt,
            node.kernel,
            src,
            dst,
            None,
            io.outer * inner,
            io,
            io.in_len * inner,
            io.out_len * inner,
            io.in_mode,
            io.out_mode,
            io.flags,
            io.scale,
        )
    elif isinstance(node, FourStepPlan):
        n = node.n
        scratch = rt.alloc(io.outer * n * inner * csize)
        tw_big = _table(rt, "tw", n, node.column.prec)
        _stockham(
            rt,
            node.column,
            src,
            scratch,
            tw_big,
            io.outer * node.n2 * inner,
            io,
            io.in_len * inner,
            n * inner,
            io.in_mode,
            COMPLEX,
            io.flags & 1,
            1.0,
        )
        _stockham(
            rt,
            node.row,
            scratch,
            dst,
            None,
            io.outer * node.n1 * inner,
            io,
            n * inner,
            io.out_len * inner,
            COMPLEX,
            io.out_mode,
            io.flags & 2,
            io.scale,
        )
    elif isinstance(node, BluesteinPlan):
        n, m, prec = node.n, node.m, node.pre.prec
        rows = io.outer * inner
        if 2 * rows * m > MAX_INDEX:
            raise ValueError(f"batch of {rows} rows of Bluestein length {m} exceeds 32-bit kernel indexing")
        a = rt.alloc(rows * m * csize)
        b = rt.alloc(rows * m * csize)
        chirp = _table(rt, "chirp", n, prec)
        _launch(
            rt,
            node.pre,
            launch.groups(rows * m, ELEMENTWISE_BLOCK),
            [src, a, chirp, n, m, rows, inner, io.in_len * inner, io.in_mode, io.flags & 1],
        )
        row_io = IO(rows, 1, m, m, COMPLEX, COMPLEX, 0, 1.0)
        execute(rt, node.conv, a, b, row_io)
        _launch(
            rt,
            node.cmul,
            launch.groups(rows * m, ELEMENTWISE_BLOCK),
            [b, _table(rt, "filter", n, m, prec), m, rows * m],
        )
        # the inverse of the convolution: conjugate in and out around the same forward kernels
        execute(rt, node.conv, b, a, IO(rows, 1, m, m, COMPLEX, COMPLEX, 3, 1.0))
        _launch(
            rt,
            node.post,
            launch.groups(rows * n, ELEMENTWISE_BLOCK),
            [a, dst, chirp, n, m, rows, inner, io.out_len * inner, io.out_mode, io.flags & 2, io.scale],
        )
    else:  # pragma: no cover
        raise TypeError(type(node).__name__)


def check_size(shape_in: tuple[int, ...], shape_out: tuple[int, ...]) -> None:
    """The kernels index in int32: refuse arrays whose scalar count would overflow it."""
    for shape in (shape_in, shape_out):
        count = 2
        for s in shape:
            count *= s
        if count > MAX_INDEX:
            raise ValueError(
                f"array of shape {shape} is too large for the generated kernels' 32-bit indexing"
            )


#: storage name of each numpy dtype the FFT entry points receive (the same table as DeviceArray's)
STORAGE_OF = device_array.STORAGE


@dataclass(frozen=True)
class Call:
    """One backend call resolved: plan, layout and modes (everything but the buffers)."""

    plan: Plan
    io: IO
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]


def resolve(
    kind: str,
    shape: tuple[int, ...],
    axis: int,
    n: int,
    in_storage: str,
    out_storage: str,
    inverse: bool,
    scale: float,
    tuning: fft_plan.Tuning | None = None,
) -> Call:
    """Plan and layout of a transform of length ``n`` along ``axis`` of a contiguous array of ``shape``.

    For ``c2r`` ``shape[axis]`` is ``n // 2 + 1``; otherwise it is ``n``.
    """
    axis = axis % len(shape)
    outer = 1
    for s in shape[:axis]:
        outer *= s
    inner = 1
    for s in shape[axis + 1 :]:
        inner *= s
    half = n // 2 + 1
    in_len = half if kind == "c2r" else n
    out_len = half if kind == "r2c" else n
    out_shape = (*shape[:axis], out_len, *shape[axis + 1 :])
    check_size(shape, out_shape)
    in_mode, out_mode, flags = MODES[(kind, inverse)]
    prec = "f64" if "f64" in (in_storage, out_storage) else "f32"
    node = fft_plan.plan(n, prec, in_storage, out_storage, tuning)
    return Call(
        node, IO(outer, inner, in_len, out_len, in_mode, out_mode, flags, float(scale)), shape, out_shape
    )


def tuned(rt: DeviceRuntime, n: int, prec: str) -> fft_plan.Tuning | None:
    """The autotuned configuration stored for length ``n`` on ``rt``'s device, if any."""
    from specux._runtime import tuning

    return tuning.lookup(rt, n, prec)


def output_dtype(kind: str, dtype: np.dtype) -> np.dtype:
    """numpy dtype of the result: the input's precision; half storage comes back as complex64 / float32 in
    numpy,
    which has no complex half."""
    name = np.dtype(dtype).name
    if kind == "c2r":
        return np.dtype({"complex64": np.float32, "complex128": np.float64}[name])
    if kind == "r2c":
        return np.dtype(np.complex128 if name == "float64" else np.complex64)
    return np.dtype(dtype)


def run_host(
    rt: DeviceRuntime, kind: str, x: np.ndarray, axis: int, n: int, inverse: bool, scale: float
) -> np.ndarray:
    """A numpy array in, through the device, a numpy array out (the host path of every generated backend)."""
    x = np.ascontiguousarray(x)
    out_dtype = output_dtype(kind, x.dtype)
    in_storage = STORAGE_OF[x.dtype.name]
    out_storage = STORAGE_OF[out_dtype.name]
    if in_storage == "f64" or out_storage == "f64":
        in_storage = out_storage = "f64"
    prec = "f64" if in_storage == "f64" else "f32"
    call = resolve(kind, x.shape, axis, n, in_storage, out_storage, inverse, scale, tuned(rt, n, prec))
    out = np.empty(call.out_shape, out_dtype)
    if x.size == 0 or out.size == 0:
        out[...] = 0
        return out
    src = rt.upload(x)
    dst = rt.alloc(out.nbytes)
    with rt.batch():
        execute(rt, call.plan, src, dst, call.io)
    return rt.download(dst, out)


def run_device(
    rt: DeviceRuntime,
    kind: str,
    x: Any,
    axis: int,
    n: int,
    inverse: bool,
    scale: float,
    out_dtype: str | None = None,
) -> Any:
    """One-axis transform of a :class:`~specux._runtime.device_array.DeviceArray`, into a new one.

    ``kind`` is ``"c2c"``, ``"r2c"`` or ``"c2r"`` (``x.shape[axis]`` is ``n // 2 + 1`` for c2r, else ``n``);
    ``out_dtype`` (a DeviceArray dtype name) defaults to the input's precision. Either side may be half
    storage; float64 on one side means float64 on both. The composed operations (stft, istft, fftconvolve)
    chain their passes through this, buffers staying on the device.
    """
    da = device_array
    precision = da.REAL_OF.get(x.dtype, x.dtype)
    if out_dtype is None:
        out_dtype = precision if kind == "c2r" else da.COMPLEX_OF[precision]
    in_storage, out_storage = x.storage, da.STORAGE[out_dtype]
    if "f64" in (in_storage, out_storage) and in_storage != out_storage:
        raise ValueError(f"float64 on one side of a transform needs it on both ({x.dtype} -> {out_dtype})")
    prec = "f64" if in_storage == "f64" else "f32"
    call = resolve(kind, x.shape, axis, n, in_storage, out_storage, inverse, scale, tuned(rt, n, prec))
    out = da.empty(rt, call.out_shape, out_dtype)
    if x.size and out.size:
        execute(rt, call.plan, x.buf, out.buf, call.io)
    return out
