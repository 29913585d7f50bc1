"""Parameter validation for the transforms, kept apart from computing so that every backend and specux.torch
reuse it.

Each ``*_params`` function checks the public arguments against the input's shape and dtype, raises
``ValueError`` / ``TypeError`` naming the parameter and the allowed values, and returns a frozen dataclass
with every derived value filled in (``None`` defaults resolved). Backends receive these dataclasses
(see specux._backends.base).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from specux import _arrays, _memory, _threads

# the scalar checks live in _checks (below _filters, which uses them too); every front calls them as
# _validate.<name>, so they are part of this module's namespace
from specux._checks import (  # noqa: F401
    _type_of,
    choice,
    flag,
    is_number,
    optional_flag,
    optional_real,
    positive_int,
    real,
)
from specux._filters import windows as _windows
from specux.errors import user_stacklevel

#: real precisions the CPU backend computes in
CPU_DTYPES = ("float32", "float64")
PAD_MODES = ("constant", "reflect", "edge", "symmetric", "wrap")
STFT_OUTPUTS = ("complex", "magnitude", "power", "real_imag")
NOLA_MODES = ("ignore", "raise")
_COMPLEX = {"float16": "complex32", "float32": "complex64", "float64": "complex128"}
_REAL = {v: k for k, v in _COMPLEX.items()}


def spectrogram_shape(S: Any, public: str) -> None:
    """S: at least 2-D with at least 2 frequency bins (``1 + n_fft // 2`` rows). One bin would give
    ``n_fft = 0``, which later steps blamed on n_fft (a parameter the caller did not give) or divided by."""
    shape = tuple(S.shape) if hasattr(S, "shape") else np.shape(S)
    if len(shape) < 2 or shape[-2] < 2:
        raise ValueError(
            f"{public}: S must have shape (..., 1 + n_fft // 2, n_frames) with at least 2 frequency bins "
            f"(n_fft >= 2); got shape {shape}"
        )


def mel_norm(value: Any, name: str, public: str, *, auto: bool = True) -> Any:
    """A mel bank's norm: "auto" (the fronts' derived default; refused when ``auto`` is False), None,
    "slaney" or a number > 0 or -inf (a p-norm; np.inf for the maximum), else ValueError naming the
    parameter. A string such as "2" is refused, not read as 2."""
    if value is None or (isinstance(value, str) and value in (("auto", "slaney") if auto else ("slaney",))):
        return value
    if is_number(value) and (float(value) > 0 or float(value) == -math.inf):
        return float(value)
    raise ValueError(
        f"{public}: {name} must be None, 'slaney' or a positive number (p-norm, np.inf); got {value!r}"
    )


def frame_norm(norm: Any, public: str) -> None:
    """chroma's per-frame ``norm``: None, inf, -inf, 0 or a positive number (librosa.util.normalize's), else
    ValueError naming it; checked before any work (normalize checks it late, and a device kernel not at
    all)."""
    if norm is None:
        return
    value = real(norm, "norm", public, finite=False)
    if not (value >= 0 or value == -np.inf):
        raise ValueError(f"{public}: norm must be None, inf, -inf, 0 or a positive number; got {norm!r}")


def positive_float(value: Any, name: str, public: str) -> float:
    if not is_number(value):
        raise TypeError(
            f"{public}: {name} must be a positive number; got {value!r} of type {_type_of(value)}"
        )
    out = float(value)
    if not (out > 0 and math.isfinite(out)):
        raise ValueError(f"{public}: {name} must be a positive finite number; got {value!r}")
    return out


def numpy_dtype(value: Any, name: str, public: str, allowed: str) -> np.dtype:
    """``value`` read by ``np.dtype``; what numpy cannot read is a TypeError naming the parameter and
    ``allowed`` (numpy's own message, "data type 'x' not understood", names nothing)."""
    try:
        return np.dtype(value)
    except (TypeError, ValueError):
        raise TypeError(f"{public}: {name} must be {allowed}; got {value!r}") from None


def real_dtype(
    x: Any,
    public: str,
    name: str,
    accepted: tuple[str, ...] = CPU_DTYPES,
    *,
    allow_complex: bool = False,
    override: Any = None,
) -> str:
    """The real precision to compute ``x`` in: its own (or ``override``'s), which must be in ``accepted``."""
    got = _arrays.real_dtype_name(x)
    if override is not None:
        listed = f"{', '.join(accepted)} (complex: {', '.join(_COMPLEX[a] for a in accepted)})"
        override = numpy_dtype(
            override, "dtype", public, f"a numpy dtype or None; accepted precisions: {listed}"
        )
        want = _REAL.get(override.name, override.name)
        if want not in accepted:
            raise TypeError(
                f"{public}: dtype={override.name} is not supported; accepted precisions: {listed}"
            )
    else:
        want = _REAL.get(got, got) if allow_complex else got
    is_complex = got.startswith("complex")
    if (is_complex and not allow_complex) or _REAL.get(got, got) not in accepted:
        kinds = ", ".join(accepted) + (
            f" (or {', '.join(_COMPLEX[a] for a in accepted)})" if allow_complex else ""
        )
        raise TypeError(f"{public}: {name} has dtype {got}; accepted dtypes on this backend: {kinds}")
    return want


def nonempty(shape: tuple[int, ...], public: str, name: str, min_ndim: int = 1) -> None:
    if len(shape) < min_ndim:
        raise ValueError(f"{public}: {name} must have at least {min_ndim} dimension(s); got shape {shape}")
    if 0 in shape:
        raise ValueError(f"{public}: {name} is empty (shape {shape})")


# --- stft / istft
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class StftParams:
    """Resolved stft arguments. ``window`` is float64 of length ``n_fft`` (centred, zero-padded),
    read-only."""

    n_fft: int
    hop_length: int
    win_length: int
    window: np.ndarray
    center: bool
    pad_mode: str
    output: str
    dtype: str  # real precision: "float32" / "float64"
    length: int  # input samples along the last axis
    n_frames: int


#: bytes per frequency bin of the spectrogram stft keeps, per real itemsize, by output mode (the complex
#: spectrum, plus the real result for "magnitude", plus a squared part for "power")
_STFT_BIN_ITEMS = {"complex": 2, "real_imag": 2, "magnitude": 3, "power": 4}
#: bytes of frames that one pool thread windows and transforms at a time
#: (specux._backends.cpu.stft._BLOCK_BYTES)
_BLOCK_BYTES = 1 << 21


def _frames_bytes(n_blocks: int, n_frames: int, n_fft: int, itemsize: int) -> int:
    """Bytes of the frame blocks the pool's threads hold at once (windowed frames and their spectra)."""
    rows = min(n_frames, max(16, _BLOCK_BYTES // (n_fft * itemsize)))
    return 3 * rows * n_fft * itemsize * min(n_blocks, _threads.cores())


def stft_memory(
    shape: tuple[int, ...],
    dtype: str,
    *,
    n_fft: int,
    hop_length: int,
    win_length: int,
    center: bool,
    n_frames: int,
    frame_bytes: int,
    extra_bytes: int = 0,
    public: str = "stft",
) -> None:
    """The memory guard of an stft (or of a feature computed from its frames, which keeps ``frame_bytes``
    per frame and signal, plus ``extra_bytes``): raises :class:`specux.errors.MemoryLimitError` naming the
    parameter that sets the size."""
    batch, length = _memory.product(shape[:-1]), shape[-1]
    item = np.dtype(dtype).itemsize
    needed = (
        8 * (win_length + 2 * n_fft)  # the window (float64) and its centred, cast copies
        + (batch * (length + 2 * (n_fft // 2)) * item if center else 0)  # the padded signal
        + _frames_bytes(batch, n_frames, n_fft, item)
        + batch * n_frames * frame_bytes
        + extra_bytes
    )
    if n_fft > length or n_fft * 8 * 3 > needed // 2:
        parameter, value = "n_fft", n_fft
    elif hop_length < win_length // 4:
        parameter, value = "hop_length", hop_length
    else:
        parameter, value = "y", f"shape {tuple(shape)}"
    _memory.check(
        needed,
        public=public,
        parameter=parameter,
        value=value,
        detail=(
            f"{n_frames} frame(s) of n_fft={n_fft} every hop_length={hop_length} samples for "
            f"{batch} signal(s) of {length} samples"
        ),
    )


def stft_params(
    shape: tuple[int, ...],
    dtype: str,
    *,
    n_fft: int,
    hop_length: int | None,
    win_length: int | None,
    window: Any,
    center: bool,
    pad_mode: str,
    output: str,
    public: str = "stft",
    frame_items: int | None = None,
    extra_bytes: int = 0,
) -> StftParams:
    """Resolved stft arguments, after the memory guard (:func:`stft_memory`): ``frame_items`` is the number
    of real values the caller keeps per frame and signal (None: the spectrogram of ``output``),
    ``extra_bytes`` anything else it allocates (a filter bank)."""
    nonempty(shape, public, "y")
    n_fft = positive_int(n_fft, "n_fft", public)
    win_length = n_fft if win_length is None else positive_int(win_length, "win_length", public)
    if win_length > n_fft:
        raise ValueError(f"{public}: win_length={win_length} must be <= n_fft={n_fft}")
    hop_length = (
        max(win_length // 4, 1) if hop_length is None else positive_int(hop_length, "hop_length", public)
    )
    center = flag(center, "center", public)
    choice(pad_mode, "pad_mode", public, PAD_MODES)
    choice(output, "output", public, STFT_OUTPUTS)
    length = shape[-1]
    if not center and n_fft > length:
        raise ValueError(
            f"{public}: n_fft={n_fft} is larger than the signal length {length} with center=False "
            "(use a smaller n_fft, a longer signal, or center=True)"
        )
    padded = length + 2 * (n_fft // 2) if center else length
    n_frames = 1 + (padded - n_fft) // hop_length
    if frame_items is None:
        frame_items = (n_fft // 2 + 1) * _STFT_BIN_ITEMS[output]
    stft_memory(
        shape,
        dtype,
        n_fft=n_fft,
        hop_length=hop_length,
        win_length=win_length,
        center=center,
        n_frames=n_frames,
        frame_bytes=frame_items * np.dtype(dtype).itemsize,
        extra_bytes=extra_bytes,
        public=public,
    )
    if center and n_fft > length:
        warnings.warn(
            f"{public}: n_fft={n_fft} is larger than the signal length {length}; the frames are "
            "mostly padding",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    win = _windows.window_for(window, win_length, n_fft)
    return StftParams(n_fft, hop_length, win_length, win, center, pad_mode, output, dtype, length, n_frames)


@dataclass(frozen=True, eq=False)
class IstftParams:
    """Resolved istft arguments; ``n_frames`` frames of the input are used, ``out_length`` samples
    produced."""

    n_fft: int
    hop_length: int
    win_length: int
    window: np.ndarray
    center: bool
    dtype: str  # real precision of the output
    n_frames: int
    out_length: int
    nola: str


def istft_params(
    shape: tuple[int, ...],
    dtype: str,
    *,
    hop_length: int | None,
    win_length: int | None,
    n_fft: int | None,
    window: Any,
    center: bool,
    length: int | None,
    nola: str,
    public: str = "istft",
) -> IstftParams:
    nonempty(shape, public, "stft_matrix", min_ndim=2)
    n_bins, frames = shape[-2], shape[-1]
    n_fft = 2 * (n_bins - 1) if n_fft is None else positive_int(n_fft, "n_fft", public)
    if n_fft < 1:
        raise ValueError(
            f"{public}: stft_matrix has {n_bins} frequency bins; n_fft cannot be derived from it"
        )
    if n_fft // 2 + 1 != n_bins:
        raise ValueError(
            f"{public}: n_fft={n_fft} needs {n_fft // 2 + 1} frequency bins; stft_matrix has {n_bins}"
        )
    win_length = n_fft if win_length is None else positive_int(win_length, "win_length", public)
    if win_length > n_fft:
        raise ValueError(f"{public}: win_length={win_length} must be <= n_fft={n_fft}")
    hop_length = (
        max(win_length // 4, 1) if hop_length is None else positive_int(hop_length, "hop_length", public)
    )
    center = flag(center, "center", public)
    choice(nola, "nola", public, NOLA_MODES)
    n_frames = frames
    if length is not None:
        length = positive_int(length, "length", public)
        padded = length + 2 * (n_fft // 2) if center else length
        n_frames = min(frames, math.ceil(padded / hop_length))
        out_length = length
    else:
        out_length = n_fft + hop_length * (n_frames - 1) - (2 * (n_fft // 2) if center else 0)
        if out_length < 1:
            raise ValueError(
                f"{public}: {frames} frame(s) of n_fft={n_fft} with center=True leave no samples"
            )
    batch, item = _memory.product(shape[:-2]), np.dtype(dtype).itemsize
    # the output, and the squared-window sum and its cut when some samples get no window (nola check)
    needed = 8 * (win_length + 2 * n_fft) + 3 * batch * out_length * item
    needed += _frames_bytes(batch, n_frames, n_fft, item)
    _memory.check(
        needed,
        public=public,
        parameter="length" if length is not None else "hop_length",
        value=length if length is not None else hop_length,
        detail=f"{out_length} output samples for each of {batch} signal(s)",
    )
    win = _windows.window_for(window, win_length, n_fft)
    return IstftParams(n_fft, hop_length, win_length, win, center, dtype, n_frames, out_length, nola)


# --- mel / cepstral
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class MelParams:
    """Resolved melspectrogram arguments: the stft (None when S is given) and the bank (n_mels, F)."""

    stft: StftParams | None  # None when a spectrogram S was given
    power: float
    basis: np.ndarray
    dtype: str


@dataclass(frozen=True, eq=False)
class CepstralParams:
    """Resolved mfcc / lfcc arguments after the filter-bank stage."""

    mel: MelParams
    n_coeffs: int
    dct_type: int
    norm: str | None
    lifter: float
    # "power_to_db" (librosa), "torchaudio_db" (torchaudio's per-item top_db), "log", "none" (S given)
    log: str
    top_db: float | None
    dct: np.ndarray  # (n_coeffs, n_bands) float64, lifter folded in, read-only


@dataclass(frozen=True, eq=False)
class ChromaParams:
    """Resolved chroma_stft arguments: the stft of the power spectrogram (None when S is given or was
    computed already), the chroma bank (n_chroma, F) and the per-frame norm (None: none)."""

    stft: StftParams | None
    bank: np.ndarray
    norm: float | None
    dtype: str  # real precision of the result


# --- cqt / vqt
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VqtParams:
    """Validated parameters of one ``vqt`` call (the tuning already applied to ``fmin``)."""

    sr: float
    hop_length: int
    fmin: float
    n_bins: int
    intervals: Any
    gamma: float | None
    bins_per_octave: int
    filter_scale: float
    norm: float | None
    sparsity: float
    window: Any
    scale: bool
    pad_mode: str
    res_type: str | None
    dtype: str


# --- icqt
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IcqtParams:
    """Validated parameters of one ``icqt`` call (the tuning already applied to ``fmin``)."""

    sr: float
    hop_length: int
    fmin: float
    n_bins: int
    bins_per_octave: int
    filter_scale: float
    norm: float | None
    sparsity: float
    window: Any
    scale: bool
    length: int | None
    res_type: str
    dtype: str  # real output precision


# --- fftconvolve
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvolveParams:
    """Resolved fftconvolve arguments (scipy.signal's rules), for inputs already swapped if "valid" needs it.

    ``axes`` are the convolved axes (non-negative, sorted, without axes where either input has length 1, which
    broadcast); ``out_shape`` is the final shape after the ``mode`` crop; ``dtype`` is numpy's result dtype.
    """

    mode: str
    axes: tuple[int, ...]
    swapped: bool
    full_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    dtype: str


CONVOLVE_MODES = ("full", "same", "valid")


def convolve_params(
    s1: tuple[int, ...], s2: tuple[int, ...], dtype: str, mode: str, axes: Any, public: str = "fftconvolve"
) -> ConvolveParams:
    choice(mode, "mode", public, CONVOLVE_MODES)
    if len(s1) != len(s2):
        raise ValueError(
            f"{public}: in1 and in2 must have the same number of dimensions; got shapes {s1} and {s2}"
        )
    if len(s1) == 0:
        raise ValueError(f"{public}: in1 and in2 must have at least one dimension")
    if 0 in s1 or 0 in s2:
        empty = " and ".join(n for n, s in (("in1", s1), ("in2", s2)) if 0 in s)
        raise ValueError(f"{public}: empty input ({empty} has a zero-length axis; shapes {s1} and {s2})")
    ndim = len(s1)
    if axes is None:
        axes_list = list(range(ndim))
    else:
        if isinstance(axes, (int, np.integer)):
            axes_list = [axes]
        elif isinstance(axes, str) or not hasattr(axes, "__iter__"):
            raise TypeError(f"{public}: axes must be None, an int or a sequence of ints; got {axes!r}")
        else:
            axes_list = list(axes)
        if not axes_list:
            raise ValueError(f"{public}: axes, when given, cannot be empty")
        for a in axes_list:
            if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or not -ndim <= a < ndim:
                raise ValueError(f"{public}: axis {a!r} is out of bounds for {ndim}-dimensional inputs")
        axes_list = [int(a) % ndim for a in axes_list]
        if len(set(axes_list)) != len(axes_list):
            raise ValueError(f"{public}: axes must be unique; got {axes}")
    conv = sorted(a for a in axes_list if s1[a] != 1 and s2[a] != 1)
    for a in range(ndim):
        if a not in conv and not (s1[a] == s2[a] or s1[a] == 1 or s2[a] == 1):
            raise ValueError(
                f"{public}: incompatible shapes {s1} and {s2} along axis {a} (it is not convolved, "
                "so the sizes must match or one must be 1)"
            )
    swapped = False
    if mode == "valid":
        ok1 = all(s1[a] >= s2[a] for a in conv)
        ok2 = all(s2[a] >= s1[a] for a in conv)
        if not (ok1 or ok2):
            raise ValueError(
                f"{public}: for mode='valid', one input must be at least as large as the other along "
                f"every convolved axis; got shapes {s1} and {s2}"
            )
        swapped = not ok1
        if swapped:
            s1, s2 = s2, s1
    full = tuple(s1[a] + s2[a] - 1 if a in conv else max(s1[a], s2[a]) for a in range(ndim))
    if mode == "full":
        out = full
    elif mode == "same":
        out = s1
    else:
        out = tuple(s1[a] - s2[a] + 1 if a in conv else full[a] for a in range(ndim))
    item = np.dtype(dtype).itemsize
    # both spectra, the inverse transform and the full result (real spectra hold half the points, complex)
    _memory.check(
        4 * _memory.product(full) * item + _memory.product(out) * item,
        public=public,
        parameter="in1 and in2",
        value=f"shapes {s1} and {s2}",
        detail=f"mode={mode!r}, full convolution of shape {full}",
        advice="check the shapes and axes (an axis where one input has size 1 broadcasts; every other axis "
        "is convolved, n1 + n2 - 1 points long)",
    )
    return ConvolveParams(mode, tuple(conv), swapped, full, tuple(out), dtype)
