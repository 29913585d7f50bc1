"""The device ops (``specux::<name>_device``, see :mod:`specux.torch._device_op`) of every transform whose
device adjoint exists, each the CPU op's signature plus ``backend``.

==============  ===================================  ==================================================
op              forward (``specux._runtime``)        backward (the device's adjoint kernels)
==============  ===================================  ==================================================
vqt, cqt        ``cq_exec.vqt``                      ``cq_exec.vqt_adjoint`` (every device resampler:
                                                     polyphase, the soxr-spec FIRs, None)
stft            ``spectral_exec.stft``               ``spectral_exec.stft_backward`` (every output)
istft           ``spectral_exec.istft``              ``spectral_exec.istft_adjoint``
melspectrogram  ``feature_exec.melspectrogram``      ``feature_exec.features_adjoint``, then
                                                     ``stft_backward`` (power 1 or 2)
mfcc, lfcc      ``feature_exec.mfcc`` / ``lfcc``     the same, through the DCT's and the logarithm's
                                                     adjoints (the signal's spectrum computed once, read
                                                     by the bands and the modulus' adjoint)
icqt            ``icq_exec.icqt``                    ``icq_exec.icqt_adjoint`` (every device resampler:
                                                     polyphase, the soxr qualities but "soxr_qq"); its
                                                     backward's backward is the forward op again
chroma_stft,    see :mod:`specux.torch._ops_device_chroma` (the column norm's and threshold's adjoint
chroma_cqt      kernel, then the bank's / fold's transpose and the stft's / vqt's adjoints)
==============  ===================================  ==================================================

Between the passes autograd holds the signal (and chroma_stft's bank), never a spectrum: a backward that
reads the spectrum (stft magnitude / power, melspectrogram, mfcc, lfcc, chroma_stft) computes the signal's
stft once more, once, and reads it for all it needs (docs/specux/torch.md says why).

What has no device adjoint is refused with the option and the backend named: the gradients of windows,
filter banks, DCT matrices and constant-Q weights (trainable constants), a spectrogram ``power`` other than
1 or 2, and icqt with ``res_type="soxr_qq"`` (no device upsampler: refused by the forward's own validation).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from specux._backends.cpu.cqt import octave_bases, output_frames, vqt_plan
from specux._runtime import cq_exec, icq_exec
from specux._runtime import device_array as da
from specux._runtime import feature_exec as fe
from specux._runtime import spectral_exec as se
from specux._spec.cqt import warn_if_short
from specux.errors import UnsupportedOperationError
from specux.torch import _ops_icqt
from specux.torch._convert import complex_of, real_of
from specux.torch._device_op import DeviceRecipe, define_device_op
from specux.torch._ops_cq import VQT_ARGS, _cqt_as_vqt, _cqt_signature, _vqt_signature, validated_vqt
from specux.torch._ops_device_chroma import chroma_cqt_device, chroma_stft_device
from specux.torch._ops_device_convolve import fftconvolve_device
from specux.torch._ops_features import (
    _bands_shape,
    _cepstral_shape,
    _lfcc_signature,
    _melspectrogram_signature,
    _mfcc_signature,
    lfcc_resolve,
    mel_resolve,
    mfcc_resolve,
)
from specux.torch._ops_stft import _istft_signature, _stft_signature, istft_resolve, stft_resolve
from specux.torch._params import same_dtype, stft_out_shape

_TORCH = {"float32": torch.float32, "float64": torch.float64}


def _real(p: Any) -> str:
    return p.dtype


def _never(p: Any) -> bool:
    return False


def _always(p: Any) -> bool:
    return True


# --- vqt / cqt ----------------------------------------------------------------------------------------------


def _vqt_params(y: Tensor, weights: list[Tensor], public: str, *args: Any) -> Any:
    """The device's :class:`~specux._validate.VqtParams` (``validate_vqt(..., device=True)``, as the
    functional API's device path) from specux::vqt's arguments."""
    if weights:
        raise UnsupportedOperationError(
            f"specux.{public}: per-octave weights (the trainable frame weights of specux.torch.CQT / VQT) "
            "are the CPU backend's time-domain form; a device backend builds its own frequency-domain "
            "basis and takes no weights: pass backend='cpu'"
        )
    return validated_vqt(y, public, device=True, **VQT_ARGS.named(args))


def _vqt_forward(public: str):
    def forward(rt, inputs, p):
        warn_if_short(int(inputs[0].shape[-1]), p, public)
        return cq_exec.vqt(rt, inputs, p)

    return forward


def _vqt_backward(rt, g, x, p, shape, backend):
    return cq_exec.vqt_adjoint(rt, g, p, shape[-1])


def _vqt_out(y: Tensor, p: Any) -> tuple[tuple[int, ...], torch.dtype]:
    plan = vqt_plan(p)
    T = output_frames(int(y.shape[-1]), plan, octave_bases(p, plan))
    return (*y.shape[:-1], p.n_bins, T), complex_of(_TORCH[da.REAL_OF[p.dtype]])


def _vqt_recipe(public: str, params) -> DeviceRecipe:
    return DeviceRecipe(
        op=public,
        params=params,
        forward=_vqt_forward(public),
        backward=_vqt_backward,
        out=_vqt_out,
        input_dtype=lambda p: da.REAL_OF[p.dtype],
        compute_dtype=lambda p: da.REAL_OF[p.dtype],
        reads_input=_never,
        constants="the constant-Q weights",
    )


vqt_device, vqt_device_backward = define_device_op(
    "vqt",
    _vqt_signature,
    2,
    _vqt_recipe("vqt", lambda y, weights, *args: _vqt_params(y, weights, "vqt", *args)),
)
cqt_device, cqt_device_backward = define_device_op(
    "cqt",
    _cqt_signature,
    2,
    _vqt_recipe("cqt", lambda y, weights, *args: _vqt_params(y, weights, "cqt", *_cqt_as_vqt(*args))),
)


# --- stft / istft -------------------------------------------------------------------------------------------


def _stft_params(y: Tensor, window: Tensor | None, *args: Any) -> Any:
    same_dtype(y, window, "stft", "window")
    return stft_resolve(y, window, *args)


def _stft_out(y: Tensor, p: Any) -> tuple[tuple[int, ...], torch.dtype]:
    return stft_out_shape(y, p)


stft_device, stft_device_backward = define_device_op(
    "stft",
    _stft_signature,
    2,
    DeviceRecipe(
        op="stft",
        params=_stft_params,
        forward=se.stft,
        backward=lambda rt, g, x, p, shape, backend: se.stft_backward(rt, g, x, p),
        out=_stft_out,
        input_dtype=_real,
        compute_dtype=_real,
        reads_input=lambda p: p.output in ("magnitude", "power"),
        constants="the window",
    ),
)


def _istft_out(D: Tensor, p: Any) -> tuple[tuple[int, ...], torch.dtype]:
    return (*D.shape[:-2], p.out_length), real_of(D.dtype)


istft_device, istft_device_backward = define_device_op(
    "istft",
    _istft_signature,
    2,
    DeviceRecipe(
        op="istft",
        params=istft_resolve,
        forward=se.istft,
        backward=lambda rt, g, x, p, shape, backend: se.istft_adjoint(rt, g, p, shape[-1]),
        out=_istft_out,
        input_dtype=lambda p: da.COMPLEX_OF[p.dtype],
        compute_dtype=_real,
        reads_input=_never,
        constants="the window",
    ),
)


# --- melspectrogram / mfcc / lfcc ---------------------------------------------------------------------------


def _power_stft(mel: Any, public: str, backend: str) -> Any:
    """The stft parameters whose ``stft_backward`` is the power spectrogram's adjoint (``|X|``, ``|X|^2``)."""
    output = {1.0: "magnitude", 2.0: "power"}.get(float(mel.power))
    if output is None:
        raise UnsupportedOperationError(
            f"specux.{public}: on backend {backend!r} gradients are computed for power=1.0 or power=2.0 (the "
            f"device's modulus adjoints); got power={mel.power!r}: use one of them, or backend='cpu'"
        )
    return dataclasses.replace(mel.stft, output=output)


def _mel_backward(rt, g, x, p, shape, backend):
    stft_p = _power_stft(p, "melspectrogram", backend)
    with rt.batch():
        gS = fe.features_adjoint(rt, None, g, p)  # the bank's transpose (S is not read for a MelParams)
        return se.stft_backward(rt, gS, x, stft_p)


def _cepstral_backward(public: str):
    def backward(rt, g, x, p, shape, backend):
        stft_p = _power_stft(p.mel, public, backend)
        with rt.batch():
            # the signal's spectrum once: the bands the logarithm's adjoint reads (recomputed from the power
            # spectrogram) and the modulus' adjoint both come from it
            X = se.spectrum(rt, x, p.mel.stft)
            gS = fe.features_adjoint(rt, se.modulus(rt, X, p.mel.power), g, p)
            return se.stft_backward(rt, gS, x, stft_p, X)

    return backward


def _features_recipe(public: str, params, forward, backward, shape, mel) -> DeviceRecipe:
    return DeviceRecipe(
        op=public,
        params=params,
        forward=forward,
        backward=backward,
        out=lambda y, p: (shape(y, p), _TORCH[mel(p).dtype]),
        input_dtype=lambda p: mel(p).dtype,
        compute_dtype=lambda p: mel(p).dtype,
        reads_input=_always,
        constants="the window / filter bank / DCT matrix",
    )


def _checked(params, public: str, n_constants: int):
    def resolve(y, *args):
        for t in args[:n_constants]:
            same_dtype(y, t, public, "a precomputed window / filter bank")
        return params(y, *args)

    return resolve


melspectrogram_device, melspectrogram_device_backward = define_device_op(
    "melspectrogram",
    _melspectrogram_signature,
    3,
    _features_recipe(
        "melspectrogram",
        _checked(mel_resolve, "melspectrogram", 2),
        fe.melspectrogram,
        _mel_backward,
        _bands_shape,
        lambda p: p,
    ),
)


def _cepstral_op(public: str, signature: Any, params: Any, forward: Any) -> tuple[Any, Any]:
    """The device ops of mfcc or lfcc (the signal, then window, filter bank and DCT matrix tensors)."""
    return define_device_op(
        public,
        signature,
        4,
        _features_recipe(
            public, _checked(params, public, 3), forward, _cepstral_backward(public), _cepstral_shape,
            lambda p: p.mel,
        ),
    )


mfcc_device, mfcc_device_backward = _cepstral_op("mfcc", _mfcc_signature, mfcc_resolve, fe.mfcc)
lfcc_device, lfcc_device_backward = _cepstral_op("lfcc", _lfcc_signature, lfcc_resolve, fe.lfcc)

# --- icqt ---------------------------------------------------------------------------------------------------


icqt_device, icqt_device_backward = define_device_op(
    "icqt",
    _ops_icqt._signature,
    1,
    DeviceRecipe(
        op="icqt",
        params=lambda C, *args: _ops_icqt.icqt_params(C, args, device=True),
        forward=icq_exec.icqt,
        backward=lambda rt, g, x, p, shape, backend: icq_exec.icqt_adjoint(rt, g, p, shape[-1]),
        out=lambda C, p: (_ops_icqt.output_shape(C, p), _TORCH[p.dtype]),
        input_dtype=lambda p: da.COMPLEX_OF[p.dtype],
        compute_dtype=_real,
        reads_input=_never,
        constants="no constant tensors (C is the only one)",
    ),
)


# the gradient's own backward is the device forward again (icqt is linear): double backward stays on the
# device
icqt_device_backward.register_autograd(
    _ops_icqt.backward_grad(icqt_device), setup_context=_ops_icqt.backward_setup
)


#: the public operation -> its device op (what :mod:`specux.torch._route` calls with ``backend`` last)
OPS = {
    "vqt": vqt_device,
    "cqt": cqt_device,
    "stft": stft_device,
    "istft": istft_device,
    "melspectrogram": melspectrogram_device,
    "mfcc": mfcc_device,
    "lfcc": lfcc_device,
    "icqt": icqt_device,
    "chroma_stft": chroma_stft_device,
    "chroma_cqt": chroma_cqt_device,
    # two differentiable inputs: its own module (specux.torch._ops_device_convolve), the same calling form
    "fftconvolve": fftconvolve_device,
}



def on_backend(name: str, backend: str) -> Callable[..., Tensor]:
    """The device op of ``name`` (a key of :data:`OPS`) as a function of the CPU op's arguments, with
    ``backend`` appended (what the route and the modules call)."""
    device_op = OPS[name]
    return lambda *args: device_op(*args, backend)


__all__ = ["OPS", "on_backend"]
