"""numpy.fft-shaped transforms of torch tensors through the ``specux::c2c / r2c / c2r`` ops.

These are what :mod:`specux.fft` runs for a CPU tensor (through :mod:`specux.torch._route`). Padding,
cropping, dtype promotion and conjugation are plain torch operations (differentiable and traceable); every DFT
is one custom op call, so ``torch.compile(fullgraph=True)`` sees no Python it cannot trace. Argument checks
and the rules for ``n`` / ``s`` / ``axes`` / ``norm`` are numpy's, as in :mod:`specux.fft`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import torch
from torch import Tensor

from specux import _memory
from specux.torch import _ops_fft

_NORMS = (None, "backward", "ortho", "forward")
_SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}
_HALF = (torch.float16, torch.bfloat16)


def _scale(norm: str | None, n: int, inverse: bool) -> float:
    if norm not in _NORMS:
        raise ValueError(f'norm must be None, "backward", "ortho" or "forward"; got {norm!r}')
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if (norm == "forward") != inverse:
        return 1.0 / n
    return 1.0


def _real_precision(a: Tensor, public: str) -> torch.dtype:
    """float32 / float64 for ``a``: integers and bool promote to float64, half types to float32 under
    autocast."""
    dt = a.dtype
    if dt.is_complex:
        dt = {torch.complex64: torch.float32, torch.complex128: torch.float64}.get(dt, dt)
    elif not dt.is_floating_point:
        return torch.float64
    if dt in _HALF and torch.is_autocast_enabled(a.device.type):
        return torch.float32  # the autocast policy of specux ops: compute in float32
    if dt not in (torch.float32, torch.float64):
        raise TypeError(
            f"specux.fft.{public}: dtype {str(a.dtype).removeprefix('torch.')} is not supported on backend "
            "'cpu'; accepted: float32, float64, complex64, complex128 (integers and bool promote to float64)"
        )
    return dt


def _as_complex(a: Tensor, public: str) -> Tensor:
    real = _real_precision(a, public)
    target = torch.complex64 if real == torch.float32 else torch.complex128
    return a.to(target)


def _as_real(a: Tensor, public: str) -> Tensor:
    if a.dtype.is_complex:
        raise TypeError(f"specux.fft.{public}: input must be real; got dtype {a.dtype}")
    return a.to(_real_precision(a, public))


def _axis(axis: int, ndim: int, public: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"{public}: axis must be an int; got {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{public}: axis {axis} is out of bounds for an array of dimension {ndim}")
    return int(axis) % ndim


def _check_n(n: int, public: str, name: str = "n") -> int:
    """``n`` (or an entry of ``s``) as numpy's path checks it: an int or numpy integer, at least 1."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{public}: {name} must be an int; got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"{public}: invalid number of FFT data points {name}={n}; it must be >= 1")
    return int(n)


def _guarded(x: Tensor) -> bool:
    """Whether the memory guard (see :mod:`specux._memory`) runs for ``x``, as :mod:`specux.fft` runs it
    for numpy arrays: on host tensors (a CUDA tensor's allocator reports its own out-of-memory), and not while
    ``torch.compile`` traces (shapes may be symbolic there; the compiled graph allocates what eager would)."""
    return x.device.type == "cpu" and not torch.compiler.is_compiling()


def _check_memory(nbytes: int, public: str, name: str, value: object, shape: tuple) -> None:
    detail = f"an output of shape {shape}"
    _memory.check(nbytes, public=f"specux.fft.{public}", parameter=name, value=value, detail=detail)


def _guard(
    x: Tensor, axis: int, in_len: int, out_len: int, out_item: int, public: str, name: str, n: int
) -> None:
    """The memory guard of one axis before anything is allocated: the zero-padded input, the output and the
    kernel's copy of it."""
    if not _guarded(x):
        return
    shape = list(x.shape)
    shape[axis] = in_len
    padded = _memory.product(shape) * x.element_size() if in_len > x.shape[axis] else 0
    shape[axis] = out_len
    _check_memory(padded + 2 * _memory.product(shape) * out_item, public, name, n, tuple(shape))


def _resize(x: Tensor, axis: int, n: int) -> Tensor:
    length = x.shape[axis]
    if length == n:
        return x
    if length > n:
        return x.narrow(axis, 0, n)
    shape = list(x.shape)
    shape[axis] = n - length
    return torch.cat([x, x.new_zeros(shape)], dim=axis)


def _c2c(
    x: Tensor, n: int | None, axis: int, norm: str | None, inverse: bool, public: str, name: str = "n"
) -> Tensor:
    axis = _axis(axis, x.dim(), public)
    n = x.shape[axis] if n is None else _check_n(n, public, name)
    _guard(x, axis, n, n, x.element_size(), public, name, n)
    return _ops_fft.c2c(_resize(x, axis, n).contiguous(), axis, inverse, _scale(norm, n, inverse))


def _r2c(x: Tensor, n: int | None, axis: int, norm: str | None, public: str, name: str = "n") -> Tensor:
    axis = _axis(axis, x.dim(), public)
    n = x.shape[axis] if n is None else _check_n(n, public, name)
    _guard(x, axis, n, n // 2 + 1, 2 * x.element_size(), public, name, n)
    return _ops_fft.r2c(_resize(x, axis, n).contiguous(), axis, _scale(norm, n, False))


def _c2r(x: Tensor, n: int | None, axis: int, norm: str | None, public: str, name: str = "n") -> Tensor:
    axis = _axis(axis, x.dim(), public)
    n = 2 * (x.shape[axis] - 1) if n is None else _check_n(n, public, name)
    if n < 1:
        raise ValueError(f"{public}: invalid number of output data points ({n}) along axis {axis}")
    _guard(x, axis, n // 2 + 1, n, x.element_size() // 2, public, name, n)
    return _ops_fft.c2r(_resize(x, axis, n // 2 + 1).contiguous(), axis, n, _scale(norm, n, True))


def _nonscalar(a: Tensor, public: str) -> None:
    if a.dim() == 0:
        raise ValueError(f"{public}: input must have at least one dimension")


def fft(a: Tensor, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    _nonscalar(a, "fft")
    return _c2c(_as_complex(a, "fft"), n, axis, norm, False, "fft")


def ifft(a: Tensor, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    _nonscalar(a, "ifft")
    return _c2c(_as_complex(a, "ifft"), n, axis, norm, True, "ifft")


def rfft(a: Tensor, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    _nonscalar(a, "rfft")
    return _r2c(_as_real(a, "rfft"), n, axis, norm, "rfft")


def irfft(a: Tensor, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    _nonscalar(a, "irfft")
    return _c2r(_as_complex(a, "irfft"), n, axis, norm, "irfft")


def hfft(a: Tensor, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    _nonscalar(a, "hfft")
    return _c2r(_as_complex(a, "hfft").conj().resolve_conj(), n, axis, _SWAP.get(norm, norm), "hfft")


def ihfft(a: Tensor, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    _nonscalar(a, "ihfft")
    return _r2c(_as_real(a, "ihfft"), n, axis, _SWAP.get(norm, norm), "ihfft").conj().resolve_conj()


def _cook(
    x: Tensor, s: Sequence[int] | None, axes: Sequence[int] | None, public: str, last_half: bool = False
) -> tuple[list[int | None], list[int]]:
    if s is not None:
        s = [s] if isinstance(s, int) else list(s)
    if axes is not None:
        axes = [axes] if isinstance(axes, int) else list(axes)
    if axes is None:
        axes = list(range(-len(s), 0)) if s is not None else list(range(x.dim()))
    axes = [_axis(ax, x.dim(), public) for ax in axes]
    if s is None:
        sizes: list[int | None] = [None] * len(axes)
    else:
        if len(s) != len(axes):
            raise ValueError(f"{public}: s and axes must have the same length; got {len(s)} and {len(axes)}")
        sizes = [None if v == -1 else _check_n(v, public, "s") for v in s]
    if not axes:
        raise ValueError(f"{public}: at least one axis is needed")
    if last_half and sizes[-1] is None:
        sizes[-1] = 2 * (x.shape[axes[-1]] - 1)
    if s is not None and _guarded(x):
        # the final shape up front, named by s as a whole (each axis is checked again as it is transformed)
        shape = list(x.shape)
        for n, ax in zip(sizes, axes):
            shape[ax] = shape[ax] if n is None else n
        if public.startswith("rfft"):
            shape[axes[-1]] = shape[axes[-1]] // 2 + 1
        item = 2 * max(x.element_size(), 4) if public.startswith("rfft") else x.element_size()
        _check_memory(2 * _memory.product(shape) * item, public, "s", tuple(s), tuple(shape))
    return sizes, axes


def fftn(
    a: Tensor, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None
):
    x = _as_complex(a, "fftn")
    sizes, axes_ = _cook(x, s, axes, "fftn")
    for n, ax in zip(reversed(sizes), reversed(axes_)):
        x = _c2c(x, n, ax, norm, False, "fftn", "s")
    return x


def ifftn(
    a: Tensor, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None
):
    x = _as_complex(a, "ifftn")
    sizes, axes_ = _cook(x, s, axes, "ifftn")
    for n, ax in zip(reversed(sizes), reversed(axes_)):
        x = _c2c(x, n, ax, norm, True, "ifftn", "s")
    return x


def rfftn(
    a: Tensor, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None
):
    x = _as_real(a, "rfftn")
    sizes, axes_ = _cook(x, s, axes, "rfftn")
    x = _r2c(x, sizes[-1], axes_[-1], norm, "rfftn", "s")
    for n, ax in zip(reversed(sizes[:-1]), reversed(axes_[:-1])):
        x = _c2c(x, n, ax, norm, False, "rfftn", "s")
    return x


def irfftn(
    a: Tensor, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None
):
    x = _as_complex(a, "irfftn")
    sizes, axes_ = _cook(x, s, axes, "irfftn", last_half=True)
    for n, ax in zip(sizes[:-1], axes_[:-1]):
        x = _c2c(x, n, ax, norm, True, "irfftn", "s")
    return _c2r(x, sizes[-1], axes_[-1], norm, "irfftn", "s")


def fft2(a: Tensor, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    return fftn(a, s, axes, norm)


def ifft2(a: Tensor, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    return ifftn(a, s, axes, norm)


def rfft2(a: Tensor, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    return rfftn(a, s, axes, norm)


def irfft2(
    a: Tensor, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None
):
    return irfftn(a, s, axes, norm)


#: public name -> implementation, for the route
FUNCTIONS = {
    f.__name__: f
    for f in (fft, ifft, rfft, irfft, hfft, ihfft, fftn, ifftn, rfftn, irfftn, fft2, ifft2, rfft2, irfft2)
}
