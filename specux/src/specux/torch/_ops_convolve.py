"""``specux::fftconvolve`` and ``specux::fftconvolve_backward`` (CPU, NumPy).

Convolution is bilinear: the gradient for ``in1`` is the cross-correlation of the (zero-embedded, uncropped)
output gradient with ``conj(in2)``, cut to ``in1``'s size and summed over broadcast axes, and symmetrically
for ``in2``; both are FFT convolutions again (mode "valid" against the flipped other input). The backward op
is itself differentiable (its backward is made of the forward and backward ops), so gradgradcheck passes.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from specux import _validate
from specux._backends.cpu.convolve import _fftconvolve_numpy
from specux._spec.convolve import fftconvolve_validate
from specux.torch._convert import check_cpu, numpy_of, tensor_of

_TORCH = {
    "float32": torch.float32,
    "float64": torch.float64,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
}


def _params(in1: Tensor, in2: Tensor, mode: str, axes: list[int] | None):
    for name, t in (("in1", in1), ("in2", in2)):
        if t.dtype not in _TORCH.values():
            raise TypeError(f"fftconvolve: {name} has dtype {t.dtype}; accepted: {', '.join(_TORCH)}")
    return fftconvolve_validate(in1, in2, mode=mode, axes=axes)


@torch.library.custom_op("specux::fftconvolve", mutates_args=(), device_types="cpu")
def fftconvolve(in1: Tensor, in2: Tensor, mode: str, axes: list[int] | None) -> Tensor:
    """specux.fftconvolve of two CPU tensors (see :func:`specux.fftconvolve`)."""
    check_cpu(in1, "fftconvolve")
    check_cpu(in2, "fftconvolve")
    p = _params(in1, in2, mode, axes)
    a, b = numpy_of(in1), numpy_of(in2)
    pair = (b, a) if p.swapped else (a, b)
    return tensor_of(_fftconvolve_numpy(pair, p), a, b)


@fftconvolve.register_fake
def _(in1, in2, mode, axes):
    p = _params(in1, in2, mode, axes)
    return in1.new_empty(p.out_shape, dtype=_TORCH[p.dtype])


def _correlate_to(
    g_full: np.ndarray, other: np.ndarray, target: tuple[int, ...], conv: tuple[int, ...], dtype: np.dtype
) -> np.ndarray:
    """Gradient for one input of shape ``target``: valid correlation of ``g_full`` with ``conj(other)``."""
    flipped = np.conj(np.flip(other, axis=conv)) if conv else np.conj(other)
    rdtype = np.result_type(g_full.dtype, flipped.dtype).name
    q = _validate.convolve_params(g_full.shape, flipped.shape, rdtype, "valid", list(conv) if conv else None)
    if not conv:  # nothing convolved: an elementwise product
        out = g_full * flipped
    else:
        out = _fftconvolve_numpy((g_full, flipped), q)
    # sum over the axes along which this input was broadcast
    summed = tuple(ax for ax in range(out.ndim) if target[ax] == 1 and out.shape[ax] != 1)
    if summed:
        out = out.sum(axis=summed, keepdims=True)
    if not np.issubdtype(dtype, np.complexfloating):
        out = out.real
    return np.ascontiguousarray(out, dtype=dtype)


def _backward_numpy(
    g: np.ndarray, a: np.ndarray, b: np.ndarray, mode: str, axes
) -> tuple[np.ndarray, np.ndarray]:
    p = fftconvolve_validate(a, b, mode=mode, axes=axes)
    A, B = (b, a) if p.swapped else (a, b)
    # put the output gradient back where the crop took it from, in the uncropped ("full") result
    g_full = np.zeros(p.full_shape, dtype=np.result_type(g.dtype, p.dtype))
    g_full[tuple(slice((f - o) // 2, (f - o) // 2 + o) for f, o in zip(p.full_shape, p.out_shape))] = g
    gA = _correlate_to(g_full, B, A.shape, p.axes, A.dtype)
    gB = _correlate_to(g_full, A, B.shape, p.axes, B.dtype)
    return (gB, gA) if p.swapped else (gA, gB)


@torch.library.custom_op("specux::fftconvolve_backward", mutates_args=(), device_types="cpu")
def fftconvolve_backward(
    grad: Tensor, in1: Tensor, in2: Tensor, mode: str, axes: list[int] | None
) -> tuple[Tensor, Tensor]:
    """Gradients of specux::fftconvolve with respect to ``in1`` and ``in2``."""
    g, a, b = numpy_of(grad), numpy_of(in1), numpy_of(in2)
    ga, gb = _backward_numpy(g, a, b, mode, axes)
    return tensor_of(ga, g, a, b), tensor_of(gb, g, a, b)


@fftconvolve_backward.register_fake
def _(grad, in1, in2, mode, axes):
    return (
        torch.empty_like(in1, memory_format=torch.contiguous_format),
        torch.empty_like(in2, memory_format=torch.contiguous_format),
    )


def _setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])
    ctx.mode, ctx.axes = inputs[2], inputs[3]


def _grad(ctx, grad):
    a, b = ctx.saved_tensors
    ga, gb = fftconvolve_backward(grad.contiguous(), a, b, ctx.mode, ctx.axes)
    return (ga if ctx.needs_input_grad[0] else None), (gb if ctx.needs_input_grad[1] else None), None, None


fftconvolve.register_autograd(_grad, setup_context=_setup)


def _backward_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1], inputs[2])
    ctx.mode, ctx.axes = inputs[3], inputs[4]


def _backward_grad(ctx, ha, hb):
    g, a, b = ctx.saved_tensors
    ha = torch.zeros_like(a) if ha is None else ha.contiguous()
    hb = torch.zeros_like(b) if hb is None else hb.contiguous()
    # backward(g, a, b) = (Ga(g, b), Gb(g, a)) is linear in g and in each of a, b:
    # d/dg = conv(ha, b) + conv(a, hb); d/da = Ga(g, hb); d/db = Gb(g, ha)
    gg = fftconvolve(ha, b, ctx.mode, ctx.axes) + fftconvolve(a, hb, ctx.mode, ctx.axes)
    ga, gb = fftconvolve_backward(g, ha, hb, ctx.mode, ctx.axes)
    # fftconvolve_backward(g, ha, hb) returns (Ga(g, hb), Gb(g, ha)) = (d/da, d/db)
    return gg.to(g.dtype), ga, gb, None, None


fftconvolve_backward.register_autograd(_backward_grad, setup_context=_backward_setup)
