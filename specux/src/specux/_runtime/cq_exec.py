"""cqt and vqt as generated kernels on any device runtime (the contract of :mod:`specux._backends.generated`).

The plan is the CPU's (:func:`specux._backends.cpu.cqt.vqt_plan`: early downsampling, the octaves' rates and
hops, the output's frame count); each step runs on the device, in one batch, with nothing coming back to the
host between octaves:

1. the resamplings (the early downsampling, then one halving wherever an octave's rate halves) as a
   decimating FIR (:func:`specux._codegen.cq_kernels.decimate`), scaled by ``sqrt(factor)`` as the CPU;
2. per octave, the unwindowed centred frames of its signal (the stft's frame kernel, every ``pad_mode``)
   and their real FFT;
3. the product of those spectra with the octave's frequency-domain basis
   (:func:`specux._filters.constant_q.vqt_fft_basis`, librosa's), kept sparse: each filter's support from
   its first to its last kept bin, packed, with the CPU's rate compensation and ``scale`` folded into the
   weights.

The CPU folds the FFT into time-domain weights (:func:`specux._filters.constant_q.vqt_frame_weights`);
both are the same linear map, so the results agree to float rounding.

Resamplers. ``"polyphase"`` is scipy's ``resample_poly`` filter itself (:func:`specux._resample_linear.
linear_form`), so it matches the CPU to float rounding. libsoxr runs only on a CPU, so the soxr qualities
use a linear-phase Kaiser-windowed FIR designed here to libsoxr's specification of that quality
(:func:`soxr_like_filter`: passband end, stopband begin and stopband attenuation from libsoxr's
``soxr_quality_spec``, zero delay, libsoxr's output count); the distance from libsoxr is measured in
``docs/specux/constant-q.md``. ``"soxr_qq"`` (libsoxr's cubic interpolation, no filter specification) is
not offered on a device.
"""

from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.signal

from kernelkit.runtime import DeviceRuntime
from specux._codegen import cq_kernels as ck
from specux._codegen import spectral_kernels as sk
from specux._filters import constant_q as cqf
from specux._runtime import device_array as da
from specux._runtime import fft_exec
from specux._runtime import spectral_exec as se
from specux._runtime.device_array import DeviceArray
from specux._runtime.launch import check_index, launch_items

__all__ = [
    "DEVICE_RES_TYPES",
    "ChromaCqtParams",
    "check_device_res_type",
    "chroma_cqt",
    "chroma_cqt_adjoint",
    "cqt",
    "soxr_like_filter",
    "soxr_spec",
    "vqt",
    "vqt_adjoint",
]

#: libsoxr's precision in bits of each quality (soxr_quality_spec: SOXR_LQ and SOXR_MQ are 16-bit,
#: SOXR_HQ is SOXR_20_BITQ, SOXR_VHQ is SOXR_28_BITQ)
_SOXR_BITS = {"soxr_lq": 16, "soxr_mq": 16, "soxr_hq": 20, "soxr_vhq": 28}
#: libsoxr's fixed passband end of SOXR_LQ (1385 / 2048 of the lower Nyquist frequency)
_LQ_PASSBAND = 1385 / 2048
#: the resamplers a device backend runs
DEVICE_RES_TYPES = ("soxr_vhq", "soxr_hq", "soxr_mq", "soxr_lq", "polyphase")


def check_device_res_type(res_type: str | None, public: str) -> None:
    """Refuse, before any work, a resampler the device backends do not run."""
    if res_type is not None and res_type not in DEVICE_RES_TYPES:
        allowed = ", ".join(repr(r) for r in (*DEVICE_RES_TYPES, None))
        raise ValueError(
            f"{public}: res_type={res_type!r} does not run on a device backend (libsoxr's quick cubic "
            f"interpolation has no filter specification to design to); on a device res_type must be one of "
            f"{allowed}, or pass backend='cpu'"
        )


def soxr_spec(res_type: str) -> tuple[float, float, float]:
    """(passband end, stopband begin, attenuation in dB) of libsoxr's quality ``res_type``, the band edges
    as fractions of the output's Nyquist frequency: libsoxr's ``soxr_quality_spec`` (rejection = precision
    x 20 log10(2); passband end ``1 - 0.05 / to_3dB(rejection)``, 1385 / 2048 for the low quality;
    stopband begin 1)."""
    bits = _SOXR_BITS[res_type]
    rejection = bits * 20.0 * math.log10(2.0)
    to_3db = (1.6e-6 * rejection - 7.5e-4) * rejection + 0.646
    passband = _LQ_PASSBAND if res_type == "soxr_lq" else 1.0 - 0.05 / to_3db
    return passband, 1.0, rejection


@functools.cache
def soxr_like_filter(factor: int, res_type: str) -> np.ndarray:
    """Taps (float64, odd length, symmetric: linear phase, centred on sample 0) of the decimation-by-
    ``factor`` filter designed to libsoxr's specification of ``res_type`` (:func:`soxr_spec`).

    A Kaiser window (Kaiser's formulas for the length and beta that reach the attenuation over the
    transition band) on the ideal low-pass cut at the middle of the transition band, unit gain at DC;
    lengthened, where Kaiser's length formula falls short (at 168 dB), until the passband deviation and the
    stopband stay within ``10 ** (-attenuation / 20)`` on a dense frequency grid.
    """
    passband, stopband, attenuation = soxr_spec(res_type)
    width = math.pi * (stopband - passband) / factor  # transition band, radians per input sample
    n_taps = math.ceil((attenuation - 7.95) / (2.285 * width))
    n_taps += 1 - n_taps % 2
    beta = 0.1102 * (attenuation - 8.7)
    cutoff = (passband + stopband) / 2.0 / factor  # of the input's Nyquist frequency
    ripple = 10.0 ** (-attenuation / 20.0)
    grid = 1 << max(16, math.ceil(math.log2(8 * n_taps)))
    w = np.linspace(0.0, 1.0, grid // 2 + 1)  # of the input's Nyquist frequency
    in_pass, in_stop = w <= passband / factor, w >= stopband / factor
    for _ in range(64):
        taps = scipy.signal.firwin(n_taps, cutoff, window=("kaiser", beta))
        H = np.abs(np.fft.rfft(taps, grid))
        if max(np.abs(H[in_pass] - 1.0).max(), H[in_stop].max()) <= ripple:
            break
        n_taps += 2 * factor
    return taps


@functools.cache
def _form(factor: int, res_type: str) -> tuple[np.ndarray, int, bool]:
    """(taps, k0, rounds) of the device's downsampler: ``y[m] = sum_j taps[j] x[factor m - k0 - j]`` for
    the first ``round(n / factor)`` (``rounds``, libsoxr's count) or ``ceil(n / factor)`` outputs."""
    if res_type == "polyphase":
        from specux._resample_linear import linear_form

        form = linear_form(factor, "polyphase")
        return np.asarray(form.taps, np.float64), int(form.k0), False
    taps = soxr_like_filter(factor, res_type)
    return taps, -(taps.size // 2), True


def _count(n_in: int, factor: int, rounds: bool) -> int:
    return (2 * n_in + factor) // (2 * factor) if rounds else -(-n_in // factor)


def _decimate(
    rt: DeviceRuntime, x: DeviceArray, factor: int, res_type: str, gain: float, dtype: str
) -> DeviceArray:
    """Rows ``x`` (B, n) downsampled by ``factor`` into (B, ceil(n / factor)) of ``dtype``, times ``gain``."""
    B, n_in = int(x.shape[0]), int(x.shape[1])
    n_out = -(-n_in // factor)
    taps, k0, rounds = _form(factor, res_type)
    out = da.empty(rt, (B, n_out), dtype)
    check_index("vqt", x.size, out.size)
    if out.size == 0:
        return out
    table = rt.table(("spx_cq_taps", factor, res_type, dtype), lambda: taps.astype(dtype))
    spec = ck.DecimateSpec(x.storage, da.STORAGE[dtype])
    count = min(n_out, _count(n_in, factor, rounds))
    args = [x.buf, table, out.buf, out.size, n_in, n_out, count, factor, k0, int(taps.size), float(gain)]
    launch_items(rt, ck.render, spec, out.size, args)
    return out


def _packed(basis: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(off, first, w)`` of the rows of a complex ``basis`` (k, bins): each row's support from its first to
    its last nonzero bin, the weights of those ranges packed one after another as (re, im) pairs."""
    nz = basis != 0
    has = nz.any(axis=1)
    lo = np.where(has, nz.argmax(axis=1), 0)
    hi = np.where(has, basis.shape[1] - nz[:, ::-1].argmax(axis=1), 0)
    off = np.zeros(basis.shape[0] + 1, np.int64)
    np.cumsum(hi - lo, out=off[1:])
    pieces = [basis[r, lo[r] : hi[r]] for r in range(basis.shape[0])]
    w = np.concatenate(pieces) if off[-1] else np.zeros(1, np.complex128)
    return off.astype(np.int32), lo.astype(np.int32), np.ascontiguousarray(w).view(np.float64)


def _octave_basis(p: Any, plan: Any, octave: Any) -> tuple[np.ndarray, int]:
    """The octave's frequency-domain basis (k, F or n_fft), complex128, with the CPU's column scale (rate
    compensation, ``scale``) applied, and its FFT size."""
    basis, n_fft = cqf.vqt_fft_basis(
        sr=octave.sr,
        freqs=octave.freqs,
        alpha=octave.alpha,
        filter_scale=p.filter_scale,
        norm=p.norm,
        sparsity=p.sparsity,
        window=p.window,
        gamma=p.gamma,
        dtype=np.complex128,
        two_sided=p.res_type is None,
    )
    column_scale = cqf.octave_column_scale(plan.sr, octave.sr, plan.lengths[octave.rows], p.scale)
    return basis * column_scale[:, None], n_fft


def _basis_tables(rt: DeviceRuntime, basis: np.ndarray, dtype: str) -> tuple[Any, Any, Any]:
    digest = hashlib.blake2b(np.ascontiguousarray(basis).tobytes(), digest_size=16).hexdigest()
    key = ("spx_cq_basis", digest, basis.shape)
    cached: dict[str, np.ndarray] = {}

    def part(name: str) -> np.ndarray:
        if not cached:
            cached["off"], cached["first"], cached["w"] = _packed(basis)
        return cached[name]

    return (
        rt.table((*key, "off"), lambda: part("off")),
        rt.table((*key, "first"), lambda: part("first")),
        rt.table((*key, dtype), lambda: part("w").astype(dtype)),
    )


def vqt(rt: DeviceRuntime, inputs: tuple[DeviceArray, ...], p: Any) -> DeviceArray:
    """The variable-Q transform of ``y`` (..., n) with :class:`specux._validate.VqtParams` ``p``:
    (..., n_bins, n_frames) complex of ``p.dtype``."""
    from specux._backends.cpu.cqt import output_frames, vqt_plan

    (y,) = inputs
    check_device_res_type(p.res_type, "vqt")
    plan = vqt_plan(p)
    n = int(y.shape[-1])
    batch = tuple(int(s) for s in y.shape[:-1])
    B = 1
    for s in batch:
        B *= s
    rdtype = da.REAL_OF[p.dtype]
    if plan.early_factor > 1 and n < plan.early_factor:
        raise ValueError(
            f"vqt: y has {n} samples, fewer than the early downsampling factor {plan.early_factor} of this "
            f"{len(plan.octaves)}-octave transform (as in librosa); use a longer signal, a smaller "
            "hop_length or res_type=None"
        )
    bases = [_octave_basis(p, plan, octave) for octave in plan.octaves]
    n_frames = output_frames(n, plan, [(None, n_fft) for _, n_fft in bases])
    out = da.empty(rt, (*batch, p.n_bins, n_frames), p.dtype)
    check_index("vqt", out.size * 2, y.size)
    if out.size == 0:
        return out
    with rt.batch():
        x = y.reshape(B, n)
        if plan.early_factor > 1:
            # librosa: downsampled with scale=True, and the energy scaling undone when scale is off
            gain = math.sqrt(plan.early_factor) * (1.0 if p.scale else math.sqrt(plan.early_factor))
            x = _decimate(rt, x, plan.early_factor, p.res_type, gain, rdtype)
        for i, (octave, (basis, n_fft)) in enumerate(zip(plan.octaves, bases)):
            if i > 0 and octave.sr != plan.octaves[i - 1].sr:
                x = _decimate(rt, x, 2, p.res_type, math.sqrt(2.0), rdtype)
            _octave_product(rt, x, basis, n_fft, octave, p, n_frames, out, rdtype)
    return out


def cqt(rt: DeviceRuntime, inputs: tuple[DeviceArray, ...], p: Any) -> DeviceArray:
    """:func:`vqt` (the front has set ``gamma=0`` and equal-tempered bins)."""
    return vqt(rt, inputs, p)


def _octave_product(
    rt: DeviceRuntime,
    x: DeviceArray,
    basis: np.ndarray,
    n_fft: int,
    octave: Any,
    p: Any,
    n_frames: int,
    out: DeviceArray,
    rdtype: str,
) -> None:
    """The responses of one octave's filters to the rows ``x`` (B, length) into rows ``octave.rows`` of
    ``out`` (B, n_bins, n_frames)."""
    B, length = int(x.shape[0]), int(x.shape[1])
    pad = n_fft // 2
    frames = se._frame(
        rt,
        x,
        B,
        length,
        n_fft,
        n_frames,
        octave.hop,
        pad,
        se._side_table(rt, length, pad, p.pad_mode),
        pad > 0,
        se._window(rt, np.ones(n_fft), rdtype),
        0,
        n_fft,
        rdtype,
        public="vqt",
    )
    X = fft_exec.run_device(rt, "r2c", frames, 1, n_fft, False, 1.0, da.COMPLEX_OF[rdtype])
    F = n_fft // 2 + 1
    off, first, w = _basis_tables(rt, basis, rdtype)
    k = basis.shape[0]
    total = B * k * n_frames
    check_index("vqt", 2 * X.size, 2 * total)
    spec = ck.CqProductSpec(da.STORAGE[rdtype], two_sided=p.res_type is None)
    rows = [p.n_bins, octave.rows.start]
    args = [X.buf, w, off, first, out.buf, total, k, F, n_fft, n_frames, n_frames, *rows]
    launch_items(rt, ck.render, spec, total, args)


# -- the adjoint (gradient with respect to the signal) ---------------------------------------------------


def _transposed(basis: np.ndarray, n_fft: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(off, filt, widx, flip)``: for each one-sided bin (``n_fft // 2 + 1``) the packed-weight entries of
    :func:`_packed` that read it, by filter: the filter, the weight's index, and whether the entry is a bin
    above Nyquist of a two-sided basis (which reads the bin's conjugate)."""
    off, first, _ = _packed(basis)
    n_f = n_fft // 2 + 1
    counts = np.diff(off)
    k = np.repeat(np.arange(basis.shape[0]), counts)
    j = np.arange(int(off[-1]))
    f = first[k] + j - off[k]
    flip = f >= n_f
    f = np.where(flip, n_fft - f, f)
    order = np.lexsort((flip, k, f))  # by bin, then filter
    t_off = np.zeros(n_f + 1, np.int64)
    np.cumsum(np.bincount(f, minlength=n_f), out=t_off[1:])

    def col(a: np.ndarray) -> np.ndarray:
        return (a[order] if a.size else np.zeros(1)).astype(np.int32)

    return t_off.astype(np.int32), col(k), col(j), col(flip.astype(np.int32))


def _transposed_tables(rt: DeviceRuntime, basis: np.ndarray, n_fft: int) -> tuple[Any, ...]:
    digest = hashlib.blake2b(np.ascontiguousarray(basis).tobytes(), digest_size=16).hexdigest()
    key = ("spx_cq_basis_t", digest, basis.shape, n_fft)
    cached: dict[str, np.ndarray] = {}

    def part(i: int) -> np.ndarray:
        if not cached:
            cached.update(zip("abcd", _transposed(basis, n_fft)))
        return cached["abcd"[i]]

    return tuple(rt.table((*key, i), lambda i=i: part(i)) for i in range(4))


def _decimate_adjoint(
    rt: DeviceRuntime,
    g: DeviceArray,
    n_in: int,
    factor: int,
    res_type: str | None,
    gain: float,
    base: DeviceArray | None = None,
) -> DeviceArray:
    """The transpose of :func:`_decimate` applied to ``g`` (B, ceil(n_in / factor)): (B, n_in), plus ``base``
    when given. ``factor=1`` (``res_type`` None) is the identity, which adds ``g`` to ``base``."""
    B, n_out = int(g.shape[0]), int(g.shape[1])
    if factor == 1:
        taps, k0, count = np.ones(1), 0, n_out
    else:
        taps, k0, rounds = _form(factor, res_type)
        count = min(n_out, _count(n_in, factor, rounds))
    dtype = g.dtype
    out = da.empty(rt, (B, n_in), dtype)
    check_index("vqt", g.size, out.size)
    if out.size == 0:
        return out
    table = rt.table(("spx_cq_taps", factor, res_type, dtype), lambda: taps.astype(dtype))
    spec = ck.DecimateAdjointSpec(da.STORAGE[dtype], accumulate=base is not None)
    args = [g.buf, table, (base if base is not None else g).buf, out.buf, out.size, n_in, n_out, count]
    args += [factor, k0, int(taps.size), float(gain)]
    launch_items(rt, ck.render, spec, out.size, args)
    return out


def vqt_adjoint(rt: DeviceRuntime, grad: DeviceArray, p: Any, n: int) -> DeviceArray:
    """The gradient (..., n) real with respect to the signal of :func:`vqt` with parameters ``p`` on signals
    of ``n`` samples, given the gradient ``grad`` (..., n_bins, n_frames) complex of its output (the transpose
    for the real inner product ``Re <a, b>``): per octave, from the lowest up, the basis product's transpose,
    the frames' and FFT's (:func:`specux._runtime.spectral_exec.stft_adjoint` of a boxcar stft), and the
    resamplings' transposes, each octave's gradient added to the signal it was computed from."""
    from specux._backends.cpu.cqt import output_frames, vqt_plan
    from specux._validate import StftParams

    check_device_res_type(p.res_type, "vqt")
    plan = vqt_plan(p)
    rdtype = da.REAL_OF[p.dtype]
    bases = [_octave_basis(p, plan, octave) for octave in plan.octaves]
    n_frames = output_frames(n, plan, [(None, n_fft) for _, n_fft in bases])
    if tuple(grad.shape[-2:]) != (p.n_bins, n_frames) or grad.dtype != p.dtype:
        raise ValueError(
            f"vqt_adjoint: the gradient must be {p.dtype} ending in ({p.n_bins}, {n_frames}); got "
            f"{grad.dtype} {grad.shape}"
        )
    batch = tuple(int(s) for s in grad.shape[:-2])
    B = 1
    for s in batch:
        B *= s
    g = grad.reshape(B, p.n_bins, n_frames)
    # the signal length of each octave's stage
    lengths, length = [], -(-n // plan.early_factor)
    for i, octave in enumerate(plan.octaves):
        if i > 0 and octave.sr != plan.octaves[i - 1].sr:
            length = -(-length // 2)
        lengths.append(length)
    with rt.batch():
        gx = None
        for i in range(len(plan.octaves) - 1, -1, -1):
            octave, (basis, n_fft) = plan.octaves[i], bases[i]
            F = n_fft // 2 + 1
            Xbar = da.empty(rt, (B, F, n_frames), da.COMPLEX_OF[rdtype])
            total = B * F * n_frames
            check_index("vqt", 2 * total, 2 * g.size)
            off, filt, widx, flip = _transposed_tables(rt, basis, n_fft)
            _, _, w = _basis_tables(rt, basis, rdtype)
            args = [g.buf, w, off, filt, widx, flip, Xbar.buf, total, F, n_frames]
            args += [p.n_bins, octave.rows.start]
            launch_items(rt, ck.render, ck.CqProductAdjointSpec(da.STORAGE[rdtype]), total, args)
            sp = StftParams(
                n_fft=n_fft,
                hop_length=octave.hop,
                win_length=n_fft,
                window=np.ones(n_fft),
                center=True,
                pad_mode=p.pad_mode,
                output="complex",
                dtype=rdtype,
                length=lengths[i],
                n_frames=n_frames,
            )
            own = se.stft_adjoint(rt, Xbar, sp).reshape(B, lengths[i])
            if gx is None:
                gx = own
            elif plan.octaves[i + 1].sr != octave.sr:
                gx = _decimate_adjoint(rt, gx, lengths[i], 2, p.res_type, math.sqrt(2.0), base=own)
            else:  # an odd hop: the next octave read the same signal
                gx = _decimate_adjoint(rt, gx, lengths[i], 1, None, 1.0, base=own)
        if plan.early_factor > 1:
            gain = math.sqrt(plan.early_factor) * (1.0 if p.scale else math.sqrt(plan.early_factor))
            gx = _decimate_adjoint(rt, gx, n, plan.early_factor, p.res_type, gain)
    return gx.reshape(*batch, n)


# -- chroma_cqt's folding ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChromaCqtParams:
    """What chroma_cqt does after (or instead of) the transform: ``vqt`` the transform's parameters (None
    when the input is a given constant-Q magnitude ``C``), ``fold`` the (n_chroma, n_bins) map of
    :func:`specux.filters.cq_to_chroma`, ``threshold`` (None: none) and the per-frame ``norm``."""

    vqt: Any
    fold: np.ndarray
    threshold: float | None
    norm: float | None


def chroma_cqt(rt: DeviceRuntime, inputs: tuple[DeviceArray, ...], p: ChromaCqtParams) -> DeviceArray:
    """chroma_cqt on the device: ``|vqt(y)|`` (or ``C`` as given, (..., n_bins, T) real), folded onto the
    pitch classes by the sparse bank kernel, values below ``p.threshold`` set to zero, then each frame
    divided by its ``p.norm`` (the kernels of :mod:`specux._runtime.feature_exec`). Not yet called by the
    public front (:func:`specux.chroma_cqt` folds on the host)."""
    from specux._runtime import feature_exec as fe

    (x,) = inputs
    with rt.batch():
        if p.vqt is not None:
            C = vqt(rt, (x,), p.vqt)
            mag = se._modulus(rt, C, sk.MOD_ABS)
        else:
            mag = x
        prec = da.STORAGE[fe._compute(mag.dtype)]
        chroma = fe.apply(rt, mag, fe.sparse(rt, p.fold, prec), public="chroma_cqt")
        if p.threshold is not None and chroma.size:
            args = [chroma.buf, chroma.size, float(p.threshold)]
            launch_items(rt, ck.render, ck.ThresholdSpec(chroma.storage), chroma.size, args)
        if p.norm is not None:
            fe.column_norm(rt, chroma, p.norm)
    return chroma


def chroma_cqt_adjoint(
    rt: DeviceRuntime, g: DeviceArray, y: DeviceArray, p: ChromaCqtParams, n: int
) -> DeviceArray:
    """Gradient (..., n) with respect to the signal ``y`` of :func:`chroma_cqt` (``p.vqt`` given), given the
    gradient ``g`` (..., n_chroma, T) of its output, all on the device: the transform and the fold
    recomputed, the threshold's and the norm's adjoint (one kernel,
    :func:`specux._runtime.feature_exec.column_norm_adjoint`), the fold's transpose, the modulus' adjoint
    (``g C / |C|``, 0 where C is 0) and :func:`vqt_adjoint`. The CPU backend's rule
    (:func:`specux.torch._ops_cq._chroma_cqt_backward`)."""
    from specux._runtime import feature_exec as fe

    if p.vqt is None:
        raise ValueError("chroma_cqt_adjoint: the parameters are those of a given C, not of a signal")
    with rt.batch():
        C = vqt(rt, (y,), p.vqt)
        mag = se._modulus(rt, C, sk.MOD_ABS)
        prec = da.STORAGE[fe._compute(mag.dtype)]
        g_chroma = g
        if p.norm is not None or p.threshold is not None:
            chroma = fe.apply(rt, mag, fe.sparse(rt, p.fold, prec), public="chroma_cqt")
            g_chroma = fe.column_norm_adjoint(rt, chroma, g, p.norm, p.threshold)
        g_mag = fe.bank_adjoint(rt, g_chroma, p.fold)
        gC = se.modulus_adjoint(rt, C, g_mag, sk.MOD_ABS)
        return vqt_adjoint(rt, gC, p.vqt, n)
