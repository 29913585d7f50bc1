"""How much each transform needs from its neighbours along time: pure index arithmetic, no dask.

Every function here maps the chunk boundaries of an input axis to the spans of the output that one task
computes and the input samples (or frames) that task reads. Spans never split an output element: each frame,
sample or convolution output belongs to exactly one task, which reads everything that element depends on, so
the chunked result is the in-memory result up to floating-point rounding.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence


def bounds(chunks: Sequence[int]) -> list[int]:
    """``[0, c0, c0 + c1, ..., total]``: the boundaries of a chunking."""
    out = [0]
    for c in chunks:
        out.append(out[-1] + int(c))
    return out


def n_frames(length: int, n_fft: int, hop: int, center: bool) -> int:
    """Frames of an stft over ``length`` samples (specux's rule, librosa's)."""
    padded = length + 2 * (n_fft // 2) if center else length
    return 1 + (padded - n_fft) // hop


def frame_spans(edges: Sequence[int], frames: int, hop: int, n_fft: int) -> list[tuple[int, int, int, int]]:
    """Tasks of a framing transform over a (padded) signal whose chunk boundaries are ``edges``.

    Frame ``t`` reads samples ``t * hop .. t * hop + n_fft`` and belongs to the chunk its first sample lies
    in. Returns ``(t0, t1, a, b)`` per non-empty task: frames ``t0 .. t1`` from samples ``a .. b``
    (``a = t0 * hop``, ``b = (t1 - 1) * hop + n_fft``; a task reads ``n_fft - hop`` samples past its chunk:
    the frames that straddle the border).
    """
    out = []
    for lo, hi in itertools.pairwise(edges):
        t0 = min(frames, -(-lo // hop))
        t1 = min(frames, -(-hi // hop))
        if t1 > t0:
            out.append((t0, t1, t0 * hop, (t1 - 1) * hop + n_fft))
    return out


def istft_spans(
    frame_edges: Sequence[int], frames: int, hop: int, n_fft: int, start: int, length: int
) -> list[tuple[int, int, int, int]]:
    """Tasks of an inverse stft: ``(a, b, t0, t1)``, output samples ``a .. b`` (of the result, length
    ``length``) from frames ``t0 .. t1``.

    The overlap-added signal (``n_fft + hop * (frames - 1)`` samples, the result being its samples from
    ``start``) at sample ``n`` sums the frames with ``t * hop <= n < t * hop + n_fft``: a task's frames are
    every frame that reaches its samples, so both the sum and the squared-window sum it is divided by are
    complete. Output boundaries follow the frame chunks (frame ``t`` starts at output ``t * hop - start``).
    Samples past the overlap-added signal (``length`` longer than it) are zeros: their task has ``t0 == t1``.
    """
    ola = n_fft + hop * (frames - 1)
    cuts = sorted({0, length, *(min(length, max(0, t * hop - start)) for t in frame_edges[1:-1])})
    out = []
    for a, b in itertools.pairwise(cuts):
        if b <= a:
            continue
        lo, hi = a + start, min(b + start, ola)  # in overlap-added coordinates
        if hi <= lo:
            out.append((a, b, 0, 0))
            continue
        if hi < b + start:  # the part past the signal: a zero task of its own
            out.append((a, hi - start, max(0, -(-(lo - n_fft + 1) // hop)), min(frames, -(-hi // hop))))
            out.append((hi - start, b, 0, 0))
            continue
        out.append((a, b, max(0, -(-(lo - n_fft + 1) // hop)), min(frames, -(-hi // hop))))
    return out


def convolve_range(n1: int, n2: int, mode: str) -> tuple[int, int]:
    """The span ``(o0, o1)`` of the full convolution (``n1 + n2 - 1`` long) that ``mode`` keeps
    (scipy.signal.fftconvolve's rule; ``valid`` with ``n1 >= n2``)."""
    if mode == "full":
        return 0, n1 + n2 - 1
    if mode == "same":
        o0 = (n2 - 1) // 2
        return o0, o0 + n1
    return n2 - 1, n1  # valid


def convolve_spans(edges: Sequence[int], n2: int, mode: str) -> list[tuple[int, int]]:
    """Tasks of a convolution along one axis of ``in1`` (chunk boundaries ``edges``) with a kernel ``n2``
    long: spans ``(s, e)`` of the full convolution's coordinates, one per task, covering what ``mode`` keeps.

    Output ``n`` of the full convolution reads ``in1[n - n2 + 1 .. n + 1]``, i.e. samples ``n .. n + n2`` of
    ``in1`` padded by ``n2 - 1`` zeros at both ends: the task ``(s, e)`` reads the padded ``s .. e + n2 - 1``.
    """
    n1 = edges[-1]
    o0, o1 = convolve_range(n1, n2, mode)
    cuts = sorted({o0, o1, *(c for c in edges[1:-1] if o0 < c < o1)})
    return [(s, e) for s, e in itertools.pairwise(cuts) if e > s]
