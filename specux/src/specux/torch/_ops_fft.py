"""The FFT family's primitive ops (``specux::c2c``, ``specux::r2c``, ``specux::c2r``) and their adjoints.

Every transform of :mod:`specux.fft` is one or more of these along single axes, with the ``norm`` folded into
``scale``. Each is linear, so its backward is its adjoint, itself an op:

- ``c2c`` (sign -1, or +1 when ``inverse``) has adjoint ``c2c`` with the opposite sign and the same scale;
- ``r2c`` (one-sided real DFT) has adjoint ``r2c_backward`` (``Re(F^H g)``), whose adjoint is ``r2c`` again;
- ``c2r`` (inverse one-sided DFT) has adjoint ``c2r_backward`` (``w * rfft(g)``, ``w = 2`` on the bins that
  stand for a conjugate pair), whose adjoint is ``c2r`` again.

So every op here is differentiable any number of times.

Each op has a CPU kernel (the cpu backend, NumPy) and a CUDA kernel (the cuda backend's NVRTC-compiled FFTs,
run on the tensor's own device and stream). The two adjoints that are not themselves a primitive are written
in terms of the other primitive and a per-bin weight (:func:`r2c_adjoint_via_c2r`,
:func:`c2r_adjoint_via_r2c`), so the CUDA backward uses the same generated kernels as the forward.
"""

from __future__ import annotations

import torch
from torch import Tensor

from specux._backends import registry
from specux._backends.cpu.adjoint_frames import c2r_adjoint, r2c_adjoint
from specux.torch._convert import check_cpu, complex_of, numpy_of, real_of, tensor_of


def _cpu():
    return registry.get("cpu")


def _cuda():
    return registry.get("cuda")  # raises BackendUnavailableError with the reason when it cannot run


def _pair_weights(n: int, axis: int, ndim: int, like: Tensor) -> Tensor:
    """Weights of the ``n // 2 + 1`` one-sided bins of an ``n``-point real signal, shaped to broadcast along
    ``axis``: 2 for the bins that stand for a conjugate pair, 1 for bin 0 and (even ``n``) bin ``n / 2``."""
    w = torch.full((n // 2 + 1,), 2.0, dtype=real_of(like.dtype), device=like.device)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    shape = [1] * ndim
    shape[axis] = n // 2 + 1
    return w.reshape(shape)


def r2c_adjoint_via_c2r(backend, grad: Tensor, axis: int, n: int, scale: float) -> Tensor:
    """``scale * Re(F^H grad)`` as ``c2r(grad / w)``: ``c2r`` counts each paired bin twice and reads only the
    real part of the bins that are their own pair, exactly as ``Re(F^H .)`` does."""
    return backend.c2r(grad / _pair_weights(n, axis, grad.dim(), grad), axis, n, scale)


def c2r_adjoint_via_r2c(backend, grad: Tensor, axis: int, scale: float) -> Tensor:
    """``scale * w * rfft(grad)``, the adjoint of ``c2r``."""
    n = grad.shape[axis]
    return backend.r2c(grad, axis, scale) * _pair_weights(n, axis, grad.dim(), grad)


def _axis(x: Tensor, dim: int, op: str) -> int:
    if not -x.dim() <= dim < x.dim():
        raise ValueError(f"specux::{op}: dim {dim} is out of range for a {x.dim()}-dimensional tensor")
    return dim % x.dim()


def _check_dtype(x: Tensor, allowed: tuple[torch.dtype, ...], op: str) -> None:
    if x.dtype not in allowed:
        raise TypeError(
            f"specux::{op}: dtype {x.dtype} is not supported on the CPU backend; accepted: "
            f"{', '.join(str(d).removeprefix('torch.') for d in allowed)}"
        )


_COMPLEX = (torch.complex64, torch.complex128)
_REAL = (torch.float32, torch.float64)


@torch.library.custom_op("specux::c2c", mutates_args=(), device_types="cpu")
def c2c(x: Tensor, dim: int, inverse: bool, scale: float) -> Tensor:
    """Unnormalised complex DFT along ``dim`` (sign -1, +1 when ``inverse``) times ``scale``."""
    check_cpu(x, "c2c")
    _check_dtype(x, _COMPLEX, "c2c")
    a = numpy_of(x)
    return tensor_of(_cpu().c2c(a, _axis(x, dim, "c2c"), inverse, scale), a)


@c2c.register_kernel("cuda")
def _(x, dim, inverse, scale):
    _check_dtype(x, _COMPLEX, "c2c")
    return _cuda().c2c(x, _axis(x, dim, "c2c"), inverse, scale)


@c2c.register_fake
def _(x, dim, inverse, scale):
    _check_dtype(x, _COMPLEX, "c2c")
    _axis(x, dim, "c2c")
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _c2c_setup(ctx, inputs, output):
    ctx.dim, ctx.inverse, ctx.scale = inputs[1], inputs[2], inputs[3]


def _c2c_grad(ctx, grad):
    return c2c(grad.contiguous(), ctx.dim, not ctx.inverse, ctx.scale), None, None, None


c2c.register_autograd(_c2c_grad, setup_context=_c2c_setup)


def _half_shape(x: Tensor, axis: int, n: int) -> list[int]:
    shape = list(x.shape)
    shape[axis] = n
    return shape


@torch.library.custom_op("specux::r2c", mutates_args=(), device_types="cpu")
def r2c(x: Tensor, dim: int, scale: float) -> Tensor:
    """One-sided DFT of real ``x`` along ``dim`` (bins ``0 .. n // 2``) times ``scale``."""
    check_cpu(x, "r2c")
    _check_dtype(x, _REAL, "r2c")
    a = numpy_of(x)
    return tensor_of(_cpu().r2c(a, _axis(x, dim, "r2c"), scale), a)


@r2c.register_kernel("cuda")
def _(x, dim, scale):
    _check_dtype(x, _REAL, "r2c")
    return _cuda().r2c(x, _axis(x, dim, "r2c"), scale)


@r2c.register_fake
def _(x, dim, scale):
    _check_dtype(x, _REAL, "r2c")
    axis = _axis(x, dim, "r2c")
    return x.new_empty(_half_shape(x, axis, x.shape[axis] // 2 + 1), dtype=complex_of(x.dtype))


@torch.library.custom_op("specux::r2c_backward", mutates_args=(), device_types="cpu")
def r2c_backward(grad: Tensor, dim: int, n: int, scale: float) -> Tensor:
    """Adjoint of ``r2c`` for an ``n``-point input: ``scale * Re(F^H grad)``, real, ``n`` along ``dim``."""
    _check_dtype(grad, _COMPLEX, "r2c_backward")
    axis = _axis(grad, dim, "r2c_backward")
    g = numpy_of(grad)
    out = r2c_adjoint(g, n, axis=axis)
    if scale != 1.0:
        out *= scale
    return tensor_of(out.astype(g.real.dtype, copy=False), g)


@r2c_backward.register_kernel("cuda")
def _(grad, dim, n, scale):
    _check_dtype(grad, _COMPLEX, "r2c_backward")
    return r2c_adjoint_via_c2r(_cuda(), grad, _axis(grad, dim, "r2c_backward"), n, scale)


@r2c_backward.register_fake
def _(grad, dim, n, scale):
    axis = _axis(grad, dim, "r2c_backward")
    return grad.new_empty(_half_shape(grad, axis, n), dtype=real_of(grad.dtype))


def _r2c_setup(ctx, inputs, output):
    ctx.dim, ctx.scale = inputs[1], inputs[2]
    ctx.n = inputs[0].shape[_axis(inputs[0], inputs[1], "r2c")]


def _r2c_grad(ctx, grad):
    return r2c_backward(grad.contiguous(), ctx.dim, ctx.n, ctx.scale), None, None


r2c.register_autograd(_r2c_grad, setup_context=_r2c_setup)


def _r2c_backward_setup(ctx, inputs, output):
    ctx.dim, ctx.scale = inputs[1], inputs[3]


def _r2c_backward_grad(ctx, gg):
    return r2c(gg.contiguous(), ctx.dim, ctx.scale), None, None, None


r2c_backward.register_autograd(_r2c_backward_grad, setup_context=_r2c_backward_setup)


def _check_bins(x: Tensor, axis: int, n: int, dim: int) -> None:
    if x.shape[axis] != n // 2 + 1:
        raise ValueError(f"specux::c2r: n={n} needs {n // 2 + 1} bins along dim {dim}; got {x.shape[axis]}")


@torch.library.custom_op("specux::c2r", mutates_args=(), device_types="cpu")
def c2r(x: Tensor, dim: int, n: int, scale: float) -> Tensor:
    """Inverse one-sided DFT: ``n // 2 + 1`` bins along ``dim`` -> ``n`` real points, times ``scale``
    (unnormalised; the imaginary parts of bin 0 and, for even ``n``, bin ``n / 2`` are ignored)."""
    check_cpu(x, "c2r")
    _check_dtype(x, _COMPLEX, "c2r")
    axis = _axis(x, dim, "c2r")
    _check_bins(x, axis, n, dim)
    a = numpy_of(x)
    return tensor_of(_cpu().c2r(a, axis, n, scale), a)


@c2r.register_kernel("cuda")
def _(x, dim, n, scale):
    _check_dtype(x, _COMPLEX, "c2r")
    axis = _axis(x, dim, "c2r")
    _check_bins(x, axis, n, dim)
    return _cuda().c2r(x, axis, n, scale)


@c2r.register_fake
def _(x, dim, n, scale):
    _check_dtype(x, _COMPLEX, "c2r")
    axis = _axis(x, dim, "c2r")
    return x.new_empty(_half_shape(x, axis, n), dtype=real_of(x.dtype))


@torch.library.custom_op("specux::c2r_backward", mutates_args=(), device_types="cpu")
def c2r_backward(grad: Tensor, dim: int, scale: float) -> Tensor:
    """Adjoint of ``c2r``: ``scale * w * rfft(grad)`` along ``dim`` (``w`` 2 on paired bins, else 1)."""
    _check_dtype(grad, _REAL, "c2r_backward")
    axis = _axis(grad, dim, "c2r_backward")
    g = numpy_of(grad)
    out = c2r_adjoint(g, g.shape[axis] // 2 + 1, axis=axis)
    if scale != 1.0:
        out *= scale
    return tensor_of(out, g)


@c2r_backward.register_kernel("cuda")
def _(grad, dim, scale):
    _check_dtype(grad, _REAL, "c2r_backward")
    return c2r_adjoint_via_r2c(_cuda(), grad, _axis(grad, dim, "c2r_backward"), scale)


@c2r_backward.register_fake
def _(grad, dim, scale):
    axis = _axis(grad, dim, "c2r_backward")
    return grad.new_empty(_half_shape(grad, axis, grad.shape[axis] // 2 + 1), dtype=complex_of(grad.dtype))


def _c2r_setup(ctx, inputs, output):
    ctx.dim, ctx.scale = inputs[1], inputs[3]


def _c2r_grad(ctx, grad):
    return c2r_backward(grad.contiguous(), ctx.dim, ctx.scale), None, None, None


c2r.register_autograd(_c2r_grad, setup_context=_c2r_setup)


def _c2r_backward_setup(ctx, inputs, output):
    ctx.dim, ctx.scale = inputs[1], inputs[2]
    ctx.n = inputs[0].shape[_axis(inputs[0], inputs[1], "c2r_backward")]


def _c2r_backward_grad(ctx, gg):
    return c2r(gg.contiguous(), ctx.dim, ctx.n, ctx.scale), None, None


c2r_backward.register_autograd(_c2r_backward_grad, setup_context=_c2r_backward_setup)
