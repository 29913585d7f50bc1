"""fftconvolve as generated kernels (the contract of :mod:`specux._backends.generated`).

The semantics are the CPU backend's (:func:`specux._backends.cpu.convolve._fftconvolve_numpy`, scipy.signal's
rules): ``p.axes`` are the convolved axes (broadcast axes already removed), the inputs arrive swapped when
"valid" needs it, the result has ``p.out_shape`` and numpy's result dtype ``p.dtype``. Three ways through:

- **no convolved axis**: the broadcast product, with the mode's crop folded into its strides (one kernel);
- **direct**: each input zero-padded (:func:`~specux._codegen.convolve_kernels.pad`) to a 7-smooth length
  ``L >= n1 + n2 - 1`` per convolved axis (2, 3, 5, 7: lengths the generated FFT does without Bluestein), r2c
  along the last convolved axis then c2c along the others (c2c along all of them for complex data) through
  :func:`specux._runtime.fft_exec.run_device`, the spectra multiplied with broadcasting over the other axes
  and ``1 / prod(L)`` folded in, the inverse transforms, and the centred crop of the mode;
- **overlap-save**, for one convolved axis where one input is much longer than the other
  (:func:`use_overlap_save`): the short input's spectrum once at a block length ``L`` of a few times its
  length, then the long input in chunks of frames (frame ``j`` is the ``L`` samples starting at
  ``j * step - (n_short - 1)``, ``step = L - n_short + 1``), each chunk framed, transformed, multiplied,
  transformed back and its frames' last ``step`` samples written straight into their place in the result.
  Temporaries are bounded by :data:`OS_CHUNK` elements (one frame per chunk at least), not by the long input.

The adjoint (:func:`fftconvolve_adjoint`, the gradient for one input, given the output's) is made of the same
kernels: the output gradient embedded where the mode's crop took it from in a zeroed transform buffer (``pad``
with no point inside its bounds, then ``crop`` at the centred offset), its spectrum times the conjugate of the
other input's spectrum (``product`` with ``conj_b``: a circular correlation, whose lags ``0 .. n - 1`` are the
gradient's points since the buffer holds at least the full length), the inverse transforms, and ``sum``: the
crop to the input's extent along the convolved axes, summed over the axes along which it was broadcast (the
real part for a real input). It always takes the direct path, with transforms of the full length.

Arrays are C-contiguous :class:`~specux._runtime.device_array.DeviceArray`; every pass is a kernel over a
strided index grid (see :mod:`specux._codegen.convolve_kernels`), inputs of up to
:data:`~specux._codegen.convolve_kernels.MAX_RANK` dimensions. Float16 storage is read as float32; the
compute precision is ``p.dtype``'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelkit.runtime import DeviceRuntime
from specux._codegen import convolve_kernels as ck
from specux._runtime import device_array as da
from specux._runtime import fft_exec
from specux._runtime.device_array import DeviceArray
from specux._runtime.launch import check_index, launch_items

PUBLIC = "fftconvolve"

#: overlap-save is used along a single convolved axis when the longer input has at least OS_MIN_LONG points
#: and OS_RATIO times the shorter one's
OS_MIN_LONG = 1 << 16
OS_RATIO = 8
#: overlap-save block (FFT) length: the 7-smooth length of at least OS_FACTOR times the short length and
#: OS_MIN_BLOCK (short kernels would otherwise make blocks too small to be worth a launch)
OS_FACTOR = 4
OS_MIN_BLOCK = 1024
#: elements of one chunk's frame buffer, at most (unless a single frame of the whole batch is larger)
OS_CHUNK = 1 << 22


def smooth_length(n: int) -> int:
    """The smallest ``2^a 3^b 5^c 7^d >= n`` (n >= 1)."""
    n = int(n)
    best = 1 << max(0, (n - 1).bit_length())
    p7 = 1
    while p7 < best:
        p5 = p7
        while p5 < best:
            p3 = p5
            while p3 < best:
                m = p3
                while m < n:
                    m *= 2
                best = min(best, m)
                p3 *= 3
            p5 *= 5
        p7 *= 7
    return best


def _prod(values: Any) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


def _strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """C-contiguous strides in elements."""
    out = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        out[k] = out[k + 1] * int(shape[k + 1])
    return tuple(out)


def _broadcast_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Strides of a contiguous array of ``shape`` read over a larger grid: 0 along its axes of size 1."""
    return tuple(0 if s == 1 else st for s, st in zip(shape, _strides(shape)))


def _geometry(
    dims: tuple[int, ...],
    sa: tuple[int, ...],
    sb: tuple[int, ...] | None = None,
    sd: tuple[int, ...] | None = None,
    lim: tuple[int, ...] | None = None,
    ps: tuple[int, ...] | None = None,
) -> tuple[int, ...]:
    """The flat geometry table of a grid, with axes of size 1 dropped and neighbours that walk every
    operand linearly (and carry no bound) merged, so the kernels loop over as few axes as possible."""
    nd = len(dims)
    zero = (0,) * nd
    rows = [
        (int(dims[k]), sa[k], (sb or zero)[k], (sd or zero)[k], int((lim or dims)[k]), (ps or zero)[k])
        for k in range(nd)
        if dims[k] != 1
    ]
    merged: list[tuple[int, ...]] = []
    for row in rows:
        if merged:
            last = merged[-1]
            d1 = row[ck.DIM]
            free = last[ck.LIM] == last[ck.DIM] and row[ck.LIM] == row[ck.DIM]
            if free and all(last[f] == row[f] * d1 for f in (ck.SA, ck.SB, ck.SD, ck.PS)):
                size = last[ck.DIM] * d1
                merged[-1] = (size, row[ck.SA], row[ck.SB], row[ck.SD], size, row[ck.PS])
                continue
        merged.append(row)
    if not merged:
        merged = [(1, 0, 0, 0, 1, 0)]
    # overlap-save splits the convolved axis in two, so a grid may have one axis more than the inputs
    if len(merged) > ck.MAX_RANK + 1:  # pragma: no cover - the inputs' rank is checked first
        raise ValueError(f"{PUBLIC}: {len(merged)} grid axes exceed {ck.MAX_RANK + 1}")
    return tuple(v for row in merged for v in row)


def _table(rt: DeviceRuntime, geo: tuple[int, ...]) -> Any:
    return rt.table(("spx_conv_geo", geo), lambda: np.asarray(geo, dtype=np.int32))


def _dtype(prec: str, is_complex: bool) -> str:
    real = "float64" if prec == "f64" else "float32"
    return da.COMPLEX_OF[real] if is_complex else real


def _scalars(a: DeviceArray) -> int:
    return a.size * (2 if a.is_complex else 1)


def _pad(
    rt: DeviceRuntime,
    x: DeviceArray,
    dims: tuple[int, ...],
    sa: tuple[int, ...],
    prec: str,
    to_complex: bool,
    base: int = 0,
    lim: tuple[int, ...] | None = None,
    ps: tuple[int, ...] | None = None,
    pbase: int = 0,
    plen: int = 1,
) -> DeviceArray:
    """A new compute-precision array of shape ``dims``: ``x`` read through strides ``sa`` from ``base``
    where inside the bounds, zero elsewhere."""
    out = da.empty(rt, dims, _dtype(prec, to_complex))
    check_index(PUBLIC, _scalars(out))
    geo = _geometry(dims, sa, lim=lim, ps=ps)
    spec = ck.PadSpec(x.storage, x.is_complex, to_complex, prec)
    args = [out.buf, x.buf, _table(rt, geo), out.size, len(geo) // ck.GEO_FIELDS, base, pbase, plen]
    launch_items(rt, ck.render, spec, out.size, args)
    return out


def _product(
    rt: DeviceRuntime,
    a: DeviceArray,
    sa: tuple[int, ...],
    b: DeviceArray,
    sb: tuple[int, ...],
    dims: tuple[int, ...],
    prec: str,
    scale: float,
    base_a: int = 0,
    base_b: int = 0,
    conj_b: bool = False,
) -> DeviceArray:
    """A new compute-precision array of shape ``dims``: ``scale * a * b`` read through their strides
    (``scale * a * conj(b)`` with ``conj_b``)."""
    is_complex = a.is_complex or b.is_complex
    out = da.empty(rt, dims, _dtype(prec, is_complex))
    check_index(PUBLIC, _scalars(out))
    geo = _geometry(dims, sa, sb=sb)
    spec = ck.ProductSpec(a.storage, a.is_complex, b.storage, b.is_complex, prec, conj_b and b.is_complex)
    args = [out.buf, a.buf, b.buf, _table(rt, geo), out.size, len(geo) // ck.GEO_FIELDS, base_a, base_b]
    launch_items(rt, ck.render, spec, out.size, [*args, float(scale)])
    return out


def _crop(
    rt: DeviceRuntime,
    src: DeviceArray,
    sa: tuple[int, ...],
    base_a: int,
    dst: DeviceArray,
    sd: tuple[int, ...],
    base_d: int,
    dims: tuple[int, ...],
    prec: str,
    ps: tuple[int, ...] | None = None,
    pbase: int = 0,
    plen: int = 1,
) -> None:
    """``dst[base_d + c . sd] = src[base_a + c . sa]`` over the grid ``dims`` where the position is in
    ``[0, plen)``."""
    geo = _geometry(dims, sa, sd=sd, ps=ps)
    spec = ck.CropSpec(src.is_complex, prec, dst.storage)
    total = _prod(dims)
    args = [dst.buf, src.buf, _table(rt, geo), total, len(geo) // ck.GEO_FIELDS, base_a, base_d, pbase, plen]
    launch_items(rt, ck.render, spec, total, args)


def _forward(rt: DeviceRuntime, x: DeviceArray, axis: int, n: int) -> DeviceArray:
    return fft_exec.run_device(rt, "c2c" if x.is_complex else "r2c", x, axis, n, False, 1.0)


def _inverse(rt: DeviceRuntime, x: DeviceArray, axis: int, n: int, real: bool) -> DeviceArray:
    return fft_exec.run_device(rt, "c2r" if real else "c2c", x, axis, n, True, 1.0)


def use_overlap_save(p: Any, s1: tuple[int, ...], s2: tuple[int, ...]) -> bool:
    """Whether fftconvolve of inputs of shapes ``s1``, ``s2`` with parameters ``p`` takes the overlap-save
    path: one convolved axis, the longer input at least :data:`OS_MIN_LONG` points and :data:`OS_RATIO`
    times the shorter, and a block shorter than the direct transform."""
    if len(p.axes) != 1:
        return False
    ax = p.axes[0]
    long, short = max(s1[ax], s2[ax]), min(s1[ax], s2[ax])
    if long < OS_MIN_LONG or long < OS_RATIO * short:
        return False
    return block_length(short) < smooth_length(long + short - 1)


def block_length(short: int) -> int:
    """Overlap-save's FFT length for a short input of ``short`` points."""
    return smooth_length(max(OS_FACTOR * short, OS_MIN_BLOCK, short + 1))


def _spectra_product(
    rt: DeviceRuntime, a: DeviceArray, b: DeviceArray, p: Any, prec: str, is_complex: bool
) -> DeviceArray:
    """The direct path up to the inverse transforms' output (shape: L along convolved axes, the broadcast
    size elsewhere)."""
    nd = len(p.full_shape)
    lengths = {ax: smooth_length(p.full_shape[ax]) for ax in p.axes}
    last = p.axes[-1]

    def spectrum(x: DeviceArray) -> DeviceArray:
        dims = tuple(lengths.get(k, x.shape[k]) for k in range(nd))
        buf = _pad(rt, x, dims, _strides(x.shape), prec, is_complex, lim=x.shape)
        buf = _forward(rt, buf, last, lengths[last])
        for ax in p.axes[:-1]:
            buf = _forward(rt, buf, ax, lengths[ax])
        return buf

    fa = spectrum(a)
    fb = spectrum(b)
    dims = tuple(fa.shape[k] if k in lengths else max(fa.shape[k], fb.shape[k]) for k in range(nd))
    scale = 1.0 / _prod(lengths.values())
    y = _product(rt, fa, _broadcast_strides(fa.shape), fb, _broadcast_strides(fb.shape), dims, prec, scale)
    del fa, fb
    for ax in p.axes[:-1]:
        y = _inverse(rt, y, ax, lengths[ax], real=False)
    return _inverse(rt, y, last, lengths[last], real=not is_complex)


def _direct(rt: DeviceRuntime, a: DeviceArray, b: DeviceArray, p: Any, prec: str) -> DeviceArray:
    is_complex = da.host_dtype(p.dtype).kind == "c"
    y = _spectra_product(rt, a, b, p, prec, is_complex)
    out = da.empty(rt, p.out_shape, p.dtype)
    ys = _strides(y.shape)
    base = sum((f - o) // 2 * s for f, o, s in zip(p.full_shape, p.out_shape, ys))
    _crop(rt, y, ys, base, out, _strides(out.shape), 0, out.shape, prec)
    return out


def _broadcast(rt: DeviceRuntime, a: DeviceArray, b: DeviceArray, p: Any, prec: str) -> DeviceArray:
    """No convolved axis: the broadcast product, centred-cropped to ``p.out_shape`` through its strides."""
    sa, sb = _broadcast_strides(a.shape), _broadcast_strides(b.shape)
    start = [(f - o) // 2 for f, o in zip(p.full_shape, p.out_shape)]
    base_a = sum(c * s for c, s in zip(start, sa))
    base_b = sum(c * s for c, s in zip(start, sb))
    # numpy's result dtype of the pair is the product's: complex where either is, in the compute precision
    return _product(rt, a, sa, b, sb, tuple(p.out_shape), prec, 1.0, base_a, base_b)


def _overlap_save(rt: DeviceRuntime, a: DeviceArray, b: DeviceArray, p: Any, prec: str) -> DeviceArray:
    """The overlap-save path (see the module docstring); one ``rt.batch()`` per chunk, so that on Metal
    too a chunk's temporaries are released before the next chunk's are made."""
    ax = p.axes[0]
    x, h = (a, b) if a.shape[ax] >= b.shape[ax] else (b, a)
    n_long, n_short = x.shape[ax], h.shape[ax]
    nd = len(p.full_shape)
    full, shape = p.full_shape, p.out_shape
    start = [(f - o) // 2 for f, o in zip(full, shape)]
    is_complex = da.host_dtype(p.dtype).kind == "c"
    length = block_length(n_short)
    step = length - n_short + 1
    n_out = shape[ax]
    n_frames = -(-n_out // step)
    batch = _prod(full) // full[ax]
    per_chunk = min(n_frames, max(1, OS_CHUNK // (length * batch)))
    out = da.empty(rt, shape, p.dtype)
    before, after = (0,) * ax, (0,) * (nd - ax - 1)
    xs, os_ = _strides(x.shape), _strides(shape)
    with rt.batch():
        dims = (*h.shape[:ax], length, *h.shape[ax + 1 :])
        spec_h = _forward(rt, _pad(rt, h, dims, _strides(h.shape), prec, is_complex, lim=h.shape), ax, length)
    # the short input's spectrum seen on the product grid (pre, frames, bins, post): no stride over frames
    hs = _broadcast_strides(spec_h.shape)
    hs = (*hs[:ax], 0, *hs[ax:])
    for j0 in range(0, n_frames, per_chunk):
        count = min(per_chunk, n_frames - j0)
        first = start[ax] + j0 * step - (n_short - 1)
        with rt.batch():
            dims = (*x.shape[:ax], count, length, *x.shape[ax + 1 :])
            sa = (*xs[:ax], step * xs[ax], xs[ax], *xs[ax + 1 :])
            ps = (*before, step, 1, *after)
            frames = _pad(rt, x, dims, sa, prec, is_complex, first * xs[ax], None, ps, first, n_long)
            spec_x = _forward(rt, frames, ax + 1, length)
            del frames
            grid = (*full[:ax], count, spec_x.shape[ax + 1], *full[ax + 1 :])
            prod = _product(
                rt, spec_x, _broadcast_strides(spec_x.shape), spec_h, hs, grid, prec, 1.0 / length
            )
            del spec_x
            y = _inverse(rt, prod, ax + 1, length, real=not is_complex)
            del prod
            ys = _strides(y.shape)
            # y is (pre, frames, L, post); the valid samples of a frame are its last `step`
            sa = (*ys[:ax], ys[ax], ys[ax + 1], *ys[ax + 2 :])
            base = (n_short - 1) * ys[ax + 1]
            base += sum(start[k] * ys[k if k < ax else k + 1] for k in range(nd) if k != ax)
            sd = (*os_[:ax], step * os_[ax], os_[ax], *os_[ax + 1 :])
            dims = (*shape[:ax], count, step, *shape[ax + 1 :])
            _crop(rt, y, sa, base, out, sd, j0 * step * os_[ax], dims, prec, ps, j0 * step, n_out)
            del y
    return out


def _check_inputs(rt: DeviceRuntime, inputs: tuple[DeviceArray, ...], p: Any) -> str:
    """The compute precision, after refusing what the kernels cannot take (naming the argument)."""
    names = ("in2", "in1") if p.swapped else ("in1", "in2")
    for name, x in zip(names, inputs):
        if x.dtype not in da.STORAGE:
            raise TypeError(
                f"{PUBLIC}: {name} has dtype {x.dtype}; the generated kernels take float16, float32, "
                "float64, complex64 and complex128 (cast integers and bool to float64 first)"
            )
    ndim = len(inputs[0].shape)
    if ndim > ck.MAX_RANK:
        raise ValueError(
            f"{PUBLIC}: in1 and in2 have {ndim} dimensions (shapes {inputs[0].shape} and {inputs[1].shape}); "
            f"the generated kernels take at most {ck.MAX_RANK} (use backend='cpu', or merge axes)"
        )
    prec = "f64" if p.dtype in ("float64", "complex128") else "f32"
    if prec == "f64" and ("f64" not in rt.dialect.compute_precisions or not getattr(rt, "fp64", True)):
        raise TypeError(
            f"{PUBLIC}: in1 and in2 give a {p.dtype} result, which needs float64 on the device; this "
            f"{rt.name} device has none (pass float32 / complex64 inputs or use backend='cpu')"
        )
    for x in inputs:
        check_index(PUBLIC, _scalars(x))
    check_index(PUBLIC, _prod(p.out_shape) * (2 if da.host_dtype(p.dtype).kind == "c" else 1))
    return prec


def fftconvolve(rt: DeviceRuntime, inputs: tuple[DeviceArray, ...], p: Any) -> DeviceArray:
    """``(in1, in2)`` (already swapped as ``p`` says) convolved on the device; a new array of
    ``p.out_shape`` and ``p.dtype``."""
    a, b = inputs
    prec = _check_inputs(rt, inputs, p)
    if not p.axes:
        with rt.batch():
            return _broadcast(rt, a, b, p, prec)
    if use_overlap_save(p, a.shape, b.shape):
        return _overlap_save(rt, a, b, p, prec)
    with rt.batch():
        return _direct(rt, a, b, p, prec)


def _zeros(
    rt: DeviceRuntime, like: DeviceArray, dims: tuple[int, ...], prec: str, to_complex: bool
) -> DeviceArray:
    """A zeroed compute-precision array of shape ``dims`` (the pad kernel with no point inside its bounds;
    ``like`` is bound as its source and never read)."""
    return _pad(rt, like, dims, (0,) * len(dims), prec, to_complex, plen=0)


def _sum_into(
    rt: DeviceRuntime, src: DeviceArray, dst: DeviceArray, prec: str, reduced: tuple[int, ...]
) -> None:
    """``dst`` (C-contiguous) = ``src`` cropped from its origin to ``dst.shape`` and summed over the axes
    ``reduced`` (where ``dst`` has size 1), the real part for a real ``dst``."""
    ss = _strides(src.shape)
    nd = len(src.shape)
    out_geo = _geometry(dst.shape, ss)
    red_dims = tuple(src.shape[k] if k in reduced else 1 for k in range(nd))
    red_geo = _geometry(red_dims, ss)
    geo = out_geo + red_geo
    spec = ck.SumSpec(src.is_complex, prec, dst.storage, dst.is_complex)
    n_out, n_red = len(out_geo) // ck.GEO_FIELDS, len(red_geo) // ck.GEO_FIELDS
    args = [dst.buf, src.buf, _table(rt, geo), dst.size, n_out, n_red, _prod(red_dims), 0]
    launch_items(rt, ck.render, spec, dst.size, args)


def fftconvolve_adjoint(
    rt: DeviceRuntime, grad: DeviceArray, inputs: tuple[DeviceArray, ...], p: Any, which: int
) -> DeviceArray:
    """The gradient for ``inputs[which]`` of :func:`fftconvolve` (``inputs`` swapped as ``p`` says, as there)
    given the output's gradient ``grad`` (``p.out_shape``, ``p.dtype``): the valid correlation of the
    zero-embedded gradient with the other input's conjugate, summed over the axes along which the input was
    broadcast; a new array of the input's shape and dtype (see the module docstring)."""
    prec = _check_inputs(rt, inputs, p)
    if tuple(grad.shape) != tuple(p.out_shape) or grad.dtype != p.dtype:
        raise ValueError(
            f"{PUBLIC}: the output gradient has shape {grad.shape} and dtype {grad.dtype}; the output has "
            f"{p.out_shape} and {p.dtype}"
        )
    target, other = inputs[which], inputs[1 - which]
    is_complex = da.host_dtype(p.dtype).kind == "c"
    nd = len(p.full_shape)
    lengths = {ax: smooth_length(p.full_shape[ax]) for ax in p.axes}
    dims = tuple(lengths.get(k, p.full_shape[k]) for k in range(nd))
    start = [(f - o) // 2 for f, o in zip(p.full_shape, p.out_shape)]
    with rt.batch():
        check_index(PUBLIC, _prod(dims) * (2 if is_complex else 1))
        buf = _zeros(rt, grad, dims, prec, is_complex)
        bs = _strides(dims)
        base = sum(c * s for c, s in zip(start, bs))
        _crop(rt, grad, _strides(grad.shape), 0, buf, bs, base, tuple(grad.shape), prec)
        if p.axes:
            last = p.axes[-1]
            odims = tuple(lengths.get(k, other.shape[k]) for k in range(nd))
            spec_o = _pad(rt, other, odims, _strides(other.shape), prec, is_complex, lim=other.shape)
            spec_o = _forward(rt, spec_o, last, lengths[last])
            buf = _forward(rt, buf, last, lengths[last])
            for ax in p.axes[:-1]:
                spec_o = _forward(rt, spec_o, ax, lengths[ax])
                buf = _forward(rt, buf, ax, lengths[ax])
        else:
            spec_o = other
        scale = 1.0 / _prod(lengths.values())
        os_ = _broadcast_strides(spec_o.shape)
        y = _product(rt, buf, _strides(buf.shape), spec_o, os_, buf.shape, prec, scale, conj_b=True)
        del buf, spec_o
        if p.axes:
            for ax in p.axes[:-1]:
                y = _inverse(rt, y, ax, lengths[ax], real=False)
            y = _inverse(rt, y, last, lengths[last], real=not is_complex)
        out = da.empty(rt, target.shape, target.dtype)
        reduced = tuple(k for k in range(nd) if k not in p.axes and target.shape[k] == 1 and y.shape[k] != 1)
        _sum_into(rt, y, out, prec, reduced)
    return out
