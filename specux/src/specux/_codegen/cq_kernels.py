"""Kernel templates of the constant-Q family (cqt, vqt) on a device, written once for every dialect.

The transform is librosa's multirate algorithm as :mod:`specux._backends.cpu.cqt` plans it; what runs on the
device is (see :mod:`specux._runtime.cq_exec`): a decimating FIR per resampling, the framing and FFT of the
stft family (:mod:`specux._codegen.spectral_kernels`, :mod:`specux._codegen.fft_kernels`), and the product of
each octave's spectra with its sparse frequency-domain basis:

``decimate``
    ``dst[b, m] = gain * sum_j taps[j] * src[b, factor * m - k0 - j]`` for ``m < count`` (the signal zero
    outside ``[0, n_in)``), 0 for ``count <= m < n_out``: the linear form of a downsampler
    (:class:`specux._resample_linear.LinearForm`). One thread per output sample, taps in increasing order:
    a non-finite input reaches only the outputs whose taps cover it.
``cq_product``
    ``dst[b, row0 + k, t] = sum_j w[j] * X[b, first[k] + j - off[k], t]`` over the packed support of
    filter ``k`` (complex weights, row offsets ``off``), for the first ``t_out`` frames of the octave's
    spectra ``X`` (B, F, t_src). With ``two_sided`` a bin ``f >= F`` reads ``conj(X[n_fft - f])`` (the
    spectrum of a real frame), which serves ``res_type=None``'s full-spectrum basis. One thread per output
    element, ``t`` fastest: the loads of a warp are coalesced over frames and the weights broadcast.

``decimate_adjoint``
    The transpose of ``decimate``: ``dst[b, n] = base[b, n] + gain * sum_m taps[factor * m - k0 - n] *
    g[b, m]`` over the outputs ``m < count`` whose taps reach ``n``, in increasing ``m`` (a gather: no
    atomics, deterministic); ``base`` (``accumulate``) is the gradient the signal already has from its own
    octave's frames.
``cq_product_adjoint``
    The transpose (for the real inner product ``Re <a, b>``) of ``cq_product``: ``dst[b, f, t] = sum
    conj(w) * g[b, row0 + k, t]`` over the filters whose support holds bin ``f``, from a transposed table of
    (filter, weight index, flipped) entries per bin; an entry from a bin above Nyquist of the two-sided
    basis adds ``w * conj(g)``. A gather per bin, filters in increasing order.

``icq_synth``
    The inverse's frames and overlap-add in one gather (:mod:`specux._runtime.icq_exec`): ``dst[b, n] =
    sum_t sum_c (Re C[b, row0 + c, t] G[2 c, s] + Im C[b, row0 + c, t] G[2 c + 1, s]) / count`` with ``s = n
    + pad - t hop`` over the ``count`` frames ``t < T`` whose ``n_fft`` samples hold ``n + pad`` (1 where none
    does): librosa's inverse STFT with a window of ones of the octave's responses, given its real synthesis
    weights ``G`` (2 k, n_fft). One thread per output sample, frames then filters in increasing order: no
    atomics, deterministic.
``interpolate``
    An integer-factor upsampler in its linear form (:class:`specux._upsample.UpsampleForm` without a start-up
    correction): ``dst[b, j] = base[b, j] + sum_m taps[j - factor m - k0] src[b, m]`` over the inputs ``m <
    n_in`` whose taps reach ``j``, for ``j < n_valid`` (``base`` alone from there to ``n_dst``, which
    zero-pads or cuts the output as ``length`` asks); ``accumulate`` adds ``base`` (the octaves summed so
    far). A gather, increasing ``m``. With ``head`` the upsampler's start-up correction is added too: ``dst[b,
    j] += sum_c H[j, c] src[b, c]`` over ``c < min(n_head_cols, n_in)`` for ``j < min(n_head_rows, n_valid)``
    (``H`` row-major (n_head_rows, n_head_cols), after the taps, increasing ``c``): libsoxr's measured linear
    map (:func:`specux._upsample.trimmed_form`) with its multi-stage start-up.
``icq_synth_adjoint``
    The transpose of ``icq_synth`` (for the real inner products of ``C``'s real and imaginary parts and of
    the signal): ``dst[b, row0 + c, t] = sum_s (G[2 c, s] + i G[2 c + 1, s]) h[b, t hop + s - pad]`` with
    ``h[n] = g[b, n] / count(n)`` (the forward's frame count, 1 where none), over the ``s < n_fft`` whose
    sample lies in ``[0, n_out)``, for ``t < n_t``; 0 for the frames ``n_t <= t < t_src`` the inverse does
    not read. The real / imaginary parts are the gradients of the real / imaginary parts of ``C`` (torch's
    convention). A gather: one thread per response, ``t`` fastest, increasing ``s``; no atomics.
``interpolate_adjoint``
    The transpose of ``interpolate`` without its ``base``: a decimating correlation ``dst[b, m] = sum_j
    taps[j - factor m - k0] g[b, j]`` over ``j < n_valid`` in increasing order, for ``m < n_in``; with
    ``head`` then ``+= sum_j H[j, m] g[b, j]`` over ``j < min(n_head_rows, n_valid)`` for ``m <
    min(n_head_cols, n_in)`` (the start-up rows' transpose). One thread per output sample, no atomics.
``threshold``
    chroma_cqt's ``chroma[chroma < threshold] = 0`` in place (NaN kept: ``NaN < threshold`` is false).

Runtime sizes are kernel arguments; a spec fixes the storage, the compute precision and the structure.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelkit.dialects import COMPUTE_OF, Dialect, Param
from kernelkit.emitter import Emitter
from specux._codegen.blocks import DEFAULT_BLOCK, Blocked, index, variants
from specux._codegen.fft_kernels import KernelSource

#: threads per block by default: every kernel here takes the plan's choice (see :mod:`specux._codegen.blocks`)
BLOCK = DEFAULT_BLOCK


@dataclass(frozen=True)
class DecimateSpec(Blocked):
    """A decimating FIR from ``in_storage`` rows into rows of the compute precision ``prec``."""

    in_storage: str
    prec: str


@dataclass(frozen=True)
class CqProductSpec(Blocked):
    """The sparse product of one octave's spectra (compute precision ``prec``) with its basis."""

    prec: str
    two_sided: bool = False


@dataclass(frozen=True)
class DecimateAdjointSpec(Blocked):
    """The transpose of a decimating FIR, in the compute precision ``prec``."""

    prec: str
    accumulate: bool = False


@dataclass(frozen=True)
class CqProductAdjointSpec(Blocked):
    """The transpose of the sparse basis product, in the compute precision ``prec``."""

    prec: str


@dataclass(frozen=True)
class ThresholdSpec(Blocked):
    """Values below a threshold set to zero, in place, in the compute precision ``prec``."""

    prec: str


@dataclass(frozen=True)
class IcqSynthSpec(Blocked):
    """The inverse STFT of one octave's responses through its synthesis weights, in precision ``prec``."""

    prec: str


@dataclass(frozen=True)
class InterpolateSpec(Blocked):
    """An integer-factor interpolating FIR, in the compute precision ``prec``."""

    prec: str
    accumulate: bool = False
    head: bool = False


@dataclass(frozen=True)
class IcqSynthAdjointSpec(Blocked):
    """The transpose of :class:`IcqSynthSpec`'s gather, in the compute precision ``prec``."""

    prec: str


@dataclass(frozen=True)
class InterpolateAdjointSpec(Blocked):
    """The transpose of :class:`InterpolateSpec`'s FIR (and of its start-up rows with ``head``), in the
    compute precision ``prec``."""

    prec: str
    head: bool = False


def _ptr(name: str, kind: str, const: bool = True) -> Param:
    return Param(name, kind, pointer=True, const=const)


#: the sizes of icq_synth and of its transpose, after their three buffers
_SYNTH_SIZES = tuple(
    Param(n, "int")
    for n in ("total", "n_out", "n_k", "n_bins", "row0", "t_src", "n_t", "hop", "n_fft", "pad")
)
#: the sizes of interpolate and of its transpose, after their buffers
_FIR_SIZES = tuple(Param(n, "int") for n in ("total", "n_in", "n_dst", "n_valid", "factor", "k0", "n_taps"))


def _head_params(prec: str) -> tuple[Param, ...]:
    """The start-up rows of interpolate's and its transpose's ``head`` variants."""
    return (_ptr("head", prec), Param("n_head_rows", "int"), Param("n_head_cols", "int"))


def _header(e: Emitter, *kinds: str) -> None:
    e.line(e.d.prelude({COMPUTE_OF[k] for k in kinds} | set(kinds)))


def decimate(spec: DecimateSpec, d: Dialect) -> KernelSource:
    """The decimating FIR of ``spec`` in dialect ``d``."""
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, spec.in_storage, prec)
    name = "spx_cq_decimate"
    params = (
        _ptr("src", spec.in_storage),
        _ptr("taps", prec),
        _ptr("dst", prec, const=False),
        Param("total", "int"),
        Param("n_in", "int"),
        Param("n_out", "int"),
        Param("count", "int"),
        Param("factor", "int"),
        Param("k0", "int"),
        Param("n_taps", "int"),
        Param("gain", prec),
    )
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            e.line("const int m = i % n_out;")
            e.line("const int b = i / n_out;")
            e.line(f"{R} acc = {d.literal(0.0, prec)};")
            with e.block("if (m < count)"):
                # input index factor * m - k0 - j must lie in [0, n_in)
                e.line("const int c = factor * m - k0;")
                e.line("const int j0 = c - n_in + 1 > 0 ? c - n_in + 1 : 0;")
                e.line("const int j1 = c < n_taps - 1 ? c : n_taps - 1;")
                e.line("const int base = b * n_in + c;")
                with e.block("for (int j = j0; j <= j1; ++j)"):
                    e.line(f"acc += taps[j] * ({R})" + d.load_real(spec.in_storage, "src", "base - j") + ";")
                e.line("acc = acc * gain;")
            e.line(d.store_real(prec, "dst", "i", "acc"))
    return KernelSource(name, e.text(), params, spec.block)


def cq_product(spec: CqProductSpec, d: Dialect) -> KernelSource:
    """The sparse basis product of ``spec`` in dialect ``d``."""
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, prec)
    name = "spx_cq_product" + ("2" if spec.two_sided else "1")
    params = (
        _ptr("X", prec),
        _ptr("w", prec),
        _ptr("off", "int"),
        _ptr("first", "int"),
        _ptr("dst", prec, const=False),
        Param("total", "int"),
        Param("n_k", "int"),
        Param("n_f", "int"),
        Param("n_fft", "int"),
        Param("t_src", "int"),
        Param("t_out", "int"),
        Param("n_bins", "int"),
        Param("row0", "int"),
    )
    zero = d.literal(0.0, prec)
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            e.line("const int t = i % t_out;")
            e.line("const int q = i / t_out;")
            e.line("const int k = q % n_k;")
            e.line("const int b = q / n_k;")
            e.line("const int j0 = off[k];")
            e.line("const int j1 = off[k + 1];")
            e.line("const int f0 = first[k] - j0;")
            e.line("const int base = b * n_f * t_src + t;")
            e.line(f"{R} re = {zero};")
            e.line(f"{R} im = {zero};")
            with e.block("for (int j = j0; j < j1; ++j)"):
                e.line("int f = f0 + j;")
                if spec.two_sided:
                    # a real frame's spectrum: bin n_fft - f is the conjugate of bin f
                    e.line(f"{R} sign = {d.literal(1.0, prec)};")
                    with e.block("if (f >= n_f)"):
                        e.line("f = n_fft - f;")
                        e.line(f"sign = {d.literal(-1.0, prec)};")
                e.line("const int at = 2 * (base + f * t_src);")
                e.line(f"const {R} xr = X[at];")
                e.line(f"const {R} xi = " + ("sign * X[at + 1];" if spec.two_sided else "X[at + 1];"))
                e.line(f"const {R} wr = w[2 * j];")
                e.line(f"const {R} wi = w[2 * j + 1];")
                e.line("re += wr * xr - wi * xi;")
                e.line("im += wr * xi + wi * xr;")
            e.line("const int o = 2 * ((b * n_bins + row0 + k) * t_out + t);")
            e.line("dst[o] = re;")
            e.line("dst[o + 1] = im;")
    return KernelSource(name, e.text(), params, spec.block)


def decimate_adjoint(spec: DecimateAdjointSpec, d: Dialect) -> KernelSource:
    """The transpose of the decimating FIR (see the module docstring)."""
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, prec)
    name = "spx_cq_decimate_adjoint" + ("_acc" if spec.accumulate else "")
    params = (
        _ptr("g", prec),
        _ptr("taps", prec),
        _ptr("base", prec),
        _ptr("dst", prec, const=False),
        Param("total", "int"),
        Param("n_in", "int"),
        Param("n_out", "int"),
        Param("count", "int"),
        Param("factor", "int"),
        Param("k0", "int"),
        Param("n_taps", "int"),
        Param("gain", prec),
    )
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            e.line("const int n = i % n_in;")
            e.line("const int b = i / n_in;")
            # taps index j = factor * m - k0 - n in [0, n_taps): m from ceil((n + k0) / factor)
            e.line("const int lo = n + k0;")
            e.line("int m0 = lo >= 0 ? (lo + factor - 1) / factor : -((-lo) / factor);")
            e.line("if (m0 < 0) m0 = 0;")
            e.line("const int hi = n + k0 + n_taps - 1;")
            e.line("int m1 = hi >= 0 ? hi / factor : -1;")
            e.line("if (m1 > count - 1) m1 = count - 1;")
            e.line(f"{R} acc = {d.literal(0.0, prec)};")
            with e.block("for (int m = m0; m <= m1; ++m)"):
                e.line("acc += taps[factor * m - lo] * g[b * n_out + m];")
            e.line("acc = acc * gain;")
            if spec.accumulate:
                e.line("acc = base[i] + acc;")
            e.line("dst[i] = acc;")
    return KernelSource(name, e.text(), params, spec.block)


def cq_product_adjoint(spec: CqProductAdjointSpec, d: Dialect) -> KernelSource:
    """The transpose of the sparse basis product (see the module docstring)."""
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, prec)
    name = "spx_cq_product_adjoint"
    params = (
        _ptr("g", prec),
        _ptr("w", prec),
        _ptr("off", "int"),
        _ptr("filt", "int"),
        _ptr("widx", "int"),
        _ptr("flip", "int"),
        _ptr("dst", prec, const=False),
        Param("total", "int"),
        Param("n_f", "int"),
        Param("t_out", "int"),
        Param("n_bins", "int"),
        Param("row0", "int"),
    )
    zero = d.literal(0.0, prec)
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            e.line("const int t = i % t_out;")
            e.line("const int q = i / t_out;")
            e.line("const int f = q % n_f;")
            e.line("const int b = q / n_f;")
            e.line(f"{R} re = {zero};")
            e.line(f"{R} im = {zero};")
            with e.block("for (int c = off[f]; c < off[f + 1]; ++c)"):
                e.line("const int j = widx[c];")
                e.line("const int at = 2 * ((b * n_bins + row0 + filt[c]) * t_out + t);")
                e.line(f"const {R} gr = g[at];")
                # conj(w) g for a direct entry, w conj(g) for one from a bin above Nyquist
                e.line(f"const {R} gi = flip[c] ? -g[at + 1] : g[at + 1];")
                e.line(f"const {R} wr = w[2 * j];")
                e.line(f"const {R} wi = flip[c] ? w[2 * j + 1] : -w[2 * j + 1];")
                e.line("re += wr * gr - wi * gi;")
                e.line("im += wr * gi + wi * gr;")
            e.line("dst[2 * i] = re;")
            e.line("dst[2 * i + 1] = im;")
    return KernelSource(name, e.text(), params, spec.block)


def threshold(spec: ThresholdSpec, d: Dialect) -> KernelSource:
    """``x[i] = x[i] < limit ? 0 : x[i]`` for ``i < total``."""
    prec = spec.prec
    e = Emitter(d)
    _header(e, prec)
    name = "spx_cq_threshold"
    params = (_ptr("x", prec, const=False), Param("total", "int"), Param("limit", prec))
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            e.line(f"if (x[i] < limit) x[i] = {d.literal(0.0, prec)};")
    return KernelSource(name, e.text(), params, spec.block)


def icq_synth(spec: IcqSynthSpec, d: Dialect) -> KernelSource:
    """The inverse's frames and overlap-add (see the module docstring)."""
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, prec)
    name = "spx_icq_synth"
    params = (_ptr("C", prec), _ptr("G", prec), _ptr("dst", prec, const=False), *_SYNTH_SIZES)
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            e.line("const int n = i % n_out;")
            e.line("const int b = i / n_out;")
            e.line("const int a = n + pad;")  # the sample's index in the overlap-added signal
            e.line("int t1 = a / hop;")
            e.line("if (t1 > n_t - 1) t1 = n_t - 1;")
            e.line("const int lo = a - n_fft + 1;")
            e.line("const int t0 = lo > 0 ? (lo + hop - 1) / hop : 0;")
            e.line(f"{R} acc = {d.literal(0.0, prec)};")
            with e.block("for (int t = t0; t <= t1; ++t)"):
                e.line("const int s = a - t * hop;")
                with e.block("for (int c = 0; c < n_k; ++c)"):
                    e.line("const int at = 2 * ((b * n_bins + row0 + c) * t_src + t);")
                    e.line("acc += C[at] * G[2 * c * n_fft + s] + C[at + 1] * G[(2 * c + 1) * n_fft + s];")
            # librosa divides by the frames that cover the sample (window of ones), by 1 where none does
            e.line("const int count = t1 - t0 + 1;")
            e.line(f"dst[i] = count > 1 ? acc / ({R})count : acc;")
    return KernelSource(name, e.text(), params, spec.block)


def interpolate(spec: InterpolateSpec, d: Dialect) -> KernelSource:
    """The integer-factor upsampler (see the module docstring)."""
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, prec)
    name = "spx_cq_interpolate" + ("_head" if spec.head else "") + ("_acc" if spec.accumulate else "")
    params = (_ptr("src", prec), _ptr("taps", prec), _ptr("base", prec), _ptr("dst", prec, const=False))
    params += _FIR_SIZES + (_head_params(prec) if spec.head else ())
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            e.line("const int j = i % n_dst;")
            e.line("const int b = i / n_dst;")
            e.line(f"{R} acc = {d.literal(0.0, prec)};")
            with e.block("if (j < n_valid)"):
                # taps index j - factor m - k0 in [0, n_taps): m from ceil((hi - n_taps + 1) / factor) to
                # floor(hi / factor), hi = j - k0 (floor and ceil of possibly negative numerators)
                e.line("const int hi = j - k0;")
                e.line("int m1 = hi >= 0 ? hi / factor : -((factor - 1 - hi) / factor);")
                e.line("const int lo = hi - n_taps + 1;")
                e.line("int m0 = lo >= 0 ? (lo + factor - 1) / factor : -((-lo) / factor);")
                e.line("if (m0 < 0) m0 = 0;")
                e.line("if (m1 > n_in - 1) m1 = n_in - 1;")
                with e.block("for (int m = m0; m <= m1; ++m)"):
                    e.line("acc += taps[hi - factor * m] * src[b * n_in + m];")
                if spec.head:
                    with e.block("if (j < n_head_rows)"):
                        e.line("const int nc = n_head_cols < n_in ? n_head_cols : n_in;")
                        with e.block("for (int c = 0; c < nc; ++c)"):
                            e.line("acc += head[j * n_head_cols + c] * src[b * n_in + c];")
            if spec.accumulate:
                e.line("acc = base[i] + acc;")
            e.line("dst[i] = acc;")
    return KernelSource(name, e.text(), params, spec.block)


def icq_synth_adjoint(spec: IcqSynthAdjointSpec, d: Dialect) -> KernelSource:
    """The transpose of the inverse's frames and overlap-add (see the module docstring)."""
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, prec)
    name = "spx_icq_synth_adjoint"
    params = (_ptr("g", prec), _ptr("G", prec), _ptr("dst", prec, const=False), *_SYNTH_SIZES)
    zero = d.literal(0.0, prec)
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            e.line("const int t = i % t_src;")
            e.line("const int q = i / t_src;")
            e.line("const int c = q % n_k;")
            e.line("const int b = q / n_k;")
            e.line(f"{R} re = {zero};")
            e.line(f"{R} im = {zero};")
            # frames past n_t are not read by the inverse: their gradient is 0
            with e.block("if (t < n_t)"):
                # frame t holds overlap-added samples a = t hop + s, signal samples n = a - pad in [0, n_out)
                e.line("const int a0 = t * hop;")
                e.line("const int s0 = pad - a0 > 0 ? pad - a0 : 0;")
                e.line("const int s1 = n_out + pad - a0 < n_fft ? n_out + pad - a0 : n_fft;")
                e.line("const int gb = b * n_out - pad + a0;")
                with e.block("for (int s = s0; s < s1; ++s)"):
                    # the forward's divisor of sample a: the frames covering it (as icq_synth counts them)
                    e.line("const int a = a0 + s;")
                    e.line("const int t1 = a / hop < n_t - 1 ? a / hop : n_t - 1;")
                    e.line("const int lo = a - n_fft + 1;")
                    e.line("const int t0 = lo > 0 ? (lo + hop - 1) / hop : 0;")
                    e.line("const int count = t1 - t0 + 1;")
                    e.line(f"const {R} h = count > 1 ? g[gb + s] / ({R})count : g[gb + s];")
                    e.line("re += G[2 * c * n_fft + s] * h;")
                    e.line("im += G[(2 * c + 1) * n_fft + s] * h;")
            e.line("const int o = 2 * ((b * n_bins + row0 + c) * t_src + t);")
            e.line("dst[o] = re;")
            e.line("dst[o + 1] = im;")
    return KernelSource(name, e.text(), params, spec.block)


def interpolate_adjoint(spec: InterpolateAdjointSpec, d: Dialect) -> KernelSource:
    """The transpose of the integer-factor upsampler (see the module docstring)."""
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, prec)
    name = "spx_cq_interpolate_adjoint" + ("_head" if spec.head else "")
    params = (_ptr("g", prec), _ptr("taps", prec), _ptr("dst", prec, const=False))
    params += _FIR_SIZES + (_head_params(prec) if spec.head else ())
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            e.line("const int m = i % n_in;")
            e.line("const int b = i / n_in;")
            # the outputs j = factor m + k0 + q (taps index q in [0, n_taps)) that the forward computed
            e.line("const int lo = factor * m + k0;")
            e.line("const int j0 = lo > 0 ? lo : 0;")
            e.line("const int j1 = lo + n_taps - 1 < n_valid - 1 ? lo + n_taps - 1 : n_valid - 1;")
            e.line("const int row = b * n_dst;")
            e.line(f"{R} acc = {d.literal(0.0, prec)};")
            with e.block("for (int j = j0; j <= j1; ++j)"):
                e.line("acc += taps[j - lo] * g[row + j];")
            if spec.head:
                with e.block("if (m < n_head_cols)"):
                    e.line("const int nr = n_head_rows < n_valid ? n_head_rows : n_valid;")
                    with e.block("for (int j = 0; j < nr; ++j)"):
                        e.line("acc += head[j * n_head_cols + m] * g[row + j];")
            e.line("dst[i] = acc;")
    return KernelSource(name, e.text(), params, spec.block)


def render(spec: object, d: Dialect) -> KernelSource:
    """Source of the kernel described by any of the spec classes above."""
    if isinstance(spec, DecimateSpec):
        return decimate(spec, d)
    if isinstance(spec, CqProductSpec):
        return cq_product(spec, d)
    if isinstance(spec, DecimateAdjointSpec):
        return decimate_adjoint(spec, d)
    if isinstance(spec, CqProductAdjointSpec):
        return cq_product_adjoint(spec, d)
    if isinstance(spec, ThresholdSpec):
        return threshold(spec, d)
    if isinstance(spec, IcqSynthSpec):
        return icq_synth(spec, d)
    if isinstance(spec, InterpolateSpec):
        return interpolate(spec, d)
    if isinstance(spec, IcqSynthAdjointSpec):
        return icq_synth_adjoint(spec, d)
    if isinstance(spec, InterpolateAdjointSpec):
        return interpolate_adjoint(spec, d)
    raise TypeError(f"no kernel template for {type(spec).__name__}")


def cover(storages: tuple[str, ...]) -> list[object]:
    """Every structural variety of these kernels for inputs of ``storages`` ("f16", "f32", "f64")."""
    specs: list[object] = []
    for storage in storages:
        prec = COMPUTE_OF[storage]
        specs += [DecimateSpec(storage, prec), DecimateSpec(prec, prec)]
        specs += [CqProductSpec(prec), CqProductSpec(prec, two_sided=True)]
        specs += [DecimateAdjointSpec(prec), DecimateAdjointSpec(prec, accumulate=True)]
        specs += [CqProductAdjointSpec(prec), ThresholdSpec(prec)]
        specs += [IcqSynthSpec(prec), InterpolateSpec(prec), InterpolateSpec(prec, accumulate=True)]
        specs += [InterpolateSpec(prec, head=True), InterpolateSpec(prec, accumulate=True, head=True)]
        specs += [IcqSynthAdjointSpec(prec), InterpolateAdjointSpec(prec)]
        specs += [InterpolateAdjointSpec(prec, head=True)]
    specs += variants(specs)
    return list(dict.fromkeys(specs))
