"""Kernel templates of the filter-bank features (melspectrogram, mfcc, lfcc) and their adjoints, written once
for every dialect.

``bank``
    ``out[b, m, t] = sum_j w[j] * pre(src[b, col(j), t])`` over the nonzeros ``j`` of row ``m`` of a sparse
    matrix, then ``post``. The matrix is held as row offsets ``off`` (``n_out + 1`` ints) into packed weights
    ``w``; the columns are either a contiguous range starting at ``col[m]`` (``indexed=False``: a mel or
    linear filter touches only the bins of its triangle, the DCT uses full rows) or listed one per nonzero in
    ``col`` (``indexed=True``: the transposed bank of the adjoint, where each bin gathers the few bands that
    touch it). One thread per output element, ``t`` fastest, so the loads of a warp are coalesced over
    frames and the weights are broadcast. ``pre`` is the top_db floor (``max(v, lower[b / group_div])``
    with NaN kept), ``post`` the dB or natural logarithm of the sum. With ``modulus`` the source is the
    stft's complex spectrum and ``pre`` its modulus (``|X|``, ``|X| ** 2``, ``|X| ** power``), in the
    modulus kernel's own expressions: the power spectrogram of a signal's features is never written.
``reduce_max``
    A two-stage, fixed-order reduction to the maximum (ignoring NaN) and its first index per group of a
    (groups, group_len) array: stage 1 reduces chunks into partials, stage 2 reduces each group's partials
    and writes the top_db floor of the group (librosa's rule or torchaudio's, see :data:`FLOOR_RULES`).
``reduce_clamped``
    The adjoint's counterpart: per group, the sum of the gradient over the elements the floor lifted (stage 1
    from the data, stage 2 over the partials), in a fixed order, so the backward is deterministic.
``db`` / ``floor``
    power_to_db / amplitude_to_db of a device array: per element the value (or a complex value's modulus,
    squared for amplitudes) in dB, or the magnitude alone for a ``ref=np.max`` reduction (``reduce_max``
    with ``nan``: a NaN is the maximum, as numpy's max, so the host can refuse it); then the top_db floor of
    one group applied in place.
``column_norm``
    Each (b, :, t) column of a (B, rows, T) array divided by its norm over the rows, in place (chroma's
    per-frame normalisation, librosa.util.normalize's rules): ``kind`` 1 the maximum magnitude, 2 the
    minimum, 3 the count of non-zero entries, 4 the ``p``-norm; a norm below ``threshold`` leaves the column
    as it is; a NaN in the column makes the maximum / minimum NaN, hence the column (numpy's max / min).
``column_norm_adjoint``
    The gradient of ``column_norm`` (chroma's backward): per column, from the unnormalised values ``x`` and
    the gradient ``g`` of the normalised ones, ``g / l - (sum g x) / l ** 2 * dl / dx`` with ``l`` the
    column's norm and ``dl / dx`` its derivative (the sign at the first maximum / minimum for ``kind`` 1 /
    2, zero for the count, ``sign(x) (|x| / l) ** (p - 1)`` for the p-norm); a column whose norm is below
    ``threshold`` passes ``g`` through, as does ``kind`` 0 (no norm). With ``cut`` (chroma_cqt's
    threshold) each value is first taken as ``x >= cut ? x : 0`` and the gradient of the values cut is 0
    (:func:`specux.torch._ops_cq._chroma_cqt_backward`'s rule).
``log_adjoint``
    The elementwise adjoint of the logarithm stage: ``g / (x + eps)``, or the dB derivative with the floor's
    gradient moved to the group's peak.

Runtime sizes are kernel arguments; what a spec fixes is the storage, the compute precision and the
structure. Arguments of the same name mean the same in every kernel: ``total`` elements of the output,
``n_t`` frames, ``group_len`` elements per top_db group, ``c0`` / ``c1`` the constants of the logarithm
(dB: ``amin`` and ``10 log10(max(amin, ref))``; log: the added ``eps``; unused otherwise).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kernelkit.dialects import COMPUTE_OF, Dialect, Param
from kernelkit.emitter import Emitter
from specux._codegen import spectral_kernels as sk
from specux._codegen.blocks import DEFAULT_BLOCK, Blocked, index, variants
from specux._codegen.fft_kernels import KernelSource

#: threads per block: the fixed block of the kernels that assume one, the default of the others (their
#: specs derive from :class:`~specux._codegen.blocks.Blocked`: the plan chooses)
BLOCK = DEFAULT_BLOCK

#: ``post`` of the bank kernel: nothing, ``10 log10(max(v, c0)) - c1`` (NaN kept), ``log(v + c0)``
POST_NONE, POST_DB, POST_LOG = 0, 1, 2
#: rules for turning a group's peak into its floor: librosa (``power_to_db``: no floor unless the peak is
#: finite) and torchaudio (``AmplitudeToDB``: ``peak - top_db`` whatever it is)
FLOOR_LIBROSA, FLOOR_TORCHAUDIO = 1, 2
FLOOR_RULES = (FLOOR_LIBROSA, FLOOR_TORCHAUDIO)

_TEN_OVER_LN10 = 10.0 / math.log(10.0)


@dataclass(frozen=True)
class BankSpec(Blocked):
    """One sparse-matrix product kernel (see the module docstring)."""

    in_storage: str
    out_storage: str
    prec: str  # compute precision (and the weights' and floor's type): "f32" or "f64"
    indexed: bool = False
    floor: bool = False  # apply the top_db floor to every loaded value
    post: int = POST_NONE
    #: -1: ``src`` is real; a kind of :mod:`specux._codegen.spectral_kernels`' modulus (``MOD_ABS``,
    #: ``MOD_POWER2``, ``MOD_POWER``): ``src`` is the complex spectrum, interleaved, of the compute precision,
    #: and each value loaded is its modulus (to ``power``) as the modulus kernel computes it, so the power
    #: spectrogram is never written
    modulus: int = -1


@dataclass(frozen=True)
class ReduceMaxSpec:
    """Stage 1 (``rule`` 0: chunks of ``src`` to partials) or stage 2 (``rule`` in :data:`FLOOR_RULES`:
    partials to one floor and peak index per group)."""

    storage: str  # of src (stage 2: the compute precision's)
    prec: str
    rule: int = 0
    #: a NaN is the maximum (numpy's max, for ``ref=np.max``) instead of being ignored (the floor's nanmax)
    nan: bool = False


@dataclass(frozen=True)
class DbSpec(Blocked):
    """Elementwise decibels of an array (power_to_db / amplitude_to_db on a device): ``v`` the value, or
    the modulus of a complex one, squared when ``amplitude``; then ``10 log10(max(v, c0)) - c1`` (``db``)
    or ``v`` itself (the magnitude a ``ref=np.max`` reduces)."""

    in_storage: str
    prec: str
    in_complex: bool = False
    amplitude: bool = False
    db: bool = True


@dataclass(frozen=True)
class FloorSpec(Blocked):
    """``x[i] = max(x[i], lower[0])`` in place, NaN kept (the top_db floor of one group)."""

    prec: str


@dataclass(frozen=True)
class ReduceClampedSpec:
    """Stage 1 (``first``: chunks of (x, g) to partial sums of g where the floor lifted x's dB value) or
    stage 2 (partials to one sum per group)."""

    storage: str  # of x (stage 2: the compute precision's)
    prec: str
    first: bool = True


@dataclass(frozen=True)
class LogAdjointSpec(Blocked):
    """Gradient of the logarithm stage with respect to the bands ``x``."""

    storage: str  # of x
    prec: str
    post: int  # POST_DB or POST_LOG
    floor: bool = False


@dataclass(frozen=True)
class ColumnNormSpec(Blocked):
    """Per-column normalisation of a (B, rows, T) array in the compute precision, in place."""

    prec: str


#: ``kind`` of the column norm: maximum, minimum, non-zero count, p-norm (librosa.util.normalize's)
NORM_MAX, NORM_MIN, NORM_COUNT, NORM_P = 1, 2, 3, 4
#: ``kind`` of the column norm's adjoint for no norm at all (the gradient passes, masked by ``cut``)
NORM_NONE = 0


@dataclass(frozen=True)
class ColumnNormAdjointSpec(Blocked):
    """Gradient of :class:`ColumnNormSpec`'s normalisation with respect to the unnormalised (B, rows, T)
    array, in the compute precision; ``cut``: the values below chroma_cqt's threshold first set to zero,
    their gradient zero."""

    prec: str
    cut: bool = False


def _header(e: Emitter, *storages: str) -> None:
    e.line(e.d.prelude({COMPUTE_OF[s] for s in storages} | set(storages)))


def _ptr(name: str, kind: str, const: bool = True) -> Param:
    return Param(name, kind, pointer=True, const=const)


def _floor_op(e: Emitter, v: str, f: str) -> None:
    """``v = max(v, f)`` with NaN on either side giving NaN (numpy's maximum), in place."""
    e.line(f"{v} = ({v} != {v} || {f} != {f}) ? {v} + {f} : ({v} < {f} ? {f} : {v});")


def _db(d: Dialect, prec: str, v: str) -> str:
    """``10 log10(max(v, c0)) - c1`` of ``v`` (a name), NaN kept: ``v < c0`` is false for NaN."""
    clamped = f"({v} < c0 ? c0 : {v})"
    return f"{d.math('log', prec, clamped)} * {d.literal(_TEN_OVER_LN10, prec)} - c1"


def _modulus_load(e: Emitter, spec: BankSpec, at: str) -> None:
    """``v``: the modulus of the complex value at real offset ``at`` of ``src``, in the modulus kernel's
    expressions (:func:`specux._codegen.spectral_kernels.modulus`), so fused and unfused agree."""
    d, prec = e.d, spec.prec
    R = d.real(prec)
    e.line(f"const {R} re = ({R})" + d.load_real(spec.in_storage, "src", at) + ";")
    e.line(f"const {R} im = ({R})" + d.load_real(spec.in_storage, "src", f"{at} + 1") + ";")
    e.line(f"const {R} s = re * re + im * im;")
    if spec.modulus == sk.MOD_POWER2:
        e.line(f"{R} v = s;")
    elif spec.modulus == sk.MOD_ABS:
        e.line(f"{R} v = {d.math('sqrt', prec, 's')};")
    else:
        e.line(f"{R} v = {d.math('pow', prec, d.math('sqrt', prec, 's'), 'power')};")


def bank(spec: BankSpec, d: Dialect) -> KernelSource:
    """The sparse product kernel of ``spec`` in dialect ``d``."""
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, spec.in_storage, spec.out_storage, prec)
    tag = ("x" if spec.indexed else "r") + ("f" if spec.floor else "") + "npl"[spec.post]
    if spec.modulus >= 0:
        tag += f"_c{spec.modulus}"
    name = f"spx_bank_{tag}"
    params = (
        _ptr("src", spec.in_storage),
        _ptr("dst", spec.out_storage, const=False),
        _ptr("off", "int"),
        _ptr("col", "int"),
        _ptr("w", prec),
        _ptr("lower", prec),
        Param("total", "int"),
        Param("n_out", "int"),
        Param("n_in", "int"),
        Param("n_t", "int"),
        Param("group_div", "int"),
        Param("c0", prec),
        Param("c1", prec),
        Param("power", prec),
    )
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            e.line("const int t = i % n_t;")
            e.line("const int q = i / n_t;")
            e.line("const int m = q % n_out;")
            e.line("const int b = q / n_out;")
            e.line("const int base = b * n_in * n_t + t;")
            if spec.floor:
                e.line(f"const {R} f = lower[b / group_div];")
            e.line("const int j0 = off[m];")
            e.line("const int j1 = off[m + 1];")
            if not spec.indexed:
                e.line("const int k0 = col[m] - j0;")
            e.line(f"{R} acc = {d.literal(0.0, prec)};")
            with e.block("for (int j = j0; j < j1; ++j)"):
                k = "col[j]" if spec.indexed else "k0 + j"
                if spec.modulus < 0:
                    e.line(
                        f"{R} v = ({R})" + d.load_real(spec.in_storage, "src", f"base + ({k}) * n_t") + ";"
                    )
                else:
                    _modulus_load(e, spec, f"2 * (base + ({k}) * n_t)")
                if spec.floor:
                    _floor_op(e, "v", "f")
                e.line("acc += w[j] * v;")
            if spec.post == POST_DB:
                e.line(f"acc = {_db(d, prec, 'acc')};")
            elif spec.post == POST_LOG:
                e.line(f"acc = {d.math('log', prec, 'acc + c0')};")
            e.line(d.store_real(spec.out_storage, "dst", "i", "acc"))
    return KernelSource(name, e.text(), params, spec.block)


def _tree(e: Emitter, combine: list[str]) -> None:
    """Fold the block's ``BLOCK`` shared slots into slot 0, pairwise in a fixed order (``combine``: the
    statements merging slot ``lid + s`` into slot ``lid``)."""
    d = e.d
    e.line(d.barrier)
    s = BLOCK // 2
    while s >= 1:
        with e.block(f"if (lid < {s})"):
            e.line(f"const int o = lid + {s};")
            e.lines(combine)
        e.line(d.barrier)
        s //= 2


def reduce_max(spec: ReduceMaxSpec, d: Dialect) -> KernelSource:
    """Maximum (NaN ignored) and its first index, per chunk (stage 1) or per group with its floor
    (stage 2)."""
    prec, final = spec.prec, spec.rule != 0
    R = d.real(prec)
    e = Emitter(d)
    _header(e, spec.storage, prec)
    name = f"spx_reduce_max{spec.rule}" + ("n" if spec.nan else "")
    # a NaN wins over a number (the first NaN index kept) when ``nan``; otherwise NaN compares false
    wins = "(v != v && best == best) || " if spec.nan else ""
    merge = "(sv[o] != sv[o] && sv[lid] == sv[lid]) || " if spec.nan else ""
    params = (
        _ptr("src", spec.storage),
        _ptr("src_idx", "int"),
        _ptr("out_val", prec, const=False),
        _ptr("out_idx", "int", const=False),
        Param("group_len", "int"),
        Param("chunks", "int"),
        Param("chunk", "int"),
        Param("neg_inf", prec),
        Param("top_db", prec),
    )
    with e.block(d.signature(name, list(params))):
        e.line(d.shared(R, "sv", BLOCK))
        e.line(d.shared("int", "si", BLOCK))
        e.line(f"const int lid = {d.local_id};")
        e.line(f"const int gid = {d.group_id};")
        e.line("const int g = gid / chunks;")
        e.line("const int c = gid - g * chunks;")
        e.line("const int start = c * chunk;")
        e.line("const int stop = start + chunk < group_len ? start + chunk : group_len;")
        e.line(f"{R} best = neg_inf;")
        e.line("int at = 2147483647;")
        # each thread walks its elements in increasing order, so a strict > keeps the first maximum
        with e.block("for (int k = start + lid; k < stop; k += " + str(BLOCK) + ")"):
            e.line(f"const {R} v = ({R})" + d.load_real(spec.storage, "src", "g * group_len + k") + ";")
            e.line(f"const int vi = {'src_idx[g * group_len + k]' if final else 'k'};")
            with e.block(f"if ({wins}v > best || (v == best && vi < at))"):
                e.line("best = v;")
                e.line("at = vi;")
        e.line("sv[lid] = best;")
        e.line("si[lid] = at;")
        _tree(
            e,
            [
                f"if ({merge}sv[o] > sv[lid] || (sv[o] == sv[lid] && si[o] < si[lid])) {{",
                "    sv[lid] = sv[o];",
                "    si[lid] = si[o];",
                "}",
            ],
        )
        with e.block("if (lid == 0)"):
            if not final:
                e.line("out_val[gid] = sv[0];")
                e.line("out_idx[gid] = si[0];")
            else:
                e.line(f"const {R} peak = sv[0];")
                # a finite peak: peak - peak is 0 (inf - inf and NaN - NaN are NaN)
                e.line(f"const int finite = (peak - peak) == {d.literal(0.0, prec)};")
                if spec.rule == FLOOR_LIBROSA:
                    e.line("out_val[g] = finite ? peak - top_db : neg_inf;")
                else:
                    e.line("out_val[g] = peak - top_db;")
                e.line("out_idx[g] = finite ? si[0] : -1;")
    return KernelSource(name, e.text(), params, BLOCK)


def db(spec: DbSpec, d: Dialect) -> KernelSource:
    """One thread per element: the magnitude (squared for amplitudes), then its decibels (:class:`DbSpec`)."""
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, spec.in_storage, prec)
    name = (
        "spx_db_"
        + ("c" if spec.in_complex else "r")
        + ("a" if spec.amplitude else "p")
        + ("" if spec.db else "_mag")
    )
    params = (
        _ptr("src", spec.in_storage),
        _ptr("dst", prec, const=False),
        Param("total", "int"),
        Param("c0", prec),
        Param("c1", prec),
    )
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            if spec.in_complex:
                e.line(f"const {R} re = ({R})" + d.load_real(spec.in_storage, "src", "2 * i") + ";")
                e.line(f"const {R} im = ({R})" + d.load_real(spec.in_storage, "src", "2 * i + 1") + ";")
                e.line(f"{R} v = {d.math('sqrt', prec, 're * re + im * im')};")
            else:
                e.line(f"{R} v = ({R})" + d.load_real(spec.in_storage, "src", "i") + ";")
                if spec.amplitude:
                    e.line(f"v = v < {d.literal(0.0, prec)} ? -v : v;")
            if spec.amplitude and spec.db:
                e.line("v = v * v;")
            e.line(f"dst[i] = {_db(d, prec, 'v')};" if spec.db else "dst[i] = v;")
    return KernelSource(name, e.text(), params, spec.block)


def floor_in_place(spec: FloorSpec, d: Dialect) -> KernelSource:
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, prec)
    name = "spx_floor"
    params = (_ptr("x", prec, const=False), _ptr("lower", prec), Param("total", "int"))
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            e.line(f"{R} v = x[i];")
            e.line(f"const {R} f = lower[0];")
            _floor_op(e, "v", "f")
            e.line("x[i] = v;")
    return KernelSource(name, e.text(), params, spec.block)


def reduce_clamped(spec: ReduceClampedSpec, d: Dialect) -> KernelSource:
    """Per chunk (stage 1) or per group (stage 2): the sum of ``g`` where the floor lifted the dB value."""
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, spec.storage, prec)
    name = f"spx_reduce_clamped{int(spec.first)}"
    params = (
        _ptr("x", spec.storage),
        _ptr("g", prec),
        _ptr("lower", prec),
        _ptr("out", prec, const=False),
        Param("group_len", "int"),
        Param("chunks", "int"),
        Param("chunk", "int"),
        Param("c0", prec),
        Param("c1", prec),
    )
    with e.block(d.signature(name, list(params))):
        e.line(d.shared(R, "sv", BLOCK))
        e.line(f"const int lid = {d.local_id};")
        e.line(f"const int gid = {d.group_id};")
        e.line("const int grp = gid / chunks;")
        e.line("const int c = gid - grp * chunks;")
        e.line("const int start = c * chunk;")
        e.line("const int stop = start + chunk < group_len ? start + chunk : group_len;")
        e.line(f"{R} acc = {d.literal(0.0, prec)};")
        if spec.first:
            e.line(f"const {R} f = lower[grp];")
        with e.block("for (int k = start + lid; k < stop; k += " + str(BLOCK) + ")"):
            e.line("const int i = grp * group_len + k;")
            if spec.first:
                e.line(f"const {R} v = ({R})" + d.load_real(spec.storage, "x", "i") + ";")
                e.line(f"const {R} db = {_db(d, prec, 'v')};")
                e.line("if (db < f) acc += g[i];")
            else:
                e.line(f"acc += ({R})" + d.load_real(spec.storage, "x", "i") + ";")
        e.line("sv[lid] = acc;")
        _tree(e, ["sv[lid] += sv[o];"])
        with e.block("if (lid == 0)"):
            e.line("out[gid] = sv[0];")
    return KernelSource(name, e.text(), params, BLOCK)


def log_adjoint(spec: LogAdjointSpec, d: Dialect) -> KernelSource:
    """``gx[i]`` from the bands ``x`` and the gradient ``g`` of the logarithm's (floored) output."""
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, spec.storage, prec)
    name = "spx_log_adjoint_" + ("db" if spec.post == POST_DB else "log") + ("f" if spec.floor else "")
    params = (
        _ptr("x", spec.storage),
        _ptr("g", prec),
        _ptr("lower", prec),
        _ptr("peak_at", "int"),
        _ptr("moved", prec),
        _ptr("gx", prec, const=False),
        Param("total", "int"),
        Param("group_len", "int"),
        Param("c0", prec),
        Param("c1", prec),
    )
    zero = d.literal(0.0, prec)
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            e.line(f"const {R} v = ({R})" + d.load_real(spec.storage, "x", "i") + ";")
            e.line(f"{R} gi = g[i];")
            if spec.post == POST_LOG:
                e.line("gx[i] = gi / (v + c0);")
            else:
                if spec.floor:
                    e.line("const int grp = i / group_len;")
                    e.line(f"const {R} db = {_db(d, prec, 'v')};")
                    # lifted values take the floor from the group's peak: their gradient moves there
                    e.line(f"if (db < lower[grp]) gi = {zero};")
                    e.line("if (i - grp * group_len == peak_at[grp]) gi += moved[grp];")
                e.line(f"gx[i] = v > c0 ? gi * {d.literal(_TEN_OVER_LN10, prec)} / v : {zero};")
    return KernelSource(name, e.text(), params, spec.block)


def _column_scalars(prec: str) -> tuple[Param, ...]:
    """The column-norm kernels' sizes and norm: columns, rows, frames, ``kind``, ``p`` and ``threshold``."""
    return (
        Param("n_cols", "int"),
        Param("n_rows", "int"),
        Param("n_t", "int"),
        Param("kind", "int"),
        Param("p", prec),
        Param("threshold", prec),
    )


def column_norm(spec: ColumnNormSpec, d: Dialect) -> KernelSource:
    """One thread per column (b, t): the norm over the ``n_rows`` rows (stride ``n_t``), then the division."""
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, prec)
    name = "spx_column_norm"
    params = (_ptr("x", prec, const=False), *_column_scalars(prec))
    zero, one = d.literal(0.0, prec), d.literal(1.0, prec)
    with e.block(d.signature(name, list(params))):
        e.line(f"const int c = {index(d, spec.block)};")
        with e.block("if (c < n_cols)"):
            e.line("const int b = c / n_t;")
            e.line("const int base = b * n_rows * n_t + (c - b * n_t);")
            e.line(f"{R} acc = kind == 2 ? (x[base] < {zero} ? -x[base] : x[base]) : {zero};")
            e.line("int nan_seen = 0;")
            e.line(f"{R} nan_value = {zero};")
            with e.block("for (int r = 0; r < n_rows; ++r)"):
                e.line(f"{R} v = x[base + r * n_t];")
                e.line(f"v = v < {zero} ? -v : v;")
                with e.block("if (v != v)"):
                    e.line("nan_seen = 1;")
                    e.line("nan_value = v;")
                e.line("if (kind == 1) acc = v > acc ? v : acc;")
                e.line("else if (kind == 2) acc = v < acc ? v : acc;")
                e.line(f"else if (kind == 3) acc += v > {zero} ? {one} : {zero};")
                e.line(f"else acc += {d.math('pow', prec, 'v', 'p')};")
            e.line(f"if (kind == 4) acc = {d.math('pow', prec, 'acc', f'{one} / p')};")
            e.line("if (nan_seen && kind <= 2) acc = nan_value;  // numpy's max / min of a NaN column")
            e.line(f"if (acc < threshold) acc = {one};")
            with e.block("for (int r = 0; r < n_rows; ++r)"):
                e.line("x[base + r * n_t] = x[base + r * n_t] / acc;")
    return KernelSource(name, e.text(), params, spec.block)


def column_norm_adjoint(spec: ColumnNormAdjointSpec, d: Dialect) -> KernelSource:
    """One thread per column (b, t): the column's norm and the pick of a maximum / minimum norm, then each
    row's gradient (see the module docstring); a fixed order of sums, so the result is repeatable."""
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, prec)
    name = "spx_column_norm_adjoint" + ("_cut" if spec.cut else "")
    params = (
        _ptr("x", prec),
        _ptr("g", prec),
        _ptr("gx", prec, const=False),
        *_column_scalars(prec),
        Param("cut", prec),
    )
    zero, one = d.literal(0.0, prec), d.literal(1.0, prec)

    def load(v: str, at: str) -> None:
        e.line(f"{R} {v} = x[{at}];")
        if spec.cut:  # the CPU backward's rule: what is not >= cut (NaN included) counts as 0
            e.line(f"{v} = {v} >= cut ? {v} : {zero};")

    with e.block(d.signature(name, list(params))):
        e.line(f"const int c = {index(d, spec.block)};")
        with e.block("if (c < n_cols)"):
            e.line("const int b = c / n_t;")
            e.line("const int base = b * n_rows * n_t + (c - b * n_t);")
            load("v0", "base")
            e.line(f"{R} acc = kind == 2 ? (v0 < {zero} ? -v0 : v0) : {zero};")
            e.line(f"{R} inner = {zero};")
            e.line("int at = 0;")
            e.line("int nan_seen = 0;")
            e.line(f"{R} nan_value = {zero};")
            with e.block("for (int r = 0; r < n_rows; ++r)"):
                load("s", "base + r * n_t")
                e.line("inner += g[base + r * n_t] * s;")
                e.line(f"const {R} v = s < {zero} ? -s : s;")
                with e.block("if (v != v && !nan_seen)"):
                    e.line("nan_seen = 1;")
                    e.line("nan_value = v;")
                # strict comparisons keep the first maximum / minimum (numpy's argmax / argmin)
                with e.block("if (kind == 1)"):
                    with e.block("if (v > acc)"):
                        e.line("acc = v;")
                        e.line("at = r;")
                with e.block("else if (kind == 2)"):
                    with e.block("if (v < acc)"):
                        e.line("acc = v;")
                        e.line("at = r;")
                e.line(f"else if (kind == 3) acc += v > {zero} ? {one} : {zero};")
                e.line(f"else if (kind == 4) acc += {d.math('pow', prec, 'v', 'p')};")
            e.line(f"if (kind == 4) acc = {d.math('pow', prec, 'acc', f'{one} / p')};")
            e.line("if (nan_seen && kind <= 2) acc = nan_value;  // numpy's max / min of a NaN column")
            # no norm, or a norm below the threshold (the forward left the column as it was): g passes
            e.line("const int small = kind == 0 || acc < threshold;")
            e.line(f"const {R} l = small ? {one} : acc;")
            e.line(f"const {R} safe = acc > {zero} ? acc : {one};")
            with e.block("for (int r = 0; r < n_rows; ++r)"):
                e.line("const int i = base + r * n_t;")
                load("s", "i")
                e.line(f"const {R} sign = s > {zero} ? {one} : (s < {zero} ? -{one} : {zero});")
                e.line(f"{R} dl = {zero};")
                e.line("if (kind <= 2) dl = r == at ? sign : dl;")
                e.line(
                    "else if (kind == 4) dl = sign * "
                    + d.math("pow", prec, f"(s < {zero} ? -s : s) / safe", f"p - {one}")
                    + ";"
                )
                e.line(f"{R} out = small ? g[i] : g[i] / l - inner / (l * l) * dl;")
                if spec.cut:
                    e.line(f"out = x[i] >= cut ? out : {zero};")
                e.line("gx[i] = out;")
    return KernelSource(name, e.text(), params, spec.block)


def render(spec: object, d: Dialect) -> KernelSource:
    """Source of the kernel described by any of the spec classes above."""
    if isinstance(spec, BankSpec):
        return bank(spec, d)
    if isinstance(spec, ReduceMaxSpec):
        return reduce_max(spec, d)
    if isinstance(spec, ReduceClampedSpec):
        return reduce_clamped(spec, d)
    if isinstance(spec, LogAdjointSpec):
        return log_adjoint(spec, d)
    if isinstance(spec, ColumnNormSpec):
        return column_norm(spec, d)
    if isinstance(spec, ColumnNormAdjointSpec):
        return column_norm_adjoint(spec, d)
    if isinstance(spec, DbSpec):
        return db(spec, d)
    if isinstance(spec, FloorSpec):
        return floor_in_place(spec, d)
    raise TypeError(f"no kernel template for {type(spec).__name__}")


def cover(storages: tuple[str, ...]) -> list[object]:
    """Every structural variety of these kernels for inputs of ``storages`` ("f16", "f32", "f64")."""
    specs: list[object] = []
    for storage in storages:
        prec = COMPUTE_OF[storage]
        for src in dict.fromkeys((storage, prec)):
            specs += [
                BankSpec(src, prec, prec),
                BankSpec(src, prec, prec, post=POST_DB),
                BankSpec(src, prec, prec, post=POST_LOG),
                BankSpec(src, prec, prec, floor=True),
                BankSpec(src, prec, prec, indexed=True),
            ]
        # the fused power spectrum: the stft's complex output, always of the compute precision
        specs += [
            BankSpec(prec, prec, prec, modulus=kind) for kind in (sk.MOD_ABS, sk.MOD_POWER2, sk.MOD_POWER)
        ]
        specs += [
            BankSpec(prec, prec, prec, post=post, modulus=sk.MOD_POWER2) for post in (POST_DB, POST_LOG)
        ]
        specs += [ReduceMaxSpec(prec, prec), *(ReduceMaxSpec(prec, prec, rule) for rule in FLOOR_RULES)]
        specs += [ReduceMaxSpec(prec, prec, nan=True), ReduceMaxSpec(prec, prec, FLOOR_TORCHAUDIO, nan=True)]
        for cplx in (False, True):
            for amplitude in (False, True):
                specs += [
                    DbSpec(storage, prec, cplx, amplitude),
                    DbSpec(storage, prec, cplx, amplitude, db=False),
                ]
        specs += [FloorSpec(prec)]
        specs += [ReduceClampedSpec(prec, prec), ReduceClampedSpec(prec, prec, first=False)]
        specs += [
            LogAdjointSpec(prec, prec, POST_LOG),
            LogAdjointSpec(prec, prec, POST_DB),
            LogAdjointSpec(prec, prec, POST_DB, floor=True),
            ColumnNormSpec(prec),
            ColumnNormAdjointSpec(prec),
            ColumnNormAdjointSpec(prec, cut=True),
        ]
    specs += variants(specs)
    return list(dict.fromkeys(specs))
