"""cqt / vqt / chroma_cqt on a dask array split along time: blocks of output frames, each read with a halo.

The multirate transform (:mod:`specux._backends.cpu.cqt`) computes octave ``k`` on the signal after ``s_k``
resamplings (the early downsampling, then one halving per octave while the hop stays even), with frames
centred at ``t * hop_length`` of the full-rate signal in every octave: octave ``k``'s hop is
``hop_length / D_k``, ``D_k`` being its total decimation, which divides ``hop_length``. So a block of the
signal that starts at a multiple of ``hop_length`` puts every octave's frames, and every resampler's phase, on
the whole signal's grid, and frame ``j`` of the block is frame ``start / hop_length + j`` of the whole signal.

Such a frame equals the whole signal's where nothing it reads differs, followed back through the chain of
resamplings (:func:`good_frames`): its ``n_fft`` samples of the octave's signal, each of which reads, per
resampling by ``f``, the inputs ``f m - hi .. f m - lo`` (the filter's reach), and, after a resampling whose
start-up differs from its filter (libsoxr decimating by 4 or more, the first ~100 outputs), none of the
start-up's outputs. At a block border that is not an end of the signal the block has no padding and no
history (a resampler starts on zeros there), so the halo must cover all of that; at the signal's true ends
the block sees the same padding as the whole signal.

The reach of a resampler (:func:`stages`): scipy's ``resample_poly`` filter (all its taps, exact); for the
libsoxr qualities the support of the measured impulse response above 1e-7 of its peak
(:func:`specux._resample_linear._reach`, +-191 inputs for a "soxr_hq" halving), below which libsoxr's taps
are its own single-precision rounding, widened by the device backends' FIR where that is longer (a cupy
block runs the device's design) and by :data:`MARGIN` inputs per resampling. Measured on noise: a
"soxr_hq" halving of a block differs from the whole signal's by more than 1e-6 of the peak only within 180
inputs of the block's borders, and everywhere by libsoxr's rounding (2e-7 of the peak: libsoxr computes in
single precision and its FFT blocks fall elsewhere), which is what the block-wise transform keeps. Pure
index arithmetic here; the graph is built in :func:`specux._dask.wrap._constant_q`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: inputs added to each resampler's reach, one side: the reach is measured at 1e-7 of the peak tap, and the
#: error just past it (1e-6 of the peak within 180 inputs of a "soxr_hq" halving's border) is worth a margin
MARGIN = 32

#: the resamplers whose transform is split along time (the others keep the time axis in one chunk)
SPLIT_RES_TYPES = (None, "polyphase", "soxr_vhq", "soxr_hq", "soxr_mq", "soxr_lq", "soxr_qq")


@dataclass(frozen=True)
class Stage:
    """One resampling of the chain: output ``m`` reads inputs ``n`` with ``lo <= factor m - n <= hi``; its
    first ``head`` outputs differ from the filter's (libsoxr's start-up); ``rounds``: libsoxr computes
    ``round(n / factor)`` outputs (the rest of ``ceil(n / factor)`` are zeros), scipy all of them."""

    factor: int
    lo: int
    hi: int
    head: int
    rounds: bool

    def count(self, n_in: int) -> int:
        """Outputs computed (not zero padding) from ``n_in`` inputs."""
        f = self.factor
        return (2 * n_in + f) // (2 * f) if self.rounds else -(-n_in // f)


@dataclass(frozen=True)
class Octave:
    """One octave of the transform: computed on the signal after ``stage`` resamplings, frames ``n_fft``
    samples long, ``hop`` apart (in that signal's samples)."""

    stage: int
    hop: int
    n_fft: int


@dataclass(frozen=True)
class Layout:
    """What one block of a constant-Q transform reads, for given parameters (:func:`layout`)."""

    hop: int
    stages: tuple[Stage, ...]
    octaves: tuple[Octave, ...]

    def block_frames(self, n: int) -> int:
        """Output frames of an ``n``-sample signal (:func:`specux._backends.cpu.cqt.output_frames`)."""
        lengths = [n]
        for s in self.stages:
            lengths.append(-(-lengths[-1] // s.factor))
        return min(_n_frames(lengths[o.stage], o.n_fft, o.hop) for o in self.octaves)


def _n_frames(n: int, n_fft: int, hop: int) -> int:
    return 1 + (n + 2 * (n_fft // 2) - n_fft) // hop


def stages(res_type: str | None, factors: Sequence[int]) -> tuple[Stage, ...]:
    """The :class:`Stage` of each resampling by ``factors`` with ``res_type`` (see the module doc)."""
    if res_type is None:
        return ()
    from specux._resample_linear import _reach, linear_form

    out = []
    for f in factors:
        lo, hi, head = _reach(f, res_type)
        form = linear_form(f, res_type)
        if res_type != "polyphase":
            lo, hi = lo - MARGIN, hi + MARGIN
            half = _device_half_length(f, res_type)
            lo, hi = min(lo, -half - MARGIN), max(hi, half + MARGIN)
        rows = np.flatnonzero(head.any(axis=1)) if head.size else np.zeros(0, np.int64)
        # the start-up's outputs, and a margin of a few more
        n_head = int(rows[-1]) + 1 + MARGIN // f if rows.size else 0
        out.append(Stage(f, lo, hi, n_head, form.rounds))
    return tuple(out)


def _device_half_length(factor: int, res_type: str) -> int:
    """Half the length of the device backends' FIR for a libsoxr quality (0 where it has none)."""
    from specux._runtime.cq_exec import DEVICE_RES_TYPES, soxr_like_filter

    if res_type not in DEVICE_RES_TYPES:  # "soxr_qq" is refused on a device
        return 0
    return soxr_like_filter(factor, res_type).size // 2


def layout(params) -> Layout:
    """The :class:`Layout` of a transform with :class:`specux._validate.VqtParams` ``params``."""
    from specux._backends.cpu.cqt import octave_bases, vqt_plan

    plan = vqt_plan(params)
    bases = octave_bases(params, plan)
    factors = [plan.early_factor] if plan.early_factor > 1 else []
    stage_of, k = [], len(factors)
    for i, octave in enumerate(plan.octaves):
        if i > 0 and octave.sr != plan.octaves[i - 1].sr:
            factors.append(2)
            k += 1
        stage_of.append(k)
    octaves = tuple(
        Octave(s, o.hop, n_fft) for s, o, (_, n_fft) in zip(stage_of, plan.octaves, bases, strict=True)
    )
    return Layout(params.hop_length, stages(params.res_type, factors), octaves)


def good_frames(lay: Layout, n: int, at_start: bool, at_end: bool) -> tuple[int, int]:
    """``(j0, j1)``: the frames of an ``n``-sample block (starting at a multiple of the hop) that equal the
    whole signal's. ``at_start`` / ``at_end``: the block begins / ends where the whole signal does (its
    padding and the resamplers' ends are then the whole signal's)."""
    # first / one past the last sample of each stage's signal that equals the whole signal's
    first, last, length = [0], [n], [n]
    for s in lay.stages:
        length.append(-(-length[-1] // s.factor))
        count = s.count(length[-2])
        if at_start:
            first.append(0)
        else:
            first.append(max(s.head, -(-(first[-1] + s.hi) // s.factor)))
        # output m reads up to input factor m - lo, which must be below last[-1]
        last.append(length[-1] if at_end else min(count, (last[-1] - 1 + s.lo) // s.factor + 1))
    total = lay.block_frames(n)
    j0, j1 = 0, total
    for o in lay.octaves:
        half = o.n_fft // 2
        if not at_start:  # frame j reads samples j hop - half .. j hop - half + n_fft of its octave
            j0 = max(j0, -(-(first[o.stage] + half) // o.hop))
        if not at_end:
            j1 = min(j1, (last[o.stage] + half - o.n_fft) // o.hop + 1)
    return j0, max(j0, j1)


def halo(lay: Layout) -> tuple[int, int]:
    """``(left, right)``: frames a block reads before its first kept frame and after its last (the left
    one in whole hops, so that the block starts on the grid), for a block far from both ends."""
    probe = 1 << 24  # samples of a block whose middle frames are all exact
    probe -= probe % lay.hop
    j0, j1 = good_frames(lay, probe, False, False)
    return j0, lay.block_frames(probe) - j1


def spans(lay: Layout, edges: Sequence[int], n: int) -> list[tuple[int, int, int, int]]:
    """Tasks of a transform of an ``n``-sample signal chunked at ``edges`` (``[0, ..., n]``):
    ``(t0, t1, a, b)`` per task, output frames ``t0 .. t1`` computed from samples ``a .. b``.

    Frame ``t`` goes with the chunk that sample ``t * hop`` lies in (as the framing transforms' do);
    neighbouring chunks are merged until a task keeps at least as many frames as the longer side of its
    halo (a chunk shorter than that would cost more in halo than in its own frames), the last task's short
    rest joining the one before. Each task's block starts at a multiple of the hop and reads the halo of
    :func:`halo` on both sides, clipped to the signal; :func:`good_frames` confirms that every kept frame is
    exact.
    """
    frames = lay.block_frames(n)
    left, right = halo(lay)
    hop = lay.hop
    cuts = sorted({0, frames, *(min(frames, -(-e // hop)) for e in edges[1:-1])})
    least = max(1, left, right)
    merged: list[int] = [0]
    for c in cuts[1:]:
        if c - merged[-1] >= least or c == frames:
            merged.append(c)
    if len(merged) > 2 and merged[-1] - merged[-2] < least:
        del merged[-2]
    out = []
    for t0, t1 in itertools.pairwise(merged):
        a = max(0, (t0 - left) * hop)
        b = n
        if t1 + right < frames:
            b = min(n, (t1 - 1 + right) * hop + 1)
            # the right end rounds with the block's length: widen by hops until the last frame is exact
            while b < n and good_frames(lay, b - a, a == 0, False)[1] < t1 - a // hop:
                b = min(n, b + hop)
        j0, j1 = good_frames(lay, b - a, a == 0, b == n)
        if not (j0 <= t0 - a // hop and t1 - a // hop <= j1):
            raise AssertionError(f"constant-Q block {a}..{b} cannot give frames {t0}..{t1} exactly")
        out.append((t0, t1, a, b))
    return out
