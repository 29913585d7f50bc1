"""``specux::melspectrogram``, ``specux::mfcc``, ``specux::lfcc`` and their backward ops (CPU, NumPy).

The forward kernels are the cpu backend's, the functional API's own
(:mod:`specux._backends.cpu.features`); the backward ops run the analytic chain of
:mod:`specux._backends.cpu.adjoint_features`. Precomputed windows, filter banks and DCT matrices may be passed
as tensors (the ``nn.Module`` wrappers pass their buffers, or their parameters when trainable); otherwise they
are derived from the arguments exactly as the functional API derives them. Gradients flow to the signal and to
every window / bank / DCT tensor that requires grad (one ``*_constants_backward`` op per feature). These
features are not linear, so their backward ops are not differentiable again.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from torch import Tensor

from specux._backends.cpu import adjoint_features as _adjoint_features
from specux._backends.cpu.features import _melspectrogram_numpy, _mfcc_numpy
from specux._spec.features import lfcc_validate, mel_validate, mfcc_validate
from specux._validate import CepstralParams, MelParams
from specux.torch._convert import check_cpu, numpy_of
from specux.torch._params import OpArguments, decode_spec, is_fake, same_dtype, window_array
from specux.torch._signal_op import define_signal_op


def _matrix(t: Tensor | None, rows: int | None, cols: int, what: str, public: str):
    """A bank / DCT tensor as float64 numpy, shape-checked; None when absent."""
    if t is None:
        return None
    if t.dim() != 2 or t.shape[1] != cols or (rows is not None and t.shape[0] != rows):
        want = f"({rows if rows is not None else 'k'}, {cols})"
        raise ValueError(f"{public}: {what} tensor must have shape {want}; got {tuple(t.shape)}")
    if is_fake(t):
        return None
    return numpy_of(t).astype("float64")


def _with_tensors(p: MelParams, window: Tensor | None, basis: Tensor | None, public: str) -> MelParams:
    stft_p = p.stft
    w = window_array(window, stft_p.win_length, stft_p.n_fft, public)
    if w is not None:
        stft_p = dataclasses.replace(stft_p, window=w)
    b = _matrix(basis, p.basis.shape[0], stft_p.n_fft // 2 + 1, "basis", public)
    if basis is not None and b is None:  # fake tensor: only the number of rows matters
        import numpy as np

        b = np.zeros((basis.shape[0], stft_p.n_fft // 2 + 1))
    return dataclasses.replace(p, stft=stft_p, basis=p.basis if b is None else b)


def mel_params(
    y: Tensor,
    window: Tensor | None,
    basis: Tensor | None,
    window_spec: str,
    *,
    norm: str | None,
    public: str = "melspectrogram",
    **kw: Any,
) -> MelParams:
    """:func:`specux._spec.features.mel_validate` (the functional API's checks and defaults) for a signal
    (``kw``: specux::melspectrogram's other arguments by name, :data:`MEL_ARGS`), with the window / bank
    tensors in place of the derived ones where given."""
    p = mel_validate(
        y,
        from_spectrogram=False,
        window=decode_spec(window_spec),
        norm=decode_spec(norm),
        public=public,
        **kw,
    )
    return _with_tensors(p, window, basis, public)


def _bands_shape(y: Tensor, p: MelParams) -> tuple[int, ...]:
    return (*y.shape[:-1], p.basis.shape[0], p.stft.n_frames)


def _check(y: Tensor, public: str, *tensors: Tensor | None) -> None:
    check_cpu(y, public)
    for t in tensors:
        same_dtype(y, t, public, "a precomputed window / filter bank")


_CONSTANTS_ERROR = "specux {}: no gradient for its window / filter bank / DCT tensors"


def _define(name: str, signature, n_tensors: int, params, forward, backward, out_shape, constants):
    return define_signal_op(
        name,
        signature,
        n_tensors,
        check=lambda y, *args: _check(y, name, *args[: n_tensors - 1]),
        params=params,
        forward=forward,
        backward=backward,
        out_shape=out_shape,
        constants_error=_CONSTANTS_ERROR.format(name),
        constants=constants,
    )


def _mel_constants(g, x, p: MelParams, needs):
    return _adjoint_features.bank_constant_grads(g, x, p, *needs)


def _cepstral_constants(g, x, p: CepstralParams, needs):
    return _adjoint_features.cepstral_constant_grads(g, x, p, needs)


def _cepstral_shape(y: Tensor, p: CepstralParams) -> tuple[int, ...]:
    return (*y.shape[:-1], p.n_coeffs, p.mel.stft.n_frames)


def _cepstral_backward(g, x, p: CepstralParams):
    return _adjoint_features.cepstral_backward(g, x, p).astype(p.mel.dtype, copy=False)


# --- melspectrogram -----------------------------------------------------------------------------------------


def _melspectrogram_signature(
    y: Tensor,
    window: Tensor | None,
    basis: Tensor | None,
    window_spec: str,
    sr: float | None,
    n_fft: int | None,
    hop_length: int | None,
    win_length: int | None,
    center: bool,
    pad_mode: str | None,
    power: float,
    n_mels: int,
    fmin: float,
    fmax: float | None,
    htk: bool | None,
    norm: str | None,
    compat: str | None,
) -> Tensor:
    """specux.melspectrogram of a signal tensor (see :func:`specux.melspectrogram`); ``norm`` is the bank's
    normalisation as a string (``"auto"``, ``"slaney"``, or a number's repr)."""
    raise AssertionError("a signature only")


#: specux::melspectrogram's arguments after the signal, the window and bank tensors and ``window_spec``
#: (its schema, the kernels', the route's, the MelSpectrogram module's)
MEL_ARGS = OpArguments.of(_melspectrogram_signature, 4)
#: :func:`mel_params` of the ops' positional arguments
mel_resolve = MEL_ARGS.positional(mel_params)

melspectrogram, melspectrogram_backward = _define(
    "melspectrogram",
    _melspectrogram_signature,
    3,
    mel_resolve,
    _melspectrogram_numpy,
    lambda g, x, p: _adjoint_features.bank_backward(g, x, p).astype(p.dtype, copy=False),
    _bands_shape,
    _mel_constants,
)


# --- mfcc ---------------------------------------------------------------------------------------------------


def mfcc_params(
    y: Tensor,
    window: Tensor | None,
    basis: Tensor | None,
    dct: Tensor | None,
    window_spec: str,
    *,
    dct_norm: str | None,
    mel_norm: str | None,
    **kw: Any,
) -> CepstralParams:
    """:func:`specux._spec.features.mfcc_validate` (the functional API's checks and defaults) for a signal
    (``kw``: specux::mfcc's other arguments by name, :data:`MFCC_ARGS`), with the window / bank / DCT tensors
    in place of the derived ones where given."""
    p = mfcc_validate(
        y,
        from_spectrogram=False,
        window=decode_spec(window_spec),
        norm=dct_norm,
        mel_norm=decode_spec(mel_norm),
        **kw,
    )
    return _cepstral_with_tensors(p, window, basis, dct, "mfcc")


def _cepstral_with_tensors(p: CepstralParams, window, basis, dct, public: str) -> CepstralParams:
    D = _matrix(dct, *p.dct.shape, "dct", public)
    return dataclasses.replace(
        p, mel=_with_tensors(p.mel, window, basis, public), dct=p.dct if D is None else D
    )


def _mfcc_signature(
    y: Tensor,
    window: Tensor | None,
    basis: Tensor | None,
    dct: Tensor | None,
    window_spec: str,
    sr: float | None,
    n_mfcc: int | None,
    dct_type: int,
    dct_norm: str | None,
    lifter: float,
    n_fft: int | None,
    hop_length: int | None,
    win_length: int | None,
    center: bool,
    pad_mode: str | None,
    power: float,
    n_mels: int,
    fmin: float,
    fmax: float | None,
    htk: bool | None,
    mel_norm: str | None,
    top_db: float | None,
    compat: str | None,
) -> Tensor:
    """specux.mfcc of a signal tensor (see :func:`specux.mfcc`; ``dct_norm`` is its ``norm``)."""
    raise AssertionError("a signature only")


#: specux::mfcc's arguments after the signal, the window / bank / DCT tensors and ``window_spec`` (its
#: schema, the kernels', the route's, the MFCC module's); the op's ``dct_norm`` is mfcc's ``norm``
MFCC_ARGS = OpArguments.of(_mfcc_signature, 5, public={"dct_norm": "norm"})
#: :func:`mfcc_params` of the ops' positional arguments
mfcc_resolve = MFCC_ARGS.positional(mfcc_params)

mfcc, mfcc_backward = _define(
    "mfcc",
    _mfcc_signature,
    4,
    mfcc_resolve,
    _mfcc_numpy,
    _cepstral_backward,
    _cepstral_shape,
    _cepstral_constants,
)


# --- lfcc ---------------------------------------------------------------------------------------------------


def lfcc_params(
    y: Tensor,
    window: Tensor | None,
    basis: Tensor | None,
    dct: Tensor | None,
    window_spec: str,
    **kw: Any,
) -> CepstralParams:
    """:func:`specux._spec.features.lfcc_validate` for a signal (``kw``: specux::lfcc's other arguments by
    name, :data:`LFCC_ARGS`), with the window / bank / DCT tensors in place of the derived ones where
    given."""
    p = lfcc_validate(y, window=decode_spec(window_spec), **kw)
    return _cepstral_with_tensors(p, window, basis, dct, "lfcc")


def _lfcc_signature(
    waveform: Tensor,
    window: Tensor | None,
    basis: Tensor | None,
    dct: Tensor | None,
    window_spec: str,
    sample_rate: float,
    n_filter: int,
    f_min: float,
    f_max: float | None,
    n_lfcc: int,
    dct_type: int,
    norm: str | None,
    log_lf: bool,
    n_fft: int,
    win_length: int | None,
    hop_length: int | None,
    power: float,
    center: bool,
    pad_mode: str,
) -> Tensor:
    """specux.lfcc of a signal tensor (see :func:`specux.lfcc`)."""
    raise AssertionError("a signature only")


#: specux::lfcc's arguments after the signal, the window / bank / DCT tensors and ``window_spec`` (its
#: schema, the kernels', the route's, the LFCC module's)
LFCC_ARGS = OpArguments.of(_lfcc_signature, 5)
#: :func:`lfcc_params` of the ops' positional arguments
lfcc_resolve = LFCC_ARGS.positional(lfcc_params)

lfcc, lfcc_backward = _define(
    "lfcc",
    _lfcc_signature,
    4,
    lfcc_resolve,
    _mfcc_numpy,
    _cepstral_backward,
    _cepstral_shape,
    _cepstral_constants,
)
