"""``specux::stft`` and ``specux::istft`` with their backward ops (CPU kernels in NumPy).

The backward of each op is an op of its own (``specux::stft_backward``, ``specux::istft_backward``) that runs
the analytic adjoint. Both transforms are linear in their input for the ``complex`` and ``real_imag`` outputs
of stft and for istft, so each backward op is differentiable again: its own backward is the forward op, which
makes ``gradgradcheck`` pass. The ``power`` output is quadratic: its backward is bilinear in (gradient,
signal) and differentiable again through the same ops. ``magnitude`` is not differentiable twice at zero; its
backward raises if differentiated a second time.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from torch import Tensor

from specux import _validate
from specux._backends.cpu import adjoint_stft as _adjoint_stft
from specux._backends.cpu.stft import _stft_numpy
from specux.torch._convert import check_cpu, complex_of, numpy_of, real_of, tensor_of
from specux.torch._params import (
    OpArguments,
    decode_spec,
    same_dtype,
    stft_frames_shape,
    stft_out_shape,
    stft_params,
    window_array,
)
from specux.torch._signal_op import constants_op, like_signal, op_from_signature, register_autograd

LINEAR_OUTPUTS = ("complex", "real_imag")
#: outputs whose backward op is differentiable again (power is quadratic in y)
TWICE_DIFFERENTIABLE = (*LINEAR_OUTPUTS, "power")


def _window_error(public: str) -> str:
    return (
        f"specux {public}: gradients with respect to the window are not computed; pass a window that does "
        "not require grad (the signal's gradient is)"
    )


# --- stft ---------------------------------------------------------------------------------------------------


def _stft_signature(
    y: Tensor,
    window: Tensor | None,
    window_spec: str,
    n_fft: int,
    hop_length: int | None,
    win_length: int | None,
    center: bool,
    pad_mode: str,
    output: str,
) -> Tensor:
    """specux.stft on a CPU tensor (see :func:`specux.stft`); ``window`` (a tensor) overrides
    ``window_spec``."""
    raise AssertionError("a signature only")


#: specux::stft's arguments after the signal, the window tensor and ``window_spec`` (the schema of
#: specux::stft, stft_frames and their backward / device ops; the kernels', the route's, the STFT module's)
STFT_ARGS = OpArguments.of(_stft_signature, 3)
#: :func:`~specux.torch._params.stft_params` of the ops' positional arguments (y, window, window_spec, ...)
stft_resolve = STFT_ARGS.positional(stft_params)


def _stft(y: Tensor, window: Tensor | None, *args: Any) -> Tensor:
    check_cpu(y, "stft")
    same_dtype(y, window, "stft", "window")
    p = stft_resolve(y, window, *args)
    x = numpy_of(y)
    return tensor_of(_stft_numpy(x, p), x)


_stft.__doc__ = _stft_signature.__doc__

stft = op_from_signature("stft", _stft_signature, _stft)


@stft.register_fake
def _(y, window, *args):
    p = stft_resolve(y, window, *args)
    shape, dtype = stft_out_shape(y, p)
    return y.new_empty(shape, dtype=dtype)


def _frames_first(a, output: str):
    """(..., bins, frames[, 2]) <-> (..., frames, bins[, 2]): the transposition between specux::stft's
    layout and specux::stft_frames' (a view, for numpy arrays and tensors alike)."""
    return a.swapaxes(-2, -3) if output == "real_imag" else a.swapaxes(-1, -2)


def _stft_frames(y: Tensor, window: Tensor | None, window_spec: str, *args) -> Tensor:
    """specux::stft with the frames before the bins: (..., n_frames, 1 + n_fft // 2) (``real_imag``:
    trailing 2), contiguous. The layout the CPU kernel computes in; ``specux::stft`` is its transpose, made
    contiguous (a copy that cost as much as the transform), and :func:`specux.stft` on a tensor returns this
    op's output as the transposed view, as numpy's result and ``torch.stft``'s are laid out."""
    check_cpu(y, "stft")
    same_dtype(y, window, "stft", "window")
    p = stft_resolve(y, window, window_spec, *args)
    x = numpy_of(y)
    return tensor_of(_frames_first(_stft_numpy(x, p), p.output), x)


stft_frames = op_from_signature("stft_frames", _stft_signature, _stft_frames)


@stft_frames.register_fake
def _(y, window, *args):
    p = stft_resolve(y, window, *args)
    shape, dtype = stft_out_shape(y, p)
    return y.new_empty(stft_frames_shape(shape, p.output), dtype=dtype)


def _stft_backward(grad: Tensor, y: Tensor, window: Tensor | None, *args) -> Tensor:
    """Gradient of specux::stft with respect to ``y`` (the analytic adjoint; ``y`` is read only for the
    ``magnitude`` and ``power`` outputs)."""
    p = stft_resolve(y, window, *args)
    g = numpy_of(grad)
    x = numpy_of(y) if args[-1] not in LINEAR_OUTPUTS else None
    batch = tuple(y.shape[:-1])
    return tensor_of(_adjoint_stft.stft_backward(g, x, p, batch).astype(p.dtype, copy=False), g, x)


stft_backward = op_from_signature("stft_backward", _stft_signature, _stft_backward, backward=True)
stft_backward.register_fake(like_signal)


def _stft_window_grad(g, x, p, needs):
    """Gradient of the stft window (see :func:`specux._backends.cpu.adjoint_stft.window_grad`)."""
    G = _adjoint_stft.complex_grad_tf(g, x, p, p.output)
    return (_adjoint_stft.window_grad(G, x, p),)


stft_constants_backward = constants_op("stft", _stft_signature, 2, stft_resolve, _stft_window_grad)
# the kernels read the gradient through numpy with its strides: a gradient laid out (frames, bins), as
# specux.stft's transposed view of specux::stft_frames leaves it, is then read in place
register_autograd(
    stft, stft_backward, 2, _window_error("stft"), stft_constants_backward, contiguous_grad=False
)


def _frames_backward(grad: Tensor, y: Tensor, window: Tensor | None, *args) -> Tensor:
    return stft_backward(_frames_first(grad, args[-1]), y, window, *args)


def _frames_constants_backward(grad: Tensor, y: Tensor, window: Tensor | None, *rest) -> list[Tensor]:
    return stft_constants_backward(_frames_first(grad, rest[-2]), y, window, *rest)


# specux::stft_frames differentiates through specux::stft's backward ops, given the gradient transposed back
# (a view); their own backward (double backward) is specux::stft
register_autograd(
    stft_frames,
    _frames_backward,
    2,
    _window_error("stft"),
    _frames_constants_backward,
    contiguous_grad=False,
)


def _stft_backward_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1], inputs[2])
    ctx.args = inputs[3:]


def _stft_backward_grad(ctx, gg):
    grad, y, window = ctx.saved_tensors
    output = ctx.args[-1]
    gg = gg.contiguous()
    if output in LINEAR_OUTPUTS:
        # the backward of a linear map is its adjoint; the adjoint's own backward is the map itself
        ggrad = stft(gg, window, *ctx.args) if ctx.needs_input_grad[0] else None
        return ggrad, None, None, None, None, None, None, None, None, None
    if output != "power":
        raise RuntimeError(
            f"specux stft: the double backward of output={output!r} is not available (|X| is not "
            f"differentiable twice at X = 0); twice-differentiable outputs: {', '.join(TWICE_DIFFERENTIABLE)}"
        )
    # power: backward(g, y) = A^T(2 g . A y) with A the complex stft, bilinear in (g, y):
    # d/dg = 2 Re(conj(A gg) . A y), d/dy = A^T(2 g . A gg) = backward(g, gg)
    complex_args = (*ctx.args[:-1], "complex")
    ggrad = gy = None
    if ctx.needs_input_grad[0]:
        H = stft(gg, window, *complex_args)
        X = stft(y, window, *complex_args)
        ggrad = 2.0 * (H.real * X.real + H.imag * X.imag)
    if ctx.needs_input_grad[1]:
        gy = stft_backward(grad, gg, window, *ctx.args)
    return ggrad, gy, None, None, None, None, None, None, None, None


stft_backward.register_autograd(_stft_backward_grad, setup_context=_stft_backward_setup)


# --- istft --------------------------------------------------------------------------------------------------


def istft_params(
    D: Tensor, window: Tensor | None, window_spec: str, **kw: Any
) -> _validate.IstftParams:
    """istft's parameters for ``D`` (complex tensor, possibly fake; ``kw``: specux::istft's arguments after
    ``window_spec``, by name: :data:`ISTFT_ARGS`); a window tensor replaces ``window_spec``."""
    precision = _validate.real_dtype(D, "istft", "stft_matrix", allow_complex=True)
    if not D.dtype.is_complex:
        raise TypeError(f"istft: stft_matrix must be complex64 or complex128; got {D.dtype}")
    spec = "boxcar" if window is not None else decode_spec(window_spec)
    p = _validate.istft_params(tuple(int(s) for s in D.shape), precision, window=spec, **kw)
    w = window_array(window, p.win_length, p.n_fft, "istft")
    return p if w is None else dataclasses.replace(p, window=w)


def _istft_signature(
    stft_matrix: Tensor,
    window: Tensor | None,
    window_spec: str,
    n_fft: int | None,
    hop_length: int | None,
    win_length: int | None,
    center: bool,
    length: int | None,
    nola: str,
) -> Tensor:
    """specux.istft on a complex CPU tensor (see :func:`specux.istft`); real output of the input's
    precision."""
    raise AssertionError("a signature only")


#: specux::istft's arguments after the spectrum, the window tensor and ``window_spec`` (the schema of
#: specux::istft and its backward / device ops; the kernels', the route's, the ISTFT module's)
ISTFT_ARGS = OpArguments.of(_istft_signature, 3)
#: :func:`istft_params` of the ops' positional arguments (stft_matrix, window, window_spec, ...)
istft_resolve = ISTFT_ARGS.positional(istft_params)


def _istft(stft_matrix: Tensor, window: Tensor | None, *args: Any) -> Tensor:
    check_cpu(stft_matrix, "istft")
    if window is not None:
        same_dtype(
            stft_matrix.real if stft_matrix.dtype.is_complex else stft_matrix, window, "istft", "window"
        )
    p = istft_resolve(stft_matrix, window, *args)
    D = numpy_of(stft_matrix)
    return tensor_of(_adjoint_stft.istft_forward(D, p), D)


_istft.__doc__ = _istft_signature.__doc__

istft = op_from_signature("istft", _istft_signature, _istft)


@istft.register_fake
def _(stft_matrix, window, *args):
    p = istft_resolve(stft_matrix, window, *args)
    shape = (*stft_matrix.shape[:-2], p.out_length)
    return stft_matrix.new_empty(shape, dtype=real_of(stft_matrix.dtype))


def _istft_backward(grad: Tensor, stft_matrix: Tensor, window: Tensor | None, *args) -> Tensor:
    """Gradient of specux::istft with respect to ``stft_matrix`` (its adjoint; only the shape of
    ``stft_matrix`` is read)."""
    p = istft_resolve(stft_matrix, window, *args)
    g = numpy_of(grad)
    n_bins, frames = int(stft_matrix.shape[-2]), int(stft_matrix.shape[-1])
    out = _adjoint_stft.istft_adjoint(g, p, n_bins, frames)
    return tensor_of(out.astype(str(stft_matrix.dtype).removeprefix("torch."), copy=False), g)


istft_backward = op_from_signature("istft_backward", _istft_signature, _istft_backward, backward=True)
istft_backward.register_fake(like_signal)


register_autograd(istft, istft_backward, 2, _window_error("istft"))


def _istft_backward_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[2])
    ctx.args = inputs[3:]
    ctx.d_dtype = inputs[1].dtype


def _istft_backward_grad(ctx, gg):
    (window,) = ctx.saved_tensors
    # istft is linear: the backward of its adjoint is istft itself
    ggrad = (
        istft(gg.to(complex_of(ctx.d_dtype)).contiguous(), window, *ctx.args)
        if ctx.needs_input_grad[0]
        else None
    )
    return ggrad, None, None, None, None, None, None, None, None, None


istft_backward.register_autograd(_istft_backward_grad, setup_context=_istft_backward_setup)
