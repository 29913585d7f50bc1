"""The CPU kernels of stft and istft: plain functions on numpy arrays taking the validated parameters
(:class:`specux._validate.StftParams` / :class:`~specux._validate.IstftParams`).

The public fronts (:mod:`specux.ops.stft`) validate and dispatch here through the cpu backend's table; the
features (mel, cepstral, chroma), the adjoints (:mod:`.adjoint_stft`) and the torch ops call the block
machinery (:func:`spectrum_blocks`) directly.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.fft
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from specux import _cpu_fft, _threads
from specux._threads import for_each
from specux._validate import IstftParams, StftParams
from specux.errors import NolaError


def _raw_frames(y: np.ndarray, p: StftParams) -> np.ndarray:
    """(B, L) -> the frames (B, n_frames, n_fft) before the window, a strided view of the padded signal."""
    if p.center:
        y = np.pad(y, ((0, 0), (p.n_fft // 2, p.n_fft // 2)), mode=p.pad_mode)
    return sliding_window_view(y, p.n_fft, axis=-1)[:, :: p.hop_length][:, : p.n_frames]


def _windowed(frames: np.ndarray, p: StftParams) -> np.ndarray:
    """Raw frames (..., n_fft) times the window, a fresh array."""
    window = p.window.astype(p.dtype)
    if p.win_length < p.n_fft:  # only the window's support is non-zero: multiply there, zeros elsewhere
        lo = (p.n_fft - p.win_length) // 2
        out = np.zeros(frames.shape, dtype=p.dtype)
        np.multiply(
            frames[..., lo : lo + p.win_length],
            window[lo : lo + p.win_length],
            out=out[..., lo : lo + p.win_length],
        )
        return out
    return frames * window


def _frames(y: np.ndarray, p: StftParams) -> np.ndarray:
    """(B, L) -> windowed frames (B, n_frames, n_fft), a fresh array (framing itself is a strided view)."""
    return _windowed(_raw_frames(y, p), p)


#: numpy.pad modes whose padding reads only samples near the ends it pads (see :func:`_frame_sources`)
_LOCAL_PAD_MODES = frozenset({"constant", "reflect", "edge", "symmetric", "wrap"})


def _strided_frames(a: np.ndarray, start: int, count: int, n_fft: int, hop: int) -> np.ndarray:
    """Frames (B, count, n_fft) of (B, L) ``a``, frame ``t`` at ``a[:, start + t * hop:]``: a read-only
    view (what ``sliding_window_view(a, n_fft, axis=-1)[:, start::hop][:, :count]`` gives, at a fraction of
    its cost, which mattered for short signals)."""
    s0, s1 = a.strides
    return as_strided(a[:, start:], (a.shape[0], count, n_fft), (s0, hop * s1, s1), writeable=False)


def _frame_sources(y: np.ndarray, p: StftParams) -> list[tuple[int, int, np.ndarray]]:
    """The raw frames of ``y`` (B, L) as strided views ``(t0, t1, frames)``, ``frames`` (B, t1 - t0, n_fft)
    holding frames ``t0 .. t1``, in order, together covering every frame.

    The same numbers as :func:`_raw_frames` without writing the padded signal (a pass over the whole batch,
    2.4 ms of a 16 x 160000 float32 stft of about 10 ms on a 2-core Zen 3): frames that lie inside ``y`` are
    views of ``y`` itself; only those that reach into the centre padding come from a padded copy of the two
    ends. Padding ``[first K samples, last K samples]`` gives the same pads as padding the whole signal for
    these modes once ``K`` exceeds ``n_fft // 2`` (reflect reads ``n_fft // 2 + 1`` samples, wrap the other
    end), and whenever a frame lies inside, ``L >= n_fft``.
    """
    N, hop, T = p.n_fft, p.hop_length, p.n_frames
    h = N // 2
    if not p.center or h == 0:
        return [(0, T, _strided_frames(y, 0, T, N, hop))]
    L = y.shape[-1]
    t_lo = -(-h // hop)  # first frame that starts inside y
    t_hi = min(T, (L - N + h) // hop + 1)  # past the last frame that ends inside y
    if t_lo >= t_hi or p.pad_mode not in _LOCAL_PAD_MODES:
        return [(0, T, _raw_frames(y, p))]
    head = (t_lo - 1) * hop + N - h  # samples of y the head frames read
    tail = L - (t_hi * hop - h)  # samples of y the tail frames read
    K = min(L, max(head, tail, h + 1))
    if p.pad_mode == "constant":  # zeros, then the two ends (np.pad costs more than the rest together here)
        ends = np.zeros((y.shape[0], 2 * (K + h)), dtype=y.dtype)
        ends[:, h : h + K] = y[:, :K]
        ends[:, h + K : h + 2 * K] = y[:, L - K :]
    else:
        ends = np.pad(np.concatenate([y[:, :K], y[:, L - K :]], axis=-1), ((0, 0), (h, h)), mode=p.pad_mode)
    sources = [(0, t_lo, _strided_frames(ends, 0, t_lo, N, hop))]
    sources.append((t_lo, t_hi, _strided_frames(y, t_lo * hop - h, t_hi - t_lo, N, hop)))
    if t_hi < T:
        sources.append((t_hi, T, _strided_frames(ends, ends.shape[-1] - (tail + h), T - t_hi, N, hop)))
    return sources


@functools.cache
def _pocketfft_r2c() -> Callable[..., Any] | None:
    """scipy's pocketfft ``r2c``, which writes into a given array, when it is there and computes what
    ``scipy.fft.rfft`` does (checked once on a small input); None otherwise."""
    try:
        from scipy.fft._pocketfft.pypocketfft import r2c

        x = np.random.default_rng(0).standard_normal((3, 10)).astype(np.float32)
        out = np.empty((3, 6), np.complex64)
        r2c(x, (1,), True, 0, out, 1)
        if not np.array_equal(out, scipy.fft.rfft(x, axis=-1, workers=1)):
            return None
    except Exception:  # a private module: any change in it means the public call instead
        return None
    return r2c


@functools.cache
def _pocketfft_c2r() -> Callable[..., Any] | None:
    """scipy's pocketfft ``c2r`` (unnormalised inverse, into a given array), checked like
    :func:`_pocketfft_r2c` against ``scipy.fft.irfft(norm="forward")``; None otherwise."""
    try:
        from scipy.fft._pocketfft.pypocketfft import c2r

        X = np.random.default_rng(0).standard_normal((3, 6, 2)).astype(np.float32).view(np.complex64)[..., 0]
        out = np.empty((3, 10), np.float32)
        c2r(X, (1,), 10, False, 0, out, 1)
        if not np.array_equal(out, scipy.fft.irfft(X, n=10, axis=-1, norm="forward", workers=1)):
            return None
    except Exception:  # as in _pocketfft_r2c
        return None
    return c2r


def _scipy_rfft_into(frames: np.ndarray, out: np.ndarray) -> None:
    """``out[...] = scipy.fft.rfft(frames, axis=-1)`` on one thread, the FFT writing into ``out`` directly
    where scipy's pocketfft allows it (no temporary spectrum, no copy: a fifth of an stft's time)."""
    r2c = _pocketfft_r2c()
    if r2c is None:
        out[...] = scipy.fft.rfft(frames, axis=-1, workers=1)
    else:
        r2c(frames, (frames.ndim - 1,), True, 0, out, 1)


def _scipy_irfft_into(spectra: np.ndarray, n: int, out: np.ndarray) -> None:
    """``out[...] = scipy.fft.irfft(spectra, n, axis=-1, norm="forward")`` on one thread, into ``out``
    directly where scipy's pocketfft allows it."""
    c2r = _pocketfft_c2r()
    if c2r is None:
        out[...] = scipy.fft.irfft(spectra, n=n, axis=-1, norm="forward", workers=1)
    else:
        c2r(spectra, (spectra.ndim - 1,), n, False, 0, out, 1)


def _rfft_into(frames: np.ndarray, out: np.ndarray) -> None:
    """``out[...] = scipy.fft.rfft(frames, axis=-1)`` on the calling thread, writing into ``out``, by the
    engine :mod:`specux._cpu_fft` chooses (scipy's pocketfft, or torch.fft's when torch is imported and it
    measures faster here, or as ``SPECUX_CPU_FFT`` says)."""
    _cpu_fft.rfft_into(frames, out, _scipy_rfft_into)


def irfft_into(spectra: np.ndarray, n: int, out: np.ndarray) -> None:
    """``out[...] = scipy.fft.irfft(spectra, n, axis=-1, norm="forward")`` (no scaling) on the calling
    thread, into ``out``, by the engine :mod:`specux._cpu_fft` chooses; ``out`` has the real dtype of
    ``spectra``."""
    _cpu_fft.irfft_into(spectra, n, out, _scipy_irfft_into)


#: the most bytes of windowed frames transformed at a time by :func:`spectrum_blocks` (:func:`block_rows`).
#: Each FFT call has a fixed cost (MKL's DFTI, torch's FFT library on x86-64, set up per call more than
#: scipy's pocketfft), but a block, its spectra and the window's tile must stay in a core's share of the
#: caches: 16 x 1001 frames of 512 float32 on a 2-core Zen 1 (8 MiB of L3), MKL's engine: 20.5 ms in 2 MiB
#: blocks with a tile as large as the block, 12-15 ms in 1 MiB with a 32-row tile, 13-17 ms in 512 KiB,
#: 16-20 ms in 256 KiB (torch.stft 18-21 ms); on a 2-core Zen 3, 8.4 ms in 256 KiB, 6.1 ms in 1 MiB, 5.9 ms
#: in 2 MiB (the per-thread buffers are reused, so a block's size costs no allocation).
_STFT_BLOCK_BYTES = 1 << 20

#: rows of the window's tile (:func:`spectrum_blocks`): a block is multiplied 32 rows at a time
_TILE_ROWS = 32


def block_rows(B: int, T: int, N: int, itemsize: int) -> int:
    """Frames per block for ``B`` signals of ``T`` frames of ``N`` samples: as many as fit in
    :data:`_STFT_BLOCK_BYTES`, but no more than a quarter core's share of all frames, so that a short batch
    (one signal of 1001 frames: 0.6 ms against 2.5 ms in one block) still gives every core a few blocks; at
    least 16 (a block's fixed cost), at most ``T`` (a block lies within one signal)."""
    share = -(-B * T // (4 * cores()))
    return max(1, min(T, max(16, min(_STFT_BLOCK_BYTES // (N * itemsize), share))))


#: bytes of frames per istft task (:func:`_istft_blocks`)
_BLOCK_BYTES = 1 << 21


#: cores of this machine (read once)
cores = _threads.cores


def spans(jobs: list, parts: int) -> list[list]:
    """``jobs`` cut into at most ``parts`` runs of consecutive jobs of near-equal length."""
    parts = max(1, min(parts, len(jobs)))
    edges = [len(jobs) * i // parts for i in range(parts + 1)]
    return [jobs[a:b] for a, b in itertools.pairwise(edges)]


def window_tile(window: np.ndarray, rows: int) -> np.ndarray:
    """``window`` (w,) repeated on ``min(rows, _TILE_ROWS)`` rows, C-contiguous: the ``tile`` of
    :func:`_times_tile`."""
    return np.ascontiguousarray(np.broadcast_to(window, (max(1, min(rows, _TILE_ROWS)), window.shape[-1])))


def _times_tile(rows: np.ndarray, tile: np.ndarray) -> None:
    """``rows *= window`` in place, for rows (n, w) of a block and ``tile`` (k, w) the window on each of its
    k rows: k rows at a time (one broadcast over groups of k rows), then what is left."""
    n, k = rows.shape[0], tile.shape[0]
    whole = n - n % k
    if whole:
        groups = rows[:whole].view()
        groups.shape = (whole // k, k, rows.shape[1])  # in place, never a copy (splitting the row axis)
        np.multiply(groups, tile, out=groups)
    if whole < n:
        np.multiply(rows[whole:], tile[: n - whole], out=rows[whole:])


def spectrum_blocks(
    y: np.ndarray,
    p: StftParams,
    consume: Callable[[int, int, np.ndarray], None] | None,
    out: np.ndarray | None = None,
) -> None:
    """Call ``consume(b, t0, X)`` with the complex spectra ``X`` (frames, 1 + n_fft // 2) of frames
    ``t0 .. t0 + len(X)`` of row ``b`` of ``y`` (B, L), block by block, spread over the cores.

    Each block (:func:`block_rows` frames) is windowed, transformed and consumed in turn, in buffers the
    thread reuses; each frame's FFT is the same as in one call over all frames, so results do not depend on
    the blocking. ``consume`` runs on pool threads, on distinct blocks; ``X`` is only valid during the call (a
    buffer the thread reuses), unless ``out`` is given: an array (B, n_frames, 1 + n_fft // 2) of the complex
    dtype that the FFT writes into, ``X`` then being its slice (``consume`` may be None).
    """
    sources = _frame_sources(y, p)
    B, T, N = y.shape[0], p.n_frames, p.n_fft
    rows = block_rows(B, T, N, np.dtype(p.dtype).itemsize)
    window = p.window.astype(p.dtype)
    lo, hi = 0, N
    if p.win_length < N:  # only the window's support is non-zero: multiply there, zeros elsewhere
        lo = (N - p.win_length) // 2
        hi = lo + p.win_length
    cdtype = np.result_type(p.dtype, np.complex64)
    # the window repeated over a few rows: NumPy multiplies two arrays of one shape 2.4 x faster than it
    # broadcasts a row over the block (16 x 1001 frames of 512 float32, one Zen 3 core: copy then multiply by
    # a whole-block tile 1.8 ms, multiply the framed view by the window row 4.5 ms); the same products. A
    # tile of 32 rows, applied to the block 32 rows at a time, is as fast and leaves the cache to the block
    tile = window_tile(window[lo:hi], rows)

    def run(span: list[tuple[int, int]]) -> None:
        chunk = np.zeros((rows, N), dtype=p.dtype) if hi - lo < N else np.empty((rows, N), dtype=p.dtype)
        spectra = None if out is not None else np.empty((rows, N // 2 + 1), dtype=cdtype)
        for b, t0 in span:
            t1 = min(T, t0 + rows)
            for s0, s1, frames in sources:
                a, z = max(s0, t0), min(s1, t1)
                if a < z:
                    dst = chunk[a - t0 : z - t0, lo:hi]
                    np.copyto(dst, frames[b, a - s0 : z - s0, lo:hi])
                    _times_tile(dst, tile)
            X = out[b, t0:t1] if out is not None else spectra[: t1 - t0]
            _rfft_into(chunk[: t1 - t0], X)
            if consume is not None:
                consume(b, t0, X)

    blocks = [(b, t0) for b in range(B) for t0 in range(0, T, rows)]
    # a few runs of blocks per core, one task each: a task per block cost more in handing out than a small
    # block's FFT; up to 4 per core, so that a core slowed by other programs does not hold up the rest, and
    # at least 4 blocks each
    for_each(run, spans(blocks, min(4 * cores(), len(blocks) // 4)))


def _spectrum_tf(y: np.ndarray, p: StftParams) -> np.ndarray:
    """(B, L) real -> complex spectra laid out (B, n_frames, 1 + n_fft // 2)."""
    out = np.empty((y.shape[0], p.n_frames, p.n_fft // 2 + 1), dtype=np.result_type(p.dtype, np.complex64))
    spectrum_blocks(y, p, None, out)
    return out


def _power_tf(X: np.ndarray, power: float) -> np.ndarray:
    """|X| ** power without the complex abs when power is 2."""
    if power == 2.0:
        # squares written once and added in place: half the time of re * re + im * im (one temporary less)
        out = np.square(X.real)
        out += np.square(X.imag)
        return out
    mag = np.abs(X)
    return mag if power == 1.0 else mag**power


def _stft_numpy(y: np.ndarray, p: StftParams) -> np.ndarray:
    """stft on numpy: (..., L) -> (..., 1 + n_fft // 2, n_frames) in ``p.output`` mode."""
    y = np.asarray(y, dtype=p.dtype)
    batch = y.shape[:-1]
    X = _spectrum_tf(y.reshape(-1, y.shape[-1]), p)
    if p.output == "complex":
        out = X
    elif p.output == "magnitude":
        out = np.abs(X)
    elif p.output == "power":
        out = _power_tf(X, 2.0)
    else:  # real_imag: (..., F, T, 2) from the (B, T, F) layout
        out = X.view(X.real.dtype).reshape((*X.shape, 2))
        return out.reshape(batch + out.shape[1:]).swapaxes(-2, -3)
    return out.reshape(batch + out.shape[1:]).swapaxes(-1, -2)


def _overlap_add(frames: np.ndarray, hop: int) -> np.ndarray:
    """(B, T, N) -> (B, N + hop * (T - 1)): one vectorised add per hop-sized slice of the frame."""
    B, T, N = frames.shape
    chunks = -(-N // hop)
    buf = np.zeros((B, T + chunks - 1, hop), dtype=frames.dtype)
    for j in range(chunks):
        seg = frames[:, :, j * hop : (j + 1) * hop]
        buf[:, j : j + T, : seg.shape[-1]] += seg
    return buf.reshape(B, -1)[:, : N + hop * (T - 1)]


def _window_sumsquare(p: IstftParams) -> np.ndarray:
    """The squared window overlap-added over ``p.n_frames`` frames: (n_fft + hop * (n_frames - 1),)."""
    wsum = _WindowSumSquare(p)
    return wsum.rows(0, -(-wsum.length // wsum.hop)).reshape(-1)[: wsum.length]


def _fit(a: np.ndarray, start: int, length: int) -> np.ndarray:
    """a[..., start:start + length], zero-padded at the end when ``a`` is too short."""
    piece = a[..., start : start + length]
    if piece.shape[-1] == length:
        return piece
    out = np.zeros((*a.shape[:-1], length), dtype=a.dtype)
    out[..., : piece.shape[-1]] = piece
    return out


def _nola_check(wsum: np.ndarray, p: IstftParams) -> None:
    bad = np.flatnonzero(~(wsum > np.finfo(p.dtype).tiny))
    if p.nola == "raise" and bad.size:
        shown = ", ".join(map(str, bad[:10])) + (", ..." if bad.size > 10 else "")
        raise NolaError(
            f"istft: the window does not satisfy NOLA here: its squared sum is <= tiny({p.dtype}) at "
            f"{bad.size} of {wsum.size} output samples (positions {shown}); "
            "those samples cannot be recovered. "
            f"Use a window/hop pair whose overlapped squared windows never vanish (e.g. hann with "
            f"hop_length <= win_length // 2), center=True, or nola='ignore' (leaves them undivided)"
        )


def _istft_numpy(D: np.ndarray, p: IstftParams) -> np.ndarray:
    """istft on numpy: (..., 1 + n_fft // 2, T) complex -> (..., out_length) real of ``p.dtype``."""
    D = np.asarray(D)[..., : p.n_frames]
    batch = D.shape[:-2]
    cdtype = np.result_type(p.dtype, np.complex64)
    D = D.reshape((-1, *D.shape[-2:])).astype(cdtype, copy=False)
    start = p.n_fft // 2 if p.center else 0
    wsum = _WindowSumSquare(p)
    if not wsum.positive(start, p.out_length):
        # samples that no window reaches (or that lie past the frames): with nola="raise", say where
        _nola_check(_fit(_window_sumsquare(p), start, p.out_length), p)
    return _istft_blocks(D, p, wsum, start).reshape((*batch, p.out_length))


class _WindowSumSquare:
    """The squared windows overlap-added over ``p.n_frames`` frames, in rows of ``hop_length`` samples
    (row ``m`` covers samples ``m * hop .. (m + 1) * hop`` of the uncut signal), without writing them all:
    every row that all ``chunks`` overlapping frames reach is the same, so only the first and last rows
    differ. Each row is summed in the order of :func:`_overlap_add`, so its numbers are the same."""

    def __init__(self, p: IstftParams) -> None:
        hop, T = p.hop_length, p.n_frames
        self.hop, self.n_frames, self.length = hop, T, p.n_fft + hop * (T - 1)
        self.chunks = c = -(-p.n_fft // hop)
        self.tiny = np.finfo(p.dtype).tiny
        # a short run of frames has every kind of row: c - 1 first rows, a full row, c - 1 last rows
        short = min(T, 2 * c + 1)
        sq = (p.window**2).astype(p.dtype)
        rows = np.zeros((short + c - 1, hop), dtype=p.dtype)
        rows.reshape(-1)[: p.n_fft + hop * (short - 1)] = _overlap_add(
            np.broadcast_to(sq, (1, short, p.n_fft)), hop
        )[0]
        self._rows, self._short = rows, short

    def _source(self, m: np.ndarray) -> np.ndarray:
        """Which stored row holds each row ``m``."""
        if self._short == self.n_frames:
            return m
        c, shift = self.chunks, self.n_frames - self._short
        # first rows as in the short run, full rows its row c, last rows its rows shifted by `shift`
        return np.where(m < c - 1, m, np.where(m <= self.n_frames - 1, c, m - shift))

    def rows(self, m0: int, m1: int) -> np.ndarray:
        """Rows ``m0 .. m1`` (m1 - m0, hop)."""
        return self._rows[self._source(np.arange(m0, m1))]

    def positive(self, start: int, length: int) -> bool:
        """Whether every sample ``start .. start + length`` lies in the signal and gets a sum above tiny."""
        if length <= 0 or start + length > self.length:
            return False
        hop = self.hop
        m0, m1 = start // hop, -(-(start + length) // hop)
        lo, hi = start - m0 * hop, start + length - (m1 - 1) * hop
        if m1 - m0 == 1:
            return bool((self.rows(m0, m1)[0, lo:hi] > self.tiny).all())
        inner = self._rows[np.unique(self._source(np.arange(m0 + 1, m1 - 1)))]
        ends = np.concatenate([self.rows(m0, m0 + 1)[0, lo:], self.rows(m1 - 1, m1)[0, :hi]])
        return bool((inner > self.tiny).all() and (ends > self.tiny).all())


def _istft_blocks(D: np.ndarray, p: IstftParams, wsum: _WindowSumSquare, start: int) -> np.ndarray:
    """The inverse in blocks of output rows, spread over the cores.

    Each task owns rows ``m0 .. m1`` of ``hop`` output samples, transforms the frames that reach them (the
    first ``chunks - 1`` of them also belong to the previous task: about 1 % more transforms), overlap-adds
    into a buffer that stays in cache, in the order :func:`_overlap_add` adds, and divides by the window
    sum there (where it is above tiny): the numbers are those of the transform, overlap-add and division of
    the whole signal at once, and no two tasks write the same samples. (All at once, on the 3-minute clip:
    17 ms for the transforms on two threads, then 5 ms windowing, 15 ms overlap-adding and more dividing,
    each a pass over memory.)
    """
    B, hop, T, c = D.shape[0], p.hop_length, p.n_frames, wsum.chunks
    window = p.window.astype(p.dtype)
    out = np.empty((B, p.out_length), dtype=p.dtype)
    # samples asked for past the end of the last frame are zeros
    end = min(start + p.out_length, wsum.length)
    out[:, max(0, end - start) :] = 0
    first, last = start // hop, -(-end // hop)
    per_task = max(c, _BLOCK_BYTES // (p.n_fft * np.dtype(p.dtype).itemsize))

    def task(job: tuple[int, int]) -> None:
        b, m0 = job
        m1 = min(last, m0 + per_task)
        f0, f1 = max(0, m0 - c + 1), min(T, m1)
        frames = scipy.fft.irfft(D[b, :, f0:f1].T, n=p.n_fft, axis=-1, workers=1)
        frames *= window
        acc = np.zeros((m1 - m0, hop), dtype=p.dtype)
        for j in range(c):
            seg = frames[:, j * hop : (j + 1) * hop]
            ta, tb = max(f0, m0 - j), min(f1, m1 - j)
            if ta < tb:
                acc[ta + j - m0 : tb + j - m0, : seg.shape[-1]] += seg[ta - f0 : tb - f0]
        sums = wsum.rows(m0, m1)
        ok = sums > wsum.tiny
        if ok.all():
            acc /= sums
        else:  # left undivided where no window reaches (nola="ignore")
            acc[ok] /= sums[ok]
        a, z = max(start, m0 * hop), min(end, m1 * hop)
        out[b, a - start : z - start] = acc.reshape(-1)[a - m0 * hop : z - m0 * hop]

    for_each(task, [(b, m0) for b in range(B) for m0 in range(first, last, per_task)])
    return out
