"""FFT convolution of N-dimensional arrays (scipy.signal.fftconvolve).

The front validates and dispatches; the CPU kernel is :mod:`specux._backends.cpu.convolve`.
"""

from __future__ import annotations

from typing import Any

from specux import _arrays, _dispatch
from specux._backend_doc import backends_doc
from specux._spec.convolve import fftconvolve_validate
from specux._torch_hook import torch_route

__all__ = ["fftconvolve"]


@backends_doc("fftconvolve")
@torch_route("fftconvolve", differentiable=("in2",))
def fftconvolve(in1: Any, in2: Any, mode: str = "full", axes: Any = None, *, backend: str = "auto") -> Any:
    """Convolve two N-dimensional arrays with FFTs (scipy.signal.fftconvolve).

    Parameters
    ----------
    in1, in2 : array, same number of dimensions
        Real or complex (float32 / float64 / complex64 / complex128; integers are promoted to float64). Along
        axes that are not convolved the sizes must match or be 1 (broadcasting); axes where either input has
        size 1 are treated the same way.
    mode : {"full", "same", "valid"}
        ``"full"``: every overlap, ``n1 + n2 - 1`` along convolved axes; ``"same"``: the centre, shaped like
        ``in1``; ``"valid"``: only full overlaps, ``n1 - n2 + 1`` (the inputs are swapped when ``in2`` is the
        larger one).
    axes : int, sequence of int or None
        Axes to convolve over. ``None``: all axes.
    backend : str
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array
        numpy's result dtype of the inputs (float32 stays float32), same library as ``in1``.

    {backends} Autograd / torch.compile: yes, for both inputs (a learnable filter in ``in2``
    too): torch CPU tensors on every backend (a named device backend runs the device's adjoint kernels) and
    float32 / float64 CUDA tensors on ``cuda`` (see docs/specux/torch.md).

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> x = np.array([1.0, 2.0, 3.0])
    >>> h = np.array([0.0, 1.0, 0.5])
    >>> specux.fftconvolve(x, h).round(6).tolist() == np.convolve(x, h).tolist()
    True
    >>> specux.fftconvolve(x, h, mode="same").shape
    (3,)
    """
    chosen, a = _dispatch.prepare(in1, backend, "fftconvolve", "fftconvolve")
    if _arrays.device_kind(in2) != _arrays.device_kind(in1):
        raise ValueError(
            f"fftconvolve: in1 and in2 must live on the same device; got "
            f"{_arrays.device_kind(in1)!r} and {_arrays.device_kind(in2)!r}"
        )
    b = _arrays.to_numpy(in2) if _arrays.is_host(in2) else in2
    p = fftconvolve_validate(a, b, mode=mode, axes=axes)
    a, b = (_dispatch.cast_host(v, p.dtype) for v in (a, b))  # backends compute in the result dtype
    pair = (b, a) if p.swapped else (a, b)
    return _dispatch.finish(chosen.fftconvolve(pair, p), in1)
