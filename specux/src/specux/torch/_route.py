"""The one hook through which the functional API runs torch tensors: ``call(op, *args, **kwargs)``.

``specux.stft(tensor, ...)`` (and every other transform) hands its arguments, unchanged, to :func:`call`,
which turns them into a ``torch.ops.specux.*`` call: validation and defaults stay the functional API's (they
run inside the op), so the result is the same as for a NumPy array, but autograd works and ``torch.compile``
traces the call as a single node. The Python here is deliberately plain (argument packing, dtype casts, no
NumPy on the common path) so that dynamo traces it without graph breaks.

A torch CPU tensor with ``backend="auto"`` or ``"cpu"`` runs on the CPU backend's ops; a float32 / float64
CUDA tensor passed to :mod:`specux.fft` with ``"auto"`` or ``"cuda"`` runs on the same ops' CUDA kernels (the
cuda backend's generated FFTs). Any other case is checked by the backend registry, which raises with the
reason (no other torch ops exist on GPUs in this build).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from specux.errors import UnsupportedOperationError
from specux.torch import _fft, _ops
from specux.torch._params import encode_spec

_HOST_BACKENDS = ("auto", "cpu")


def _check_backend(x: Tensor, backend: str, op: str, public: str) -> None:
    if backend in _HOST_BACKENDS and x.device.type == "cpu":
        return
    from specux._backends import registry

    registry.select(x, backend, op, f"specux.{public}")  # raises for unknown / unavailable / foreign devices
    if op == "fft" and x.device.type == "cuda":
        return  # the FFT family's ops have CUDA kernels (the cuda backend's)
    raise UnsupportedOperationError(
        f"specux.{public}: torch tensors on {x.device} with backend={backend!r} have no specux ops in this "
        "build "
        "(the torch integration runs on the CPU backend)"
    )


def _real_dtype(dtype: Any) -> torch.dtype | None:
    """A requested dtype (numpy or torch, real or complex) as the torch real precision, or None."""
    if dtype is None:
        return None
    if isinstance(dtype, torch.dtype):
        t = dtype
    else:
        import numpy as np

        t = getattr(torch, np.dtype(dtype).name)
    return {torch.complex64: torch.float32, torch.complex128: torch.float64}.get(t, t)


def _window(window: Any, like: Tensor, win_length: int | None, n_fft: int) -> tuple[Tensor | None, str]:
    """(window tensor or None, window_spec): names and tuples travel as specs, arrays as tensors."""
    if isinstance(window, str):
        return None, window
    if isinstance(window, Tensor):
        return window.to(device=like.device), "boxcar"
    if isinstance(window, (tuple, int, float)):
        return None, encode_spec(window)
    from specux._filters.windows import window_for

    w = window_for(window, n_fft if win_length is None else win_length, n_fft)
    return torch.as_tensor(np.array(w, dtype=np.float64), device=like.device), "boxcar"


def _float_signal(y: Tensor, dtype: Any) -> Tensor:
    want = _real_dtype(dtype)
    return y if want is None else y.to(want)


# --- stft / istft -------------------------------------------------------------------------------------------


def stft(y, *, n_fft, hop_length, win_length, window, center, dtype, pad_mode, output, backend):
    _check_backend(y, backend, "stft", "stft")
    w, spec = _window(window, y, win_length, n_fft)
    return _ops.stft(
        _float_signal(y, dtype), w, spec, n_fft, hop_length, win_length, center, pad_mode, output
    )


def istft(stft_matrix, *, hop_length, win_length, n_fft, window, center, dtype, length, nola, backend):
    _check_backend(stft_matrix, backend, "istft", "istft")
    D = stft_matrix
    want = _real_dtype(dtype)
    if want is not None:
        D = D.to({torch.float32: torch.complex64, torch.float64: torch.complex128}.get(want, want))
    n = 2 * (D.shape[-2] - 1) if n_fft is None else n_fft
    w, spec = _window(window, D, win_length, n)
    return _ops.istft(D, w, spec, n_fft, hop_length, win_length, center, length, nola)


# --- mel / cepstral -----------------------------------------------------------------------------------------


def _mel_n_fft(compat: str | None, n_fft: int | None) -> int:
    """The FFT length a mel-family call will use (its ``None`` default follows ``compat``)."""
    if n_fft is not None:
        return n_fft
    from specux.ops.mel import resolve

    return resolve(compat, "n_fft", None)


def _bank_of_spectrogram(S: Tensor, basis) -> Tensor:
    return torch.matmul(torch.as_tensor(np.array(basis), dtype=S.dtype, device=S.device), S)


def melspectrogram(
    y,
    *,
    sr,
    S,
    n_fft,
    hop_length,
    win_length,
    window,
    center,
    pad_mode,
    power,
    n_mels,
    fmin,
    fmax,
    htk,
    norm,
    compat,
    backend,
):
    if S is not None:
        # a given spectrogram is only multiplied by the bank: a matrix product that torch differentiates
        # itself
        _check_backend(S, backend, "melspectrogram", "melspectrogram")
        from specux.ops.mel import mel_validate

        p = mel_validate(
            S,
            from_spectrogram=True,
            sr=sr,
            n_fft=n_fft,
            hop_length=hop_length,
            win_length=win_length,
            window=window,
            center=center,
            pad_mode=pad_mode,
            power=power,
            n_mels=n_mels,
            fmin=fmin,
            fmax=fmax,
            htk=htk,
            norm=norm,
            compat=compat,
        )
        return _bank_of_spectrogram(S, p.basis)
    _check_backend(y, backend, "melspectrogram", "melspectrogram")
    w, spec = _window(window, y, win_length, _mel_n_fft(compat, n_fft))
    return _ops.melspectrogram(
        y,
        w,
        None,
        spec,
        sr,
        n_fft,
        hop_length,
        win_length,
        center,
        pad_mode,
        float(power),
        n_mels,
        float(fmin),
        fmax,
        htk,
        encode_spec(norm),
        compat,
    )


def mfcc(
    y,
    *,
    sr,
    S,
    n_mfcc,
    dct_type,
    norm,
    lifter,
    n_fft,
    hop_length,
    win_length,
    window,
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
    backend,
):
    if S is not None:
        # a given log-power spectrogram only meets the DCT matrix: a product torch differentiates itself
        _check_backend(S, backend, "mfcc", "mfcc")
        from specux.ops.cepstral import dct_matrix
        from specux.ops.mel import resolve

        n = resolve(compat, "n_mfcc", n_mfcc)
        if n > S.shape[-2]:
            raise ValueError(f"mfcc: n_mfcc={n} must be <= the number of mel bands ({S.shape[-2]})")
        return _bank_of_spectrogram(S, dct_matrix(n, S.shape[-2], dct_type, norm, float(lifter)))
    _check_backend(y, backend, "mfcc", "mfcc")
    w, spec = _window(window, y, win_length, _mel_n_fft(compat, n_fft))
    return _ops.mfcc(
        y,
        w,
        None,
        None,
        spec,
        sr,
        n_mfcc,
        dct_type,
        norm,
        float(lifter),
        n_fft,
        hop_length,
        win_length,
        center,
        pad_mode,
        float(power),
        n_mels,
        float(fmin),
        fmax,
        htk,
        encode_spec(mel_norm),
        top_db,
        compat,
    )


def lfcc(
    waveform,
    *,
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
    window,
    power,
    center,
    pad_mode,
    backend,
):
    _check_backend(waveform, backend, "lfcc", "lfcc")
    w, spec = _window(window, waveform, win_length, n_fft)
    return _ops.lfcc(
        waveform,
        w,
        None,
        None,
        spec,
        sample_rate,
        n_filter,
        float(f_min),
        f_max,
        n_lfcc,
        dct_type,
        norm,
        log_lf,
        n_fft,
        win_length,
        hop_length,
        float(power),
        center,
        pad_mode,
    )


# --- constant-Q and chroma ----------------------------------------------------------------------------------


def _cq_window(window: Any, public: str) -> str:
    if isinstance(window, str):
        return window
    if isinstance(window, (tuple, int, float)):
        return encode_spec(window)
    raise TypeError(f"{public}: for torch inputs, window must be a name or a (name, parameter) tuple")


def _float_or_none(v: Any) -> float | None:
    return None if v is None else float(v)


def vqt(
    y,
    *,
    sr,
    hop_length,
    fmin,
    n_bins,
    intervals,
    gamma,
    bins_per_octave,
    tuning,
    filter_scale,
    norm,
    sparsity,
    window,
    scale,
    pad_mode,
    res_type,
    dtype,
    backend,
):
    _check_backend(y, backend, "vqt", "vqt")
    iv = None if isinstance(intervals, str) and intervals == "equal" else [float(r) for r in intervals]
    return _ops.vqt(
        _float_signal(y, dtype),
        [],
        float(sr),
        hop_length,
        _float_or_none(fmin),
        n_bins,
        iv,
        _float_or_none(gamma),
        bins_per_octave,
        _float_or_none(tuning),
        float(filter_scale),
        _float_or_none(norm),
        float(sparsity),
        _cq_window(window, "vqt"),
        scale,
        pad_mode,
        res_type,
    )


def cqt(
    y,
    *,
    sr,
    hop_length,
    fmin,
    n_bins,
    bins_per_octave,
    tuning,
    filter_scale,
    norm,
    sparsity,
    window,
    scale,
    pad_mode,
    res_type,
    dtype,
    backend,
):
    _check_backend(y, backend, "cqt", "cqt")
    return _ops.cqt(
        _float_signal(y, dtype),
        [],
        float(sr),
        hop_length,
        _float_or_none(fmin),
        n_bins,
        bins_per_octave,
        _float_or_none(tuning),
        float(filter_scale),
        _float_or_none(norm),
        float(sparsity),
        _cq_window(window, "cqt"),
        scale,
        pad_mode,
        res_type,
    )


def chroma_stft(
    y,
    *,
    sr,
    S,
    norm,
    n_fft,
    hop_length,
    win_length,
    window,
    center,
    pad_mode,
    tuning,
    n_chroma,
    ctroct,
    octwidth,
    base_c,
    backend,
):
    if S is not None:
        raise UnsupportedOperationError(
            "specux.chroma_stft: for torch tensors pass the signal y (differentiable through "
            "specux::chroma_stft); "
            "the S= variant runs on numpy arrays (pass S.detach().numpy())"
        )
    _check_backend(y, backend, "chroma_stft", "chroma_stft")
    w, spec = _window(window, y, win_length, n_fft)
    return _ops.chroma_stft(
        y,
        w,
        None,
        spec,
        float(sr),
        _float_or_none(norm),
        n_fft,
        hop_length,
        win_length,
        center,
        pad_mode,
        _float_or_none(tuning),
        n_chroma,
        float(ctroct),
        _float_or_none(octwidth),
        base_c,
    )


def chroma_cqt(
    y,
    *,
    sr,
    C,
    hop_length,
    fmin,
    norm,
    threshold,
    tuning,
    n_chroma,
    n_octaves,
    window,
    bins_per_octave,
    cqt_mode,
    res_type,
    backend,
):
    if C is not None:
        raise UnsupportedOperationError(
            "specux.chroma_cqt: for torch tensors pass the signal y (differentiable through "
            "specux::chroma_cqt); "
            "the C= variant runs on numpy arrays (pass C.detach().numpy())"
        )
    _check_backend(y, backend, "chroma_cqt", "chroma_cqt")
    if cqt_mode != "full":
        raise ValueError(
            f"chroma_cqt: cqt_mode must be 'full' (the hybrid transform is not offered); got {cqt_mode!r}"
        )
    fold = None
    if window is not None:
        from specux._filters.constant_q import cq_to_chroma

        bpo = n_chroma if bins_per_octave is None else bins_per_octave
        M = cq_to_chroma(n_octaves * bpo, bins_per_octave=bpo, n_chroma=n_chroma, fmin=fmin, window=window)
        fold = torch.as_tensor(np.array(M, dtype=np.float64))
    return _ops.chroma_cqt(
        y,
        [],
        fold,
        float(sr),
        hop_length,
        _float_or_none(fmin),
        _float_or_none(norm),
        float(threshold),
        _float_or_none(tuning),
        n_chroma,
        n_octaves,
        bins_per_octave,
        res_type,
    )


# --- fftconvolve and the FFT family -------------------------------------------------------------------------


def fftconvolve(in1, in2, mode, axes, *, backend):
    _check_backend(in1, backend, "fftconvolve", "fftconvolve")
    if not isinstance(in2, Tensor):
        in2 = torch.as_tensor(in2, device=in1.device)
    if in2.device != in1.device:
        raise ValueError(
            f"fftconvolve: in1 and in2 must live on the same device; got {in1.device} and {in2.device}"
        )
    a = in1 if in1.is_floating_point() or in1.is_complex() else in1.to(torch.float64)
    b = in2 if in2.is_floating_point() or in2.is_complex() else in2.to(torch.float64)
    ax = None if axes is None else ([int(axes)] if isinstance(axes, int) else [int(v) for v in axes])
    return _ops.fftconvolve(a, b, mode, ax)


def fft_family(name: str, a: Tensor, *args: Any, backend: str = "auto", **kwargs: Any) -> Tensor:
    _check_backend(a, backend, "fft", f"fft.{name}")
    return _fft.FUNCTIONS[name](a, *args, **kwargs)


_PUBLIC = {
    "stft": stft,
    "istft": istft,
    "melspectrogram": melspectrogram,
    "mfcc": mfcc,
    "lfcc": lfcc,
    "vqt": vqt,
    "cqt": cqt,
    "chroma_stft": chroma_stft,
    "chroma_cqt": chroma_cqt,
    "fftconvolve": fftconvolve,
}


def call(op: str, *args: Any, **kwargs: Any) -> Any:
    """Run the public transform ``op`` (``"stft"``, ..., ``"fft.<name>"``) on torch tensors via specux's ops.

    ``args`` / ``kwargs`` are the public function's own arguments, every one passed (the frontend forwards
    them unchanged, defaults included), so defaults live once, in the public signature.
    """
    if op.startswith("fft."):
        return fft_family(op[4:], *args, **kwargs)
    try:
        fn = _PUBLIC[op]
    except KeyError:
        raise ValueError(f"specux.torch: no torch route for operation {op!r}") from None
    return fn(*args, **kwargs)
