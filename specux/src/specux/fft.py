"""The FFT family with numpy.fft's signatures, run on any specux backend.

Every transform takes numpy's arguments (``n`` / ``s``, ``axis`` / ``axes``, ``norm`` in ``"backward"``
(``None``), ``"ortho"`` or ``"forward"``) plus a keyword-only ``backend="auto"``. Results keep the input's
precision (float32 / complex64 in -> complex64 out; float64 / complex128 -> complex128) and the input's array
library (numpy, torch, cupy). Integer and bool inputs are promoted to float64 as numpy does; float16 is
accepted only by backends whose precisions include it (not ``cpu``).

Backends: cpu (scipy.fft); cuda / metal / opencl when built and available (see :func:`specux.backends`).
Autograd / torch.compile: yes for torch CPU tensors (the specux custom ops; see docs/specux/torch.md).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from specux import _arrays, _memory, _validate
from specux._backends import registry
from specux._backends.base import FFT_OP
from specux._torch_hook import torch_route

__all__ = [
    "fft",
    "fft2",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftfreq",
    "rfftn",
]

_NORMS = (None, "backward", "ortho", "forward")
_SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}
_COMPLEX_OF = {"float16": "complex32", "float32": "complex64", "float64": "complex128"}
_REAL_OF = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}


def _scale(norm: str | None, n: int, inverse: bool) -> float:
    if norm not in _NORMS:
        raise ValueError(f'norm must be None, "backward", "ortho" or "forward"; got {norm!r}')
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if (norm == "forward") != inverse:  # forward-normalised forward, or backward-normalised inverse
        return 1.0 / n
    return 1.0


def _check_n(n: int, public: str, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{public}: {name} must be an int; got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"{public}: invalid number of FFT data points {name}={n}; it must be >= 1")
    return int(n)


def _guard(x: Any, nbytes: int, public: str, parameter: str, value: Any, shape: tuple[int, ...]) -> None:
    """The memory guard for host arrays (a device array's library reports its own out-of-memory)."""
    if isinstance(x, np.ndarray):
        _memory.check(
            nbytes,
            public=f"specux.fft.{public}",
            parameter=parameter,
            value=value,
            detail=f"an output of shape {shape}",
        )


def _norm_axis(axis: int, ndim: int, public: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{public}: axis must be an int; got {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{public}: axis {axis} is out of bounds for an array of dimension {ndim}")
    return int(axis) % ndim


class _Call:
    """One FFT-family call: the chosen backend, the input in the form it accepts, and the way back."""

    def __init__(self, a: Any, backend: str, public: str, want: str):
        self.public = public
        self.ref = a
        if not (_arrays.is_torch(a) or _arrays.is_cupy(a)):
            a = np.asarray(a)
        if a.ndim == 0:
            raise ValueError(f"{public}: input must have at least one dimension")
        self.backend = registry.select(a, backend, FFT_OP, f"specux.fft.{public}")
        if _arrays.is_host(a):
            a = _arrays.to_numpy(a)
        self.x = self._cast(a, want)

    def _cast(self, a: Any, want: str) -> Any:
        name = _arrays.real_dtype_name(a)
        is_complex = name.startswith("complex")
        if name == "bool" or name.startswith(("int", "uint")):
            real = "float64"
        elif is_complex:
            real = _REAL_OF.get(name)
        elif name.startswith("float"):
            real = name
        else:
            real = None
        if real is None or real not in self.backend.dtypes:
            accepted = ", ".join(sorted(self.backend.dtypes))
            cplx = ", ".join(_COMPLEX_OF[d] for d in sorted(self.backend.dtypes))
            raise TypeError(
                f"specux.fft.{self.public}: dtype {name} is not supported on backend {self.backend.name!r}; "
                f"accepted: {accepted}, {cplx} (integer and bool inputs are promoted to float64)"
            )
        if want == "real":
            if is_complex:
                raise TypeError(f"specux.fft.{self.public}: input must be real; got dtype {name}")
            target = real
        else:
            target = _COMPLEX_OF[real]
            if target == "complex32" and not _arrays.is_torch(a):
                # numpy and cupy have no complex half: half storage reaches the backends as float16 real
                # input to r2c only, and a complex transform of it computes in (and returns) complex64, as
                # rfft of float16 does and numpy.fft does
                target = "complex64"
        if isinstance(a, np.ndarray) and a.dtype.name != target:
            nbytes = _memory.product(a.shape) * np.dtype(target).itemsize  # the cast copy
            _guard(a, nbytes, self.public, "a", f"{name} of shape {a.shape}", a.shape)
        return _arrays.astype(a, target)

    def _sized(self, x: Any, n: int, axis: int, in_len: int, out_len: int, out_item: int, name: str) -> None:
        """The memory guard of one axis: the zero-padded input, the output and the backend's copy of it (host
        arrays only)."""
        if not isinstance(x, np.ndarray):
            return
        shape = list(x.shape)
        shape[axis] = in_len
        padded = _memory.product(shape) * x.dtype.itemsize if in_len > x.shape[axis] else 0
        shape[axis] = out_len
        _guard(x, padded + 2 * _memory.product(shape) * out_item, self.public, name, n, tuple(shape))

    def c2c(self, x: Any, n: int | None, axis: int, norm: str | None, inverse: bool, name: str = "n") -> Any:
        axis = _norm_axis(axis, x.ndim, self.public)
        n = x.shape[axis] if n is None else _check_n(n, self.public, name)
        if n < 1:
            raise ValueError(f"{self.public}: invalid number of FFT data points ({n}) along axis {axis}")
        self._sized(x, n, axis, n, n, x.dtype.itemsize, name)
        x = _arrays.resize_axis(x, axis, n)
        return self.backend.c2c(x, axis, inverse, _scale(norm, n, inverse))

    def r2c(self, x: Any, n: int | None, axis: int, norm: str | None, name: str = "n") -> Any:
        axis = _norm_axis(axis, x.ndim, self.public)
        n = x.shape[axis] if n is None else _check_n(n, self.public, name)
        if n < 1:
            raise ValueError(f"{self.public}: invalid number of FFT data points ({n}) along axis {axis}")
        self._sized(x, n, axis, n, n // 2 + 1, 2 * max(x.dtype.itemsize, 4), name)
        x = _arrays.resize_axis(x, axis, n)
        return self.backend.r2c(x, axis, _scale(norm, n, False))

    def c2r(self, x: Any, n: int | None, axis: int, norm: str | None, name: str = "n") -> Any:
        axis = _norm_axis(axis, x.ndim, self.public)
        n = 2 * (x.shape[axis] - 1) if n is None else _check_n(n, self.public, name)
        if n < 1:
            raise ValueError(f"{self.public}: invalid number of output data points ({n}) along axis {axis}")
        self._sized(x, n, axis, n // 2 + 1, n, x.dtype.itemsize // 2, name)
        x = _arrays.resize_axis(x, axis, n // 2 + 1)
        return self.backend.c2r(x, axis, n, _scale(norm, n, True))

    def done(self, out: Any) -> Any:
        return _arrays.like(out, self.ref)


# --- one-dimensional
# -----------------------------------------------------------------------------------------


@torch_route("fft.fft")
def fft(
    a: Any, n: int | None = None, axis: int = -1, norm: str | None = None, *, backend: str = "auto"
) -> Any:
    """One-dimensional discrete Fourier transform (numpy.fft.fft).

    Parameters
    ----------
    a : array_like, shape (..., N, ...)
        Input (numpy array, torch tensor or cupy array); real input is treated as complex.
    n : int, optional
        Transform length: the input is truncated or zero-padded along ``axis``. ``None``: ``a.shape[axis]``.
    axis : int
        Axis to transform.
    norm : {None, "backward", "ortho", "forward"}
        Normalisation: ``None`` / ``"backward"`` scales the inverse by ``1/n``; ``"ortho"`` both by
        ``1/sqrt(n)``; ``"forward"`` the forward by ``1/n``.
    backend : str
        ``"auto"`` (by the input's type and device), ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array, shape as ``a`` with ``n`` along ``axis``
        Complex (complex64 for float32 / complex64 input, else complex128), in ``a``'s library.

    Backends: cpu, and any GPU backend built here. Autograd / torch.compile: yes
    for torch CPU tensors (see docs/specux/torch.md).

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> x = np.array([1.0, 0.0, -1.0, 0.0])
    >>> specux.fft.fft(x).real.tolist()
    [0.0, 2.0, 0.0, 2.0]
    >>> specux.fft.fft(np.ones(8, dtype=np.float32), norm="ortho").dtype
    dtype('complex64')
    """
    call = _Call(a, backend, "fft", "complex")
    return call.done(call.c2c(call.x, n, axis, norm, inverse=False))


@torch_route("fft.ifft")
def ifft(
    a: Any, n: int | None = None, axis: int = -1, norm: str | None = None, *, backend: str = "auto"
) -> Any:
    """Inverse of :func:`fft` (numpy.fft.ifft).

    Parameters
    ----------
    a : array_like, shape (..., N, ...)
        Input (numpy array, torch tensor or cupy array).
    n : int, optional
        Transform length: the input is truncated or zero-padded along ``axis``. ``None``: ``a.shape[axis]``.
    axis : int
        Axis to transform.
    norm : {None, "backward", "ortho", "forward"}
        Normalisation, as :func:`fft`.
    backend : str
        ``"auto"`` (by the input's type and device), ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array, shape as ``a`` with ``n`` along ``axis``
        Complex, of ``a``'s precision, in ``a``'s library.

    Backends: cpu, and any GPU backend built here. Autograd / torch.compile: yes for torch CPU tensors.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> x = np.array([1.0, 2.0, 3.0, 4.0])
    >>> bool(np.allclose(specux.fft.ifft(specux.fft.fft(x)), x))
    True
    """
    call = _Call(a, backend, "ifft", "complex")
    return call.done(call.c2c(call.x, n, axis, norm, inverse=True))


@torch_route("fft.rfft")
def rfft(
    a: Any, n: int | None = None, axis: int = -1, norm: str | None = None, *, backend: str = "auto"
) -> Any:
    """DFT of real input, non-negative frequencies only (numpy.fft.rfft).

    Parameters
    ----------
    a : array_like, shape (..., N, ...)
        Input (numpy array, torch tensor or cupy array); real.
    n : int, optional
        Transform length: the input is truncated or zero-padded along ``axis``. ``None``: ``a.shape[axis]``.
    axis : int
        Axis to transform.
    norm : {None, "backward", "ortho", "forward"}
        Normalisation, as :func:`fft`.
    backend : str
        ``"auto"`` (by the input's type and device), ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array, shape as ``a`` with ``n // 2 + 1`` along ``axis``
        Complex of ``a``'s precision (float32 gives complex64), in ``a``'s library.

    Backends: cpu, and any GPU backend built here. Autograd / torch.compile: yes for torch CPU tensors.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> X = specux.fft.rfft(np.ones(8, dtype=np.float32))
    >>> X.shape, X.dtype, X[0]
    ((5,), dtype('complex64'), np.complex64(8+0j))
    """
    call = _Call(a, backend, "rfft", "real")
    return call.done(call.r2c(call.x, n, axis, norm))


@torch_route("fft.irfft")
def irfft(
    a: Any, n: int | None = None, axis: int = -1, norm: str | None = None, *, backend: str = "auto"
) -> Any:
    """Inverse of :func:`rfft` (numpy.fft.irfft).

    Parameters
    ----------
    a : array_like, shape (..., N, ...)
        Input (numpy array, torch tensor or cupy array); complex, the non-negative frequencies.
    n : int, optional
        Output length (default ``2 * (a.shape[axis] - 1)``); the input is cropped or zero-padded to
        ``n // 2 + 1`` bins.
    axis : int
        Axis to transform.
    norm : {None, "backward", "ortho", "forward"}
        Normalisation, as :func:`fft`.
    backend : str
        ``"auto"`` (by the input's type and device), ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array, shape as ``a`` with ``n`` along ``axis``
        Real, of ``a``'s precision.

    Backends: cpu, and any GPU backend built here. Autograd / torch.compile: yes for torch CPU tensors.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> x = np.arange(7.0)
    >>> bool(np.allclose(specux.fft.irfft(specux.fft.rfft(x), n=7), x))
    True
    """
    call = _Call(a, backend, "irfft", "complex")
    return call.done(call.c2r(call.x, n, axis, norm))


@torch_route("fft.hfft")
def hfft(
    a: Any, n: int | None = None, axis: int = -1, norm: str | None = None, *, backend: str = "auto"
) -> Any:
    """DFT of a Hermitian signal given by its first half (numpy.fft.hfft).

    Parameters
    ----------
    a : array_like, shape (..., N, ...)
        Input (numpy array, torch tensor or cupy array); complex, the first half of a Hermitian signal.
    n : int, optional
        Output length (default ``2 * (a.shape[axis] - 1)``).
    axis : int
        Axis to transform.
    norm : {None, "backward", "ortho", "forward"}
        Normalisation, as :func:`fft`.
    backend : str
        ``"auto"`` (by the input's type and device), ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array, shape as ``a`` with ``n`` along ``axis``
        Real, of ``a``'s precision.

    Backends: cpu, and any GPU backend built here. Autograd / torch.compile: yes for torch CPU tensors.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> specux.fft.hfft(np.array([1.0, 0.0, 0.0])).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    call = _Call(a, backend, "hfft", "complex")
    return call.done(call.c2r(_arrays.conj(call.x), n, axis, _SWAP.get(norm, norm)))


@torch_route("fft.ihfft")
def ihfft(
    a: Any, n: int | None = None, axis: int = -1, norm: str | None = None, *, backend: str = "auto"
) -> Any:
    """Inverse of :func:`hfft` (numpy.fft.ihfft).

    Parameters
    ----------
    a : array_like, shape (..., N, ...)
        Input (numpy array, torch tensor or cupy array); real.
    n : int, optional
        Transform length: the input is truncated or zero-padded along ``axis``. ``None``: ``a.shape[axis]``.
    axis : int
        Axis to transform.
    norm : {None, "backward", "ortho", "forward"}
        Normalisation, as :func:`fft`.
    backend : str
        ``"auto"`` (by the input's type and device), ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array, shape as ``a`` with ``n // 2 + 1`` along ``axis``
        Complex, of ``a``'s precision.

    Backends: cpu, and any GPU backend built here. Autograd / torch.compile: yes for torch CPU tensors.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> x = np.array([1.0, 2.0, 3.0, 4.0])
    >>> bool(np.allclose(specux.fft.ihfft(x), np.fft.ihfft(x)))
    True
    """
    call = _Call(a, backend, "ihfft", "real")
    return call.done(_arrays.conj(call.r2c(call.x, n, axis, _SWAP.get(norm, norm))))


# --- N-dimensional
# -------------------------------------------------------------------------------------------


def _cook(
    x: Any, s: Sequence[int] | None, axes: Sequence[int] | None, public: str, last_half: bool = False
) -> tuple[list[int | None], list[int]]:
    """numpy's rule for ``s`` and ``axes``: axes default to the last ``len(s)`` axes, or to all axes."""
    if s is not None:
        s = [s] if isinstance(s, (int, np.integer)) else list(s)
    if axes is not None:
        axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    if axes is None:
        axes = list(range(-len(s), 0)) if s is not None else list(range(x.ndim))
    axes = [_norm_axis(ax, x.ndim, public) for ax in axes]
    if s is None:
        sizes: list[int | None] = [None] * len(axes)
    else:
        if len(s) != len(axes):
            raise ValueError(f"{public}: s and axes must have the same length; got {len(s)} and {len(axes)}")
        sizes = [None if v == -1 else _check_n(v, public, "s") for v in s]
    if last_half and sizes and sizes[-1] is None:
        sizes[-1] = 2 * (x.shape[axes[-1]] - 1)
    if not axes:
        raise ValueError(f"{public}: at least one axis is needed")
    if isinstance(x, np.ndarray) and s is not None:
        # the final shape up front (each axis is checked again as it is transformed)
        shape = list(x.shape)
        for n, ax in zip(sizes, axes):
            shape[ax] = shape[ax] if n is None else n
        if public.startswith("rfft"):
            shape[axes[-1]] = shape[axes[-1]] // 2 + 1
        item = 2 * max(x.dtype.itemsize, 4) if public.startswith("rfft") else x.dtype.itemsize
        _guard(x, 2 * _memory.product(shape) * item, public, "s", tuple(s), tuple(shape))
    return sizes, axes


@torch_route("fft.fftn")
def fftn(
    a: Any,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: str | None = None,
    *,
    backend: str = "auto",
) -> Any:
    """N-dimensional DFT (numpy.fft.fftn), as one-axis transforms over ``axes``.

    Parameters
    ----------
    a : array_like
        Input (numpy array, torch tensor or cupy array); real input is treated as complex.
    s : sequence of int, optional
        Transform length per axis (``-1`` keeps the input's size); the input is cropped or zero-padded.
    axes : sequence of int, optional
        Axes to transform. ``None``: the last ``len(s)`` axes, or all axes.
    norm : {None, "backward", "ortho", "forward"}
        Normalisation, as :func:`fft`.
    backend : str
        ``"auto"`` (by the input's type and device), ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array
        Complex of ``a``'s precision, ``s`` along ``axes``, in ``a``'s library.

    Backends: cpu, and any GPU backend built here. Autograd / torch.compile: yes for torch CPU tensors.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> x = np.random.default_rng(0).standard_normal((4, 6))
    >>> bool(np.allclose(specux.fft.fftn(x), np.fft.fftn(x)))
    True
    """
    call = _Call(a, backend, "fftn", "complex")
    sizes, axes_ = _cook(call.x, s, axes, "fftn")
    x = call.x
    for n, ax in zip(reversed(sizes), reversed(axes_)):
        x = call.c2c(x, n, ax, norm, inverse=False, name="s")
    return call.done(x)


@torch_route("fft.ifftn")
def ifftn(
    a: Any,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: str | None = None,
    *,
    backend: str = "auto",
) -> Any:
    """Inverse of :func:`fftn` (numpy.fft.ifftn).

    Parameters
    ----------
    a : array_like
        Input (numpy array, torch tensor or cupy array).
    s : sequence of int, optional
        Transform length per axis (``-1`` keeps the input's size); the input is cropped or zero-padded.
    axes : sequence of int, optional
        Axes to transform. ``None``: the last ``len(s)`` axes, or all axes.
    norm : {None, "backward", "ortho", "forward"}
        Normalisation, as :func:`fft`.
    backend : str
        ``"auto"`` (by the input's type and device), ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array
        Complex of ``a``'s precision, ``s`` along ``axes``.

    Backends: cpu, and any GPU backend built here. Autograd / torch.compile: yes for torch CPU tensors.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> x = np.random.default_rng(0).standard_normal((4, 6))
    >>> bool(np.allclose(specux.fft.ifftn(specux.fft.fftn(x)), x))
    True
    """
    call = _Call(a, backend, "ifftn", "complex")
    sizes, axes_ = _cook(call.x, s, axes, "ifftn")
    x = call.x
    for n, ax in zip(reversed(sizes), reversed(axes_)):
        x = call.c2c(x, n, ax, norm, inverse=True, name="s")
    return call.done(x)


@torch_route("fft.rfftn")
def rfftn(
    a: Any,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: str | None = None,
    *,
    backend: str = "auto",
) -> Any:
    """N-dimensional real-input DFT (numpy.fft.rfftn): rfft along the last of ``axes``, fft along the others.

    Parameters
    ----------
    a : array_like
        Input (numpy array, torch tensor or cupy array); real.
    s : sequence of int, optional
        Transform length per axis (``-1`` keeps the input's size); the input is cropped or zero-padded.
    axes : sequence of int, optional
        Axes to transform. ``None``: the last ``len(s)`` axes, or all axes.
    norm : {None, "backward", "ortho", "forward"}
        Normalisation, as :func:`fft`.
    backend : str
        ``"auto"`` (by the input's type and device), ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array
        Complex of ``a``'s precision; ``s[-1] // 2 + 1`` along the last of ``axes``.

    Backends: cpu, and any GPU backend built here. Autograd / torch.compile: yes for torch CPU tensors.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> specux.fft.rfftn(np.zeros((4, 6, 8))).shape
    (4, 6, 5)
    """
    call = _Call(a, backend, "rfftn", "real")
    sizes, axes_ = _cook(call.x, s, axes, "rfftn")
    x = call.r2c(call.x, sizes[-1], axes_[-1], norm, name="s")
    for n, ax in zip(reversed(sizes[:-1]), reversed(axes_[:-1])):
        x = call.c2c(x, n, ax, norm, inverse=False, name="s")
    return call.done(x)


@torch_route("fft.irfftn")
def irfftn(
    a: Any,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: str | None = None,
    *,
    backend: str = "auto",
) -> Any:
    """Inverse of :func:`rfftn` (numpy.fft.irfftn).

    Parameters
    ----------
    a : array_like
        Input (numpy array, torch tensor or cupy array); complex.
    s : sequence of int, optional
        Output length per axis; ``s[-1]`` defaults to ``2 * (a.shape[axes[-1]] - 1)``.
    axes : sequence of int, optional
        Axes to transform. ``None``: the last ``len(s)`` axes, or all axes.
    norm : {None, "backward", "ortho", "forward"}
        Normalisation, as :func:`fft`.
    backend : str
        ``"auto"`` (by the input's type and device), ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array
        Real, of ``a``'s precision, ``s`` along ``axes``.

    Backends: cpu, and any GPU backend built here. Autograd / torch.compile: yes for torch CPU tensors.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> x = np.random.default_rng(0).standard_normal((4, 6))
    >>> bool(np.allclose(specux.fft.irfftn(specux.fft.rfftn(x), s=x.shape), x))
    True
    """
    call = _Call(a, backend, "irfftn", "complex")
    sizes, axes_ = _cook(call.x, s, axes, "irfftn", last_half=True)
    x = call.x
    for n, ax in zip(sizes[:-1], axes_[:-1]):
        x = call.c2c(x, n, ax, norm, inverse=True, name="s")
    return call.done(call.c2r(x, sizes[-1], axes_[-1], norm, name="s"))


@torch_route("fft.fft2")
def fft2(
    a: Any,
    s: Sequence[int] | None = None,
    axes: Sequence[int] = (-2, -1),
    norm: str | None = None,
    *,
    backend: str = "auto",
) -> Any:
    """Two-dimensional DFT (numpy.fft.fft2): :func:`fftn` over ``axes=(-2, -1)``.

    Parameters
    ----------
    a : array_like
        Input (numpy array, torch tensor or cupy array); real input is treated as complex.
    s : sequence of int, optional
        Transform length per axis (``-1`` keeps the input's size); the input is cropped or zero-padded.
    axes : sequence of int
        The two axes to transform.
    norm : {None, "backward", "ortho", "forward"}
        Normalisation, as :func:`fft`.
    backend : str
        ``"auto"`` (by the input's type and device), ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array
        Complex of ``a``'s precision.

    Backends: cpu, and any GPU backend built here. Autograd / torch.compile: yes for torch CPU tensors.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> x = np.eye(4)
    >>> bool(np.allclose(specux.fft.fft2(x), np.fft.fft2(x)))
    True
    """
    return fftn(a, s, axes, norm, backend=backend)


@torch_route("fft.ifft2")
def ifft2(
    a: Any,
    s: Sequence[int] | None = None,
    axes: Sequence[int] = (-2, -1),
    norm: str | None = None,
    *,
    backend: str = "auto",
) -> Any:
    """Two-dimensional inverse DFT (numpy.fft.ifft2): :func:`ifftn` over ``axes=(-2, -1)``.

    Parameters
    ----------
    a : array_like
        Input (numpy array, torch tensor or cupy array).
    s : sequence of int, optional
        Transform length per axis (``-1`` keeps the input's size); the input is cropped or zero-padded.
    axes : sequence of int
        The two axes to transform.
    norm : {None, "backward", "ortho", "forward"}
        Normalisation, as :func:`fft`.
    backend : str
        ``"auto"`` (by the input's type and device), ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array
        Complex of ``a``'s precision.

    Backends: cpu, and any GPU backend built here. Autograd / torch.compile: yes for torch CPU tensors.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> x = np.eye(4)
    >>> bool(np.allclose(specux.fft.ifft2(specux.fft.fft2(x)), x))
    True
    """
    return ifftn(a, s, axes, norm, backend=backend)


@torch_route("fft.rfft2")
def rfft2(
    a: Any,
    s: Sequence[int] | None = None,
    axes: Sequence[int] = (-2, -1),
    norm: str | None = None,
    *,
    backend: str = "auto",
) -> Any:
    """Two-dimensional real DFT (numpy.fft.rfft2): :func:`rfftn` over ``axes=(-2, -1)``.

    Parameters
    ----------
    a : array_like
        Input (numpy array, torch tensor or cupy array); real.
    s : sequence of int, optional
        Transform length per axis (``-1`` keeps the input's size); the input is cropped or zero-padded.
    axes : sequence of int
        The two axes to transform.
    norm : {None, "backward", "ortho", "forward"}
        Normalisation, as :func:`fft`.
    backend : str
        ``"auto"`` (by the input's type and device), ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array
        Complex of ``a``'s precision; ``s[-1] // 2 + 1`` along the last axis.

    Backends: cpu, and any GPU backend built here. Autograd / torch.compile: yes for torch CPU tensors.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> specux.fft.rfft2(np.zeros((4, 8))).shape
    (4, 5)
    """
    return rfftn(a, s, axes, norm, backend=backend)


@torch_route("fft.irfft2")
def irfft2(
    a: Any,
    s: Sequence[int] | None = None,
    axes: Sequence[int] = (-2, -1),
    norm: str | None = None,
    *,
    backend: str = "auto",
) -> Any:
    """Inverse of :func:`rfft2` (numpy.fft.irfft2): :func:`irfftn` over ``axes=(-2, -1)``.

    Parameters
    ----------
    a : array_like
        Input (numpy array, torch tensor or cupy array); complex.
    s : sequence of int, optional
        Output length per axis; ``s[-1]`` defaults to ``2 * (a.shape[-1] - 1)``.
    axes : sequence of int
        The two axes to transform.
    norm : {None, "backward", "ortho", "forward"}
        Normalisation, as :func:`fft`.
    backend : str
        ``"auto"`` (by the input's type and device), ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array
        Real, of ``a``'s precision.

    Backends: cpu, and any GPU backend built here. Autograd / torch.compile: yes for torch CPU tensors.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> x = np.random.default_rng(0).standard_normal((4, 6))
    >>> bool(np.allclose(specux.fft.irfft2(specux.fft.rfft2(x), s=x.shape), x))
    True
    """
    return irfftn(a, s, axes, norm, backend=backend)


# --- frequencies and shifts (cheap; computed with the input's own library)
# -----------------------------------


def _freq_args(n: int, d: float, public: str) -> tuple[int, float]:
    n = _check_n(n, public)
    d = _validate.real(d, "d", public)
    if d == 0:
        raise ValueError(f"{public}: the sample spacing d must be non-zero; got {d}")
    # the integers and the frequencies
    _memory.check(16 * n, public=f"specux.fft.{public}", parameter="n", value=n)
    return n, d


def fftfreq(n: int, d: float = 1.0) -> np.ndarray:
    """Sample frequencies of :func:`fft` bins (numpy.fft.fftfreq).

    Parameters
    ----------
    n : int
        Transform length.
    d : float
        Sample spacing (the inverse of the sampling rate), finite and non-zero (else a ValueError
        names it).

    Returns
    -------
    numpy.ndarray, shape (n,)
        Frequencies in cycles per unit of ``d``.

    Examples
    --------
    >>> import specux
    >>> specux.fft.fftfreq(4, d=0.25).tolist()
    [0.0, 1.0, -2.0, -1.0]
    """
    return np.fft.fftfreq(*_freq_args(n, d, "fftfreq"))


def rfftfreq(n: int, d: float = 1.0) -> np.ndarray:
    """Sample frequencies of :func:`rfft` bins (numpy.fft.rfftfreq).

    Parameters
    ----------
    n : int
        Transform length.
    d : float
        Sample spacing (the inverse of the sampling rate), finite and non-zero (else a ValueError
        names it).

    Returns
    -------
    numpy.ndarray, shape (n // 2 + 1,)
        Frequencies in cycles per unit of ``d``.

    Examples
    --------
    >>> import specux
    >>> specux.fft.rfftfreq(8, d=1 / 8000).tolist()
    [0.0, 1000.0, 2000.0, 3000.0, 4000.0]
    """
    return np.fft.rfftfreq(*_freq_args(n, d, "rfftfreq"))


def _roll(x: Any, axes: int | Sequence[int] | None, sign: int) -> Any:
    if not (_arrays.is_torch(x) or _arrays.is_cupy(x)):
        x = np.asarray(x)
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, (int, np.integer)):
        axes = (int(axes),)
    axes = tuple(_norm_axis(ax, x.ndim, "fftshift") for ax in axes)
    shifts = tuple(sign * (x.shape[ax] // 2) for ax in axes)
    if _arrays.is_torch(x):
        return x.roll(shifts, axes)
    if _arrays.is_cupy(x):
        return sys.modules["cupy"].roll(x, shifts, axes)
    return np.roll(x, shifts, axes)


def fftshift(x: Any, axes: int | Sequence[int] | None = None) -> Any:
    """Move the zero-frequency bin to the centre (numpy.fft.fftshift).

    Parameters
    ----------
    x : array_like
        numpy array, torch tensor or cupy array; the result is of the same library.
    axes : int or sequence of int, optional
        Axes to shift. ``None``: all axes.

    Returns
    -------
    array, same shape as ``x``

    Examples
    --------
    >>> import specux
    >>> specux.fft.fftshift(specux.fft.fftfreq(4)).tolist()
    [-0.5, -0.25, 0.0, 0.25]
    """
    return _roll(x, axes, +1)


def ifftshift(x: Any, axes: int | Sequence[int] | None = None) -> Any:
    """Inverse of :func:`fftshift` (numpy.fft.ifftshift).

    Parameters
    ----------
    x : array_like
        numpy array, torch tensor or cupy array; the result is of the same library.
    axes : int or sequence of int, optional
        Axes to shift. ``None``: all axes.

    Returns
    -------
    array, same shape as ``x``

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> x = np.arange(5)
    >>> specux.fft.ifftshift(specux.fft.fftshift(x)).tolist()
    [0, 1, 2, 3, 4]
    """
    return _roll(x, axes, -1)
