"""Kernel templates of stft and istft (and their adjoints) around the FFT family, written once for every
dialect.

``frame``
    Windowed frames of a (B, L) signal laid out (B, n_fft, T), frame ``t`` reading padded position
    ``q = t * hop + n``: the signal at ``q - pad`` inside it, and outside it (``sided``) the sample the
    centre padding copies there, from a table of the ``2 * pad`` padded positions (``-1``: a zero; numpy.pad's
    own index map, so every pad_mode, and signals shorter than the pad, follow numpy exactly). Samples outside
    the window's support ``lo .. hi`` are written as zeros (not multiplied: a NaN there stays out). One block
    transposes a 32 x 32 tile through shared memory, so both the signal's reads (along ``n``) and the frames'
    writes (along ``t``) are coalesced. With ``divide`` the values read are divided by a per-position sum
    where it exceeds ``tiny`` first (istft's adjoint frames its gradient this way).
``spectrum``
    A copy of (B, F, T_src) spectra (complex or real storage) into (B, F, T_dst) complex of the compute
    precision, frames past ``T_src`` zero, bins ``f_lo .. f_hi`` scaled by ``s_in`` and the others by
    ``s_out``: istft's input cut and cast, and the bin weights of the one-sided FFT's adjoints.
``spectrum_t``
    The same copy into the transposed (B, T_dst, F) layout through a 32 x 32 shared-memory tile, reads and
    writes both coalesced: the input of istft and of the stft's adjoint, so that the inverse FFT along the
    last axis writes frames (B, T, n_fft) and the gather's reads of consecutive samples are consecutive.
``modulus``
    ``|X|``, ``|X| ** 2`` or ``|X| ** power`` of a complex array, into a real one.
``modulus_adjoint``
    The gradient with respect to ``X`` of ``|X|`` (``g X / |X|``, 0 where ``X`` is 0) or of ``|X| ** 2``
    (``2 g X``), given the real gradient ``g`` of the result.
``gather``
    One thread per output sample ``q`` sums, in a fixed order (frame ``q // hop`` first, then the earlier
    ones: the CPU's overlap-add order), the frames that cover it, each times the window (inside ``lo ..
    hi``). ``mode`` says what else: ``GATHER_ISTFT`` reads output sample ``s`` at ``q = s + start`` and
    divides by the squared-window sum where it exceeds ``tiny`` (a runtime table made once per parameters
    by the CPU's own sum, see :func:`specux._runtime.spectral_exec._window_sum`); ``GATHER_UNPAD`` is the
    adjoint of framing a centre-padded signal: signal sample
    ``i`` takes ``q = i + pad`` plus the padded positions that copy it (a table of offsets into those
    positions, increasing), so the transpose of every pad_mode is a gather too. No atomics anywhere: every
    result is deterministic by construction.

Runtime sizes are kernel arguments; a spec fixes storage, compute precision and structure only.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelkit.dialects import COMPUTE_OF, Dialect, Param
from kernelkit.emitter import Emitter
from specux._codegen.blocks import DEFAULT_BLOCK, Blocked, index, variants
from specux._codegen.fft_kernels import KernelSource

#: threads per block by default: every kernel here takes the plan's choice (see :mod:`specux._codegen.blocks`)
BLOCK = DEFAULT_BLOCK
#: the tiled kernels' (frame, spectrum_t) tile: TILE x TILE values, each thread moving TILE * TILE / block of
#: them (rows of ``block // TILE`` threads: any block of the choices from TILE to TILE * TILE)
TILE = 32

#: ``modulus`` kinds
MOD_ABS, MOD_POWER2, MOD_POWER = 0, 1, 2
#: ``gather`` modes (1, the squared-window sum alone, went: that sum is a cached runtime table now)
GATHER_ISTFT, GATHER_UNPAD = 0, 2


@dataclass(frozen=True)
class FrameSpec(Blocked):
    in_storage: str
    prec: str
    divide: bool = False


@dataclass(frozen=True)
class SpectrumSpec(Blocked):
    in_storage: str
    prec: str
    in_complex: bool = True


@dataclass(frozen=True)
class SpectrumTSpec(Blocked):
    """The spectrum copy of :class:`SpectrumSpec` (bin weights included) into the transposed (B, T_dst, F)
    layout, through a shared-memory tile so that reads (along T) and writes (along F) are both coalesced."""

    in_storage: str
    prec: str
    in_complex: bool = True


@dataclass(frozen=True)
class ModulusSpec(Blocked):
    prec: str
    kind: int = MOD_ABS


@dataclass(frozen=True)
class ModulusAdjointSpec(Blocked):
    prec: str
    kind: int = MOD_ABS  # MOD_ABS or MOD_POWER2


@dataclass(frozen=True)
class GatherSpec(Blocked):
    prec: str
    mode: int = GATHER_ISTFT
    #: frames laid out (B, T, n_fft) (the inverse FFT of a transposed spectrum): the frames' reads of
    #: consecutive samples are then consecutive, coalesced, instead of ``n_t`` apart
    transposed: bool = False


def _ptr(name: str, kind: str, const: bool = True) -> Param:
    return Param(name, kind, pointer=True, const=const)


def _header(e: Emitter, *kinds: str) -> None:
    e.line(e.d.prelude({COMPUTE_OF[k] for k in kinds} | set(kinds)))


def frame(spec: FrameSpec, d: Dialect) -> KernelSource:
    prec = spec.prec
    R = d.real(prec)
    zero = d.literal(0.0, prec)
    e = Emitter(d)
    _header(e, spec.in_storage, prec)
    name = "spx_frame" + ("_div" if spec.divide else "")
    params = (
        _ptr("y", spec.in_storage),
        _ptr("den", prec),
        _ptr("win", prec),
        _ptr("side", "int"),
        _ptr("dst", prec, const=False),
        Param("n_len", "int"),
        Param("n_fft", "int"),
        Param("n_t", "int"),
        Param("hop", "int"),
        Param("pad", "int"),
        Param("sided", "int"),
        Param("lo", "int"),
        Param("hi", "int"),
        Param("tiles_n", "int"),
        Param("tiles_t", "int"),
        Param("tiny", prec),
    )
    with e.block(d.signature(name, list(params))):
        e.line(d.shared(R, "tile", TILE * (TILE + 1)))
        e.line(f"const int lid = {d.local_id};")
        e.line(f"const int gid = {d.group_id};")
        e.line(f"const int tx = lid % {TILE};")
        e.line(f"const int ty = lid / {TILE};")
        e.line("const int per_b = tiles_n * tiles_t;")
        e.line("const int b = gid / per_b;")
        e.line("const int rem = gid - b * per_b;")
        e.line(f"const int n0 = (rem / tiles_t) * {TILE};")
        e.line(f"const int t0 = (rem % tiles_t) * {TILE};")
        # load: consecutive threads read consecutive samples of one frame
        with e.block(f"for (int k = 0; k < {TILE}; k += {spec.block // TILE})"):
            e.line("const int t = t0 + ty + k;")
            e.line("const int n = n0 + tx;")
            e.line(f"{R} v = {zero};")
            with e.block("if (t < n_t && n >= lo && n < hi)"):
                e.line("const int q = t * hop + n;")
                e.line("const int p = q - pad;")
                e.line("int s = p;")
                with e.block("if (p < 0 || p >= n_len)"):
                    e.line("s = -1;")
                    e.line("if (sided != 0) s = side[p < 0 ? q : pad + p - n_len];")
                with e.block("if (s >= 0)"):
                    e.line(f"v = ({R})" + d.load_real(spec.in_storage, "y", "b * n_len + s") + ";")
                    if spec.divide:
                        e.line(f"const {R} w = den[s];")
                        e.line("if (w > tiny) v = v / w;")
                    e.line("v = v * win[n];")
            e.line(f"tile[(ty + k) * {TILE + 1} + tx] = v;")
        e.line(d.barrier)
        # store: consecutive threads write consecutive frames of one sample position
        with e.block(f"for (int k = 0; k < {TILE}; k += {spec.block // TILE})"):
            e.line("const int n = n0 + ty + k;")
            e.line("const int t = t0 + tx;")
            with e.block("if (n < n_fft && t < n_t)"):
                e.line(f"dst[(b * n_fft + n) * n_t + t] = tile[tx * {TILE + 1} + ty + k];")
    return KernelSource(name, e.text(), params, spec.block)


def spectrum(spec: SpectrumSpec, d: Dialect) -> KernelSource:
    prec = spec.prec
    R = d.real(prec)
    zero = d.literal(0.0, prec)
    e = Emitter(d)
    _header(e, spec.in_storage, prec)
    name = "spx_spectrum_" + ("c" if spec.in_complex else "r")
    params = (
        _ptr("src", spec.in_storage),
        _ptr("dst", prec, const=False),
        Param("total", "int"),
        Param("n_f", "int"),
        Param("t_src", "int"),
        Param("t_dst", "int"),
        Param("f_lo", "int"),
        Param("f_hi", "int"),
        Param("s_in", prec),
        Param("s_out", prec),
    )
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            e.line("const int t = i % t_dst;")
            e.line("const int row = i / t_dst;")
            e.line("const int f = row % n_f;")
            e.line(f"{R} re = {zero};")
            e.line(f"{R} im = {zero};")
            with e.block("if (t < t_src)"):
                e.line("const int j = row * t_src + t;")
                if spec.in_complex:
                    e.line(f"re = ({R})" + d.load_real(spec.in_storage, "src", "2 * j") + ";")
                    e.line(f"im = ({R})" + d.load_real(spec.in_storage, "src", "2 * j + 1") + ";")
                else:
                    e.line(f"re = ({R})" + d.load_real(spec.in_storage, "src", "j") + ";")
            e.line(f"const {R} s = (f >= f_lo && f < f_hi) ? s_in : s_out;")
            e.line("dst[2 * i] = re * s;")
            e.line("dst[2 * i + 1] = im * s;")
    return KernelSource(name, e.text(), params, spec.block)


def spectrum_t(spec: SpectrumTSpec, d: Dialect) -> KernelSource:
    prec = spec.prec
    R = d.real(prec)
    zero = d.literal(0.0, prec)
    e = Emitter(d)
    _header(e, spec.in_storage, prec)
    name = "spx_spectrum_t_" + ("c" if spec.in_complex else "r")
    params = (
        _ptr("src", spec.in_storage),
        _ptr("dst", prec, const=False),
        Param("n_f", "int"),
        Param("t_src", "int"),
        Param("t_dst", "int"),
        Param("tiles_f", "int"),
        Param("tiles_t", "int"),
        Param("f_lo", "int"),
        Param("f_hi", "int"),
        Param("s_in", prec),
        Param("s_out", prec),
    )
    with e.block(d.signature(name, list(params))):
        e.line(d.shared(R, "tre", TILE * (TILE + 1)))
        e.line(d.shared(R, "tim", TILE * (TILE + 1)))
        e.line(f"const int lid = {d.local_id};")
        e.line(f"const int gid = {d.group_id};")
        e.line(f"const int tx = lid % {TILE};")
        e.line(f"const int ty = lid / {TILE};")
        e.line("const int per_b = tiles_f * tiles_t;")
        e.line("const int b = gid / per_b;")
        e.line("const int rem = gid - b * per_b;")
        e.line(f"const int f0 = (rem / tiles_t) * {TILE};")
        e.line(f"const int t0 = (rem % tiles_t) * {TILE};")
        # load: consecutive threads read consecutive frames of one bin
        with e.block(f"for (int k = 0; k < {TILE}; k += {spec.block // TILE})"):
            e.line("const int f = f0 + ty + k;")
            e.line("const int t = t0 + tx;")
            e.line(f"{R} re = {zero};")
            e.line(f"{R} im = {zero};")
            with e.block("if (f < n_f && t < t_src && t < t_dst)"):
                e.line("const int j = (b * n_f + f) * t_src + t;")
                if spec.in_complex:
                    e.line(f"re = ({R})" + d.load_real(spec.in_storage, "src", "2 * j") + ";")
                    e.line(f"im = ({R})" + d.load_real(spec.in_storage, "src", "2 * j + 1") + ";")
                else:
                    e.line(f"re = ({R})" + d.load_real(spec.in_storage, "src", "j") + ";")
            e.line(f"tre[(ty + k) * {TILE + 1} + tx] = re;")
            e.line(f"tim[(ty + k) * {TILE + 1} + tx] = im;")
        e.line(d.barrier)
        # store: consecutive threads write consecutive bins of one frame
        with e.block(f"for (int k = 0; k < {TILE}; k += {spec.block // TILE})"):
            e.line("const int t = t0 + ty + k;")
            e.line("const int f = f0 + tx;")
            with e.block("if (f < n_f && t < t_dst)"):
                e.line("const int o = (b * t_dst + t) * n_f + f;")
                e.line(f"const {R} s = (f >= f_lo && f < f_hi) ? s_in : s_out;")
                e.line(f"dst[2 * o] = tre[tx * {TILE + 1} + ty + k] * s;")
                e.line(f"dst[2 * o + 1] = tim[tx * {TILE + 1} + ty + k] * s;")
    return KernelSource(name, e.text(), params, spec.block)


def modulus(spec: ModulusSpec, d: Dialect) -> KernelSource:
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, prec)
    name = "spx_modulus" + str(spec.kind)
    params = (
        _ptr("src", prec),
        _ptr("dst", prec, const=False),
        Param("total", "int"),
        Param("power", prec),
    )
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            e.line(f"const {R} re = src[2 * i];")
            e.line(f"const {R} im = src[2 * i + 1];")
            e.line(f"const {R} s = re * re + im * im;")
            if spec.kind == MOD_POWER2:
                e.line("dst[i] = s;")
            elif spec.kind == MOD_ABS:
                e.line(f"dst[i] = {d.math('sqrt', prec, 's')};")
            else:
                e.line(f"dst[i] = {d.math('pow', prec, d.math('sqrt', prec, 's'), 'power')};")
    return KernelSource(name, e.text(), params, spec.block)


def modulus_adjoint(spec: ModulusAdjointSpec, d: Dialect) -> KernelSource:
    prec = spec.prec
    R = d.real(prec)
    zero = d.literal(0.0, prec)
    e = Emitter(d)
    _header(e, prec)
    name = "spx_modulus_adjoint" + str(spec.kind)
    params = (
        _ptr("x", prec),
        _ptr("g", prec),
        _ptr("dst", prec, const=False),
        Param("total", "int"),
    )
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            e.line(f"const {R} re = x[2 * i];")
            e.line(f"const {R} im = x[2 * i + 1];")
            if spec.kind == MOD_POWER2:
                e.line(f"const {R} s = {d.literal(2.0, prec)} * g[i];")
            else:
                e.line(f"const {R} mag = {d.math('sqrt', prec, 're * re + im * im')};")
                e.line(f"const {R} s = mag > {zero} ? g[i] / mag : {zero};")
            e.line("dst[2 * i] = s * re;")
            e.line("dst[2 * i + 1] = s * im;")
    return KernelSource(name, e.text(), params, spec.block)


def _covering_sum(e: Emitter, acc: str, q: str, term: str) -> None:
    """``acc += term`` over the frames ``t`` covering padded position ``q`` (``n = q - t * hop``), frame
    ``q // hop`` first: the order of the CPU's overlap-add (chunk ``j`` of frame ``q // hop - j``)."""
    head = f"for (int j = 0, r = ({q}) / hop, n = ({q}) - r * hop; n < n_fft && j <= r; ++j, n += hop)"
    with e.block(head):
        e.line("const int t = r - j;")
        with e.block("if (t < n_t && n >= lo && n < hi)"):
            e.line(f"{acc} += {term};")


def gather(spec: GatherSpec, d: Dialect) -> KernelSource:
    prec, mode = spec.prec, spec.mode
    R = d.real(prec)
    zero = d.literal(0.0, prec)
    e = Emitter(d)
    _header(e, prec)
    name = "spx_gather_" + ("istft" if mode == GATHER_ISTFT else "unpad") + ("_t" if spec.transposed else "")
    params = (
        _ptr("frames", prec),
        _ptr("win", prec),
        _ptr("den", prec),
        _ptr("off", "int"),
        _ptr("pos", "int"),
        _ptr("dst", prec, const=False),
        Param("total", "int"),
        Param("n_out", "int"),
        Param("n_fft", "int"),
        Param("n_t", "int"),
        Param("hop", "int"),
        Param("start", "int"),
        Param("lo", "int"),
        Param("hi", "int"),
        Param("folded", "int"),
        Param("tiny", prec),
    )
    if mode not in (GATHER_ISTFT, GATHER_UNPAD):
        raise ValueError(f"gather: mode must be GATHER_ISTFT or GATHER_UNPAD; got {mode}")
    at = "(b * n_t + t) * n_fft + n" if spec.transposed else "(b * n_fft + n) * n_t + t"
    term = f"frames[{at}] * win[n]"
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            e.line("const int b = i / n_out;")
            e.line("const int s = i - b * n_out;")
            e.line(f"{R} acc = {zero};")
            _covering_sum(e, "acc", "s + start", term)
            if mode == GATHER_ISTFT:
                e.line(f"const {R} w = den[s];")
                e.line("if (w > tiny) acc = acc / w;")
            elif mode == GATHER_UNPAD:
                # the padded positions that copy sample s (np.pad's index map, inverted on the host; none
                # for constant padding, which passes no table)
                with e.block("if (folded != 0)"), e.block("for (int k = off[s]; k < off[s + 1]; ++k)"):
                    e.line("const int qs = pos[k];")
                    _covering_sum(e, "acc", "qs", term)
            e.line("dst[i] = acc;")
    return KernelSource(name, e.text(), params, spec.block)


def render(spec: object, d: Dialect) -> KernelSource:
    """Source of the kernel described by any of the spec classes above."""
    if isinstance(spec, FrameSpec):
        return frame(spec, d)
    if isinstance(spec, SpectrumSpec):
        return spectrum(spec, d)
    if isinstance(spec, SpectrumTSpec):
        return spectrum_t(spec, d)
    if isinstance(spec, ModulusSpec):
        return modulus(spec, d)
    if isinstance(spec, ModulusAdjointSpec):
        return modulus_adjoint(spec, d)
    if isinstance(spec, GatherSpec):
        return gather(spec, d)
    raise TypeError(f"no kernel template for {type(spec).__name__}")


def cover(storages: tuple[str, ...]) -> list[object]:
    """Every structural variety of these kernels for inputs of ``storages`` ("f16", "f32", "f64")."""
    specs: list[object] = []
    for storage in storages:
        prec = COMPUTE_OF[storage]
        specs += [FrameSpec(storage, prec), FrameSpec(prec, prec, divide=True)]
        specs += [SpectrumSpec(storage, prec), SpectrumSpec(storage, prec, in_complex=False)]
        specs += [ModulusSpec(prec, kind) for kind in (MOD_ABS, MOD_POWER2, MOD_POWER)]
        specs += [ModulusAdjointSpec(prec, kind) for kind in (MOD_ABS, MOD_POWER2)]
        specs += [SpectrumTSpec(storage, prec), SpectrumTSpec(storage, prec, in_complex=False)]
        specs += [GatherSpec(prec, mode) for mode in (GATHER_ISTFT, GATHER_UNPAD)]
        specs += [GatherSpec(prec, mode, transposed=True) for mode in (GATHER_ISTFT, GATHER_UNPAD)]
    specs += variants(specs)
    return list(dict.fromkeys(specs))
