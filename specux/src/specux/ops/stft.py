"""Short-time Fourier transform and its inverse (librosa's semantics).

The fronts validate and dispatch; the CPU kernels are in :mod:`specux._backends.cpu.stft`.
"""

from __future__ import annotations

from typing import Any

from specux import _dispatch
from specux._backend_doc import backends_doc
from specux._spec.stft import istft_validate, stft_validate
from specux._torch_hook import torch_route

__all__ = ["istft", "stft"]


@backends_doc("stft")
@torch_route("stft")
def stft(
    y: Any,
    *,
    n_fft: int = 2048,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Any = "hann",
    center: bool = True,
    dtype: Any = None,
    pad_mode: str = "constant",
    output: str = "complex",
    backend: str = "auto",
) -> Any:
    """Short-time Fourier transform (librosa.stft).

    Frame ``t`` covers samples ``t * hop_length .. t * hop_length + n_fft`` of the (centre-padded) signal, is
    multiplied by the window and transformed with a real FFT. No window normalisation.

    Parameters
    ----------
    y : array, shape (..., L), float32 or float64
        Signal(s); leading dimensions are batch dimensions. numpy array or torch tensor.
    n_fft : int
        FFT length, samples.
    hop_length : int or None
        Samples between frames. ``None``: ``win_length // 4``.
    win_length : int or None
        Window length (<= n_fft); the window is zero-padded to ``n_fft``, centred. ``None``: ``n_fft``.
    window : str, tuple, float, callable or array
        See :func:`specux.filters.get_window` (periodic). Default: Hann.
    center : bool
        Pad ``n_fft // 2`` samples on both sides so frame ``t`` is centred on sample ``t * hop_length``.
    dtype : numpy dtype or None
        Complex output dtype (complex64 / complex128), which sets the computing precision. ``None``: from
        ``y`` (float32 -> complex64, float64 -> complex128).
    pad_mode : {"constant", "reflect", "edge", "symmetric", "wrap"}
        Padding when ``center`` (numpy.pad modes); "constant" pads zeros, as librosa >= 0.9.
    output : {"complex", "magnitude", "power", "real_imag"}
        ``"magnitude"``: ``|D|``; ``"power"``: ``|D|**2``; ``"real_imag"``: a real array with a trailing axis
        of 2 (real, imaginary).
    backend : str
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"`` (see :func:`specux.backends`).

    Returns
    -------
    array, shape (..., 1 + n_fft // 2, n_frames) (``real_imag``: trailing 2)
        ``n_frames = 1 + (L + 2 * (n_fft // 2) - n_fft) // hop_length`` when ``center``, else
        ``1 + (L - n_fft) // hop_length``. Same library as ``y``. NaN / inf in a frame give NaN / inf in that
        frame only.

    Raises
    ------
    ValueError
        Bad parameter (named in the message), an empty ``y``, or ``n_fft > L`` with ``center=False``.
    TypeError
        ``y`` is not float32 / float64.

    {backends} Autograd / torch.compile: yes for torch CPU tensors
    (the specux custom ops; see docs/specux/torch.md).

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> y = np.random.default_rng(0).standard_normal(22050).astype(np.float32)
    >>> D = specux.stft(y, n_fft=1024, hop_length=256)
    >>> D.shape, D.dtype
    ((513, 87), dtype('complex64'))
    >>> specux.stft(y, n_fft=1024, output="power").dtype
    dtype('float32')
    """
    chosen, x = _dispatch.prepare(y, backend, "stft", "stft")
    p = stft_validate(
        x,
        n_fft=n_fft,
        hop_length=hop_length,
        win_length=win_length,
        window=window,
        center=center,
        dtype=dtype,
        pad_mode=pad_mode,
        output=output,
        accepted=tuple(sorted(chosen.dtypes)),
    )
    return _dispatch.finish(chosen.stft(_dispatch.cast_host(x, p.dtype), p), y)


@backends_doc("istft")
@torch_route("istft")
def istft(
    stft_matrix: Any,
    *,
    hop_length: int | None = None,
    win_length: int | None = None,
    n_fft: int | None = None,
    window: Any = "hann",
    center: bool = True,
    dtype: Any = None,
    length: int | None = None,
    nola: str = "ignore",
    backend: str = "auto",
) -> Any:
    """Inverse STFT by weighted overlap-add (librosa.istft).

    Each frame is inverse-transformed, multiplied by the window and overlap-added; the sum is divided by the
    overlapped squared window wherever that exceeds ``tiny(dtype)`` and left as is elsewhere.

    Parameters
    ----------
    stft_matrix : array, shape (..., 1 + n_fft // 2, T), complex64 or complex128
        As returned by :func:`stft` (complex mode).
    hop_length, win_length, window, center
        As in :func:`stft`. ``win_length=None``: ``n_fft``; ``hop_length=None``: ``win_length // 4``.
    n_fft : int or None
        ``None``: ``2 * (stft_matrix.shape[-2] - 1)``.
    dtype : numpy dtype or None
        Real output dtype. ``None``: the input's precision (complex64 -> float32).
    length : int or None
        Output length in samples (zero-padded or cut; extra frames are not used). ``None``: all frames, minus
        the centre padding.
    nola : {"ignore", "raise"}
        ``"ignore"`` (librosa's behaviour): samples where the squared-window sum is <= tiny are left
        undivided. ``"raise"``: raise :class:`specux.errors.NolaError` naming those output positions instead.
    backend : str
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array, shape (..., length)
        Real, same library as the input.

    {backends} Autograd / torch.compile: yes for torch CPU tensors
    (the specux custom ops; see docs/specux/torch.md).

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> y = np.random.default_rng(0).standard_normal(22050)
    >>> D = specux.stft(y, n_fft=1024)
    >>> y_back = specux.istft(D, length=len(y))
    >>> bool(np.allclose(y_back, y))
    True
    """
    chosen, x = _dispatch.prepare(stft_matrix, backend, "istft", "istft")
    p = istft_validate(
        x,
        hop_length=hop_length,
        win_length=win_length,
        n_fft=n_fft,
        window=window,
        center=center,
        dtype=dtype,
        length=length,
        nola=nola,
        accepted=tuple(sorted(chosen.dtypes)),
    )
    return _dispatch.finish(chosen.istft(x, p), stft_matrix)
