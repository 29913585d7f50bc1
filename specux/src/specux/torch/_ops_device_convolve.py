"""``specux::fftconvolve_device`` and ``specux::fftconvolve_device_backward``: fftconvolve of torch tensors
on a device backend (``"opencl"``, ``"cuda"``, ``"metal"``), forward and backward on its generated kernels.

The CPU ops (:mod:`specux.torch._ops_convolve`) compute with NumPy; these run
:func:`specux._runtime.convolve_exec.fftconvolve` forward and
:func:`specux._runtime.convolve_exec.fftconvolve_adjoint` backward, once per input: the gradient for ``in1``
is the valid correlation of the zero-embedded ("full") output gradient with ``conj(in2)``, summed over
``in1``'s broadcast axes (the real part for a real ``in1``), and symmetrically for ``in2``. The adjoint is
kernels of the same family (pad, crop, the conjugating spectrum product, the generated FFT, a reducing
crop): no host round trip and no trace through a decomposition.

fftconvolve has two differentiable tensors, so its ops are written here rather than through
:func:`specux.torch._device_op.define_device_op` (one input with gradient plus constants); where the arrays
live is :mod:`specux.torch._device_op`'s :func:`~specux.torch._device_op.place_of` (both tensors must be on
the same place) and its ``HostPlace`` / ``CudaPlace`` run the exec functions; the backend's checks are
:func:`~specux.torch._device_op.backend_of`'s.

The backward op is differentiable too (made of these two ops, as the CPU one), so double backward stays on the
device.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from specux._runtime import convolve_exec as ce
from specux.torch._convert import dtype_name
from specux.torch._device_op import backend_of, place_of
from specux.torch._ops_convolve import _TORCH, _params

OP = "fftconvolve"


def _real(p: Any) -> str:
    return {"complex64": "float32", "complex128": "float64"}.get(p.dtype, p.dtype)


def _resolve(
    in1: Tensor, in2: Tensor, mode: str, axes: list[int] | None, backend: str
) -> tuple[Any, Any, Any]:
    """(place, parameters, backend object) of a call after every check (also for fake tensors, so at trace
    time): where the tensors live (both on the same place), the arguments, and the backend serving this
    precision."""
    place = place_of(in1, backend, OP)
    if in2.device != in1.device:
        raise ValueError(
            f"specux.{OP}: in1 and in2 must live on the same device; got {in1.device} and {in2.device} "
            "(nothing is copied behind your back)"
        )
    p = _params(in1, in2, mode, axes)
    return place, p, backend_of(backend, OP, _real(p))


def _pair(in1: Tensor, in2: Tensor, p: Any) -> tuple[tuple[Tensor, str], ...]:
    """The exec functions' inputs: each tensor in its own dtype, swapped as ``p`` says."""
    pair = ((in1, dtype_name(in1)), (in2, dtype_name(in2)))
    return pair[::-1] if p.swapped else pair


@torch.library.custom_op(f"specux::{OP}_device", mutates_args=(), device_types=("cpu", "cuda"))
def fftconvolve_device(in1: Tensor, in2: Tensor, mode: str, axes: list[int] | None, backend: str) -> Tensor:
    """specux::fftconvolve on the device backend named by ``backend`` (torch CPU tensors, or CUDA tensors with
    backend 'cuda', in and out on the same device)."""
    place, p, b = _resolve(in1, in2, mode, axes, backend)
    return place.run(b, OP, _pair(in1, in2, p), lambda rt, ins: ce.fftconvolve(rt, ins, p))


@fftconvolve_device.register_fake
def _(in1, in2, mode, axes, backend):
    _, p, _ = _resolve(in1, in2, mode, axes, backend)
    return in1.new_empty(p.out_shape, dtype=_TORCH[p.dtype])


@torch.library.custom_op(f"specux::{OP}_device_backward", mutates_args=(), device_types=("cpu", "cuda"))
def fftconvolve_device_backward(
    grad: Tensor, in1: Tensor, in2: Tensor, mode: str, axes: list[int] | None, backend: str
) -> tuple[Tensor, Tensor]:
    """Gradients of specux::fftconvolve_device with respect to ``in1`` and ``in2``, by the device's adjoint
    kernels (:func:`specux._runtime.convolve_exec.fftconvolve_adjoint`), each in its input's dtype."""
    place, p, b = _resolve(in1, in2, mode, axes, backend)
    tensors = ((grad, p.dtype), *_pair(in1, in2, p))

    def gradient(which: int) -> Tensor:
        return place.run(
            b, OP, tensors, lambda rt, ins: ce.fftconvolve_adjoint(rt, ins[0], ins[1:], p, which)
        )

    ga, gb = gradient(0), gradient(1)
    return (gb, ga) if p.swapped else (ga, gb)


@fftconvolve_device_backward.register_fake
def _(grad, in1, in2, mode, axes, backend):
    _resolve(in1, in2, mode, axes, backend)
    return (
        torch.empty_like(in1, memory_format=torch.contiguous_format),
        torch.empty_like(in2, memory_format=torch.contiguous_format),
    )


def _setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])
    ctx.mode, ctx.axes, ctx.backend = inputs[2], inputs[3], inputs[4]


def _grad(ctx, grad):
    a, b = ctx.saved_tensors
    ga, gb = fftconvolve_device_backward(grad.contiguous(), a, b, ctx.mode, ctx.axes, ctx.backend)
    return (
        (ga if ctx.needs_input_grad[0] else None),
        (gb if ctx.needs_input_grad[1] else None),
        None,
        None,
        None,
    )


fftconvolve_device.register_autograd(_grad, setup_context=_setup)


def _backward_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1], inputs[2])
    ctx.mode, ctx.axes, ctx.backend = inputs[3], inputs[4], inputs[5]


def _backward_grad(ctx, ha, hb):
    g, a, b = ctx.saved_tensors
    args = (ctx.mode, ctx.axes, ctx.backend)
    ha = torch.zeros_like(a) if ha is None else ha.contiguous()
    hb = torch.zeros_like(b) if hb is None else hb.contiguous()
    # backward(g, a, b) = (Ga(g, b), Gb(g, a)) is linear in g and in each of a, b (as the CPU op's):
    # d/dg = conv(ha, b) + conv(a, hb); d/da = Ga(g, hb); d/db = Gb(g, ha)
    gg = fftconvolve_device(ha, b, *args) + fftconvolve_device(a, hb, *args)
    ga, gb = fftconvolve_device_backward(g, ha, hb, *args)
    return gg.to(g.dtype), ga, gb, None, None, None


fftconvolve_device_backward.register_autograd(_backward_grad, setup_context=_backward_setup)
