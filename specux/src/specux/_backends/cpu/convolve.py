"""The CPU kernel of fftconvolve (scipy.signal's rules), on numpy arrays with the validated
:class:`specux._validate.ConvolveParams`; the public front is :mod:`specux.ops.convolve`."""

from __future__ import annotations

import numpy as np
import scipy.fft

from specux._validate import ConvolveParams


def centred(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The centre part of ``x`` of the given shape (scipy's rule: start at ``(current - new) // 2``)."""
    index = tuple(slice((c - n) // 2, (c - n) // 2 + n) for c, n in zip(x.shape, shape))
    return x[index]


def _fftconvolve_numpy(pair: tuple[np.ndarray, np.ndarray], p: ConvolveParams) -> np.ndarray:
    """fftconvolve on numpy (the cpu backend's implementation): ``pair`` is (in1, in2), already swapped."""
    a, b = (np.asarray(v, dtype=p.dtype) for v in pair)
    if not p.axes:
        out = a * b
    else:
        full = [a.shape[ax] + b.shape[ax] - 1 for ax in p.axes]
        is_complex = np.iscomplexobj(a) or np.iscomplexobj(b)
        fast = [scipy.fft.next_fast_len(n, real=not is_complex) for n in full]
        if is_complex:
            out = scipy.fft.ifftn(
                scipy.fft.fftn(a, fast, axes=p.axes, workers=-1)
                * scipy.fft.fftn(b, fast, axes=p.axes, workers=-1),
                axes=p.axes,
                workers=-1,
            )
        else:
            spec = scipy.fft.rfftn(a, fast, axes=p.axes, workers=-1) * scipy.fft.rfftn(
                b, fast, axes=p.axes, workers=-1
            )
            out = scipy.fft.irfftn(spec, fast, axes=p.axes, workers=-1)
        out = out[
            tuple(slice(0, p.full_shape[ax]) if ax in p.axes else slice(None) for ax in range(out.ndim))
        ]
    return np.ascontiguousarray(centred(out, p.out_shape), dtype=p.dtype)
