"""stft and istft (and their adjoints) as generated kernels on any device runtime: the operations of the
generated backends (:mod:`specux._backends.generated`) and what the filter-bank features build on
(:func:`spectrogram`).

stft: the frame kernel writes the windowed frames (B, n_fft, T) of the centre-padded signal, the FFT family's
r2c along axis 1 turns them into the spectrum (B, F, T) in place of the public layout, and the output mode
is that array (``complex``), its (B, F, T, 2) real view (``real_imag``) or one elementwise pass
(``magnitude`` / ``power``). istft: the spectrum cut to the frames used, cast to the compute precision and
transposed to (B, T, F) (one tiled copy), c2r along the last axis (scale ``1 / n_fft``) to frames
(B, T, n_fft), so that the gather's reads are coalesced, then the overlap-add by gather, divided by
the squared-window sum (a runtime table, made once per parameters by the CPU's own sum) where it exceeds
``tiny``; ``nola="raise"``
downloads that one row after the batch and raises the CPU backend's NolaError. Every sum is a gather in a
fixed order: results are deterministic.

The semantics are the CPU backend's (:func:`specux._backends.cpu.stft._stft_numpy`,
:func:`specux._backends.cpu.stft._istft_numpy`); the adjoints are those of
:mod:`specux._backends.cpu.adjoint_stft` (the same maths on numpy). Float16 storage is read as float32 and
every result and intermediate is float32; float64 stays float64.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

import numpy as np

from kernelkit.runtime import DeviceRuntime
from specux._codegen import spectral_kernels as sk
from specux._runtime import device_array as da
from specux._runtime import fft_exec
from specux._runtime.device_array import DeviceArray
from specux._runtime.launch import check_index, chosen, launch, launch_items
from specux._validate import IstftParams, StftParams

__all__ = ["istft", "istft_adjoint", "spectrogram", "stft", "stft_adjoint", "stft_backward"]


def _compute(dtype: str) -> str:
    """The real dtype results and intermediates have for ``dtype`` (half storage computes in float32)."""
    return "float64" if da.REAL_OF.get(dtype, dtype) == "float64" else "float32"


def _batch(shape: tuple[int, ...], core: int) -> tuple[tuple[int, ...], int]:
    """The leading batch dimensions of ``shape`` (all but the last ``core``) and their product."""
    batch = tuple(int(s) for s in shape[: len(shape) - core])
    count = 1
    for s in batch:
        count *= s
    return batch, count


def _digest(a: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(a).tobytes(), digest_size=16).hexdigest()


def _window(rt: DeviceRuntime, window: np.ndarray, dtype: str, squared: bool = False) -> Any:
    """The float64 window (or its square, squared in float64) as a device table of ``dtype``, as the CPU
    casts it (``window.astype(dtype)``, ``(window ** 2).astype(dtype)``)."""
    w = np.asarray(window, dtype=np.float64)
    key = ("spx_window", _digest(w), w.size, dtype, squared)
    return rt.table(key, lambda: (w**2 if squared else w).astype(dtype))


def _zeros(rt: DeviceRuntime, dtype: str) -> Any:
    """A one-element table standing for an argument a kernel variant does not read."""
    return rt.table(("spx_zero", dtype), lambda: np.zeros(1, dtype))


def _pad_index(length: int, pad: int, mode: str) -> np.ndarray:
    """The signal sample each of the ``2 * pad`` padded positions copies (``-1``: a zero), by numpy.pad
    itself: its index map of ``arange(length)`` (so repeated folds of short signals are numpy's)."""
    if mode == "constant":
        return np.full(2 * pad, -1, np.int32)
    index = np.pad(np.arange(length), (pad, pad), mode=mode)
    return np.concatenate([index[:pad], index[pad + length :]]).astype(np.int32)


def _side_table(rt: DeviceRuntime, length: int, pad: int, mode: str) -> Any:
    if pad == 0:
        return _zeros(rt, "int32")
    return rt.table(("spx_pad_side", length, pad, mode), lambda: _pad_index(length, pad, mode))


def _unpad_tables(rt: DeviceRuntime, length: int, pad: int, mode: str) -> tuple[Any, Any]:
    """For each signal sample, the padded positions (``0 .. length + 2 * pad``) outside the signal that copy
    it, increasing: ``off`` (length + 1 ints) into ``pos``. The transpose of the centre padding."""

    def make() -> tuple[np.ndarray, np.ndarray]:
        index = _pad_index(length, pad, mode)
        positions = np.r_[0:pad, pad + length : length + 2 * pad]
        keep = index >= 0
        src, at = index[keep], positions[keep]
        order = np.argsort(src, kind="stable")  # grouped by sample, positions increasing within a group
        off = np.zeros(length + 1, np.int64)
        np.cumsum(np.bincount(src, minlength=length), out=off[1:])
        pos = at[order] if at.size else np.zeros(1, np.int64)
        return off.astype(np.int32), pos.astype(np.int32)

    key = ("spx_unpad", length, pad, mode)
    cached: dict[str, np.ndarray] = {}

    def part(name: str) -> np.ndarray:
        if not cached:
            cached["off"], cached["pos"] = make()
        return cached[name]

    return rt.table((*key, "off"), lambda: part("off")), rt.table((*key, "pos"), lambda: part("pos"))


def _support(window_length: int, n_fft: int) -> tuple[int, int]:
    """The samples ``lo .. hi`` of an ``n_fft`` frame that a centred window of ``window_length`` covers."""
    lo = (n_fft - window_length) // 2
    return lo, lo + window_length


def _frame(
    rt: DeviceRuntime,
    x: DeviceArray,
    B: int,
    length: int,
    n_fft: int,
    n_t: int,
    hop: int,
    pad: int,
    side: Any,
    sided: bool,
    window: Any,
    lo: int,
    hi: int,
    dtype: str,
    den: Any = None,
    tiny: float = 0.0,
    public: str = "stft",
) -> DeviceArray:
    """Frames (B, n_fft, n_t) of ``x`` (B, length) at padded positions ``t * hop + n`` (see the kernel)."""
    out = da.empty(rt, (B, n_fft, n_t), dtype)
    check_index(public, x.size, out.size)
    if out.size == 0:
        return out
    tiles_n, tiles_t = -(-n_fft // sk.TILE), -(-n_t // sk.TILE)
    check_index(public, B * tiles_n * tiles_t)
    prec = da.STORAGE[dtype]
    spec = chosen(sk.FrameSpec(x.storage, prec, den is not None))  # one block per tile, any block
    args = [
        x.buf,
        _zeros(rt, dtype) if den is None else den,
        window,
        side,
        out.buf,
        length,
        n_fft,
        n_t,
        hop,
        pad,
        int(sided),
        lo,
        hi,
        tiles_n,
        tiles_t,
        tiny,
    ]
    launch(rt, sk.render, spec, B * tiles_n * tiles_t, args)
    return out


def _spectrum(rt: DeviceRuntime, y: DeviceArray, p: StftParams) -> tuple[tuple[int, ...], DeviceArray]:
    """The batch shape of ``y`` (..., L) and its complex spectrum (B, F, T) of the compute precision."""
    if int(y.shape[-1]) != p.length:
        raise ValueError(f"stft: y has {y.shape[-1]} samples; the parameters were resolved for {p.length}")
    batch, B = _batch(y.shape, 1)
    dtype = _compute(p.dtype)
    pad = p.n_fft // 2 if p.center else 0
    lo, hi = _support(p.win_length, p.n_fft)
    frames = _frame(
        rt,
        y.reshape(B, p.length),
        B,
        p.length,
        p.n_fft,
        p.n_frames,
        p.hop_length,
        pad,
        _side_table(rt, p.length, pad, p.pad_mode),
        pad > 0,
        _window(rt, p.window, dtype),
        lo,
        hi,
        dtype,
    )
    return batch, fft_exec.run_device(rt, "r2c", frames, 1, p.n_fft, False, 1.0, da.COMPLEX_OF[dtype])


def _modulus(rt: DeviceRuntime, X: DeviceArray, kind: int, power: float = 1.0) -> DeviceArray:
    dtype = da.REAL_OF[X.dtype]
    out = da.empty(rt, X.shape, dtype)
    check_index("stft", 2 * X.size)
    if out.size:
        launch_items(
            rt,
            sk.render,
            sk.ModulusSpec(da.STORAGE[dtype], kind),
            out.size,
            [X.buf, out.buf, out.size, float(power)],
        )
    return out


def stft(rt: DeviceRuntime, inputs: tuple[DeviceArray, ...], p: StftParams) -> DeviceArray:
    """stft of ``y`` (..., L) in ``p.output`` mode: (..., F, T) complex or real, or (..., F, T, 2) real."""
    (y,) = inputs
    F = p.n_fft // 2 + 1
    with rt.batch():
        batch, X = _spectrum(rt, y, p)
        if p.output == "complex":
            out = X
        elif p.output == "real_imag":
            return DeviceArray(X.buf, (*batch, F, p.n_frames, 2), da.REAL_OF[X.dtype])
        else:
            out = _modulus(rt, X, sk.MOD_ABS if p.output == "magnitude" else sk.MOD_POWER2)
    return out.reshape(*batch, F, p.n_frames)


def spectrogram(rt: DeviceRuntime, y: DeviceArray, p: StftParams, power: float) -> DeviceArray:
    """``|stft(y)| ** power`` (``p.output`` is not looked at): real, compute precision, (..., F, T)."""
    with rt.batch():
        return modulus(rt, spectrum(rt, y, p), power)


def spectrum(rt: DeviceRuntime, y: DeviceArray, p: StftParams) -> DeviceArray:
    """The complex spectrum (..., F, T) of ``y`` (..., L), compute precision, whatever ``p.output``: for a
    caller that reads it more than once (a power spectrogram, a bank product, :func:`stft_backward`'s
    modulus adjoint) and so frames and transforms the signal once."""
    with rt.batch():
        batch, X = _spectrum(rt, y, p)
    return X.reshape(*batch, p.n_fft // 2 + 1, p.n_frames)


def modulus(rt: DeviceRuntime, X: DeviceArray, power: float) -> DeviceArray:
    """``|X| ** power`` of a complex spectrum: real, the compute precision, ``X``'s shape."""
    power = float(power)
    kind = sk.MOD_POWER2 if power == 2.0 else sk.MOD_ABS if power == 1.0 else sk.MOD_POWER
    return _modulus(rt, X, kind, power)


def _spectrum_copy(
    rt: DeviceRuntime,
    src: DeviceArray,
    B: int,
    F: int,
    t_src: int,
    t_dst: int,
    dtype: str,
    bins: tuple[int, int] = (0, 0),
    s_in: float = 1.0,
    s_out: float = 1.0,
    public: str = "istft",
) -> DeviceArray:
    """(B, F, t_src) spectra of any storage, complex or real, into (B, F, t_dst) complex of ``dtype``'s
    precision (frames past ``t_src`` zero; of wider ``src`` only the first ``t_dst`` frames read), bins
    ``bins[0] .. bins[1]`` times ``s_in`` and the rest times ``s_out``."""
    out = da.empty(rt, (B, F, t_dst), da.COMPLEX_OF[dtype])
    check_index(public, 2 * src.size, 2 * out.size)
    if out.size:
        spec = sk.SpectrumSpec(src.storage, da.STORAGE[dtype], src.is_complex)
        args = [src.buf, out.buf, out.size, F, t_src, t_dst, bins[0], bins[1], float(s_in), float(s_out)]
        launch_items(rt, sk.render, spec, out.size, args)
    return out


def _spectrum_transposed(
    rt: DeviceRuntime,
    src: DeviceArray,
    B: int,
    F: int,
    t_src: int,
    t_dst: int,
    dtype: str,
    bins: tuple[int, int] = (0, 0),
    s_in: float = 1.0,
    s_out: float = 1.0,
    public: str = "istft",
) -> DeviceArray:
    """:func:`_spectrum_copy` into the transposed layout (B, t_dst, F): a tiled copy, coalesced both ways."""
    out = da.empty(rt, (B, t_dst, F), da.COMPLEX_OF[dtype])
    check_index(public, 2 * src.size, 2 * out.size)
    if out.size:
        tiles_f, tiles_t = -(-F // sk.TILE), -(-t_dst // sk.TILE)
        check_index(public, B * tiles_f * tiles_t)
        spec = chosen(sk.SpectrumTSpec(src.storage, da.STORAGE[dtype], src.is_complex))
        args = [
            src.buf,
            out.buf,
            F,
            t_src,
            t_dst,
            tiles_f,
            tiles_t,
            bins[0],
            bins[1],
            float(s_in),
            float(s_out),
        ]
        launch(rt, sk.render, spec, B * tiles_f * tiles_t, args)
    return out


#: whether istft and the stft's adjoint transpose their spectrum first, so that the inverse FFT writes
#: frames (B, T, n_fft) and the overlap-add gather reads consecutive samples from consecutive addresses
#: (coalesced on a GPU); False keeps the (B, n_fft, T) frames, whose reads are ``T`` apart (kept for the
#: tests)
FRAMES_TRANSPOSED = True


def _gather(
    rt: DeviceRuntime,
    mode: int,
    frames: Any,
    window: Any,
    B: int,
    n_out: int,
    n_fft: int,
    n_t: int,
    hop: int,
    start: int,
    lo: int,
    hi: int,
    dtype: str,
    den: Any = None,
    off: Any = None,
    pos: Any = None,
    tiny: float = 0.0,
    public: str = "istft",
    transposed: bool = False,
) -> DeviceArray:
    out = da.empty(rt, (B, n_out), dtype)
    check_index(public, out.size, B * n_fft * n_t)
    if out.size:
        zero, zero_int = _zeros(rt, dtype), _zeros(rt, "int32")
        args = [
            zero if frames is None else frames,
            window,
            zero if den is None else den,
            zero_int if off is None else off,
            zero_int if pos is None else pos,
            out.buf,
            out.size,
            n_out,
            n_fft,
            n_t,
            hop,
            start,
            lo,
            hi,
            int(off is not None),
            tiny,
        ]
        spec = sk.GatherSpec(da.STORAGE[dtype], mode, transposed)
        launch_items(rt, sk.render, spec, out.size, args)
    return out


def _window_sum(rt: DeviceRuntime, p: IstftParams, dtype: str, start: int) -> DeviceArray:
    """The squared window overlap-added over ``p.n_frames`` frames at output samples ``0 .. out_length``
    (uncut position ``start + s``; zero past the last frame): (1, out_length) of ``dtype``.

    It depends on the parameters alone, so it is a runtime table like the window itself: made once per
    (window, n_fft, hop, frames, output length, start, dtype) on the host by the CPU backend's own sum
    (:func:`specux._backends.cpu.stft._window_sumsquare`, which builds it from a few distinct rows),
    uploaded, and kept while recently used; the numbers are the CPU's."""
    from specux._backends.cpu.stft import _fit, _window_sumsquare

    w = np.asarray(p.window, dtype=np.float64)
    key = ("spx_wsum", _digest(w), p.n_fft, p.hop_length, p.n_frames, p.out_length, start, dtype)

    def make() -> np.ndarray:
        q = p if p.dtype == dtype else replace(p, dtype=dtype)
        return np.ascontiguousarray(_fit(_window_sumsquare(q), start, p.out_length), dtype=dtype)

    return DeviceArray(rt.table(key, make), (1, p.out_length), dtype)


def _nola_raise(rt: DeviceRuntime, wsum: DeviceArray, p: IstftParams) -> None:
    """The CPU backend's NOLA check on the downloaded squared-window sum (one row, whatever the batch)."""
    from specux._backends.cpu.stft import _nola_check

    _nola_check(da.download(rt, wsum).reshape(-1), p)


def istft(rt: DeviceRuntime, inputs: tuple[DeviceArray, ...], p: IstftParams) -> DeviceArray:
    """istft of ``D`` (..., F, T) (complex, or real taken as zero phase): (..., out_length) real."""
    (D,) = inputs
    batch, B = _batch(D.shape, 2)
    F, t_in = int(D.shape[-2]), int(D.shape[-1])
    if F != p.n_fft // 2 + 1 or t_in < p.n_frames:
        raise ValueError(f"istft: stft_matrix of shape {D.shape} does not fit the resolved parameters")
    dtype = _compute(p.dtype)
    start = p.n_fft // 2 if p.center else 0
    tiny = float(np.finfo(dtype).tiny)
    with rt.batch():
        wsum = _window_sum(rt, p, dtype, start)
        transposed = FRAMES_TRANSPOSED
        if transposed:
            spec_ = _spectrum_transposed(rt, D.reshape(B, F, t_in), B, F, t_in, p.n_frames, dtype)
        elif D.dtype == da.COMPLEX_OF[dtype] and t_in == p.n_frames:
            spec_ = D.reshape(B, F, t_in)
        else:
            spec_ = _spectrum_copy(rt, D.reshape(B, F, t_in), B, F, t_in, p.n_frames, dtype)
        axis = 2 if transposed else 1
        frames = fft_exec.run_device(rt, "c2r", spec_, axis, p.n_fft, True, 1.0 / p.n_fft, dtype)
        out = _gather(
            rt,
            sk.GATHER_ISTFT,
            frames.buf,
            _window(rt, p.window, dtype),
            B,
            p.out_length,
            p.n_fft,
            p.n_frames,
            p.hop_length,
            start,
            0,
            p.n_fft,
            dtype,
            den=wsum.buf,
            tiny=tiny,
            transposed=transposed,
        )
    if p.nola == "raise":
        _nola_raise(rt, wsum, p)
    return out.reshape(*batch, p.out_length)


# -- adjoints ---------------------------------------------------------------------------------------------


def _paired_bins(n_fft: int) -> tuple[int, int]:
    """The bins of a one-sided spectrum that stand for a conjugate pair: 1 .. n_fft / 2 (even) or F."""
    F = n_fft // 2 + 1
    return 1, (n_fft // 2 if n_fft % 2 == 0 else F)


def stft_adjoint(rt: DeviceRuntime, grad: DeviceArray, p: StftParams) -> DeviceArray:
    """The gradient (..., L) real with respect to the signal of the complex stft, given the gradient
    ``grad`` (..., F, T) complex of its output (or its (..., F, T, 2) real pairs): the one-sided FFT's
    adjoint (paired bins halved, an unnormalised c2r), times the window, the overlap-add by gather, and the
    centre padding's transpose (each padded position's gradient gathered back onto the sample it copies)."""
    F, T = p.n_fft // 2 + 1, p.n_frames
    g = grad
    if not g.is_complex:  # real_imag pairs
        if tuple(g.shape[-3:]) != (F, T, 2):
            raise ValueError(f"stft_adjoint: a real gradient must end in ({F}, {T}, 2); got {g.shape}")
        g = DeviceArray(g.buf, tuple(g.shape[:-1]), da.COMPLEX_OF[g.dtype])
    if tuple(g.shape[-2:]) != (F, T):
        raise ValueError(f"stft_adjoint: the gradient must end in ({F}, {T}); got {grad.shape}")
    batch, B = _batch(g.shape, 2)
    dtype = _compute(p.dtype)
    pad = p.n_fft // 2 if p.center else 0
    lo, hi = _support(p.win_length, p.n_fft)
    transposed = FRAMES_TRANSPOSED
    with rt.batch():
        copy = _spectrum_transposed if transposed else _spectrum_copy
        h = copy(rt, g.reshape(B, F, T), B, F, T, T, dtype, _paired_bins(p.n_fft), 0.5, 1.0, "stft")
        frames = fft_exec.run_device(rt, "c2r", h, 2 if transposed else 1, p.n_fft, True, 1.0, dtype)
        off = pos = None
        if pad and p.pad_mode != "constant":
            off, pos = _unpad_tables(rt, p.length, pad, p.pad_mode)
        out = _gather(
            rt,
            sk.GATHER_UNPAD,
            frames.buf,
            _window(rt, p.window, dtype),
            B,
            p.length,
            p.n_fft,
            T,
            p.hop_length,
            pad,
            lo,
            hi,
            dtype,
            off=off,
            pos=pos,
            public="stft",
            transposed=transposed,
        )
    return out.reshape(*batch, p.length)


def stft_backward(
    rt: DeviceRuntime, grad: DeviceArray, y: DeviceArray, p: StftParams, X: DeviceArray | None = None
) -> DeviceArray:
    """The gradient (..., L) with respect to the signal ``y`` of stft in ``p.output`` mode, given the
    gradient ``grad`` of its output: ``complex`` / ``real_imag`` straight through :func:`stft_adjoint`;
    ``magnitude`` / ``power`` recompute the spectrum on the device and take ``g X / |X|`` (0 where X is 0)
    or ``2 g X`` first (the CPU backend's rule, :func:`specux._backends.cpu.adjoint_stft.stft_backward`).
    ``X``: that spectrum (:func:`spectrum` of ``y``) where the caller computed it already; not recomputed."""
    if p.output in ("complex", "real_imag"):
        return stft_adjoint(rt, grad, p)
    F, T = p.n_fft // 2 + 1, p.n_frames
    if tuple(grad.shape[-2:]) != (F, T) or grad.is_complex:
        raise ValueError(
            f"stft_backward: a {p.output} gradient is real and ends in ({F}, {T}); got {grad.shape}"
        )
    dtype = _compute(p.dtype)
    if grad.dtype != dtype:
        raise ValueError(f"stft_backward: the gradient must be {dtype}; got {grad.dtype}")
    if X is not None and (X.shape != (*y.shape[:-1], F, T) or X.dtype != da.COMPLEX_OF[dtype]):
        raise ValueError(
            f"stft_backward: the given spectrum must be {da.COMPLEX_OF[dtype]} {(*y.shape[:-1], F, T)}; got "
            f"{X.dtype} {X.shape}"
        )
    with rt.batch():
        if X is None:
            _, X = _spectrum(rt, y, p)
        G = modulus_adjoint(rt, X, grad, sk.MOD_ABS if p.output == "magnitude" else sk.MOD_POWER2)
        out = stft_adjoint(rt, G, p)
    return out.reshape(*y.shape)


def modulus_adjoint(rt: DeviceRuntime, X: DeviceArray, grad: DeviceArray, kind: int) -> DeviceArray:
    """The gradient (complex, X's shape) with respect to the complex ``X`` of its modulus (``kind``
    ``MOD_ABS``: ``g X / |X|``, 0 where X is 0) or squared modulus (``MOD_POWER2``: ``2 g X``), given the
    real gradient ``grad`` of as many elements (the compute precision)."""
    G = da.empty(rt, X.shape, X.dtype)
    check_index("stft", 2 * X.size)
    if G.size:
        spec = sk.ModulusAdjointSpec(da.STORAGE[da.REAL_OF[X.dtype]], kind)
        launch_items(rt, sk.render, spec, G.size, [X.buf, grad.buf, G.buf, G.size])
    return G


def istft_adjoint(
    rt: DeviceRuntime, grad: DeviceArray, p: IstftParams, frames_in: int | None = None
) -> DeviceArray:
    """The gradient (..., F, frames_in) complex with respect to istft's spectrum, given the gradient
    ``grad`` (..., out_length) real of its output (``frames_in``: the input's frames, default
    ``p.n_frames``; frames the forward did not use get zero): divided by the squared-window sum where the
    forward divided, framed (a gather) times the window, then the c2r's adjoint (an r2c, paired bins doubled,
    all over ``n_fft``)."""
    if int(grad.shape[-1]) != p.out_length:
        raise ValueError(f"istft_adjoint: the gradient must end in {p.out_length} samples; got {grad.shape}")
    frames_in = p.n_frames if frames_in is None else int(frames_in)
    if frames_in < p.n_frames:
        raise ValueError(f"istft_adjoint: frames_in={frames_in} is below the {p.n_frames} frames used")
    batch, B = _batch(grad.shape, 1)
    dtype = _compute(p.dtype)
    F = p.n_fft // 2 + 1
    start = p.n_fft // 2 if p.center else 0
    tiny = float(np.finfo(dtype).tiny)
    with rt.batch():
        wsum = _window_sum(rt, p, dtype, start)
        frames = _frame(
            rt,
            grad.reshape(B, p.out_length),
            B,
            p.out_length,
            p.n_fft,
            p.n_frames,
            p.hop_length,
            start,
            _zeros(rt, "int32"),
            False,
            _window(rt, p.window, dtype),
            0,
            p.n_fft,
            dtype,
            den=wsum.buf,
            tiny=tiny,
            public="istft",
        )
        G = fft_exec.run_device(rt, "r2c", frames, 1, p.n_fft, False, 1.0, da.COMPLEX_OF[dtype])
        n = float(p.n_fft)
        bins = _paired_bins(p.n_fft)
        out = _spectrum_copy(rt, G, B, F, p.n_frames, frames_in, dtype, bins, 2.0 / n, 1.0 / n)
    return out.reshape(*batch, F, frames_in)
