"""The device ops of chroma_stft and chroma_cqt (``specux::chroma_stft_device``,
``specux::chroma_cqt_device``, see :mod:`specux.torch._device_op`), each the CPU op's signature plus
``backend``.

=============  ==============================================  ==============================================
op             forward (``specux._runtime``)                   backward (the device's adjoint kernels)
=============  ==============================================  ==============================================
chroma_stft    ``feature_exec.chroma_stft`` (the bank fused    ``feature_exec.chroma_stft_adjoint``: the
               with ``|X| ** 2``, then the column norm)        norm's adjoint, the bank's transpose, then
                                                               ``spectral_exec.stft_backward`` (power)
chroma_cqt     ``cq_exec.chroma_cqt`` (``|vqt|``, the fold,    ``cq_exec.chroma_cqt_adjoint``: the threshold
               the threshold, the column norm)                 and norm's adjoint, the fold's transpose, the
                                                               modulus' adjoint, ``cq_exec.vqt_adjoint``
=============  ==============================================  ==============================================

``tuning=None``. The CPU ops estimate the tuning inside the op and treat it as a constant of the gradient (a
piecewise-constant choice of filters); so do these. chroma_stft estimates it as the functional API's device
path does, in the forward only: from the power spectrogram the device computed, downloaded (one host step).
The forward op returns the bank it made (``specux::chroma_stft_device`` has two outputs, the chromagram and
that float64 bank: :class:`~specux.torch._device_op.Derived`), and the autograd formula passes it to the
backward op as its bank argument, so the backward neither estimates again nor rebuilds the bank; its stft
is computed once and read by the norm's and the modulus' adjoints. chroma_cqt estimates the tuning from the
host signal, as :func:`specux.cqt` does on every backend.

What is refused: gradients of the window, chroma bank, per-octave weights and fold tensors (constants;
:func:`~specux.torch._device_op.define_device_op`'s rule), per-octave weights at all (a device builds its own
frequency-domain basis), and a resampler no device runs (``"soxr_qq"``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from torch import Tensor

from specux._backends.cpu import tuning as cpu_tuning
from specux._backends.cpu.cqt import octave_bases, output_frames, vqt_plan
from specux._runtime import cq_exec
from specux._runtime import device_array as da
from specux._runtime import feature_exec as fe
from specux._runtime import spectral_exec as se
from specux._spec.cqt import warn_if_short
from specux._validate import ChromaParams, frame_norm
from specux.errors import UnsupportedOperationError
from specux.torch._convert import numpy_of
from specux.torch._device_op import _TORCH_DTYPES, Derived, DeviceRecipe, define_device_op
from specux.torch._ops_cq import (
    CHROMA_CQT_ARGS,
    CHROMA_STFT_ARGS,
    _chroma_cqt_parts,
    _chroma_cqt_signature,
    _chroma_stft_signature,
)
from specux.torch._params import is_fake, same_dtype, stft_params

# --- chroma_stft --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChromaStftDevice:
    """chroma_stft's device parameters: ``chroma`` (the stft with output "power", the bank, the norm), or,
    for ``tuning=None`` without a bank tensor, ``chroma.bank`` None and the bank made by :func:`_with_bank`
    once the tuning is estimated (``filter_args``: :func:`specux.filters.chroma`'s other arguments)."""

    chroma: ChromaParams
    n_chroma: int
    filter_args: dict[str, Any]


def _chroma_stft_params(
    y: Tensor,
    window: Tensor | None,
    bank: Tensor | None,
    window_spec: str,
    *args: Any,
) -> ChromaStftDevice:
    """The device parameters from specux::chroma_stft's arguments (``y`` possibly fake)."""
    same_dtype(y, window, "chroma_stft", "a precomputed window / filter bank")
    a = CHROMA_STFT_ARGS.named(args)
    sr, norm, tuning, n_chroma = a.pop("sr"), a.pop("norm"), a.pop("tuning"), a.pop("n_chroma")
    frame_norm(norm, "chroma_stft")  # the kernels take any number: the CPU op's refusal, before any work
    filter_args = {k: a.pop(k) for k in ("ctroct", "octwidth", "base_c")}
    p = stft_params(y, window, window_spec, output="power", public="chroma_stft", **a)
    F = p.n_fft // 2 + 1
    if bank is not None:
        if bank.dim() != 2 or tuple(bank.shape) != (n_chroma, F):
            raise ValueError(
                f"chroma_stft: bank tensor must have shape ({n_chroma}, {F}); got {tuple(bank.shape)}"
            )
        matrix = np.zeros((n_chroma, F)) if is_fake(bank) else numpy_of(bank).astype(np.float64)
    elif tuning is not None:
        matrix = _chroma_filter(sr, p.n_fft, tuning, n_chroma, filter_args)
    else:
        matrix = None
    return ChromaStftDevice(ChromaParams(p, matrix, norm, p.dtype), n_chroma, {"sr": sr, **filter_args})


def _chroma_filter(sr: float, n_fft: int, tuning: float, n_chroma: int, filter_args: dict) -> np.ndarray:
    from specux._filters.chroma import chroma as chroma_filter

    return chroma_filter(sr=sr, n_fft=n_fft, tuning=tuning, n_chroma=n_chroma, **filter_args)


def _with_bank(rt: Any, X: Any, p: ChromaStftDevice) -> tuple[ChromaParams, Any]:
    """(the parameters with their bank, the device power spectrogram or None), ``X`` the signal's complex
    spectrum on the device: for ``tuning=None`` the tuning is estimated on the host from the power
    spectrogram ``|X| ** 2`` (downloaded; returned for reuse)."""
    if p.chroma.bank is not None:
        return p.chroma, None
    S = se.modulus(rt, X, 2.0)
    args = dict(p.filter_args)
    sr = args.pop("sr")
    tuning = cpu_tuning.estimate_from_spectrogram(da.download(rt, S), sr=sr, bins_per_octave=p.n_chroma)
    bank = _chroma_filter(sr, p.chroma.stft.n_fft, tuning, p.n_chroma, args)
    return replace(p.chroma, bank=bank), S


def _chroma_stft_forward(rt, inputs, p: ChromaStftDevice):
    """(the chromagram, the bank it was made with): the autograd formula hands the bank to the backward
    op (:class:`~specux.torch._device_op.Derived`), which so never estimates the tuning again."""
    (x,) = inputs
    if p.chroma.bank is not None:
        # the bank fused with the spectrum's modulus
        return fe.chroma_stft(rt, (x,), p.chroma), p.chroma.bank
    chroma, S = _with_bank(rt, se.spectrum(rt, x, p.chroma.stft), p)
    # the spectrogram computed once
    return fe.chroma_stft(rt, (S,), replace(chroma, stft=None)), chroma.bank


def _chroma_stft_backward(rt, g, x, p: ChromaStftDevice, shape, backend):
    # the signal's spectrum once: the unnormalised chroma and the modulus' adjoint both read it, and so does
    # the tuning's estimate when the backward op is called without the forward's bank (downloads happen
    # outside a batch: Metal's and Vulkan's batches complete on exit)
    X = se.spectrum(rt, x, p.chroma.stft)
    chroma, _ = _with_bank(rt, X, p)
    return fe.chroma_stft_adjoint(rt, g, x, chroma, X)


def _chroma_stft_out(y: Tensor, p: ChromaStftDevice) -> tuple[tuple[int, ...], torch.dtype]:
    return (*y.shape[:-1], p.n_chroma, p.chroma.stft.n_frames), _TORCH_DTYPES[p.chroma.dtype]


chroma_stft_device, chroma_stft_device_backward = define_device_op(
    "chroma_stft",
    _chroma_stft_signature,
    3,
    DeviceRecipe(
        op="chroma_stft",
        params=_chroma_stft_params,
        forward=_chroma_stft_forward,
        backward=_chroma_stft_backward,
        out=_chroma_stft_out,
        input_dtype=lambda p: p.chroma.dtype,
        compute_dtype=lambda p: p.chroma.dtype,
        reads_input=lambda p: True,
        constants="the window / chroma bank",
        derived=Derived(2, lambda p: (p.n_chroma, p.chroma.stft.n_fft // 2 + 1)),
    ),
)


# --- chroma_cqt ---------------------------------------------------------------------------------------------


def _chroma_cqt_params(y: Tensor, weights: list[Tensor], fold: Tensor | None, *args: Any) -> Any:
    """:class:`specux._runtime.cq_exec.ChromaCqtParams` from specux::chroma_cqt's arguments (``y`` possibly
    fake)."""
    if weights:
        raise UnsupportedOperationError(
            "specux.chroma_cqt: per-octave weights (the trainable frame weights of specux.torch.Chroma) "
            "are the CPU backend's time-domain form; a device backend builds its own frequency-domain "
            "basis and takes no weights: pass backend='cpu'"
        )
    a = CHROMA_CQT_ARGS.named(args)
    frame_norm(a["norm"], "chroma_cqt")
    p, _, M = _chroma_cqt_parts(y, weights, fold, device=True, **a)
    if M is None:  # a fake fold: only its shape matters
        M = np.zeros(tuple(fold.shape))
    return cq_exec.ChromaCqtParams(p, np.asarray(M, dtype=np.float64), a["threshold"], a["norm"])


def _chroma_cqt_forward(rt, inputs, p):
    warn_if_short(int(inputs[0].shape[-1]), p.vqt, "chroma_cqt")
    return cq_exec.chroma_cqt(rt, inputs, p)


def _chroma_cqt_out(y: Tensor, p: Any) -> tuple[tuple[int, ...], torch.dtype]:
    plan = vqt_plan(p.vqt)
    T = output_frames(int(y.shape[-1]), plan, octave_bases(p.vqt, plan))
    return (*y.shape[:-1], p.fold.shape[0], T), _TORCH_DTYPES[da.REAL_OF[p.vqt.dtype]]


chroma_cqt_device, chroma_cqt_device_backward = define_device_op(
    "chroma_cqt",
    _chroma_cqt_signature,
    3,
    DeviceRecipe(
        op="chroma_cqt",
        params=_chroma_cqt_params,
        forward=_chroma_cqt_forward,
        backward=lambda rt, g, x, p, shape, backend: cq_exec.chroma_cqt_adjoint(rt, g, x, p, shape[-1]),
        out=_chroma_cqt_out,
        input_dtype=lambda p: da.REAL_OF[p.vqt.dtype],
        compute_dtype=lambda p: da.REAL_OF[p.vqt.dtype],
        reads_input=lambda p: True,
        constants="the per-octave weights / fold",
    ),
)

__all__ = [
    "chroma_cqt_device",
    "chroma_cqt_device_backward",
    "chroma_stft_device",
    "chroma_stft_device_backward",
]
