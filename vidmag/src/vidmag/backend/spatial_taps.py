"""The spatial filters of the reference as sparse one-axis linear maps: (index, weight) tap tables.

Every spatial operation vidmag uses is separable, and along one axis each output sample is a short weighted
sum of input samples: ``out[i] = sum_t weight[i, t] * in[index[i, t]]``. Writing the reduce, the expand and
the bicubic resize in that one form, with the border rules (``reflect1`` mirrors, the half-sample mirror of
``imresize``, the dropped tap of matlabPyrTools' ``upConv`` at n = 5) resolved here once in float64, lets an
accelerated backend run all of them with one gather kernel per axis, and lets several steps be composed into
one map (the Gaussian down stack of ``level`` steps becomes one pass per axis).

Pure NumPy; used by the torch and OpenCL backends. The tables are memoised by size.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from vidmag._reference.pyramid import BINOM5, GAUSS5
from vidmag._reference.resize import bicubic_taps as _reference_bicubic_taps

__all__ = ["Taps", "bicubic", "compose", "expand", "gaussian_down", "reduce", "reflect1", "to_dense"]


class Taps(NamedTuple):
    """A one-axis linear map from ``n_in`` samples to ``len(index)`` samples.

    Attributes
    ----------
    index : ndarray, int32, shape (n_out, k)
        Source sample of each tap, in [0, n_in). Unused taps point at sample 0 with weight 0.
    weight : ndarray, float64, shape (n_out, k)
    n_in : int
    """

    index: np.ndarray
    weight: np.ndarray
    n_in: int

    @property
    def n_out(self) -> int:
        return self.index.shape[0]


def reflect1(i: int, n: int) -> int:
    """Index ``i`` mirrored into [0, n) about the edge samples without repeating them (``reflect1``, numpy's
    mode="reflect"), for any distance."""
    if n == 1:
        return 0
    period = 2 * (n - 1)
    i = abs(i) % period
    return period - i if i >= n else i


def _from_dense(matrix: np.ndarray) -> Taps:
    n_out, n_in = matrix.shape
    rows = [np.flatnonzero(r) for r in matrix]
    k = max(1, max(len(r) for r in rows))
    index = np.zeros((n_out, k), dtype=np.int32)
    weight = np.zeros((n_out, k), dtype=np.float64)
    for i, r in enumerate(rows):
        index[i, : len(r)] = r
        weight[i, : len(r)] = matrix[i, r]
    return Taps(index, weight, n_in)


def to_dense(taps: Taps) -> np.ndarray:
    """The map as a dense (n_out, n_in) float64 matrix (repeated indices add up)."""
    matrix = np.zeros((taps.n_out, taps.n_in), dtype=np.float64)
    rows = np.repeat(np.arange(taps.n_out), taps.index.shape[1])
    np.add.at(matrix, (rows, taps.index.ravel()), taps.weight.ravel())
    return matrix


def compose(*maps: Taps) -> Taps:
    """The map that applies ``maps[0]`` first, then ``maps[1]``, ... (their product, kept sparse)."""
    matrix = to_dense(maps[0])
    for m in maps[1:]:
        if m.n_in != matrix.shape[0]:
            raise ValueError(f"cannot compose a map to {matrix.shape[0]} samples with one from {m.n_in}")
        matrix = to_dense(m) @ matrix
    return _from_dense(matrix)


def _reduce_dense(n: int, kernel: np.ndarray) -> np.ndarray:
    m = (n + 1) // 2
    matrix = np.zeros((m, n), dtype=np.float64)
    for j in range(m):
        for t in range(5):
            matrix[j, reflect1(2 * j + t - 2, n)] += kernel[t]
    return matrix


@lru_cache(maxsize=256)
def reduce(n: int, kind: str) -> Taps:
    """Blur with a 5-tap kernel (``reflect1`` borders) and keep samples 0, 2, 4, ...: n -> ceil(n / 2).

    Parameters
    ----------
    n : int
        Input length.
    kind : {"laplacian", "gaussian"}
        ``"laplacian"``: binom5 = sqrt(2) [1 4 6 4 1] / 16 (the pyramid's reduce); ``"gaussian"``:
        [1 4 6 4 1] / 16 (``blurDn``).
    """
    kernels = {"laplacian": BINOM5, "gaussian": GAUSS5}
    if kind not in kernels:
        raise ValueError(f"kind must be one of {sorted(kernels)}, got {kind!r}")
    return _from_dense(_reduce_dense(n, kernels[kind]))


@lru_cache(maxsize=256)
def expand(n_coarse: int, n: int) -> Taps:
    """matlabPyrTools ``upConv`` with binom5 from ``n_coarse`` = ceil(n / 2) samples to ``n`` samples.

    Coarse samples sit at positions 0, 2, 4, ... of a length-n signal with zeros between, which is mirrored
    about its first and last samples and filtered with binom5. For n = 5 the last output drops the mirrored
    tap (``f0 * y1 + f2 * y2``), as the compiled upConv does.
    """
    if n_coarse != (n + 1) // 2:
        raise ValueError(f"cannot expand {n_coarse} samples to {n} (needs ceil(n / 2) = {(n + 1) // 2})")
    matrix = np.zeros((n, n_coarse), dtype=np.float64)
    for i in range(n):
        for t in range(5):
            if n == 5 and i == 4 and t == 4:
                continue
            m = reflect1(i + t - 2, n)
            if m % 2 == 0:
                matrix[i, m // 2] += BINOM5[t]
    return _from_dense(matrix)


@lru_cache(maxsize=64)
def gaussian_down(n: int, level: int) -> Taps:
    """``level`` steps of the Gaussian reduce along one axis, composed into one map (``level`` >= 1)."""
    if level < 1:
        raise ValueError(f"level must be >= 1, got {level}")
    steps = []
    for _ in range(level):
        steps.append(reduce(n, "gaussian"))
        n = (n + 1) // 2
    return compose(*steps)


@lru_cache(maxsize=64)
def bicubic(n_in: int, n_out: int) -> Taps:
    """Octave's bicubic ``imresize`` from ``n_in`` to ``n_out`` samples (an enlargement, n_out >= n_in)."""
    if n_out < n_in:
        raise ValueError(f"bicubic resize enlarges only: n_out ({n_out}) must be >= n_in ({n_in})")
    index, weight = _reference_bicubic_taps(n_in, n_out)
    # Merge taps that mirror onto the same sample so that every table holds distinct indices.
    dense = np.zeros((n_out, n_in), dtype=np.float64)
    np.add.at(dense, (np.repeat(np.arange(n_out), 4), index.ravel()), weight.ravel())
    return _from_dense(dense)
