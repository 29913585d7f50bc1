"""``specux::vqt``, ``specux::cqt``, ``specux::chroma_stft``, ``specux::chroma_cqt`` and their backward ops.

The per-octave frame weights (vqt / cqt / chroma_cqt) and the chroma filter bank (chroma_stft) may be passed
as tensors (the ``nn.Module`` wrappers own them as buffers); otherwise they are derived from the arguments as
the functional API derives them. ``tuning=None`` estimates the tuning from the signal inside the op (a
piecewise-constant choice of filters, so it adds nothing to the gradient). The constant-Q family is
differentiable with every resampler; see :mod:`specux._backends.cpu.adjoint_cq`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from specux._backends.cpu import adjoint_chroma
from specux._backends.cpu import adjoint_cq as _adjoint_cq
from specux._backends.cpu import tuning as cpu_tuning
from specux._backends.cpu.chroma import chroma_from_cq, chroma_from_power
from specux._backends.cpu.cqt import octave_bases, output_frames, vqt_plan
from specux._backends.cpu.stft import _stft_numpy
from specux._filters.chroma import chroma as chroma_filter
from specux._filters.constant_q import cq_to_chroma
from specux._spec.cqt import validate_vqt, warn_if_short
from specux._validate import VqtParams
from specux.torch._convert import check_cpu, complex_of, numpy_of, tensor_of
from specux.torch._params import OpArguments, decode_spec, is_fake, signature_without, stft_params
from specux.torch._signal_op import (
    define_signal_op,
    gradient_like,
    gradients_schema,
    like_signal,
    one_blas_thread,
    op_from_signature,
)

# --- parameters ---------------------------------------------------------------------------------------------


def _signal(y: Tensor, public: str) -> tuple[np.ndarray, bool]:
    """The numpy signal, or a one-sample stand-in of the same dtype for a fake tensor (shapes only)."""
    if is_fake(y):
        if y.dtype not in (torch.float32, torch.float64):
            raise TypeError(f"{public}: y must be float32 or float64; got dtype {y.dtype}")
        return np.zeros(1, dtype=str(y.dtype).removeprefix("torch.")), True
    return numpy_of(y), False


def validated_vqt(
    y: Tensor, public: str, *, device: bool = False, tuning: float | None, window: str, intervals, **kw
) -> VqtParams:
    """:func:`~specux._spec.cqt.validate_vqt` of the op's arguments (by name), for a possibly fake ``y``
    (``device``: the checks of the functional API's device path)."""
    x, fake = _signal(y, public)
    _, p = validate_vqt(
        x,
        public,
        device=device,
        tuning=0.0 if (fake and tuning is None) else tuning,
        window=decode_spec(window),
        intervals="equal" if intervals is None else intervals,
        dtype=None,
        **kw,
    )
    return p


def vqt_params(
    y: Tensor, weights: list[Tensor], public: str, **kw: Any
) -> tuple[VqtParams, list[tuple[np.ndarray, int]]]:
    """Validated parameters (``kw``: specux::vqt's arguments by name, see :func:`validated_vqt`) and
    per-octave (weights, n_fft); weight tensors, when given, replace the derived ones."""
    p = validated_vqt(y, public, **kw)
    bases = octave_bases(p, vqt_plan(p))
    if weights:
        if len(weights) != len(bases):
            raise ValueError(f"{public}: {len(bases)} octave weight tensors are needed; got {len(weights)}")
        given = []
        for i, (t, (w, n_fft)) in enumerate(zip(weights, bases)):
            if tuple(t.shape) != w.shape:
                raise ValueError(f"{public}: weights[{i}] must have shape {w.shape}; got {tuple(t.shape)}")
            given.append((w if is_fake(t) else numpy_of(t), n_fft))
        bases = given
    return p, bases


# --- the arguments of specux::vqt and specux::cqt, spelled once --------------------------------------------


def _vqt_signature(
    y: Tensor,
    weights: list[Tensor],
    sr: float,
    hop_length: int,
    fmin: float | None,
    n_bins: int,
    intervals: list[float] | None,
    gamma: float | None,
    bins_per_octave: int,
    tuning: float | None,
    filter_scale: float,
    norm: float | None,
    sparsity: float,
    window: str,
    scale: bool,
    pad_mode: str,
    res_type: str | None,
) -> Tensor:
    """specux.vqt of a CPU tensor (see :func:`specux.vqt`); ``intervals=None`` is "equal"; ``weights`` (one
    (n_fft, 2 k) tensor per octave, top octave first) may replace the derived frame weights (empty:
    derive)."""
    raise AssertionError("a signature only")


#: specux::vqt's arguments after the signal and the weights (its schema's, the kernels', the route's, the
#: modules')
VQT_ARGS = OpArguments.of(_vqt_signature, 2)
#: what specux::cqt fixes of specux::vqt's arguments: equal-tempered bins of constant Q
CQT_FIXED: dict[str, Any] = {"intervals": None, "gamma": 0.0}
_cqt_signature = signature_without(
    _vqt_signature,
    tuple(CQT_FIXED),
    "_cqt_signature",
    "specux.cqt of a CPU tensor: :func:`vqt` with ``gamma=0`` and equal-tempered bins.",
)
#: specux::cqt's arguments after the signal and the weights: specux::vqt's less those of CQT_FIXED
CQT_ARGS = OpArguments.of(_cqt_signature, 2)


def _cqt_as_vqt(*args: Any) -> tuple:
    """specux::cqt's arguments after the signal and weights, as specux::vqt's: ``gamma=0``, equal bins."""
    return VQT_ARGS.ordered({**CQT_ARGS.named(args), **CQT_FIXED})


def intervals_arg(intervals: Any) -> list[float] | None:
    """vqt's public ``intervals`` as specux::vqt takes them: None for "equal", else a list of floats."""
    return None if isinstance(intervals, str) and intervals == "equal" else [float(r) for r in intervals]


def _vqt_resolve(
    y: Tensor, weights: list[Tensor], public: str, *args: Any
) -> tuple[VqtParams, list[tuple[np.ndarray, int]]]:
    """:func:`vqt_params` from the ops' positional arguments (the order of ``specux::vqt``'s schema)."""
    return vqt_params(y, weights, public, **VQT_ARGS.named(args))


# --- vqt / cqt ----------------------------------------------------------------------------------------------


def _vqt_impl(y, weights, public, *args) -> Tensor:
    check_cpu(y, public)
    p, bases = _vqt_resolve(y, weights, public, *args)
    x = numpy_of(y)
    warn_if_short(x.shape[-1], p, public)
    return tensor_of(_adjoint_cq.forward(x, p, bases), x)


def _vqt_fake(y, weights, public, *args) -> Tensor:
    p, bases = _vqt_resolve(y, weights, public, *args)
    T = output_frames(int(y.shape[-1]), vqt_plan(p), bases)
    return y.new_empty((*y.shape[:-1], p.n_bins, T), dtype=complex_of(y.dtype))


def _vqt_kernel(y, weights, *args):
    return _vqt_impl(y, weights, "vqt", *args)


def _cqt_kernel(y, weights, *args):
    return _vqt_impl(y, weights, "cqt", *_cqt_as_vqt(*args))


def _vqt_backward_kernel(grad, y, weights, *args):
    p, bases = _vqt_resolve(y, weights, "vqt", *args)
    g = numpy_of(grad)
    return tensor_of(_adjoint_cq.adjoint(g, int(y.shape[-1]), p, bases), g)


_vqt_kernel.__doc__ = _vqt_signature.__doc__
_cqt_kernel.__doc__ = _cqt_signature.__doc__
_vqt_backward_kernel.__doc__ = (
    "Gradient of specux::vqt (and of specux::cqt, with ``gamma=0``) with respect to ``y``: the adjoint."
)
vqt = op_from_signature("vqt", _vqt_signature, _vqt_kernel)
cqt = op_from_signature("cqt", _cqt_signature, _cqt_kernel)
vqt_backward = op_from_signature("vqt_backward", _vqt_signature, _vqt_backward_kernel, backward=True)


@vqt.register_fake
def _(y, weights, *args):
    return _vqt_fake(y, weights, "vqt", *args)


@cqt.register_fake
def _(y, weights, *args):
    return _vqt_fake(y, weights, "cqt", *_cqt_as_vqt(*args))


vqt_backward.register_fake(like_signal)


def _vqt_weights_backward_kernel(grad, y, weights, *rest):
    *args, needs = rest
    p, bases = _vqt_resolve(y, weights, "vqt", *args)
    arrays = _adjoint_cq.weights_grad(numpy_of(grad), numpy_of(y), p, bases, [bool(n) for n in needs])
    return [
        gradient_like(a, t) if a is not None else grad.new_empty(0)
        for a, t in zip(arrays, weights)
    ]


def _vqt_weights_backward_fake(grad, y, weights, *rest):
    needs = rest[-1]
    return [t.new_empty(t.shape) if n else grad.new_empty(0) for t, n in zip(weights, needs)]


_vqt_weights_backward_kernel.__doc__ = "Gradients of specux::vqt's per-octave weights (one per octave)."
vqt_weights_backward = torch.library.custom_op(
    "specux::vqt_weights_backward",
    one_blas_thread(_vqt_weights_backward_kernel),
    mutates_args=(),
    device_types="cpu",
    schema=gradients_schema(_vqt_signature),
)
vqt_weights_backward.register_fake(_vqt_weights_backward_fake)


def _weight_grads(ctx, grad, y, weights, vqt_args) -> list:
    needs = [bool(n) for n in ctx.needs_input_grad[1]]
    if not any(needs):
        return [None] * ctx.n_weights
    outs = vqt_weights_backward(grad, y, weights, *vqt_args, needs)
    return [o if n else None for o, n in zip(outs, needs)]


def _vqt_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], *inputs[1])
    ctx.args = inputs[2:]
    ctx.n_weights = len(inputs[1])
    ctx.n_inputs = len(inputs)


def _vqt_grad(ctx, grad):
    y, *weights = ctx.saved_tensors
    grad = grad.contiguous()
    gw = _weight_grads(ctx, grad, y, weights, ctx.args)
    gy = vqt_backward(grad, y, weights, *ctx.args) if ctx.needs_input_grad[0] else None
    return (gy, gw) + (None,) * (ctx.n_inputs - 2)


def _cqt_grad(ctx, grad):
    y, *weights = ctx.saved_tensors
    grad = grad.contiguous()
    args = _cqt_as_vqt(*ctx.args)
    gw = _weight_grads(ctx, grad, y, weights, args)
    gy = vqt_backward(grad, y, weights, *args) if ctx.needs_input_grad[0] else None
    return (gy, gw) + (None,) * (ctx.n_inputs - 2)


vqt.register_autograd(_vqt_grad, setup_context=_vqt_setup)
cqt.register_autograd(_cqt_grad, setup_context=_vqt_setup)


def _vqt_backward_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs[2])
    ctx.n_weights = len(inputs[2])
    ctx.args = inputs[3:]
    ctx.n_inputs = len(inputs)
    ctx.y_dtype = inputs[1].dtype


def _vqt_backward_grad(ctx, gg):
    weights = list(ctx.saved_tensors)
    # the transform is linear (with or without resampling): the backward of its adjoint is the transform
    ggrad = vqt(gg.to(ctx.y_dtype).contiguous(), weights, *ctx.args) if ctx.needs_input_grad[0] else None
    return (ggrad, None, [None] * ctx.n_weights) + (None,) * (ctx.n_inputs - 3)


vqt_backward.register_autograd(_vqt_backward_grad, setup_context=_vqt_backward_setup)


# --- chroma_stft --------------------------------------------------------------------------------------------


def _chroma_stft_parts(
    y: Tensor,
    window: Tensor | None,
    bank: Tensor | None,
    window_spec: str,
    *,
    sr: float,
    norm: float | None,
    tuning: float | None,
    n_chroma: int,
    ctroct: float,
    octwidth: float | None,
    base_c: bool,
    **framing: Any,
) -> tuple:
    """(stft params, power spectrogram or None for fake input, bank (n_chroma, F) float, norm) from the op's
    arguments by name (:data:`CHROMA_STFT_ARGS`; ``framing``: the stft's, passed on to
    :func:`~specux.torch._params.stft_params`)."""
    p = stft_params(y, window, window_spec, output="magnitude", public="chroma_stft", **framing)
    F = p.n_fft // 2 + 1
    if bank is not None and (bank.dim() != 2 or tuple(bank.shape) != (n_chroma, F)):
        raise ValueError(
            f"chroma_stft: bank tensor must have shape ({n_chroma}, {F}); got {tuple(bank.shape)}"
        )
    if is_fake(y):
        return p, None, np.zeros((n_chroma, F)), norm
    x = numpy_of(y)
    mag = _stft_numpy(x, p)
    power = mag**2  # the magnitude first, then the power, as the functional API computes it
    if bank is not None:
        return p, power, numpy_of(bank), norm
    if tuning is None:
        tuning = cpu_tuning.estimate_from_spectrogram(power, sr=sr, bins_per_octave=n_chroma)
    B = chroma_filter(
        sr=sr,
        n_fft=p.n_fft,
        tuning=tuning,
        n_chroma=n_chroma,
        ctroct=ctroct,
        octwidth=octwidth,
        base_c=base_c,
    )
    return p, power, B, norm


def _chroma_stft_signature(
    y: Tensor,
    window: Tensor | None,
    bank: Tensor | None,
    window_spec: str,
    sr: float,
    norm: float | None,
    n_fft: int,
    hop_length: int,
    win_length: int | None,
    center: bool,
    pad_mode: str,
    tuning: float | None,
    n_chroma: int,
    ctroct: float,
    octwidth: float | None,
    base_c: bool,
) -> Tensor:
    """specux.chroma_stft of a signal tensor (see :func:`specux.chroma_stft`); ``bank`` replaces the derived
    chroma filter bank (then ``tuning`` and the bank's shape arguments are not used)."""
    raise AssertionError("a signature only")


#: specux::chroma_stft's arguments after the signal, the window and bank tensors and ``window_spec`` (its
#: schema, the kernels', the route's)
CHROMA_STFT_ARGS = OpArguments.of(_chroma_stft_signature, 4)


def _chroma_stft_forward(x, parts):
    _, power, B, norm = parts
    return chroma_from_power(power, B, norm)


def _chroma_stft_backward(g, x, parts):
    p, power, B, norm = parts
    return adjoint_chroma.chroma_stft_backward(g, x, p, power, B, norm)


chroma_stft, chroma_stft_backward = define_signal_op(
    "chroma_stft",
    _chroma_stft_signature,
    3,
    check=lambda y, *args: check_cpu(y, "chroma_stft"),
    params=CHROMA_STFT_ARGS.positional(_chroma_stft_parts),
    forward=_chroma_stft_forward,
    backward=_chroma_stft_backward,
    out_shape=lambda y, parts: (*y.shape[:-1], parts[2].shape[0], parts[0].n_frames),
    constants_error="specux chroma_stft: gradients with respect to the window / bank are not computed",
)


# --- chroma_cqt ---------------------------------------------------------------------------------------------

#: the constant-Q settings chroma_cqt uses (those of its cqt call in the functional API)
_CQT_FIXED = dict(filter_scale=1.0, norm=1.0, sparsity=0.01, scale=True, pad_mode="constant", gamma=0.0)


def _chroma_cqt_parts(
    y: Tensor,
    weights: list[Tensor],
    fold: Tensor | None,
    *,
    fmin: float | None,
    norm: float | None,
    threshold: float,
    tuning: float | None,
    n_chroma: int,
    n_octaves: int,
    bins_per_octave: int | None,
    device: bool = False,
    **kw: Any,
) -> tuple:
    """(vqt params, per-octave bases, folding matrix or None for a fake ``fold``) from specux::chroma_cqt's
    arguments by name (:data:`CHROMA_CQT_ARGS`; ``norm`` and ``threshold`` are the kernels', applied to the
    folded output; ``kw``: passed on to :func:`vqt_params`). ``device``: the checks of the functional API's
    device path (:func:`validated_vqt`), and no per-octave bases (None: a device builds its own)."""
    if n_chroma <= 0 or n_octaves <= 0:
        raise ValueError(f"chroma_cqt: n_chroma and n_octaves must be positive; got {n_chroma}, {n_octaves}")
    bpo = n_chroma if bins_per_octave is None else bins_per_octave
    if bpo % n_chroma != 0:
        raise ValueError(
            f"chroma_cqt: bins_per_octave={bpo} must be an integer multiple of n_chroma={n_chroma}"
        )
    vqt_args = dict(
        tuning=tuning, window="hann", intervals=None, fmin=fmin, n_bins=n_octaves * bpo, bins_per_octave=bpo
    )
    if device:
        p, bases = validated_vqt(y, "chroma_cqt", device=True, **vqt_args, **kw, **_CQT_FIXED), None
    else:
        p, bases = vqt_params(y, weights, "chroma_cqt", **vqt_args, **kw, **_CQT_FIXED)
    if fold is not None:
        if tuple(fold.shape) != (n_chroma, p.n_bins):
            raise ValueError(
                f"chroma_cqt: fold tensor must have shape ({n_chroma}, {p.n_bins}); got {tuple(fold.shape)}"
            )
        M = None if is_fake(fold) else numpy_of(fold)
    else:
        M = cq_to_chroma(p.n_bins, bins_per_octave=bpo, n_chroma=n_chroma, fmin=fmin, window=None)
    return p, bases, M


def _chroma_cqt_signature(
    y: Tensor,
    weights: list[Tensor],
    fold: Tensor | None,
    sr: float,
    hop_length: int,
    fmin: float | None,
    norm: float | None,
    threshold: float,
    tuning: float | None,
    n_chroma: int,
    n_octaves: int,
    bins_per_octave: int | None,
    res_type: str | None,
) -> Tensor:
    """specux.chroma_cqt of a signal tensor (see :func:`specux.chroma_cqt`); ``fold`` (n_chroma, n_bins) may
    replace the derived folding matrix (e.g. one built with a ``window``)."""
    raise AssertionError("a signature only")


#: specux::chroma_cqt's arguments after the signal, the weights and the fold (its schema, the kernels', the
#: route's)
CHROMA_CQT_ARGS = OpArguments.of(_chroma_cqt_signature, 3)


def _chroma_cqt(y: Tensor, weights: list[Tensor], fold: Tensor | None, *args: Any) -> Tensor:
    check_cpu(y, "chroma_cqt")
    a = CHROMA_CQT_ARGS.named(args)
    p, bases, M = _chroma_cqt_parts(y, weights, fold, **a)
    warn_if_short(int(y.shape[-1]), p, "chroma_cqt")
    C = _adjoint_cq.forward(numpy_of(y), p, bases)
    return tensor_of(chroma_from_cq(np.abs(C), M, a["threshold"], a["norm"]))


_chroma_cqt.__doc__ = _chroma_cqt_signature.__doc__

chroma_cqt = op_from_signature("chroma_cqt", _chroma_cqt_signature, _chroma_cqt)


@chroma_cqt.register_fake
def _(y, weights, fold, *args):
    a = CHROMA_CQT_ARGS.named(args)
    p, bases, _ = _chroma_cqt_parts(y, weights, fold, **a)
    T = output_frames(int(y.shape[-1]), vqt_plan(p), bases)
    return y.new_empty((*y.shape[:-1], a["n_chroma"], T))


def _chroma_cqt_backward(grad, y, weights, fold, *args) -> Tensor:
    """Gradient of specux::chroma_cqt with respect to ``y``."""
    a = CHROMA_CQT_ARGS.named(args)
    threshold, norm = a["threshold"], a["norm"]
    p, bases, M = _chroma_cqt_parts(y, weights, fold, **a)
    x = numpy_of(y)
    return tensor_of(adjoint_chroma.chroma_cqt_backward(numpy_of(grad), x, p, bases, M, threshold, norm), x)


chroma_cqt_backward = op_from_signature(
    "chroma_cqt_backward", _chroma_cqt_signature, _chroma_cqt_backward, backward=True
)
chroma_cqt_backward.register_fake(like_signal)


# --- autograd of chroma_cqt ---------------------------------------------------------------------------------


def _chroma_cqt_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[2], *inputs[1])
    ctx.n_weights = len(inputs[1])
    ctx.args = inputs[3:]


def _chroma_cqt_grad(ctx, grad):
    y, fold, *weights = ctx.saved_tensors
    if any(ctx.needs_input_grad[1]) or ctx.needs_input_grad[2]:
        raise RuntimeError("specux chroma_cqt: gradients with respect to the weights / fold are not computed")
    gy = (
        chroma_cqt_backward(grad.contiguous(), y, weights, fold, *ctx.args)
        if ctx.needs_input_grad[0]
        else None
    )
    return (gy, [None] * ctx.n_weights, None) + (None,) * len(ctx.args)  # no gradient for fold or scalars


chroma_cqt.register_autograd(_chroma_cqt_grad, setup_context=_chroma_cqt_setup)
