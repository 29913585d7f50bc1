"""Reference fftconvolve: direct summation over every pair of samples (small inputs only)."""

from __future__ import annotations

import itertools

import numpy as np

from specux._validate import ConvolveParams


def fftconvolve(a: np.ndarray, b: np.ndarray, p: ConvolveParams) -> np.ndarray:
    """Full convolution along ``p.axes`` by direct summation (broadcasting elsewhere), then the ``mode`` crop.

    ``a`` and ``b`` are the inputs after any swap (``p.swapped``); complex128 arithmetic.
    """
    a = np.asarray(a, dtype=np.complex128)
    b = np.asarray(b, dtype=np.complex128)
    out = np.zeros(p.full_shape, dtype=np.complex128)
    for idx in itertools.product(*(range(b.shape[ax]) if ax in p.axes else [0] for ax in range(b.ndim))):
        # b's sample at idx (along the convolved axes) shifts a by idx and scales it
        take_b = tuple(slice(i, i + 1) if ax in p.axes else slice(None) for ax, i in enumerate(idx))
        place = tuple(slice(i, i + a.shape[ax]) if ax in p.axes else slice(None) for ax, i in enumerate(idx))
        out[place] += a * b[take_b]
    start = [(f - o) // 2 for f, o in zip(p.full_shape, p.out_shape)]
    crop = tuple(slice(s, s + o) for s, o in zip(start, p.out_shape))
    res = out[crop]
    return res if np.dtype(p.dtype).kind == "c" else res.real
