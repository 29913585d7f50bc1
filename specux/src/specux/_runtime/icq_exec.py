"""icqt and griffinlim_cqt as generated kernels on any device runtime (the contract of
:mod:`specux._backends.generated`).

The plan is the CPU's (:func:`specux._backends.cpu.icqt.icqt_plan`: the octaves' rates, hops and upsampling
factors, the frames ``length`` reads); per octave, on the device and in one batch:

1. the octave's frames through its memoised real synthesis weights (:func:`specux._backends.cpu.icqt.
   synthesis_weights`, the CPU's own table) and their overlap-add divided by the frame count, in one gather
   (:func:`specux._codegen.cq_kernels.icq_synth`);
2. the upsampling back to the full rate, added to the octaves below (:func:`specux._codegen.cq_kernels.
   interpolate`), which also zero-pads or cuts to ``length``.

Upsamplers: the CPU's own, in their measured linear form (:mod:`specux._upsample`), so the device matches
the CPU to float rounding. ``"polyphase"`` is scipy's ``resample_poly(x, factor, 1)`` (scipy designs one
filter for ``max(up, down)``, so this is ``factor`` times the transpose of the decimation by ``factor`` with
the same filter). libsoxr runs only on a CPU: the soxr qualities use libsoxr's measured taps
(:func:`specux._upsample.trimmed_form`: the response to one impulse, its tails below 1e-7 of the peak, which
are libsoxr's own float32 rounding, cut for float32; uncut in float64) and, for factors of 8 and more, the
measured start-up correction of the first 256 outputs, which libsoxr computes in stages whose start is not
one filter; the ``interpolate`` kernel adds it (its ``head`` variant). The distance from libsoxr is measured
in ``docs/specux/constant-q.md`` ("Inverse").

:func:`icqt_adjoint` is the transpose of that map (the gradient of torch's device op
``specux::icqt_device``): per octave, independently, the upsampler's transpose (a decimating correlation,
with the start-up rows' transpose where there are some: :func:`specux._codegen.cq_kernels.
interpolate_adjoint`) and the gather's (:func:`specux._codegen.cq_kernels.icq_synth_adjoint`), which writes
the octave's rows of the gradient.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernelkit.runtime import DeviceRuntime
from specux._codegen import cq_kernels as ck
from specux._runtime import device_array as da
from specux._runtime.cq_exec import check_device_res_type
from specux._runtime.device_array import DeviceArray
from specux._runtime.launch import check_index, launch_items

__all__ = ["GriffinLimCqtParams", "griffinlim_cqt", "icqt", "icqt_adjoint", "upsampler_form"]


#: the cut of libsoxr's measured taps in float32 (:func:`specux._upsample.trimmed_form`): below it their tails
#: are libsoxr's own float32 rounding; cutting there changes the upsampling by at most 3e-7 of its peak
FLOAT32_TAP_FLOOR = 1e-7


@functools.cache
def upsampler_form(factor: int, res_type: str, dtype: str = "float32") -> tuple[np.ndarray, int, np.ndarray]:
    """(taps float64, k0, head float64 (rows, cols)) of the device's upsampler by ``factor`` for rows of
    ``dtype``: ``y[j] = sum_m taps[j - factor m - k0] x[m] + sum_c head[j, c] x[c]`` for the ``factor * n``
    outputs (zero outside the signal; ``head`` empty where there is no start-up correction)."""
    from specux._upsample import _TAP_FLOOR, trimmed_form

    if factor == 1:
        return np.ones(1), 0, np.zeros((0, 0))
    floor = FLOAT32_TAP_FLOOR if res_type != "polyphase" and dtype != "float64" else _TAP_FLOOR
    form = trimmed_form(factor, res_type, floor)
    return np.asarray(form.taps, np.float64), int(form.k0), np.asarray(form.head, np.float64)


#: (weights, digest) by id of the CPU's memoised read-only synthesis weights (the reference keeps the id
#: from being reused while the entry lives); the digest names the device table
_digests: dict[int, tuple[np.ndarray, str]] = {}


def _digest(G: np.ndarray) -> str:
    hit = _digests.get(id(G))
    if hit is None or hit[0] is not G:
        if len(_digests) >= 256:
            _digests.clear()
        hit = (G, hashlib.blake2b(np.ascontiguousarray(G).tobytes(), digest_size=16).hexdigest())
        _digests[id(G)] = hit
    return hit[1]


def _synth(
    rt: DeviceRuntime, C: DeviceArray, B: int, p: Any, plan: Any, octave: Any, rdtype: str
) -> DeviceArray:
    """One octave's inverse STFT: (B, hop * (T - 1)) of ``rdtype``."""
    from specux._backends.cpu.icqt import synthesis_weights

    G, n_fft = synthesis_weights(p, plan, octave)
    T = plan.n_frames
    hop = octave.hop
    n_out = hop * (T - 1)
    out = da.empty(rt, (B, n_out), rdtype)
    if out.size == 0:
        return out
    check_index("icqt", 2 * C.size, G.size, out.size)
    table = rt.table(("spx_icq_weights", _digest(G), G.shape, rdtype), lambda: np.asarray(G, rdtype))
    k = octave.rows.stop - octave.rows.start
    args = [C.buf, table, out.buf, out.size, n_out, k, p.n_bins, octave.rows.start, int(C.shape[-1]), T]
    args += [hop, n_fft, n_fft // 2]
    launch_items(rt, ck.render, ck.IcqSynthSpec(da.STORAGE[rdtype]), out.size, args)
    return out


def _interpolate(
    rt: DeviceRuntime,
    x: DeviceArray,
    factor: int,
    res_type: str,
    n_dst: int,
    base: DeviceArray | None,
) -> DeviceArray:
    """Rows ``x`` (B, n) upsampled by ``factor`` into (B, n_dst) (zero past ``factor * n``), plus ``base``."""
    B, n_in = int(x.shape[0]), int(x.shape[1])
    dtype = x.dtype
    out = da.empty(rt, (B, n_dst), dtype)
    if out.size == 0:
        return out
    check_index("icqt", x.size, out.size)
    table, fir, head = _upsampler_tables(rt, factor, res_type, dtype)
    spec = ck.InterpolateSpec(da.STORAGE[dtype], accumulate=base is not None, head=bool(head))
    src = x if x.size else out  # an empty octave reads nothing; any valid buffer stands in
    args = [src.buf, table, (base if base is not None else out).buf, out.buf, out.size, n_in, n_dst]
    args += [min(n_dst, factor * n_in), *fir, *head]
    launch_items(rt, ck.render, spec, out.size, args)
    return out


def _upsampler_tables(rt: DeviceRuntime, factor: int, res_type: str, dtype: str) -> tuple[Any, list, list]:
    """The device tables of :func:`upsampler_form`: (taps table, [factor, k0, n_taps], the head's arguments
    [table, rows, columns] or [] where there is no start-up correction), shared by the upsampler and its
    transpose."""
    taps, k0, head = upsampler_form(factor, res_type, str(dtype))
    table = rt.table(("spx_icq_taps", factor, res_type, dtype), lambda: taps.astype(dtype))
    head_args: list = []
    if head.size:
        check_index("icqt", head.size)
        key = ("spx_icq_head", factor, res_type, dtype)
        head_args = [rt.table(key, lambda: head.astype(dtype)), *head.shape]
    return table, [factor, k0, int(taps.size)], head_args


def icqt(rt: DeviceRuntime, inputs: tuple[DeviceArray, ...], p: Any) -> DeviceArray:
    """The inverse constant-Q transform of ``C`` (..., n_bins, T) complex of ``p.dtype``'s precision with
    :class:`specux._validate.IcqtParams` ``p``: (..., n) real of ``p.dtype``."""
    from specux._backends.cpu.icqt import icqt_plan

    (C,) = inputs
    check_device_res_type(p.res_type, "icqt")
    rdtype = p.dtype
    if C.dtype != da.COMPLEX_OF[rdtype]:
        raise TypeError(f"icqt: the device kernels take {da.COMPLEX_OF[rdtype]} responses; got {C.dtype}")
    lead = tuple(int(s) for s in C.shape[:-2])
    B = 1
    for s in lead:
        B *= s
    T_src = int(C.shape[-1])
    plan = icqt_plan(p, T_src)
    n_full = p.hop_length * (plan.n_frames - 1)
    n_dst = p.length if p.length else n_full
    if n_dst == 0 or B == 0:
        return da.empty(rt, (*lead, n_dst), rdtype)
    x = C.reshape(B, p.n_bins, T_src)
    y = None
    with rt.batch():
        for octave in plan.octaves:
            part = _synth(rt, x, B, p, plan, octave, rdtype)
            y = _interpolate(rt, part, octave.factor, p.res_type, n_dst, y)
    assert y is not None
    return y.reshape(*lead, n_dst)


def _interpolate_adjoint(
    rt: DeviceRuntime, g: DeviceArray, n_in: int, factor: int, res_type: str
) -> DeviceArray:
    """The transpose of :func:`_interpolate` (without its ``base``) applied to ``g`` (B, n_dst): (B, n_in)."""
    B, n_dst = int(g.shape[0]), int(g.shape[1])
    dtype = g.dtype
    out = da.empty(rt, (B, n_in), dtype)
    if out.size == 0:
        return out
    table, fir, head = _upsampler_tables(rt, factor, res_type, dtype)
    # the kernel's output indices reach factor * n_in + k0 + n_taps
    check_index("icqt", g.size, out.size, factor * n_in + abs(fir[1]) + fir[2])
    spec = ck.InterpolateAdjointSpec(da.STORAGE[dtype], head=bool(head))
    src = g if g.size else out  # nothing to read (n_dst 0): any valid buffer stands in
    args = [src.buf, table, out.buf, out.size, n_in, n_dst, min(n_dst, factor * n_in), *fir, *head]
    launch_items(rt, ck.render, spec, out.size, args)
    return out


def _synth_adjoint(
    rt: DeviceRuntime, g: DeviceArray, out: DeviceArray, p: Any, plan: Any, octave: Any
) -> None:
    """The transpose of :func:`_synth`: the gradient ``g`` (B, hop * (T - 1)) of one octave's signal into
    that octave's rows of ``out`` (B, n_bins, t_src) complex (every frame written, 0 past the frames read)."""
    from specux._backends.cpu.icqt import synthesis_weights

    G, n_fft = synthesis_weights(p, plan, octave)
    B, t_src = int(out.shape[0]), int(out.shape[-1])
    k = octave.rows.stop - octave.rows.start
    total = B * k * t_src
    if total == 0:
        return
    rdtype = p.dtype
    check_index("icqt", 2 * out.size, G.size, g.size)
    table = rt.table(("spx_icq_weights", _digest(G), G.shape, rdtype), lambda: np.asarray(G, rdtype))
    src = g if g.size else out  # one frame: no signal, a zero gradient; any valid buffer stands in
    args = [src.buf, table, out.buf, total, int(g.shape[-1]), k, p.n_bins, octave.rows.start, t_src]
    args += [plan.n_frames, octave.hop, n_fft, n_fft // 2]
    launch_items(rt, ck.render, ck.IcqSynthAdjointSpec(da.STORAGE[rdtype]), total, args)


def icqt_adjoint(rt: DeviceRuntime, grad: DeviceArray, p: Any, n_frames: int) -> DeviceArray:
    """The gradient (..., n_bins, n_frames) complex with respect to ``C`` of :func:`icqt` with parameters
    ``p`` on responses of ``n_frames`` frames, given the gradient ``grad`` (..., n) real of its output: the
    transpose for the real inner products (real part the gradient of ``Re C``, imaginary part that of ``Im
    C``, as :func:`specux._backends.cpu.icqt.icqt_adjoint` on the CPU); frames past ``length``'s reach get
    0."""
    from specux._backends.cpu.icqt import icqt_plan

    check_device_res_type(p.res_type, "icqt")
    rdtype = p.dtype
    plan = icqt_plan(p, n_frames)
    n_dst = p.length if p.length else p.hop_length * (plan.n_frames - 1)
    if int(grad.shape[-1]) != n_dst or grad.dtype != rdtype:
        raise ValueError(
            f"icqt_adjoint: the gradient must be {rdtype} ending in ({n_dst},); got {grad.dtype} {grad.shape}"
        )
    lead = tuple(int(s) for s in grad.shape[:-1])
    B = 1
    for s in lead:
        B *= s
    out = da.empty(rt, (B, p.n_bins, n_frames), da.COMPLEX_OF[rdtype])
    if out.size == 0:
        return out.reshape(*lead, p.n_bins, n_frames)
    g = grad.reshape(B, n_dst)
    with rt.batch():
        # the forward sums the octaves' upsampled signals: each octave's gradient is independent of the others
        for octave in plan.octaves:
            part = _interpolate_adjoint(rt, g, octave.hop * (plan.n_frames - 1), octave.factor, p.res_type)
            _synth_adjoint(rt, part, out, p, plan, octave)
    return out.reshape(*lead, p.n_bins, n_frames)


@dataclass(frozen=True)
class GriffinLimCqtParams:
    """One griffinlim_cqt call on a device: the inverse's and the forward's validated parameters, the start
    phases (host complex64, the CPU's), the iterations and the momentum."""

    icqt: Any
    vqt: Any
    angles: np.ndarray
    n_iter: int
    momentum: float


def griffinlim_cqt(rt: DeviceRuntime, inputs: tuple[DeviceArray, ...], p: GriffinLimCqtParams) -> DeviceArray:
    """Fast Griffin-Lim over the device's icqt and vqt: each iteration uploads the estimate, inverts it and
    transforms the signal again on the device (the signal never leaves it), downloads the responses and
    projects them on the host with the CPU's loop (:func:`specux._phase_retrieval.fast_griffin_lim`,
    the same order of operations); the last estimate is inverted on the device."""
    from specux import _phase_retrieval
    from specux._runtime import cq_exec

    (S_dev,) = inputs
    S = da.download(rt, S_dev)
    n_frames = S.shape[-1]
    cdtype = da.COMPLEX_OF[p.icqt.dtype]
    eps = float(np.finfo(np.float32).tiny)

    def invert(X: np.ndarray) -> DeviceArray:
        return icqt(rt, (da.upload(rt, np.ascontiguousarray(X, dtype=cdtype)),), p.icqt)

    def rebuild(X: np.ndarray) -> np.ndarray:
        R = da.download(rt, cq_exec.vqt(rt, (invert(X),), p.vqt))
        if R.shape[-1] != n_frames:  # a length that gives another frame count: fit C's frames
            fixed = np.zeros((*R.shape[:-1], n_frames), R.dtype)
            k = min(n_frames, R.shape[-1])
            fixed[..., :k] = R[..., :k]
            R = fixed
        return R

    def project(a: np.ndarray) -> np.ndarray:
        phase = a.astype(np.complex64)
        phase /= np.abs(phase) + np.float32(eps)
        return S * phase

    X = _phase_retrieval.fast_griffin_lim(
        S, p.angles, n_iter=p.n_iter, momentum=p.momentum, rebuild=rebuild, eps=eps, project=project
    )
    return invert(X)
