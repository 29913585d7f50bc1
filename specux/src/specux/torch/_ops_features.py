"""``specux::melspectrogram``, ``specux::mfcc``, ``specux::lfcc`` and their backward ops (CPU, NumPy).

The forward kernels are the functional API's own (:mod:`specux.ops.mel`, :mod:`specux.ops.cepstral`); the
backward ops run the analytic chain of :mod:`specux.torch._adjoint_features`. Precomputed windows, filter
banks and DCT matrices may be passed as tensors (the ``nn.Module`` wrappers pass their buffers); otherwise
they are derived from the arguments exactly as the functional API derives them. Gradients flow to the signal;
the window / bank / DCT tensors are constants. These features are not linear, so their backward ops are not
differentiable again.
"""

from __future__ import annotations

import dataclasses

from torch import Tensor

from specux import _validate
from specux._filters.linear import linear as linear_bank
from specux._validate import CepstralParams, MelParams
from specux.ops.cepstral import DCT_NORMS, _dct_args, _mfcc_numpy, dct_matrix
from specux.ops.mel import _melspectrogram_numpy, mel_validate, resolve
from specux.ops.stft import stft_validate
from specux.torch import _adjoint_features
from specux.torch._convert import check_cpu, numpy_of
from specux.torch._params import decode_spec, is_fake, same_dtype, window_array
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
    b = _matrix(basis, None, stft_p.n_fft // 2 + 1, "basis", public)
    if basis is not None and b is None:  # fake tensor: only the number of rows matters
        import numpy as np

        b = np.zeros((basis.shape[0], stft_p.n_fft // 2 + 1))
    return dataclasses.replace(p, stft=stft_p, basis=p.basis if b is None else b)


def mel_params(
    y,
    window,
    basis,
    window_spec,
    sr,
    n_fft,
    hop_length,
    win_length,
    center,
    pad_mode,
    power,
    n_mels,
    fmin,
    fmax,
    htk,
    norm,
    compat,
    public="melspectrogram",
) -> MelParams:
    p = mel_validate(
        y,
        from_spectrogram=False,
        sr=sr,
        n_fft=n_fft,
        hop_length=hop_length,
        win_length=win_length,
        window=decode_spec(window_spec),
        center=center,
        pad_mode=pad_mode,
        power=power,
        n_mels=n_mels,
        fmin=fmin,
        fmax=fmax,
        htk=htk,
        norm=decode_spec(norm),
        compat=compat,
        public=public,
    )
    return _with_tensors(p, window, basis, public)


def _bands_shape(y: Tensor, p: MelParams) -> tuple[int, ...]:
    return (*y.shape[:-1], p.basis.shape[0], p.stft.n_frames)


def _check(y: Tensor, public: str, *tensors: Tensor | None) -> None:
    check_cpu(y, public)
    for t in tensors:
        same_dtype(y, t, public, "a precomputed window / filter bank")


_CONSTANTS_ERROR = (
    "specux {}: gradients with respect to the window / filter bank / DCT tensors are not computed; pass them "
    "without requires_grad (the signal's gradient is)"
)


def _define(name: str, signature, n_tensors: int, params, forward, backward, out_shape):
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
    )


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


melspectrogram, melspectrogram_backward = _define(
    "melspectrogram",
    _melspectrogram_signature,
    3,
    mel_params,
    _melspectrogram_numpy,
    lambda g, x, p: _adjoint_features.bank_backward(g, x, p).astype(p.dtype, copy=False),
    _bands_shape,
)


# --- mfcc ---------------------------------------------------------------------------------------------------


def mfcc_params(
    y,
    window,
    basis,
    dct,
    window_spec,
    sr,
    n_mfcc,
    dct_type,
    dct_norm,
    lifter,
    n_fft,
    hop_length,
    win_length,
    center,
    pad_mode,
    power,
    n_mels,
    fmin,
    fmax,
    htk,
    mel_norm,
    top_db,
    compat,
) -> CepstralParams:
    """The mfcc frontend's resolution of its arguments (see :func:`specux.mfcc`), for a signal input."""
    n_mfcc = _validate.positive_int(resolve(compat, "n_mfcc", n_mfcc), "n_mfcc", "mfcc")
    _dct_args(dct_type, dct_norm, "mfcc")
    if not lifter >= 0:
        raise ValueError(f"mfcc: lifter must be a non-negative number; got {lifter}")
    if top_db is not None and top_db < 0:
        raise ValueError(f"mfcc: top_db must be non-negative or None; got {top_db}")
    mel_p = mel_params(
        y,
        window,
        basis,
        window_spec,
        sr,
        n_fft,
        hop_length,
        win_length,
        center,
        pad_mode,
        power,
        n_mels,
        fmin,
        fmax,
        htk,
        mel_norm,
        compat,
        public="mfcc",
    )
    n_bands = mel_p.basis.shape[0]
    if n_mfcc > n_bands:
        raise ValueError(f"mfcc: n_mfcc={n_mfcc} must be <= the number of mel bands ({n_bands})")
    D = _matrix(dct, n_mfcc, n_bands, "dct", "mfcc")
    if D is None:
        D = dct_matrix(n_mfcc, n_bands, dct_type, dct_norm, float(lifter))
    log = "torchaudio_db" if compat == "torchaudio" else "power_to_db"
    return CepstralParams(mel_p, n_mfcc, dct_type, dct_norm, float(lifter), log, top_db, D)


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


mfcc, mfcc_backward = _define(
    "mfcc", _mfcc_signature, 4, mfcc_params, _mfcc_numpy, _cepstral_backward, _cepstral_shape
)


# --- lfcc ---------------------------------------------------------------------------------------------------


def lfcc_params(
    y,
    window,
    basis,
    dct,
    window_spec,
    sample_rate,
    n_filter,
    f_min,
    f_max,
    n_lfcc,
    dct_type,
    norm,
    log_lf,
    n_fft,
    win_length,
    hop_length,
    power,
    center,
    pad_mode,
) -> CepstralParams:
    """The lfcc frontend's resolution of its arguments (see :func:`specux.lfcc`)."""
    _validate.choice(dct_type, "dct_type", "lfcc", (2,))
    _validate.choice(norm, "norm", "lfcc", DCT_NORMS)
    n_filter = _validate.positive_int(n_filter, "n_filter", "lfcc")
    n_lfcc = _validate.positive_int(n_lfcc, "n_lfcc", "lfcc")
    if n_lfcc > n_filter:
        raise ValueError(f"lfcc: n_lfcc={n_lfcc} must be <= n_filter={n_filter}")
    if hop_length is None:
        win = n_fft if win_length is None else win_length
        hop_length = max(_validate.positive_int(win, "win_length", "lfcc") // 2, 1)
    stft_p = stft_validate(
        y,
        n_fft=n_fft,
        hop_length=hop_length,
        win_length=win_length,
        window=decode_spec(window_spec),
        center=center,
        pad_mode=pad_mode,
        output="complex",
    )
    power = _validate.positive_float(power, "power", "lfcc")
    bank = linear_bank(sr=sample_rate, n_fft=n_fft, n_filter=n_filter, f_min=f_min, f_max=f_max)
    mel_p = _with_tensors(MelParams(stft_p, power, bank, stft_p.dtype), window, basis, "lfcc")
    D = _matrix(dct, n_lfcc, mel_p.basis.shape[0], "dct", "lfcc")
    if D is None:
        D = dct_matrix(n_lfcc, mel_p.basis.shape[0], 2, norm, 0.0)
    return CepstralParams(mel_p, n_lfcc, 2, norm, 0.0, "log" if log_lf else "torchaudio_db", 80.0, D)


def _lfcc_signature(
    waveform: Tensor,
    window: Tensor | None,
    basis: Tensor | None,
    dct: Tensor | None,
    window_spec: str,
    sample_rate: int,
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


lfcc, lfcc_backward = _define(
    "lfcc", _lfcc_signature, 4, lfcc_params, _mfcc_numpy, _cepstral_backward, _cepstral_shape
)
