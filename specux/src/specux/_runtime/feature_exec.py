"""melspectrogram, mfcc and lfcc as generated kernels (the contract of :mod:`specux._backends.generated`), and
the adjoints of their filter-bank and logarithm stages.

The chain is the CPU backend's (:mod:`specux._backends.cpu.features`): the power spectrogram (for a
signal, the stft's complex spectrum read by the bank kernel itself, which takes ``|X| ** power`` as it
loads, so the power spectrogram is never written: :data:`FUSED`; or ``S`` as given), the bank applied
sparsely (:func:`bank_rows`: each filter's support range and packed weights, uploaded once per bank as
runtime tables), the dB or natural logarithm fused into the bank's store, the top_db floor from a
fixed-order max-reduction on the device (librosa's rule: one maximum over the whole array; torchaudio's: one
per item of the (-1, C, F, T) grouping), and the DCT (``p.dct``, lifter folded in) as the same sparse kernel
with full rows, the floor applied as it loads. Nothing comes back to the host.

Arrays are seen as (B, rows, T): B the product of the batch dimensions, the filter or bin axis, frames.
Float16 storage is read as float32 and every result and intermediate is float32; float64 stays float64.

One difference from the CPU's dense matrix product, by design of the sparse one: a NaN or infinity in a bin
of ``S`` reaches only the bands whose support holds that bin (the dense product spreads it to every band as
``0 * nan``), and a filter that covers no bin gives 0 for a NaN frame where the dense product gives NaN. A
NaN in the signal makes the whole frame's spectrum NaN, so signal inputs agree either way.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kernelkit.runtime import DeviceRuntime
from specux._codegen import feature_kernels as fk
from specux._codegen import spectral_kernels as sk
from specux._runtime import device_array as da
from specux._runtime.device_array import DeviceArray
from specux._runtime.launch import check_index, launch, launch_items

#: the dB constants of both conventions here (librosa's power_to_db with ref 1.0, amin 1e-10, and
#: torchaudio's AmplitudeToDB('power')): 10 log10(max(x, AMIN)) - 10 log10(max(AMIN, REF))
AMIN = 1e-10
REF = 1.0
#: what the natural logarithm adds (lfcc with log_lf=True)
LOG_EPS = 1e-6

#: elements one block of the reductions' first stage covers, at least
_CHUNK = 8 * fk.BLOCK
#: partials per group of the reductions' first stage, at most
_MAX_CHUNKS = 1024


@dataclass(frozen=True)
class Sparse:
    """A matrix as the bank kernel reads it: ``off`` (n_out + 1 ints), ``col`` (per row its first column,
    or per nonzero its column when ``indexed``) and the packed weights ``w`` in the compute precision."""

    off: Any
    col: Any
    w: Any
    n_out: int
    n_in: int
    indexed: bool


def bank_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(off, first, w)`` of the rows of ``matrix`` (n_out, n_in): each row's support from its first to its
    last nonzero, the weights of those ranges packed one after another (float64)."""
    m = np.asarray(matrix, dtype=np.float64)
    nz = m != 0
    has = nz.any(axis=1)
    lo = np.where(has, nz.argmax(axis=1), 0)
    hi = np.where(has, m.shape[1] - nz[:, ::-1].argmax(axis=1), 0)
    off = np.zeros(m.shape[0] + 1, np.int64)
    np.cumsum(hi - lo, out=off[1:])
    w = np.concatenate([m[r, lo[r] : hi[r]] for r in range(m.shape[0])]) if off[-1] else np.zeros(1)
    return off.astype(np.int32), lo.astype(np.int32), w


def bank_columns(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(off, rows, w)`` of the transpose of ``matrix`` (n_out, n_in): for each column (bin) the rows (bands)
    whose weight there is nonzero, in increasing order, and those weights (float64)."""
    m = np.asarray(matrix, dtype=np.float64)
    cols, rows = np.nonzero(m.T)  # grouped by column, rows increasing
    off = np.zeros(m.shape[1] + 1, np.int64)
    np.cumsum(np.bincount(cols, minlength=m.shape[1]), out=off[1:])
    w = m[rows, cols] if rows.size else np.zeros(1)
    return off.astype(np.int32), (rows if rows.size else np.zeros(1, np.intp)).astype(np.int32), w


_host_tables: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
_host_lock = threading.Lock()


def sparse(rt: DeviceRuntime, matrix: np.ndarray, prec: str, transposed: bool = False) -> Sparse:
    """``matrix`` (or its transpose) as device tables, made on the host once per matrix (keyed by a digest
    of its values) and kept by the runtime's table cache."""
    m = np.ascontiguousarray(matrix, dtype=np.float64)
    digest = hashlib.blake2b(m.tobytes(), digest_size=16).hexdigest()
    key = ("spx_sparse", digest, m.shape, transposed)
    with _host_lock:
        host = _host_tables.get(key)
        if host is None:
            host = bank_columns(m) if transposed else bank_rows(m)
            if len(_host_tables) >= 64:
                _host_tables.pop(next(iter(_host_tables)))
            _host_tables[key] = host
    off, col, w = host
    wdtype = np.float64 if prec == "f64" else np.float32
    n_out, n_in = (m.shape[1], m.shape[0]) if transposed else m.shape
    return Sparse(
        rt.table((*key, "off"), lambda: off),
        rt.table((*key, "col"), lambda: col),
        rt.table((*key, prec), lambda: w.astype(wdtype)),
        int(n_out),
        int(n_in),
        transposed,
    )


def _compute(dtype: str) -> str:
    """The dtype results and intermediates have for inputs of ``dtype`` (half storage computes in float32)."""
    return "float64" if da.REAL_OF.get(dtype, dtype) == "float64" else "float32"


def _prec(dtype: str) -> str:
    return da.STORAGE[_compute(dtype)]


def _rows_view(x: DeviceArray) -> tuple[int, int, int]:
    """(B, rows, T) of an array of shape (..., rows, T)."""
    B = 1
    for s in x.shape[:-2]:
        B *= int(s)
    return B, int(x.shape[-2]), int(x.shape[-1])


@dataclass(frozen=True)
class Floor:
    """The top_db floor of each group (``lower``, compute precision), the flat index of each group's first
    peak within the group (``peak_at``, -1 where the peak is not finite), and the grouping."""

    lower: Any
    peak_at: Any
    group_len: int
    n_groups: int


def apply(
    rt: DeviceRuntime,
    x: DeviceArray,
    mat: Sparse,
    post: int = fk.POST_NONE,
    c0: float = 0.0,
    c1: float = 0.0,
    floor: Floor | None = None,
    public: str = "melspectrogram",
    modulus: int = -1,
    power: float = 1.0,
) -> DeviceArray:
    """``mat`` applied along axis -2 of ``x`` (..., n_in, T), then ``post``: a new (..., n_out, T) array.

    ``modulus`` (a kind of :mod:`specux._codegen.spectral_kernels`' modulus) takes ``x`` as the complex
    spectrum (compute precision) and applies ``mat`` to its modulus (to ``power``) as it loads: the power
    spectrogram is not written."""
    B, K, T = _rows_view(x)
    if K != mat.n_in:
        raise ValueError(f"{public}: axis -2 of the input has {K} rows; the matrix has {mat.n_in} columns")
    if (modulus >= 0) != x.is_complex:
        raise ValueError(f"{public}: a complex input needs a modulus kind and a real one none; got {x.dtype}")
    dtype = _compute(da.REAL_OF.get(x.dtype, x.dtype))
    prec = da.STORAGE[dtype]
    out = da.empty(rt, (*x.shape[:-2], mat.n_out, T), dtype)
    total = out.size
    check_index(public, 2 * x.size if x.is_complex else x.size, total)
    if total == 0:
        return out
    in_storage = prec if modulus >= 0 else x.storage
    spec = fk.BankSpec(in_storage, prec, prec, mat.indexed, floor is not None, post, modulus)
    group_div = B if floor is None else max(1, floor.group_len // (mat.n_in * T))
    lower = mat.w if floor is None else floor.lower
    args = [x.buf, out.buf, mat.off, mat.col, mat.w, lower, total, mat.n_out, K, T, group_div, c0, c1]
    args.append(float(power))
    launch_items(rt, fk.render, spec, total, args)
    return out


def _chunking(group_len: int) -> tuple[int, int]:
    """(chunks per group, elements per chunk) of a reduction's first stage."""
    chunk = max(_CHUNK, -(-group_len // _MAX_CHUNKS))
    return max(1, -(-group_len // chunk)), chunk


def group_len(x: DeviceArray, rule: int) -> int:
    """Elements per top_db group of bands ``x`` (..., n, T): the whole array (librosa) or the last three
    dimensions of a 3-D or larger array (torchaudio's (-1, C, F, T) grouping)."""
    if rule == fk.FLOOR_LIBROSA:
        return x.size
    packed = int(x.shape[-3]) if len(x.shape) > 2 else 1
    return packed * int(x.shape[-2]) * int(x.shape[-1])


def top_db_floor(rt: DeviceRuntime, db: DeviceArray, rule: int, top_db: float) -> Floor:
    """The floor of each group of the dB array ``db`` (compute precision): two fixed-order max-reductions."""
    glen = group_len(db, rule)
    n_groups = db.size // glen
    chunks, chunk = _chunking(glen)
    prec = db.storage
    dtype = _compute(db.dtype)
    item = da.ITEMSIZE[dtype]
    pval = rt.alloc(n_groups * chunks * item)
    pidx = rt.alloc(n_groups * chunks * 4)
    lower = rt.alloc(n_groups * item)
    peak_at = rt.alloc(n_groups * 4)
    neg_inf = float("-inf")
    launch(
        rt,
        fk.render,
        fk.ReduceMaxSpec(prec, prec),
        n_groups * chunks,
        [db.buf, pidx, pval, pidx, glen, chunks, chunk, neg_inf, 0.0],
    )
    launch(
        rt,
        fk.render,
        fk.ReduceMaxSpec(prec, prec, rule),
        n_groups,
        [pval, pidx, lower, peak_at, chunks, 1, chunks, neg_inf, float(top_db)],
    )
    return Floor(lower, peak_at, glen, n_groups)


def _rule(p: Any) -> int:
    return fk.FLOOR_TORCHAUDIO if p.log == "torchaudio_db" else fk.FLOOR_LIBROSA


#: whether the chains apply the bank to the stft's complex output as they load it (the power spectrogram
#: never written); False runs the unfused chain (a modulus kernel, then the bank), kept for the tests
FUSED = True


def _modulus_kind(power: float) -> int:
    power = float(power)
    return sk.MOD_POWER2 if power == 2.0 else sk.MOD_ABS if power == 1.0 else sk.MOD_POWER


def _banded(
    rt: DeviceRuntime,
    x: DeviceArray,
    stft: Any,
    power: float,
    basis: np.ndarray,
    post: int = fk.POST_NONE,
    c0: float = 0.0,
    c1: float = 0.0,
    public: str = "melspectrogram",
) -> DeviceArray:
    """``basis`` applied along axis -2 of the power spectrogram ``|stft(x)| ** power`` (``stft`` the
    StftParams; None: ``x`` is that spectrogram, S as given), then ``post``. The signal's chain is the
    stft's complex spectrum read by one bank kernel that takes the modulus as it loads (:data:`FUSED`)."""
    if stft is None:
        return apply(rt, x, sparse(rt, basis, _prec(x.dtype)), post, c0, c1, public=public)
    from specux._runtime import spectral_exec as se

    return banded_spectrum(rt, se.spectrum(rt, x, stft), power, basis, post, c0, c1, public)


def banded_spectrum(
    rt: DeviceRuntime,
    X: DeviceArray,
    power: float,
    basis: np.ndarray,
    post: int = fk.POST_NONE,
    c0: float = 0.0,
    c1: float = 0.0,
    public: str = "melspectrogram",
) -> DeviceArray:
    """:func:`_banded` of a signal whose complex spectrum ``X`` (..., F, T) is computed already: one bank
    kernel that takes ``|X| ** power`` as it loads (:data:`FUSED`; else a modulus kernel, then the bank)."""
    if not FUSED:
        from specux._runtime import spectral_exec as se

        S = se.modulus(rt, X, power)
        return apply(rt, S, sparse(rt, basis, _prec(S.dtype)), post, c0, c1, public=public)
    mat = sparse(rt, basis, _prec(da.REAL_OF[X.dtype]))
    return apply(rt, X, mat, post, c0, c1, public=public, modulus=_modulus_kind(power), power=power)


def _log_post(p: Any) -> tuple[int, float, float]:
    if p.log in ("power_to_db", "torchaudio_db"):
        return fk.POST_DB, AMIN, float(10.0 * np.log10(max(AMIN, REF)))
    if p.log == "log":
        return fk.POST_LOG, LOG_EPS, 0.0
    return fk.POST_NONE, 0.0, 0.0


def melspectrogram(rt: DeviceRuntime, inputs: tuple[DeviceArray, ...], p: Any) -> DeviceArray:
    """``basis @ S`` along axis -2, S the power spectrogram of y (or S given)."""
    (x,) = inputs
    with rt.batch():
        return _banded(rt, x, p.stft, p.power, p.basis)


def _norm_kind(norm: float | None) -> tuple[int, float]:
    """(``kind``, ``p``) of the column-norm kernels for librosa's ``norm`` (None: the adjoint's no norm)."""
    if norm is None:
        return fk.NORM_NONE, 1.0
    if norm == np.inf:
        return fk.NORM_MAX, 1.0
    if norm == -np.inf:
        return fk.NORM_MIN, 1.0
    if norm == 0:
        return fk.NORM_COUNT, 1.0
    return fk.NORM_P, float(norm)


def column_norm(rt: DeviceRuntime, x: DeviceArray, norm: float) -> None:
    """Each (b, :, t) column of ``x`` (..., rows, T), compute precision, divided in place by its ``norm``
    (librosa.util.normalize's rules: inf, -inf, 0 or p > 0; a norm below the smallest normal number of the
    precision leaves the column as it is)."""
    B, rows, T = _rows_view(x)
    kind, power = _norm_kind(norm)
    columns = B * T
    if columns == 0 or rows == 0:
        return
    tiny = float(np.finfo(x.dtype).tiny)
    args = [x.buf, columns, rows, T, kind, power, tiny]
    launch_items(rt, fk.render, fk.ColumnNormSpec(x.storage), columns, args)


def chroma_stft(rt: DeviceRuntime, inputs: tuple[DeviceArray, ...], p: Any) -> DeviceArray:
    """``bank @ |STFT(y)|**2`` (or ``bank @ S``) along axis -2, each frame then normalised by ``p.norm``."""
    (x,) = inputs
    with rt.batch():
        raw = _banded(rt, x, p.stft, 2.0, p.bank, public="chroma_stft")
        if p.norm is not None:
            column_norm(rt, raw, p.norm)
    return raw


def column_norm_adjoint(
    rt: DeviceRuntime, x: DeviceArray, g: DeviceArray, norm: float | None, cut: float | None = None
) -> DeviceArray:
    """Gradient (a new array) with respect to ``x`` (..., rows, T), compute precision, of
    :func:`column_norm` (``norm`` None: none), given the gradient ``g`` of its output; with ``cut``, of
    ``column_norm`` of ``x`` with its values below ``cut`` set to zero first (chroma_cqt's threshold), whose
    gradient is zero there. The CPU backend's rule (:func:`specux._backends.cpu.adjoint_features.
    normalize_backward`, librosa.util.normalize's default threshold)."""
    if g.shape != x.shape or g.dtype != x.dtype:
        raise ValueError(
            f"column_norm_adjoint: the gradient is {g.dtype} {g.shape}; x is {x.dtype} {x.shape}"
        )
    if x.dtype != _compute(x.dtype):
        raise ValueError(f"column_norm_adjoint: x must be float32 or float64; got {x.dtype}")
    B, rows, T = _rows_view(x)
    kind, power = _norm_kind(norm)
    out = da.empty(rt, x.shape, x.dtype)
    columns = B * T
    check_index("column_norm_adjoint", x.size)
    if columns == 0 or rows == 0:
        return out
    tiny = float(np.finfo(x.dtype).tiny)
    spec = fk.ColumnNormAdjointSpec(x.storage, cut=cut is not None)
    args = [x.buf, g.buf, out.buf, columns, rows, T, kind, power, tiny, 0.0 if cut is None else float(cut)]
    launch_items(rt, fk.render, spec, columns, args)
    return out


def chroma_stft_adjoint(
    rt: DeviceRuntime, g: DeviceArray, y: DeviceArray, p: Any, X: DeviceArray | None = None
) -> DeviceArray:
    """Gradient (..., L) with respect to the signal ``y`` of :func:`chroma_stft` (``p`` a ChromaParams of a
    signal: ``p.stft`` given), given the gradient ``g`` (..., n_chroma, T) of its output: the unnormalised
    chroma recomputed (the fused bank product), the norm's adjoint, the bank's transpose, then the power
    spectrogram's adjoint and the stft's (:func:`specux._runtime.spectral_exec.stft_backward`). The
    complex spectrum of ``y`` is computed once for both (or is ``X``, where the caller has it)."""
    from specux._runtime import spectral_exec as se

    if p.stft is None:
        raise ValueError("chroma_stft_adjoint: the parameters are a given spectrogram S's, not a signal's")
    with rt.batch():
        if X is None:
            X = se.spectrum(rt, y, p.stft)
        g_raw = g
        if p.norm is not None:
            raw = banded_spectrum(rt, X, 2.0, p.bank, public="chroma_stft")
            g_raw = column_norm_adjoint(rt, raw, g, p.norm)
        gS = bank_adjoint(rt, g_raw, p.bank)
        return se.stft_backward(rt, gS, y, replace(p.stft, output="power"), X)


def _cepstrum(rt: DeviceRuntime, x: DeviceArray, p: Any, public: str) -> DeviceArray:
    with rt.batch():
        mel = p.mel
        post, c0, c1 = _log_post(p)
        if mel.stft is None:  # the bands given (mfcc's S, already logarithmic: p.log is "none")
            logged = x
            if post != fk.POST_NONE:
                n = _rows_view(x)[1]
                logged = apply(rt, x, sparse(rt, _identity(n), _prec(x.dtype)), post, c0, c1, public=public)
        else:
            logged = _banded(rt, x, mel.stft, mel.power, mel.basis, post, c0, c1, public=public)
        floor = None
        if post == fk.POST_DB and p.top_db is not None and logged.size:
            floor = top_db_floor(rt, logged, _rule(p), p.top_db)
        return apply(rt, logged, sparse(rt, p.dct, _prec(logged.dtype)), floor=floor, public=public)


def mfcc(rt: DeviceRuntime, inputs: tuple[DeviceArray, ...], p: Any) -> DeviceArray:
    """DCT of the (floored) dB mel bands, or of S when given."""
    (x,) = inputs
    return _cepstrum(rt, x, p, "mfcc")


def lfcc(rt: DeviceRuntime, inputs: tuple[DeviceArray, ...], p: Any) -> DeviceArray:
    """DCT of the (floored) dB, or natural log, of the linear bands."""
    (x,) = inputs
    return _cepstrum(rt, x, p, "lfcc")


# -- adjoints ---------------------------------------------------------------------------------------------


def bank_adjoint(rt: DeviceRuntime, g: DeviceArray, matrix: np.ndarray) -> DeviceArray:
    """``matrix.T @ g`` along axis -2: the gradient (..., n_in, T) of ``apply(matrix)`` given ``g``
    (..., n_out, T); each bin gathers the bands that touch it (no atomics, a fixed order)."""
    with rt.batch():
        return apply(rt, g, sparse(rt, matrix, _prec(g.dtype), transposed=True))


def _identity(n: int) -> np.ndarray:
    return np.eye(n)


def log_adjoint(rt: DeviceRuntime, bands: DeviceArray, g: DeviceArray, p: Any) -> DeviceArray:
    """Gradient with respect to the filter-bank energies ``bands`` (..., n, T) of the logarithm stage of
    ``p`` (a CepstralParams: dB with its top_db floor, whose gradient moves to the group's first peak, or
    ``log(x + 1e-6)``), given the gradient ``g`` of its output. The CPU backend's rule
    (:func:`specux._backends.cpu.adjoint_features.log_backward`)."""
    post, c0, c1 = _log_post(p)
    if post == fk.POST_NONE:
        return g
    if g.shape != bands.shape:
        raise ValueError(f"the gradient has shape {g.shape}; the bands have {bands.shape}")
    dtype = _compute(bands.dtype)
    prec = da.STORAGE[dtype]
    if g.dtype != dtype:
        raise ValueError(f"the gradient must be {dtype} for bands of {bands.dtype}; got {g.dtype}")
    out = da.empty(rt, bands.shape, dtype)
    total = out.size
    check_index("log_adjoint", total)
    if total == 0:
        return out
    with rt.batch():
        floor = None
        dummy_int = rt.table(("spx_int_zero",), lambda: np.zeros(1, np.int32))
        lower = peak_at = moved = g.buf
        use_floor = post == fk.POST_DB and p.top_db is not None
        if use_floor:
            _, n, _ = _rows_view(bands)
            # the dB values the forward floored: the identity with the dB store (1 * v is exact)
            db = apply(rt, bands, sparse(rt, _identity(n), prec), post, c0, c1)
            floor = top_db_floor(rt, db, _rule(p), p.top_db)
            chunks, chunk = _chunking(floor.group_len)
            item = da.ITEMSIZE[dtype]
            partial = rt.alloc(floor.n_groups * chunks * item)
            moved = rt.alloc(floor.n_groups * item)
            launch(
                rt,
                fk.render,
                fk.ReduceClampedSpec(bands.storage, prec),
                floor.n_groups * chunks,
                [bands.buf, g.buf, floor.lower, partial, floor.group_len, chunks, chunk, c0, c1],
            )
            launch(
                rt,
                fk.render,
                fk.ReduceClampedSpec(prec, prec, first=False),
                floor.n_groups,
                [partial, g.buf, floor.lower, moved, chunks, 1, chunks, c0, c1],
            )
            lower, peak_at = floor.lower, floor.peak_at
        else:
            peak_at = dummy_int
        spec = fk.LogAdjointSpec(bands.storage, prec, post, floor is not None)
        glen = floor.group_len if floor is not None else total
        launch_items(
            rt,
            fk.render,
            spec,
            total,
            [bands.buf, g.buf, lower, peak_at, moved, out.buf, total, glen, c0, c1],
        )
    return out


def features_adjoint(rt: DeviceRuntime, S: DeviceArray, g: DeviceArray, p: Any) -> DeviceArray:
    """Gradient with respect to the power spectrogram ``S`` (..., F, T) of melspectrogram (``p`` a
    MelParams) or of mfcc / lfcc (a CepstralParams) computed from ``S``, given the gradient ``g`` of the
    result: the DCT's transpose, the logarithm's adjoint, the bank's transpose, all on the device.
    (The stft's part of the chain belongs to :mod:`specux._runtime.spectral_exec`.)"""
    with rt.batch():
        if hasattr(p, "basis"):  # MelParams
            return bank_adjoint(rt, g, p.basis)
        mel = p.mel
        if p.log == "none":  # mfcc of a log spectrogram S: the DCT alone
            return bank_adjoint(rt, g, p.dct)
        bands = apply(rt, S, sparse(rt, mel.basis, _prec(S.dtype)))
        g_log = bank_adjoint(rt, g, p.dct)
        g_bands = log_adjoint(rt, bands, g_log, p)
        return bank_adjoint(rt, g_bands, mel.basis)


# -- decibels of a device array (power_to_db / amplitude_to_db) -------------------------------------------


@dataclass(frozen=True)
class DbParams:
    """power_to_db (``amplitude`` False) or amplitude_to_db (True) of a device array: ``ref`` the reference
    (its magnitude is used) or None for ``ref=np.max`` (the maximum of the magnitude, a NaN there refused as
    the CPU refuses it), ``amin`` (> 0) and ``top_db`` (None: no floor) as the public functions take them."""

    amplitude: bool
    ref: float | None
    amin: float
    top_db: float | None


def _peak(rt: DeviceRuntime, x: DeviceArray, nan: bool) -> DeviceArray:
    """The maximum (1,) of the real array ``x`` (compute precision): NaN when ``nan`` and any element is NaN
    (numpy's max), otherwise NaN ignored. Two fixed-order reductions."""
    chunks, chunk = _chunking(x.size)
    dtype = _compute(x.dtype)
    item = da.ITEMSIZE[dtype]
    pval, pidx = rt.alloc(chunks * item), rt.alloc(chunks * 4)
    peak = da.empty(rt, (1,), dtype)
    peak_at = rt.alloc(4)
    neg_inf = float("-inf")
    args1 = [x.buf, pidx, pval, pidx, x.size, chunks, chunk, neg_inf, 0.0]
    launch(rt, fk.render, fk.ReduceMaxSpec(x.storage, x.storage, nan=nan), chunks, args1)
    # torchaudio's rule with top_db 0 writes the peak itself
    args2 = [pval, pidx, peak.buf, peak_at, chunks, 1, chunks, neg_inf, 0.0]
    launch(rt, fk.render, fk.ReduceMaxSpec(x.storage, x.storage, fk.FLOOR_TORCHAUDIO, nan=nan), 1, args2)
    return peak


def to_db(rt: DeviceRuntime, inputs: tuple[DeviceArray, ...], p: DbParams) -> DeviceArray:
    """Decibels of ``x`` (any shape; real, or complex for its modulus): ``10 log10(max(v, amin)) -
    10 log10(max(amin, |ref|))`` with ``v`` the power (amplitude_to_db: ``|x| ** 2`` against ``amin ** 2``
    and ``ref ** 2``), floored at the maximum (NaN ignored) minus ``top_db`` where that maximum is finite:
    :func:`specux.convert.power_to_db`'s numbers, in the compute precision. ``ref=np.max`` (``p.ref`` None)
    downloads one number, the peak, after a reduction on the device."""
    (x,) = inputs
    public = "amplitude_to_db" if p.amplitude else "power_to_db"
    dtype = _compute(da.REAL_OF.get(x.dtype, x.dtype))
    prec = da.STORAGE[dtype]
    total = x.size
    check_index(public, 2 * total if x.is_complex else total)
    out = da.empty(rt, x.shape, dtype)
    if total == 0:
        return out
    amin = float(p.amin)
    if p.ref is None:
        with rt.batch():
            mag = x
            if x.is_complex or p.amplitude or x.storage != prec:
                mag = da.empty(rt, x.shape, dtype)
                spec = fk.DbSpec(x.storage, prec, x.is_complex, p.amplitude, db=False)
                launch_items(rt, fk.render, spec, total, [x.buf, mag.buf, total, 0.0, 0.0])
            peak = _peak(rt, mag, nan=True)
        ref = float(da.download(rt, peak)[0])  # after the batch: complete on every runtime
        if np.isnan(ref):
            raise ValueError(
                f"{public}: ref, a callable, returned nan (does S hold NaN? ref=np.nanmax ignores it)"
            )
        ref = abs(ref)
    else:
        ref = abs(float(p.ref))
    with rt.batch():
        if p.amplitude:
            amin, ref = amin * amin, ref * ref
        c1 = float(10.0 * np.log10(max(amin, ref)))
        spec = fk.DbSpec(x.storage, prec, x.is_complex, p.amplitude)
        launch_items(rt, fk.render, spec, total, [x.buf, out.buf, total, amin, c1])
        if p.top_db is not None:
            floor = top_db_floor(rt, out, fk.FLOOR_LIBROSA, float(p.top_db))
            launch_items(rt, fk.render, fk.FloorSpec(prec), total, [out.buf, floor.lower, total])
    return out


def power_to_db(rt: DeviceRuntime, inputs: tuple[DeviceArray, ...], p: DbParams) -> DeviceArray:
    """:func:`specux.convert.power_to_db` of a device array (``p.amplitude`` False): :func:`to_db`. Named as
    the public operation, so a generated backend can serve it by name."""
    if p.amplitude:
        raise ValueError("power_to_db: the parameters are amplitude_to_db's (amplitude=True)")
    return to_db(rt, inputs, p)


def amplitude_to_db(rt: DeviceRuntime, inputs: tuple[DeviceArray, ...], p: DbParams) -> DeviceArray:
    """:func:`specux.convert.amplitude_to_db` of a device array (``p.amplitude`` True): :func:`to_db`."""
    if not p.amplitude:
        raise ValueError("amplitude_to_db: the parameters are power_to_db's (amplitude=False)")
    return to_db(rt, inputs, p)
