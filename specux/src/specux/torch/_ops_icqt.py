"""``specux::icqt`` and ``specux::icqt_backward``: the inverse constant-Q transform of a complex CPU tensor.

The inverse is real-linear in the real and imaginary parts of ``C`` (every step, the upsampler included, is
linear), so its gradient is the analytic adjoint :func:`specux._backends.cpu.icqt.icqt_adjoint`: the
transposed upsampling (:mod:`specux._upsample`, the resamplers' measured linear forms), the transposed
overlap-add and the synthesis weights transposed. The backward of the backward is the inverse again.
:func:`arguments` checks and packs the functional API's arguments for torch tensors (``specux.icqt(tensor)``,
through :mod:`specux.torch._route`); a device backend runs ``specux::icqt_device``
(:mod:`specux.torch._ops_device`) with the same arguments.
"""

from __future__ import annotations

import torch
from torch import Tensor

from specux import _validate
from specux._backends.cpu.icqt import icqt_adjoint, icqt_cpu
from specux._spec.icqt import validate_icqt
from specux.torch._convert import check_cpu, numpy_of, real_of, tensor_of
from specux.torch._params import decode_spec, encode_spec
from specux.torch._signal_op import op_from_signature

_PUBLIC = "icqt"


def _signature(
    C: Tensor,
    sr: float,
    hop_length: int,
    fmin: float | None,
    bins_per_octave: int,
    tuning: float,
    filter_scale: float,
    norm: float | None,
    sparsity: float,
    window: str,
    scale: bool,
    length: int | None,
    res_type: str,
    dtype: str | None,
) -> Tensor:
    """specux.icqt of a complex CPU tensor (see :func:`specux.icqt`); ``window`` is a name or an encoded
    (name, parameter) tuple, ``dtype`` None or "float32" / "float64"."""
    raise AssertionError("a signature only")


def icqt_params(C: Tensor, args: tuple, device: bool = False):
    """The :class:`~specux._validate.IcqtParams` of specux::icqt's arguments ``args`` (after ``C``, which
    may be fake: only its shape and dtype are read); ``device``: validated for a device backend (the soxr
    qualities by the device's measured upsamplers, "soxr_qq" refused)."""
    (sr, hop_length, fmin, bpo, tuning, filter_scale, norm, sparsity, window, scale, length, res_type,
     dtype) = args
    import numpy as np

    # a stand-in of C's shape and dtype: the parameters depend on them only
    probe = np.zeros((int(C.shape[-2]), 1), dtype=str(C.dtype).removeprefix("torch."))
    _, p = validate_icqt(
        probe, _PUBLIC, device=device, sr=sr, hop_length=hop_length, fmin=fmin, bins_per_octave=bpo,
        tuning=tuning, filter_scale=filter_scale, norm=norm, sparsity=sparsity, window=decode_spec(window),
        scale=scale, length=length, res_type=res_type, dtype=dtype,
    )
    return p


def output_shape(C: Tensor, p) -> tuple[int, ...]:
    """The shape of the inverse of ``C`` with parameters ``p``: (..., n)."""
    T = int(C.shape[-1])
    n = p.length if p.length is not None else p.hop_length * (T - 1)
    return (*C.shape[:-2], n)


def _kernel(C: Tensor, *args) -> Tensor:
    check_cpu(C, _PUBLIC)
    p = icqt_params(C, args)
    x = numpy_of(C)
    return tensor_of(icqt_cpu(x, p), x)


def _fake(C: Tensor, *args) -> Tensor:
    p = icqt_params(C, args)
    return C.new_empty(output_shape(C, p), dtype=getattr(torch, p.dtype))


def _backward_kernel(grad: Tensor, C: Tensor, *args) -> Tensor:
    p = icqt_params(C, args)
    g = numpy_of(grad)
    out = icqt_adjoint(g, int(C.shape[-1]), p).astype(str(C.dtype).removeprefix("torch."), copy=False)
    return tensor_of(out, g)


_kernel.__doc__ = _signature.__doc__
_backward_kernel.__doc__ = "Gradient of specux::icqt with respect to C: the adjoint of the inverse."
icqt = op_from_signature("icqt", _signature, _kernel)
icqt_backward = op_from_signature("icqt_backward", _signature, _backward_kernel, backward=True)
icqt.register_fake(_fake)


@icqt_backward.register_fake
def _(grad, C, *args):
    return torch.empty_like(C, memory_format=torch.contiguous_format)


def _setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.args = inputs[1:]


def _grad(ctx, grad):
    (C,) = ctx.saved_tensors
    gC = icqt_backward(grad.contiguous(), C, *ctx.args) if ctx.needs_input_grad[0] else None
    return (gC,) + (None,) * len(ctx.args)


icqt.register_autograd(_grad, setup_context=_setup)


def backward_setup(ctx, inputs, output):
    """The context of ``<op>_backward(grad, C, *args)``'s own backward (see :func:`backward_grad`)."""
    ctx.save_for_backward(inputs[1])
    ctx.args = inputs[2:]
    ctx.grad_dtype = inputs[0].dtype


def backward_grad(inverse):
    """The backward of an icqt backward op whose forward op is ``inverse`` (this module's ``icqt``, or the
    device op with the same arguments and ``backend``): the backward is linear in grad, and its adjoint is
    the inverse itself."""

    def grad_fn(ctx, gg):
        (C,) = ctx.saved_tensors
        ggrad = None
        if ctx.needs_input_grad[0]:
            ggrad = inverse(gg.to(C.dtype).contiguous(), *ctx.args).to(ctx.grad_dtype)
        return (ggrad, None) + (None,) * len(ctx.args)

    return grad_fn


icqt_backward.register_autograd(backward_grad(icqt), setup_context=backward_setup)


def _window(window) -> str:
    if isinstance(window, str):
        return window
    if isinstance(window, (tuple, int, float)):
        return encode_spec(window)
    raise TypeError(f"{_PUBLIC}: for torch inputs, window must be a name or a (name, parameter) tuple")


def arguments(
    C, *, sr, hop_length, fmin, bins_per_octave, tuning, filter_scale, norm, sparsity, window, scale, length,
    res_type, dtype,
) -> tuple[Tensor, tuple]:
    """``(C, args)`` of specux::icqt (and of the device op ``specux::icqt_device``, which takes ``backend``
    after them) from ``specux.icqt``'s arguments: the scalar arguments checked as the numpy path checks them
    (plain Python, which dynamo runs at trace time), a real ``C`` read as responses of zero phase."""
    if C.dim() < 2:
        raise ValueError(f"{_PUBLIC}: C must have shape (..., n_bins, n_frames); got shape {tuple(C.shape)}")
    if not C.dtype.is_complex:
        if C.dtype not in (torch.float32, torch.float64):
            raise TypeError(f"{_PUBLIC}: C must be complex64 or complex128; got dtype {C.dtype}")
        C = C.to(torch.complex64 if C.dtype == torch.float32 else torch.complex128)
    if C.dtype not in (torch.complex64, torch.complex128):
        raise TypeError(f"{_PUBLIC}: C must be complex64 or complex128; got dtype {C.dtype}")
    if dtype is not None:
        if isinstance(dtype, torch.dtype):
            dtype = str(real_of(dtype)).removeprefix("torch.")
        else:
            dtype = _validate.numpy_dtype(dtype, "dtype", _PUBLIC, "None, float32 or float64").name
    return C, (
        _validate.positive_float(sr, "sr", _PUBLIC),
        _validate.positive_int(hop_length, "hop_length", _PUBLIC),
        _validate.optional_real(fmin, "fmin", _PUBLIC),
        _validate.positive_int(bins_per_octave, "bins_per_octave", _PUBLIC),
        _validate.real(tuning, "tuning", _PUBLIC),
        _validate.positive_float(filter_scale, "filter_scale", _PUBLIC),
        _validate.optional_real(norm, "norm", _PUBLIC, finite=False),
        _validate.real(sparsity, "sparsity", _PUBLIC),
        _window(window),
        _validate.flag(scale, "scale", _PUBLIC),
        None if length is None else _validate.positive_int(length, "length", _PUBLIC),
        res_type if isinstance(res_type, str) else _bad_res_type(res_type),
        dtype,
    )


def _bad_res_type(res_type) -> str:
    from specux._resample import RES_TYPES

    allowed = ", ".join(repr(r) for r in RES_TYPES)
    raise ValueError(f"{_PUBLIC}: res_type must be one of {allowed}; got {res_type!r}")


__all__ = [
    "arguments", "backward_grad", "backward_setup", "icqt", "icqt_backward", "icqt_params", "output_shape",
]
