"""The CPU kernel of the constant-Q and variable-Q transforms (librosa 0.11's multirate algorithm): the
plan (:func:`vqt_plan`: early downsampling, the octaves' rates and hops), each octave's frame weights
(:func:`octave_bases`) and :func:`vqt_cpu`, on numpy arrays, with the validated
:class:`specux._validate.VqtParams`.

The transform runs octave by octave from the top. In librosa, each octave multiplies a frequency-domain basis
(:func:`specux._filters.constant_q.vqt_fft_basis`) with the spectra of unwindowed centred frames of the signal
at that octave's rate; between octaves the hop is halved and the signal downsampled by two while the hop stays
even. Both steps are linear, so the CPU path here folds the FFT into the basis once (memoised time-domain
weights, :func:`specux._filters.constant_q.vqt_frame_weights`) and computes each octave as one real matrix
product of the frames with those weights. The step-by-step version is :func:`specux._reference.cqt.vqt`;
``docs/specux/constant-q.md`` lists the resamplers and the errors that result. The public fronts are in
:mod:`specux.ops.cqt`; the adjoints in :mod:`.adjoint_cq`.
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import queue
from dataclasses import dataclass

import numpy as np

from specux._filters import constant_q as cqf
from specux._resample import SOXR_QUALITIES, StreamDownsampler, downsample
from specux._threads import can_fan_out, pool, single_threaded_blas
from specux._validate import VqtParams

#: overlapping frames are copied and multiplied in blocks of about this many samples per row, and of at
#: least _MIN_BLOCK_FRAMES frames. OpenBLAS multiplies products of up to about 10^6 multiply-adds without
#: repacking them (its "small matrix" kernels on AVX-512): 128 frames of 256 samples by 24 weight columns ran
#: at 96 GFLOP/s where 256 frames ran at 67 (1 << 16), and summed more accurately (float32 cqt of the
#: benchmark's 3-minute clip: 3.2e-7 against 1.2e-6 of the peak, both against float64)
_BLOCK_SAMPLES = 1 << 15
_MIN_BLOCK_FRAMES = 64
#: samples (all rows together) of the frames that one numpy call multiplies, in blocks
_CALL_SAMPLES = 1 << 18
#: rows of a batch that one pool task takes through all octaves of the multirate transform, at most
_ROWS_PER_TASK = 8
#: input samples per piece of the pipelined chain of halvings of one signal: a few dozen pieces for a
#: clip of minutes (each piece costs a few calls into libsoxr), one for a short one
_CHAIN_PIECE = 1 << 17


@dataclass(frozen=True)
class _Octave:
    freqs: np.ndarray
    alpha: np.ndarray
    sr: float
    hop: int
    rows: slice


@dataclass(frozen=True)
class VqtPlan:
    """What the multirate algorithm does for given parameters, independent of the signal's values."""

    freqs: np.ndarray
    lengths: np.ndarray
    early_factor: int
    sr: float
    octaves: tuple[_Octave, ...]


def vqt_plan(p: VqtParams) -> VqtPlan:
    """Centre frequencies, filter lengths, early downsampling and the per-octave rates and hops for ``p``.

    Raises ValueError when the highest filter reaches above the Nyquist frequency.
    """
    bpo = p.bins_per_octave
    freqs = cqf.cq_frequencies(p.n_bins, fmin=p.fmin, bins_per_octave=bpo, intervals=p.intervals)
    alpha = cqf.equal_temperament_alpha(bpo) if p.n_bins == 1 else cqf.relative_bandwidth(freqs)
    _, cutoff = cqf.wavelet_lengths(
        freqs=freqs, sr=p.sr, window=p.window, filter_scale=p.filter_scale, gamma=p.gamma, alpha=alpha
    )
    cqf.check_nyquist(cutoff, p.sr, float(freqs[-1]))
    n_octaves = math.ceil(p.n_bins / bpo)
    n_filters = min(bpo, p.n_bins)

    sr, hop, early = p.sr, p.hop_length, 1
    if p.res_type is not None:
        early = 2 ** _early_downsample_count(p.sr / 2.0, cutoff, hop, n_octaves)
        sr, hop = sr / early, hop // early

    octaves = []
    my_sr, my_hop = sr, hop
    for i in range(n_octaves):
        stop = p.n_bins - n_filters * i
        start = max(0, stop - n_filters)
        octaves.append(
            _Octave(
                freqs[start:stop],
                alpha[start:stop] if alpha.size > 1 else alpha,
                my_sr,
                my_hop,
                slice(start, stop),
            )
        )
        if p.res_type is not None and my_hop % 2 == 0:
            my_hop //= 2
            my_sr /= 2.0
    lengths, _ = cqf.wavelet_lengths(
        freqs=freqs, sr=sr, window=p.window, filter_scale=p.filter_scale, gamma=p.gamma, alpha=alpha
    )
    return VqtPlan(freqs, lengths, early, sr, tuple(octaves))


def _early_downsample_count(nyquist: float, cutoff: float, hop_length: int, n_octaves: int) -> int:
    """How many times the signal can be halved before the first octave (librosa's rule).

    Limited by the headroom between the bank's cut-off and Nyquist (keeping one octave of margin) and by the
    factors of two in the hop that the octaves themselves will need.
    """
    by_bandwidth = max(0, math.ceil(math.log2(nyquist / cutoff)) - 1 - 1)
    twos = 0
    while hop_length > 0 and hop_length % (2 ** (twos + 1)) == 0:
        twos += 1
    by_hop = max(0, twos - n_octaves + 1)
    return min(by_bandwidth, by_hop)


def _n_frames(n: int, n_fft: int, hop: int) -> int:
    """Frames of a centred analysis: the signal is padded by ``n_fft // 2`` on both sides."""
    return 1 + (n + 2 * (n_fft // 2) - n_fft) // hop


@dataclass(frozen=True)
class _EdgeLayout:
    """Where an octave's centred frames come from, block by block of :func:`_block_frames` frames.

    Blocks with frames that reach into the padding at either end (frames ``[0, head_end)`` and from
    ``tail_start`` on) are assembled frame by frame (:func:`_edge_block`); the blocks in between are read
    straight from the signal.
    """

    head_end: int
    tail_start: int

    @staticmethod
    def of(n: int, n_fft: int, hop: int, pad_mode: str, n_frames: int) -> _EdgeLayout | None:
        """The layout, or None where only padding the whole signal will do (wrap padding reads the other
        end; on a short signal a frame reaches past both ends, or reflect / symmetric padding reads more of
        an end than there is)."""
        pad = n_fft // 2
        block = _block_frames(n_fft)
        head = -(-pad // hop)  # frames that start before the signal
        last_left_end = (head - 1) * hop - pad + n_fft  # where the last of them ends
        if pad_mode == "wrap" or n < pad + 1 or last_left_end > n:
            return None
        inner_end = (n + pad - n_fft) // hop + 1 if n + pad >= n_fft else 0  # frames that end inside it
        head_end = min(n_frames, -(-head // block) * block)
        tail_start = max(head_end, min(n_frames, inner_end // block * block))
        return _EdgeLayout(head_end, tail_start)


def _edge_block(x: np.ndarray, t0: int, count: int, hop: int, n_fft: int, pad_mode: str) -> np.ndarray:
    """Centred frames ``t0 .. t0 + count`` of ``x`` (batch, n), some of which reach into the padding, as a
    fresh array (batch, 1, count, n_fft): the frames inside ``x`` copied from it, the others from padded
    copies of no more of its ends than they read (padding the samples of a whole block was a copy of up to
    64K samples per row and octave for the sake of one frame). Needs the conditions of
    :meth:`_EdgeLayout.of`."""
    rows, n = x.shape
    pad = n_fft // 2
    frames = np.empty((rows, 1, count, n_fft), x.dtype)
    first = t0 * hop - pad  # where frame t0 starts in x
    lo = min(count, -(first // hop)) if first < 0 else 0  # frames that start before x
    hi = max(lo, min(count, (n - n_fft - first) // hop + 1))  # ... and those that end inside it
    if lo:
        width = max(first + (lo - 1) * hop + n_fft, pad + 1)
        left = _pad_end(x[:, :width], pad, pad_mode, "left")
        frames[:, 0, :lo] = _frames(left, first + pad, hop, n_fft, lo)
    if hi > lo:
        frames[:, 0, lo:hi] = _frames(x, first + lo * hop, hop, n_fft, hi - lo)
    if hi < count:
        start = first + hi * hop
        cut = min(start, n - pad - 1)
        right = _pad_end(x[:, cut:], pad, pad_mode, "right")
        frames[:, 0, hi:] = _frames(right, start - cut, hop, n_fft, count - hi)
    return frames


def _octave_response(
    x: np.ndarray,
    weights: np.ndarray,
    n_fft: int,
    hop: int,
    pad_mode: str,
    n_frames: int,
    out: np.ndarray,
) -> None:
    """Write the responses of one octave's filters into ``out`` (batch, k, n_frames), complex.

    Each centred frame of ``x`` (batch, n) times ``weights`` (n_fft, 2 k; real and imaginary part of each
    filter side by side) is one row of k complex responses, one matrix product per block of frames. Blocks
    inside ``x`` are read from it in place; those at each end that reach into the padding are assembled frame
    by frame (padding a whole signal of minutes was a copy as long as the products themselves).

    Blocks start at multiples of :func:`_block_frames` counted from the octave's first frame: BLAS's rounding
    of a frame depends on how many frames share its product (on a 2048-point octave, 14-frame products doubled
    the float32 error of 64-frame ones), and this way a frame always shares it with the same frames, whatever
    the batch (the torch path groups rows differently). Each numpy call covers all rows of ``x``: every call
    takes the GIL, which the threads of a batch share.
    """
    pad = n_fft // 2
    block = _block_frames(n_fft)
    edges = _EdgeLayout.of(x.shape[1], n_fft, hop, pad_mode, n_frames)
    padded = None
    if edges is None:
        # the whole padded signal serves as the source of every block
        head_end, tail_start = n_frames, n_frames
        padded = np.pad(x, [(0, 0), (pad, pad)], mode=pad_mode)
    else:
        head_end, tail_start = edges.head_end, edges.tail_start
    # several blocks per numpy call where they come from one source (a 4-D product is one BLAS call per
    # block, so the bits stay those of one call per block); each call takes the GIL
    group = max(1, _CALL_SAMPLES // (x.shape[0] * block * n_fft))
    t0 = 0
    while t0 < n_frames:
        count = min(block, n_frames - t0)  # frames per block: fewer only in the last block
        if padded is None and (t0 < head_end or t0 >= tail_start):
            n_blocks = 1
            frames = _edge_block(x, t0, count, hop, n_fft, pad_mode)
        else:
            source, offset, limit = (x, pad, tail_start) if padded is None else (padded, 0, n_frames)
            n_blocks = max(1, min(group, (limit - t0) // block))
            frames = _frames(source, t0 * hop - offset, hop, n_fft, count, n_blocks, block)
            if hop < n_fft:
                # overlapping frames are copied so that the product runs in BLAS; frames that do not
                # overlap are a valid BLAS operand as they lie (row stride = hop)
                frames = np.ascontiguousarray(frames)
        t1 = t0 + n_blocks * count
        products = np.matmul(frames, weights).reshape(x.shape[0], t1 - t0, weights.shape[1])
        out[:, :, t0:t1] = products.view(out.dtype).transpose(0, 2, 1)
        t0 = t1


def _pad_end(x: np.ndarray, pad: int, mode: str, side: str) -> np.ndarray:
    """``x`` (batch, n > pad) with ``pad`` samples added on one side as ``np.pad`` adds them in ``mode``
    ("constant", "edge", "reflect" or "symmetric"), in two numpy calls instead of np.pad's dozens (the
    calls hold the GIL, which the threads of a batch share)."""
    if side == "right":
        return _pad_end(x[:, ::-1], pad, mode, "left")[:, ::-1]
    if mode == "constant":
        piece = np.zeros((x.shape[0], pad), x.dtype)
    elif mode == "edge":
        piece = np.broadcast_to(x[:, :1], (x.shape[0], pad))
    elif mode == "reflect":
        piece = x[:, pad:0:-1]
    else:  # symmetric
        piece = x[:, pad - 1 :: -1] if pad else x[:, :0]
    return np.concatenate([piece, x], axis=1)


def _frames(
    x: np.ndarray, start: int, hop: int, n_fft: int, count: int, n_blocks: int = 1, block: int = 0
) -> np.ndarray:
    """``count`` frames of ``x`` (batch, n) from sample ``start``: a view (batch, count, n_fft); with
    ``n_blocks``, that many such runs, each ``block`` frames after the one before (batch, n_blocks, count,
    n_fft)."""
    s0, s1 = x.strides
    if n_blocks == 1 and not block:
        shape, strides = (x.shape[0], count, n_fft), (s0, s1 * hop, s1)
    else:
        shape, strides = (x.shape[0], n_blocks, count, n_fft), (s0, s1 * hop * block, s1 * hop, s1)
    return np.lib.stride_tricks.as_strided(x[:, start:], shape=shape, strides=strides, writeable=False)


def _block_frames(n_fft: int) -> int:
    """Frames per matrix product: about _BLOCK_SAMPLES samples per row, at least _MIN_BLOCK_FRAMES."""
    return max(_MIN_BLOCK_FRAMES, _BLOCK_SAMPLES // n_fft)


def _octave_signals(x: np.ndarray, plan: VqtPlan, res_type: str | None, local: bool = False):
    """Yield the signal of each octave in turn, downsampling by two whenever the octave's rate halves
    (``local``: with NaN and inf kept local, see :func:`needs_local`)."""
    for i, octave in enumerate(plan.octaves):
        if i > 0 and octave.sr != plan.octaves[i - 1].sr:
            # scaled as librosa does (by sqrt(2)) before the next halving: libsoxr computes in single
            # precision, so scaling later instead would not give the same numbers
            x = downsample(x, 2, res_type, local_nonfinite=local)
        yield x


def octave_bases(p: VqtParams, plan: VqtPlan) -> list[tuple[np.ndarray, int]]:
    """(weights (n_fft, 2 k), n_fft) of every octave of ``plan``, top octave first."""
    bases = []
    for octave in plan.octaves:
        column_scale = cqf.octave_column_scale(plan.sr, octave.sr, plan.lengths[octave.rows], p.scale)
        bases.append(
            cqf.vqt_frame_weights(
                sr=octave.sr,
                freqs=octave.freqs,
                alpha=octave.alpha,
                filter_scale=p.filter_scale,
                norm=p.norm,
                sparsity=p.sparsity,
                window=p.window,
                gamma=p.gamma,
                dtype=np.dtype(p.dtype),
                column_scale=column_scale,
                # without resampling, the full spectrum: the responses are then the filters' inner products
                two_sided=p.res_type is None,
            )
        )
    return bases


def output_frames(n: int, plan: VqtPlan, bases: list[tuple[np.ndarray, int]]) -> int:
    """Frames of the output for an ``n``-sample signal: the count of the octave with the fewest frames."""
    length = math.ceil(n / plan.early_factor) if plan.early_factor > 1 else n
    counts = []
    for i, (octave, (_, n_fft)) in enumerate(zip(plan.octaves, bases)):
        if i > 0 and octave.sr != plan.octaves[i - 1].sr:
            length = math.ceil(length / 2)
        counts.append(_n_frames(length, n_fft, octave.hop))
    return min(counts)


def early_signal(y: np.ndarray, p: VqtParams, plan: VqtPlan, local: bool = False) -> np.ndarray:
    """``y`` (..., n) as rows (B, n) of the real precision, downsampled before the first octave when ``plan``
    says so (librosa's early downsampling); ``local``: NaN and inf kept local (see :func:`needs_local`)."""
    return _downsample_early(_real_rows(y, p, plan), p, plan, local)


def _downsample_early(x: np.ndarray, p: VqtParams, plan: VqtPlan, local: bool = False) -> np.ndarray:
    """Rows ``x`` (B, n) of the real precision, downsampled before the first octave when ``plan`` says so."""
    if plan.early_factor > 1:
        x = downsample(x, plan.early_factor, p.res_type, local_nonfinite=local)
        gain = _early_gain(p, plan)
        if gain is not None:
            x = x * gain
    return x


def _real_rows(y: np.ndarray, p: VqtParams, plan: VqtPlan) -> np.ndarray:
    """``y`` (..., n) as contiguous rows (B, n) of the real precision, checked long enough for the early
    downsampling."""
    rdtype = np.finfo(np.dtype(p.dtype)).dtype
    x = np.ascontiguousarray(y.reshape(-1, y.shape[-1]), dtype=rdtype)
    if plan.early_factor > 1 and x.shape[-1] < plan.early_factor:
        raise ValueError(
            f"vqt: y has {x.shape[-1]} samples, fewer than the early downsampling factor "
            f"{plan.early_factor} of this {len(plan.octaves)}-octave transform (as in librosa); use a "
            "longer signal, a smaller hop_length or res_type=None"
        )
    return x


def _early_gain(p: VqtParams, plan: VqtPlan) -> np.floating | None:
    """The factor applied after the early downsampling (librosa undoes its energy scaling when ``scale`` is
    off), in the real precision, or None."""
    if plan.early_factor == 1 or p.scale:
        return None
    return np.finfo(np.dtype(p.dtype)).dtype.type(np.sqrt(plan.early_factor))


def octave_frames(x: np.ndarray, n_fft: int, hop: int, pad_mode: str, n_frames: int) -> np.ndarray:
    """The centred frames (batch, n_frames, n_fft) of ``x`` (batch, n), a read-only strided view of the padded
    signal."""
    pad = n_fft // 2
    return _frames(np.pad(x, [(0, 0), (pad, pad)], mode=pad_mode), 0, hop, n_fft, n_frames)


def vqt_cpu(y: np.ndarray, p: VqtParams) -> np.ndarray:
    """The CPU implementation: ``y`` (..., n) numpy, float32 / float64 -> (..., n_bins, n_frames) complex."""
    plan = vqt_plan(p)
    cdtype = np.dtype(p.dtype)
    lead = y.shape[:-1]
    bases = octave_bases(p, plan)
    n_frames = output_frames(y.shape[-1], plan, bases)
    rows = int(np.prod(lead, dtype=np.int64))

    out = np.empty((rows, p.n_bins, n_frames), dtype=cdtype)
    workers = os.cpu_count() or 1
    x = _real_rows(y, p, plan)
    single_stage = len(plan.octaves) == 1 and plan.early_factor == 1
    if rows == 1 and can_fan_out() and not single_stage:
        with single_threaded_blas():
            _single_row_response(x, plan, bases, p, n_frames, out, pool())
    elif rows == 1 or not can_fan_out():
        # one BLAS thread here too: OpenBLAS rounds a product differently on one thread than on several,
        # and a row must get the same bits whichever path computes it (on a pool worker a call takes this
        # path, while a batch on the pool may or may not hold the limit)
        with single_threaded_blas():
            _rows_response(x, plan, bases, p, n_frames, out)
    else:
        # A batch: pool threads take groups of rows through every octave, as many groups as cores (each
        # numpy call and each return from libsoxr takes the GIL, which the threads share: groups of 8 rows
        # make 3 to 4 times fewer of them than rows one by one, and 16 x 160000 float32 rows took 32 ms of
        # CPU in groups of 8 against 43 ms row by row), with no barrier between octaves.
        per_task = max(1, min(_ROWS_PER_TASK, -(-x.shape[0] // workers)))
        tasks = [slice(a, a + per_task) for a in range(0, x.shape[0], per_task)]
        with single_threaded_blas():
            jobs = [pool().submit(_rows_response, x[r], plan, bases, p, n_frames, out[r]) for r in tasks]
            for job in jobs:
                job.result()
    redo = needs_local(out, plan, p.res_type)
    if redo is not None:
        with single_threaded_blas():
            part = np.empty((redo.size, p.n_bins, n_frames), dtype=cdtype)
            _rows_response(x[redo], plan, bases, p, n_frames, part, local=True)
            out[redo] = part
    return out.reshape(*lead, p.n_bins, n_frames)


def needs_local(out: np.ndarray, plan: VqtPlan, res_type: str | None) -> np.ndarray | None:
    """The rows of ``out`` (B, n_bins, n_frames) to compute again with NaN and inf kept local, or None.

    libsoxr filters block by block through FFTs: one non-finite input makes a whole block of its output NaN
    (about 830 samples for a "soxr_hq" halving, the whole signal of a low octave), and every later octave
    reads that block. A non-finite input always reaches the lowest octave, so only its few rows are checked
    (the finite case costs nothing more); the rows found are computed again with the non-finite inputs of
    every resampling resampled as zeros and NaN written where the resampler's filter reaches them
    (:func:`specux._resample.downsample`'s ``local_nonfinite``).
    """
    if res_type not in SOXR_QUALITIES:
        return None
    low = plan.octaves[-1].rows
    bad = ~np.isfinite(out[:, low]).all(axis=(1, 2))
    return np.flatnonzero(bad) if bad.any() else None


def _rows_response(
    x: np.ndarray,
    plan: VqtPlan,
    bases: list[tuple[np.ndarray, int]],
    p: VqtParams,
    n_frames: int,
    out: np.ndarray,
    local: bool = False,
) -> None:
    """Every octave's responses of rows ``x`` (batch, n), before any early downsampling, into ``out``
    (batch, n_bins, n_frames), in turn (``local``: NaN and inf kept local, see :func:`needs_local`)."""
    x = _downsample_early(x, p, plan, local)
    for s, (w, n_fft), o in zip(_octave_signals(x, plan, p.res_type, local), bases, plan.octaves):
        _octave_response(s, w, n_fft, o.hop, p.pad_mode, n_frames, out[:, o.rows])


def _single_row_response(
    x: np.ndarray,
    plan: VqtPlan,
    bases: list[tuple[np.ndarray, int]],
    p: VqtParams,
    n_frames: int,
    out: np.ndarray,
    workers: concurrent.futures.Executor,
) -> None:
    """Every octave's responses of one signal ``x`` (1, n), before any early downsampling, into ``out``
    (1, n_bins, n_frames).

    The octave signals form a chain of resamplings (the early downsampling, then halvings), each needing the
    one before, and the first link is half of all the resampling. With libsoxr, which takes its input in
    pieces, the chain runs as a pipeline on two threads: this one resamples the full-rate signal piece by
    piece and hands every finished piece to a pool thread that pushes it through all the other links (about
    the same amount of work). Each octave's product goes to the pool as soon as its signal is complete.
    (Starting the products on partial signals, in runs of frames, cost more than it saved on two cores: 43.6
    against 47.1 ms of CPU on the 3-minute clip.) The numbers are those of the batch path.
    """
    # stage k: the signal of the first octave after k halvings; several octaves share one stage when an odd
    # hop stops the halving
    stage_of = [0]
    for prev, octave in zip(plan.octaves, plan.octaves[1:]):
        stage_of.append(stage_of[-1] + (octave.sr != prev.sr))
    n_stages = stage_of[-1] + 1
    early = plan.early_factor

    def submit_products(signals: list[np.ndarray], stages: range) -> list[concurrent.futures.Future]:
        return [
            workers.submit(
                _octave_response, signals[s], w, n_fft, o.hop, p.pad_mode, n_frames, out[:, o.rows]
            )
            for o, (w, n_fft), s in zip(plan.octaves, bases, stage_of)
            if s in stages
        ]

    if p.res_type not in SOXR_QUALITIES or (early == 1 and n_stages == 1):
        # nothing to pipeline: the signals are made in turn
        signals = [early_signal(x, p, plan)]
        jobs = submit_products(signals, range(1))
        for stage in range(1, n_stages):
            signals.append(downsample(signals[-1], 2, p.res_type))
            jobs += submit_products(signals, range(stage, stage + 1))
        for job in jobs:
            job.result()
        return

    # the links of the chain and the signals they write; without early downsampling, stage 0 is x itself
    factors = ([early] if early > 1 else []) + [2] * (n_stages - 1)
    written, length = [], x.shape[1]
    for f in factors:
        length = math.ceil(length / f)
        written.append(np.empty((1, length), x.dtype))
    signals = written if early > 1 else [x, *written]
    links = [StreamDownsampler(f, p.res_type, s[0]) for f, s in zip(factors, written)]
    first_done = 0 if early > 1 else 1  # the stage that this thread's link completes
    gain = _early_gain(p, plan)
    pieces: queue.SimpleQueue = queue.SimpleQueue()

    def later_links() -> None:
        # Each link gets what the one before it has written once that is at least _CHAIN_PIECE / 2 samples
        # (or the end): halved again and again, the pieces would shrink to a few thousand samples, on which
        # libsoxr runs at half its speed.
        fed = [0] * len(links)  # samples of its input that each link has been given
        while True:
            item = pieces.get()
            if item is None:  # the first link failed
                return
            first_end, last = item
            for i in range(1, len(links)):
                source = written[i - 1][0]
                # the first link runs on the other thread: only what it has handed over is final
                end = first_end if i == 1 else links[i - 1].written
                if last or end - fed[i] >= _CHAIN_PIECE // 2:
                    links[i].push(source[fed[i] : end], last)
                    fed[i] = end
            if last:
                return

    chain = workers.submit(later_links) if len(links) > 1 else None
    jobs = submit_products(signals, range(first_done))
    try:
        n = x.shape[1]
        for a in range(0, n, _CHAIN_PIECE):
            last = a + _CHAIN_PIECE >= n
            done = links[0].push(x[0, a : a + _CHAIN_PIECE], last)
            if gain is not None:
                done *= gain
            if chain is not None:
                pieces.put((links[0].written, last))
    except BaseException:
        pieces.put(None)
        raise
    jobs += submit_products(signals, range(first_done, first_done + 1))
    if chain is not None:
        chain.result()
        jobs += submit_products(signals, range(first_done + 1, n_stages))
    for job in jobs:
        job.result()
