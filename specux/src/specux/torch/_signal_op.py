"""One definition of a signal op: ``specux::<name>``, ``specux::<name>_backward``, their fake kernels and the
autograd that joins them, from an annotated signature and the NumPy kernels.

Used by the ops whose first argument is the signal, whose next few are constant tensors (precomputed windows,
banks, matrices) and whose backward op takes ``grad`` followed by the forward op's arguments. Where the op
defines them, the constants' gradients come from one more op, ``specux::<name>_constants_backward``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

from specux._threads import single_threaded_blas
from specux.torch._convert import numpy_of, tensor_of


def one_blas_thread(kernel: Callable) -> Callable:
    """``kernel`` with its NumPy matrix products on one BLAS thread.

    OpenBLAS's worker threads keep spinning for a while after a multi-threaded product and take the cores from
    torch's own thread pool, which runs right after a custom op: measured on a 2-core machine, torchaudio's
    melspectrogram forward + backward took 16.5 ms instead of 8.7 ms when it ran after specux's, and specux's
    own forward + backward was faster too (10.0 ms against 13.4 ms) with one BLAS thread.
    """

    @functools.wraps(kernel)
    def run(*args, **kwargs):
        with single_threaded_blas():
            return kernel(*args, **kwargs)

    return run


def like_signal(grad, y, *args):
    """The fake kernel of a backward op: a contiguous tensor like the signal."""
    return torch.empty_like(y, memory_format=torch.contiguous_format)


def register_autograd(
    forward,
    backward,
    n_tensors: int,
    constants_error: str,
    constants_backward=None,
    *,
    contiguous_grad: bool = True,
) -> None:
    """Autograd of an op whose first ``n_tensors`` arguments are tensors (the signal, then constants).

    ``constants_backward`` (an op from :func:`constants_op`) gives the gradients of the constant tensors
    (windows, banks, matrices) that require grad; without it, ``constants_error`` is raised for them.
    ``contiguous_grad=False`` hands the incoming gradient to the backward ops with its strides, for kernels
    that read any layout (a copy of a spectrogram-sized gradient is a large share of a training step).
    """

    def setup(ctx, inputs, output):
        ctx.save_for_backward(*inputs[:n_tensors])
        ctx.args = inputs[n_tensors:]
        ctx.n_inputs = len(inputs)

    def grad_fn(ctx, grad):
        saved = ctx.saved_tensors
        if contiguous_grad:
            grad = grad.contiguous()
        needs = [bool(n) for n in ctx.needs_input_grad[1:n_tensors]]
        constants = [None] * (n_tensors - 1)
        if any(needs):
            if constants_backward is None:
                raise RuntimeError(constants_error)
            outs = constants_backward(grad, *saved, *ctx.args, needs)
            constants = [o if n else None for o, n in zip(outs, needs)]
        gy = backward(grad, *saved, *ctx.args) if ctx.needs_input_grad[0] else None
        return (gy, *constants) + (None,) * (ctx.n_inputs - n_tensors)

    forward.register_autograd(grad_fn, setup_context=setup)


def gradient_like(a: np.ndarray, t: Tensor) -> Tensor:
    """The gradient ``a`` of a kernel-side constant as a tensor shaped like the argument ``t``: a window
    passed with ``win_length`` samples gets the centre of the ``n_fft``-long gradient (``pad_center``)."""
    if t.dim() == 1 and a.shape[0] != t.shape[0]:
        lo = (a.shape[0] - t.shape[0]) // 2
        a = a[lo : lo + t.shape[0]]
    return torch.from_numpy(np.ascontiguousarray(a)).to(t.dtype)


def signature_schema(
    signature: Callable, *, grad: bool = False, last: str | None = None, returns: str | None = None
) -> str:
    """The schema of ``signature``'s annotated arguments, as the ops derived from one signature take them.

    Parameters
    ----------
    signature : callable
        The annotated signature (the one place an op's arguments are spelled).
    grad : bool
        Put ``Tensor grad`` first (a backward op's arguments).
    last : str or None
        One more argument after the signature's, e.g. ``"str backend"`` (a device op's).
    returns : str or None
        The return type in place of the signature's, e.g. ``"Tensor[]"``.

    Returns
    -------
    str
        ``"(<arguments>) -> <returns>"``, for ``torch.library.custom_op(schema=...)``.
    """
    schema = torch.library.infer_schema(signature, mutates_args=())
    cut = schema.rindex(") -> ")
    arguments = [a for a in ("Tensor grad" if grad else "", schema[1:cut], last or "") if a]
    return f"({', '.join(arguments)}) -> {returns or schema[cut + len(') -> '):]}"


def gradients_schema(signature: Callable) -> str:
    """Schema ``(Tensor grad, <signature's arguments>, bool[] needs) -> Tensor[]`` of an op that returns the
    gradients of some of a forward op's tensor arguments."""
    return signature_schema(signature, grad=True, last="bool[] needs", returns="Tensor[]")


def constants_op(name: str, signature: Callable, n_tensors: int, params: Callable, grads: Callable):
    """``specux::<name>_constants_backward(grad, <forward args>, needs) -> list of tensors``: the gradients
    of the forward's constant tensor arguments (arguments 1 .. ``n_tensors - 1``); an empty tensor where
    ``needs`` is False or the argument is None. ``grads(g, x, p, needs)`` is the NumPy kernel, returning one
    array (or None) per constant, in the kernels' own shapes."""
    def kernel(grad: Tensor, y: Tensor, *rest) -> list[Tensor]:
        *args, needs = rest
        p = params(y, *args)
        arrays = grads(numpy_of(grad), numpy_of(y), p, tuple(bool(n) for n in needs))
        return [
            gradient_like(a, t) if (n and t is not None and a is not None) else grad.new_empty(0)
            for t, a, n in zip(args[: n_tensors - 1], arrays, needs)
        ]

    def fake(grad, y, *rest):
        *args, needs = rest
        return [
            t.new_empty(t.shape) if (n and t is not None) else grad.new_empty(0)
            for t, n in zip(args[: n_tensors - 1], needs)
        ]

    kernel.__doc__ = f"Gradients of specux::{name}'s window / filter bank / matrix arguments."
    op = torch.library.custom_op(
        f"specux::{name}_constants_backward",
        one_blas_thread(kernel),
        mutates_args=(),
        device_types="cpu",
        schema=gradients_schema(signature),
    )
    op.register_fake(fake)
    return op


def op_from_signature(name: str, signature: Callable, kernel: Callable, *, backward: bool = False):
    """``specux::<name>`` (a CPU custom op) running ``kernel``, with the schema of ``signature``'s annotated
    arguments; a ``backward`` op takes ``grad: Tensor`` before them."""
    return torch.library.custom_op(
        f"specux::{name}",
        one_blas_thread(kernel),
        mutates_args=(),
        device_types="cpu",
        schema=signature_schema(signature, grad=backward),
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
    constants: Callable | None = None,
):
    """Register ``specux::<name>`` and ``specux::<name>_backward``; returns both ops.

    ``signature`` carries the op's annotated arguments (its schema) and docstring. ``check(y, *args)`` runs
    first in the forward kernel; ``params(y, *args)`` resolves the arguments (also for fake tensors);
    ``forward(x, p)`` and ``backward(g, x, p)`` are the NumPy kernels; ``out_shape(y, p)`` is the forward
    output's shape. ``constants(g, x, p, needs)``, when given, computes the gradients of the constant tensors
    (see :func:`constants_op`).
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
    constants_backward = (
        constants_op(name, signature, n_tensors, params, constants) if constants is not None else None
    )
    register_autograd(op, backward_op, n_tensors, constants_error, constants_backward)
    return op, backward_op
