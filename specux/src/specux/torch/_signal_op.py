"""One definition of a signal op: ``specux::<name>``, ``specux::<name>_backward``, their fake kernels and the
autograd that joins them, from an annotated signature and the NumPy kernels.

Used by the ops whose first argument is the signal, whose next few are constant tensors (precomputed windows,
banks, matrices: no gradient) and whose backward op takes ``grad`` followed by the forward op's arguments.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from specux.torch._convert import numpy_of, tensor_of


def like_signal(grad, y, *args):
    """The fake kernel of a backward op: a contiguous tensor like the signal."""
    return torch.empty_like(y, memory_format=torch.contiguous_format)


def register_autograd(forward, backward, n_tensors: int, constants_error: str) -> None:
    """Autograd of an op whose first ``n_tensors`` arguments are tensors (the signal, then constants);
    ``constants_error`` is the message raised when a constant requires grad."""

    def setup(ctx, inputs, output):
        ctx.save_for_backward(*inputs[:n_tensors])
        ctx.args = inputs[n_tensors:]
        ctx.n_inputs = len(inputs)

    def grad_fn(ctx, grad):
        saved = ctx.saved_tensors
        if any(ctx.needs_input_grad[1:n_tensors]):
            raise RuntimeError(constants_error)
        gy = backward(grad.contiguous(), *saved, *ctx.args) if ctx.needs_input_grad[0] else None
        return (gy,) + (None,) * (ctx.n_inputs - 1)

    forward.register_autograd(grad_fn, setup_context=setup)


def op_from_signature(name: str, signature: Callable, kernel: Callable, *, backward: bool = False):
    """``specux::<name>`` (a CPU custom op) running ``kernel``, with the schema of ``signature``'s annotated
    arguments; a ``backward`` op takes ``grad: Tensor`` before them."""
    schema = torch.library.infer_schema(signature, mutates_args=())
    if backward:
        schema = "(Tensor grad, " + schema[1:]
    return torch.library.custom_op(
        f"specux::{name}", kernel, mutates_args=(), device_types="cpu", schema=schema
    )


def define_signal_op(
    name: str,
    signature: Callable,
    n_tensors: int,
    *,
    check: Callable,
    params: Callable,
    forward: Callable,
    backward: Callable,
    out_shape: Callable,
    constants_error: str,
):
    """Register ``specux::<name>`` and ``specux::<name>_backward``; returns both ops.

    ``signature`` carries the op's annotated arguments (its schema) and docstring. ``check(y, *args)`` runs
    first in the forward kernel; ``params(y, *args)`` resolves the arguments (also for fake tensors);
    ``forward(x, p)`` and ``backward(g, x, p)`` are the NumPy kernels; ``out_shape(y, p)`` is the forward
    output's shape.
    """

    def kernel(y: Tensor, *args) -> Tensor:
        check(y, *args)
        p = params(y, *args)
        x = numpy_of(y)
        return tensor_of(forward(x, p), x)

    def backward_kernel(grad: Tensor, y: Tensor, *args) -> Tensor:
        p = params(y, *args)
        x, g = numpy_of(y), numpy_of(grad)
        return tensor_of(backward(g, x, p), x, g)

    kernel.__doc__ = signature.__doc__
    backward_kernel.__doc__ = f"Gradient of specux::{name} with respect to the signal."
    op = op_from_signature(name, signature, kernel)
    op.register_fake(lambda y, *args: y.new_empty(out_shape(y, params(y, *args))))
    backward_op = op_from_signature(f"{name}_backward", signature, backward_kernel, backward=True)
    backward_op.register_fake(like_signal)
    register_autograd(op, backward_op, n_tensors, constants_error)
    return op, backward_op
