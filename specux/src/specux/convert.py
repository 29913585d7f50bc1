"""Unit conversions: Hz <-> mel / MIDI / octaves, and power / amplitude <-> decibels (librosa's definitions).

All functions take scalars or numpy arrays and run on the host, except the decibel conversions
:func:`power_to_db` and :func:`amplitude_to_db`: they also take torch tensors and cupy arrays, and run where
those live (a cupy array or a torch CUDA tensor on the cuda backend's kernels, result on the same device),
or on the backend named by ``backend=`` for numpy input. Autograd: not served by these two yet (a tensor
that requires grad is refused, never silently detached); the dB stage inside :func:`specux.mfcc` is
differentiable.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from specux import _arrays, _dispatch, _validate
from specux._backend_doc import backends_doc
from specux._dask import dask_route
from specux.errors import user_stacklevel

__all__ = [
    "amplitude_to_db",
    "db_to_amplitude",
    "db_to_power",
    "hz_to_mel",
    "hz_to_midi",
    "hz_to_octs",
    "mel_to_hz",
    "midi_to_hz",
    "note_to_hz",
    "octs_to_hz",
    "power_to_db",
    "tiny",
]

# Slaney's mel scale: linear (200/3 Hz per mel) below 1 kHz, logarithmic above with 27 mels per factor 6.4.
_F_SP = 200.0 / 3
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOGSTEP = math.log(6.4) / 27.0


def _values(x: Any, name: str, public: str) -> np.ndarray:
    """A number or an array of numbers as float64 (numpy's subclasses kept); strings, bools and other
    kinds are a TypeError naming the parameter (numpy would parse "440" silently)."""
    a = np.asanyarray(x)
    if a.dtype.kind not in "iuf":
        raise TypeError(
            f"{public}: {name} must be a number or an array of numbers; got {x!r:.60} (dtype {a.dtype})"
        )
    return a.astype(float)


def _scalar_or_array(x: Any, out: np.ndarray) -> Any:
    return out.item() if np.ndim(x) == 0 and not isinstance(x, np.ndarray) else out


def hz_to_mel(frequencies: Any, *, htk: bool = False) -> Any:
    """Hz to mels: Slaney's scale (``htk=False``) or HTK's ``2595 log10(1 + f / 700)``.

    Parameters
    ----------
    frequencies : float or array, Hz
    htk : bool
        Use the HTK formula instead of Slaney's.

    Returns
    -------
    float or array (same shape), mels

    Examples
    --------
    >>> import specux
    >>> round(specux.hz_to_mel(1000.0), 6)   # Slaney's scale: linear to 1 kHz, 15 mels there
    15.0
    >>> round(specux.hz_to_mel(1000.0, htk=True), 3)
    999.986
    """
    f = _values(frequencies, "frequencies", "hz_to_mel")
    if _validate.flag(htk, "htk", "hz_to_mel"):
        mels = 2595.0 * np.log10(1.0 + f / 700.0)
    else:
        mels = f / _F_SP
        with np.errstate(divide="ignore", invalid="ignore"):
            logpart = _MIN_LOG_MEL + np.log(f / _MIN_LOG_HZ) / _LOGSTEP
        mels = np.where(f >= _MIN_LOG_HZ, logpart, mels)
    return _scalar_or_array(frequencies, np.asarray(mels))


def mel_to_hz(mels: Any, *, htk: bool = False) -> Any:
    """Mels to Hz, the inverse of :func:`hz_to_mel` (same scales).

    Parameters
    ----------
    mels : float or array, mels
    htk : bool
        Use the HTK formula instead of Slaney's.

    Returns
    -------
    float or array (same shape), Hz

    Examples
    --------
    >>> import specux
    >>> round(specux.mel_to_hz(15.0), 6)
    1000.0
    >>> round(specux.mel_to_hz(specux.hz_to_mel(440.0, htk=True), htk=True), 6)
    440.0
    """
    m = _values(mels, "mels", "mel_to_hz")
    if _validate.flag(htk, "htk", "mel_to_hz"):
        freqs = 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    else:
        freqs = np.where(m >= _MIN_LOG_MEL, _MIN_LOG_HZ * np.exp(_LOGSTEP * (m - _MIN_LOG_MEL)), _F_SP * m)
    return _scalar_or_array(mels, np.asarray(freqs))


def hz_to_midi(frequencies: Any) -> Any:
    """Hz to MIDI note numbers (fractional): ``12 log2(f / 440) + 69``.

    Parameters
    ----------
    frequencies : float or array, Hz

    Returns
    -------
    float or array (same shape)
        MIDI note numbers; 0 Hz gives ``-inf``.

    Examples
    --------
    >>> import specux
    >>> specux.hz_to_midi(440.0)
    69.0
    >>> specux.hz_to_midi([220.0, 880.0]).tolist()
    [57.0, 81.0]
    """
    f = _values(frequencies, "frequencies", "hz_to_midi")
    with np.errstate(divide="ignore"):
        out = 12.0 * (np.log2(f) - math.log2(440.0)) + 69.0
    return _scalar_or_array(frequencies, np.asarray(out))


def midi_to_hz(notes: Any) -> Any:
    """MIDI note numbers to Hz: ``440 * 2 ** ((n - 69) / 12)``.

    Parameters
    ----------
    notes : float or array
        MIDI note numbers (fractional allowed).

    Returns
    -------
    float or array (same shape), Hz

    Examples
    --------
    >>> import specux
    >>> specux.midi_to_hz(69)
    440.0
    >>> round(specux.midi_to_hz(60), 3)   # middle C
    261.626
    """
    n = _values(notes, "notes", "midi_to_hz")
    return _scalar_or_array(notes, np.asarray(440.0 * 2.0 ** ((n - 69.0) / 12.0)))


def _a440(tuning: Any, bins_per_octave: Any, public: str) -> float:
    tuning = _validate.real(tuning, "tuning", public)
    return 440.0 * 2.0 ** (tuning / _validate.positive_int(bins_per_octave, "bins_per_octave", public))


def hz_to_octs(frequencies: Any, *, tuning: float = 0.0, bins_per_octave: int = 12) -> Any:
    """Hz to octave numbers, where octave 0 starts at A0 / 16 for ``tuning=0`` (librosa's convention).

    Parameters
    ----------
    frequencies : float or array, Hz
    tuning : float
        Deviation from A440 tuning, in fractions of a bin.
    bins_per_octave : int
        Bins per octave: the size of the bin ``tuning`` counts in.

    Returns
    -------
    float or array (same shape)
        Octave numbers; 0 Hz gives ``-inf``.

    Examples
    --------
    >>> import specux
    >>> specux.hz_to_octs(440.0)
    4.0
    >>> round(specux.hz_to_octs(440.0, tuning=0.5), 4)   # half a semitone sharp shifts the octaves down
    3.9583
    """
    a440 = _a440(tuning, bins_per_octave, "hz_to_octs")
    f = _values(frequencies, "frequencies", "hz_to_octs")
    with np.errstate(divide="ignore"):
        out = np.log2(f / (a440 / 16.0))
    return _scalar_or_array(frequencies, np.asarray(out))


def octs_to_hz(octs: Any, *, tuning: float = 0.0, bins_per_octave: int = 12) -> Any:
    """Octave numbers to Hz, the inverse of :func:`hz_to_octs`.

    Parameters
    ----------
    octs : float or array
        Octave numbers (octave 0 starts at A0 / 16 for ``tuning=0``).
    tuning : float
        Deviation from A440 tuning, in fractions of a bin.
    bins_per_octave : int
        Bins per octave: the size of the bin ``tuning`` counts in.

    Returns
    -------
    float or array (same shape), Hz

    Examples
    --------
    >>> import specux
    >>> specux.octs_to_hz(4.0)
    440.0
    """
    a440 = _a440(tuning, bins_per_octave, "octs_to_hz")
    o = _values(octs, "octs", "octs_to_hz")
    return _scalar_or_array(octs, np.asarray((a440 / 16.0) * 2.0**o))


_NOTE = re.compile(r"^\s*([A-Ga-g])([#♯b!♭𝄪𝄫]*)([+-]?\d+)?\s*$")
_PITCH = {"C": 0, "D": 2, "E": 4, "F": 5, "G": 7, "A": 9, "B": 11}
_ACC = {"#": 1, "♯": 1, "b": -1, "!": -1, "♭": -1, "𝄪": 2, "𝄫": -2}


def note_to_hz(note: str | Any) -> Any:
    """Note names (``"A4"``, ``"C#3"``, ``"Eb5"``; octave 0 when omitted) to Hz; a list gives an array.

    Parameters
    ----------
    note : str or sequence of str
        Letter, accidentals (``#``, ``b``, ``!`` and the Unicode sharps, flats and doubles) and octave.

    Returns
    -------
    float, or array of float for a sequence, Hz

    Raises
    ------
    ValueError
        A name that is not a note.

    Examples
    --------
    >>> import specux
    >>> specux.note_to_hz("A4")
    440.0
    >>> specux.note_to_hz(["A3", "A5"]).tolist()
    [220.0, 880.0]
    """
    if isinstance(note, str):
        match = _NOTE.match(note)
        if match is None:
            raise ValueError(f"note_to_hz: improper note format {note!r} (expected e.g. 'A4', 'C#3', 'Eb5')")
        letter, acc, octave = match.groups()
        midi = 12 * (int(octave or 0) + 1) + _PITCH[letter.upper()] + sum(_ACC[c] for c in acc)
        return midi_to_hz(midi)
    return np.array([note_to_hz(n) for n in note], dtype=float)


def tiny(x: Any) -> float:
    """Smallest positive normal number of ``x``'s floating precision (float64 for non-float input).

    Parameters
    ----------
    x : number, array, tensor or dtype
        What to read the precision from; complex types give their real precision.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> specux.tiny(np.float32) == float(np.finfo(np.float32).tiny)
    True
    >>> specux.tiny(np.zeros(3, dtype=np.complex128)) == float(np.finfo(np.float64).tiny)
    True
    """
    if isinstance(x, (np.dtype, type)):
        dtype = np.dtype(x)
    else:
        dtype = np.dtype(_arrays.real_dtype_name(x)) if hasattr(x, "dtype") else np.asarray(x).dtype
    if np.issubdtype(dtype, np.complexfloating):
        dtype = np.finfo(dtype).dtype
    if not np.issubdtype(dtype, np.floating):
        dtype = np.dtype(np.float64)
    return float(np.finfo(dtype).tiny)


# --- decibels
# ------------------------------------------------------------------------------------------------


def _ref_value(ref: float | Callable[[np.ndarray], Any], magnitude: np.ndarray, public: str) -> float:
    """``|ref|`` (librosa's rule: the sign of a reference is dropped, then it is floored at amin), or
    ``|ref(magnitude)|`` for a callable, which must give one real number that is not NaN."""
    if not callable(ref):
        return float(np.abs(ref))
    value = ref(magnitude)
    if not _validate.is_number(value):
        raise TypeError(
            f"{public}: ref, a callable, must return a real number (e.g. ref=np.max); got {value!r:.60} of "
            f"type {type(value).__name__}"
        )
    if math.isnan(float(value)):
        # max(amin, nan) would silently take amin as the reference; librosa's output is all NaN
        raise ValueError(
            f"{public}: ref, a callable, returned nan (does S hold NaN? ref=np.nanmax ignores it)"
        )
    return abs(float(value))


def _check_db_args(ref: Any, amin: float, top_db: float | None, public: str) -> tuple[float, float | None]:
    """``(amin, top_db)`` checked and converted; ``ref`` must be a callable or a number, not NaN."""
    if not callable(ref):
        value = _validate.real(ref, "ref", public, finite=False)
        if math.isnan(value):
            # max(amin, nan) would silently take amin as the reference; librosa's output is all NaN
            raise ValueError(
                f"{public}: ref must be a callable or a number, not nan (its magnitude, floored at amin, "
                "is the 0 dB reference)"
            )
    amin = _validate.real(amin, "amin", public)
    if not amin > 0:
        raise ValueError(f"{public}: amin must be strictly positive; got {amin}")
    top_db = _validate.optional_real(top_db, "top_db", public, finite=False)
    if top_db is not None and not top_db >= 0:
        raise ValueError(f"{public}: top_db must be non-negative (or None); got {top_db}")
    return amin, top_db


def _warn_complex(is_complex: bool, public: str, instead: str, dtype: Any) -> None:
    if is_complex:
        # librosa warns too: a complex spectrum passed where magnitudes were meant loses its phase here
        warnings.warn(
            f"{public}: S is complex ({dtype}); only its magnitude is converted and the phase is "
            f"discarded. Pass {instead} to convert magnitudes on purpose (and silence this warning)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def _refuse_grad(S: Any, public: str) -> None:
    """A torch tensor that requires grad (with grad enabled) is refused: the host conversion would detach it
    and drop its gradient without a word."""
    if _arrays.is_torch(S) and S.requires_grad:
        import torch

        if torch.is_grad_enabled():
            from specux.errors import UnsupportedOperationError

            raise UnsupportedOperationError(
                f"specux.{public}: gradients are not available for this operation yet; pass a tensor that "
                "does not require grad (S.detach()) or call it under torch.no_grad() (specux.mfcc's dB stage "
                "is differentiable)"
            )


def _db_input(S: Any, public: str) -> np.ndarray:
    """``S`` as a numpy array of numbers (bool, int, float or complex); strings and objects are a TypeError
    naming S (numpy's "could not convert string to float" names nothing)."""
    x = _arrays.to_numpy(S) if _arrays.is_torch(S) else np.asarray(S)
    if x.dtype.kind not in "biufc":
        raise TypeError(
            f"{public}: S must be an array of numbers (real, or complex for its magnitude); got dtype "
            f"{x.dtype}"
        )
    return x


def _power_to_db_numpy(
    S: np.ndarray, ref: float | Callable, amin: float, top_db: float | None, public: str = "power_to_db"
) -> np.ndarray:
    magnitude = np.abs(S) if np.iscomplexobj(S) else S
    if not np.issubdtype(magnitude.dtype, np.floating):
        magnitude = magnitude.astype(np.float64)
    ref_value = _ref_value(ref, magnitude, public)
    log_spec = 10.0 * np.log10(np.maximum(magnitude, magnitude.dtype.type(amin)))
    log_spec -= magnitude.dtype.type(10.0 * np.log10(max(amin, ref_value)))
    if top_db is not None and log_spec.size:
        # NaN frames stay NaN but do not poison the floor of every other frame (librosa's max would).
        with np.errstate(invalid="ignore"):
            peak = np.nanmax(log_spec) if np.isnan(log_spec).any() else log_spec.max()
        if np.isfinite(peak):
            log_spec = np.maximum(log_spec, log_spec.dtype.type(peak - top_db))
    return log_spec

#: the ``ref`` callables a device backend computes itself (the maximum of the magnitude, by a reduction)
_DEVICE_MAX_REFS = (np.max, np.amax)


def _db_on_device(
    S: Any, backend: str, ref: Any, amin: float, top_db: float | None, amplitude: bool
) -> tuple[bool, Any]:
    """``(True, result)`` when the dB conversion of ``S`` runs on a device backend, ``(False, None)`` when it
    runs on the host. A host input (numpy, torch CPU, lists) with ``backend="auto"`` stays on the host (an
    upload would cost more than the logarithm); a cupy array / torch CUDA tensor runs where it lives; a named
    backend is strict (:func:`specux._backends.registry.select`)."""
    public = "amplitude_to_db" if amplitude else "power_to_db"
    if not isinstance(backend, str):
        raise TypeError(f"{public}: backend must be a str ('auto', 'cpu', 'cuda', 'metal' or 'opencl'); got "
                        f"{type(backend).__name__}")
    device_input = _arrays.is_cupy(S) or (_arrays.is_torch(S) and S.device.type != "cpu")
    if backend == "auto" and not device_input:
        return False, None
    chosen, x = _dispatch.prepare(S, backend, public, public)
    if chosen.name == "cpu":
        return False, None
    from specux._runtime.feature_exec import DbParams  # the device side, imported only when used

    if callable(ref):
        if not any(ref is fn for fn in _DEVICE_MAX_REFS):
            raise ValueError(
                f"{public}: on the {chosen.name} backend ref must be a number or np.max (the maximum of the "
                f"magnitude, computed on the device); got {getattr(ref, '__name__', ref)!r}. Pass a number, "
                "or backend='cpu' with host data for another callable"
            )
        ref_value = None
    else:
        ref_value = abs(float(ref))
    kind = str(getattr(x, "dtype", "")).replace("torch.", "")
    accepted = sorted(chosen.dtypes | {"float16"})
    complex_ok = {"complex64": "float32", "complex128": "float64"}
    real = complex_ok.get(kind, kind)
    if real not in accepted:
        raise TypeError(
            f"{public}: S on the {chosen.name} backend must be float16 (storage), "
            f"{', '.join(a for a in accepted if a != 'float16')} or their complex types; "
            f"got {kind or type(x).__name__}"
        )
    _warn_complex(kind in complex_ok, public, "np.abs(S)" if amplitude else "np.abs(S) ** 2", kind)
    out = getattr(chosen, public)(x, DbParams(amplitude, ref_value, amin, top_db))
    return True, _dispatch.finish(out, S)


@dask_route("power_to_db")
@backends_doc("power_to_db")
def power_to_db(
    S: Any,
    *,
    ref: float | Callable = 1.0,
    amin: float = 1e-10,
    top_db: float | None = 80.0,
    backend: str = "auto",
) -> Any:
    """Power spectrogram to decibels: ``10 log10(max(S, amin) / ref)``, floored at ``max - top_db``.

    Parameters
    ----------
    S : array, shape (...), power (non-negative; complex input uses its magnitude, with a UserWarning)
    ref : float or callable
        Reference power (0 dB), or a function of the array giving it (e.g. ``np.max``); its magnitude is
        used, floored at ``amin``, as librosa does. NaN (or a callable giving NaN or no number) is refused.
    amin : float
        Floor applied to ``S`` and ``ref`` before the logarithm (> 0).
    top_db : float or None
        Floor the output at ``max(output) - top_db``, the maximum taken over the whole array (as librosa does,
        including any batch dimensions), ignoring NaN. ``None``: no floor.
    backend : {"auto", "cpu", "cuda", "metal", "opencl"}
        Where to compute. ``"auto"``: a cupy array or a torch CUDA tensor on the cuda backend (the result
        stays on its device), host data on the cpu. A named backend is strict, as for every transform (see
        :func:`specux.backends`). On a device backend ``ref`` is a number or ``np.max``, and float16 input is
        stored as half and computed (and returned) in float32.

    Returns
    -------
    array, same shape, dB; float of ``S``'s precision. NaN stays NaN.

    {backends} Autograd: not yet (a tensor that requires grad is refused).

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> specux.power_to_db(np.array([1.0, 10.0, 100.0])).tolist()
    [0.0, 10.0, 20.0]
    >>> specux.power_to_db(np.array([1e-12, 1.0]), ref=np.max, top_db=60.0).tolist()   # floored at -60 dB
    [-60.0, 0.0]
    """
    amin, top_db = _check_db_args(ref, amin, top_db, "power_to_db")
    on_device, out = _db_on_device(S, backend, ref, amin, top_db, amplitude=False)
    if on_device:
        return out
    _refuse_grad(S, "power_to_db")
    x = _db_input(S, "power_to_db")
    _warn_complex(np.iscomplexobj(x), "power_to_db", "np.abs(S) ** 2", x.dtype)
    return _arrays.like(_power_to_db_numpy(x, ref, amin, top_db), S)


@dask_route("amplitude_to_db")
@backends_doc("amplitude_to_db")
def amplitude_to_db(
    S: Any,
    *,
    ref: float | Callable = 1.0,
    amin: float = 1e-5,
    top_db: float | None = 80.0,
    backend: str = "auto",
) -> Any:
    """Amplitude spectrogram to decibels: ``20 log10(max(|S|, amin) / ref)``, floored at ``max - top_db``.

    Complex ``S`` is converted by its magnitude with a ``UserWarning`` (the phase is discarded), as librosa
    does. {backends} Autograd: not yet (a tensor that requires grad is refused).

    Parameters
    ----------
    S : array, shape (...), amplitude
        Magnitudes (or complex values, whose magnitude is used).
    ref : float or callable
        Reference amplitude (0 dB), or a function of ``|S|`` giving it (e.g. ``np.max``), as in
        :func:`power_to_db`.
    amin : float
        Floor applied to ``|S|`` and ``ref`` before the logarithm (> 0), an amplitude.
    top_db : float or None
        Floor the output at ``max(output) - top_db`` (whole array, ignoring NaN). ``None``: no floor.
    backend : {"auto", "cpu", "cuda", "metal", "opencl"}
        Where to compute, as in :func:`power_to_db`.

    Returns
    -------
    array, same shape, dB; float of ``S``'s precision.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> specux.amplitude_to_db(np.array([1.0, 10.0, 100.0])).tolist()
    [0.0, 20.0, 40.0]
    """
    amin, top_db = _check_db_args(ref, amin, top_db, "amplitude_to_db")
    on_device, out = _db_on_device(S, backend, ref, amin, top_db, amplitude=True)
    if on_device:
        return out
    _refuse_grad(S, "amplitude_to_db")
    x = _db_input(S, "amplitude_to_db")
    _warn_complex(np.iscomplexobj(x), "amplitude_to_db", "np.abs(S)", x.dtype)
    magnitude = np.abs(x)
    ref_value = _ref_value(ref, magnitude, "amplitude_to_db")
    out = _power_to_db_numpy(np.square(magnitude), ref_value**2, amin**2, top_db)
    return _arrays.like(out, S)


@dask_route("db_to_power")
def db_to_power(S_db: Any, *, ref: float = 1.0) -> Any:
    """Decibels to power: ``ref * 10 ** (S_db / 10)``, the inverse of :func:`power_to_db` without a floor.

    Backends: cpu.

    Parameters
    ----------
    S_db : array, dB
    ref : float
        The power of 0 dB.

    Returns
    -------
    array, same shape, power

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> specux.db_to_power(np.array([0.0, 10.0, 20.0])).tolist()
    [1.0, 10.0, 100.0]
    """
    ref = _validate.real(ref, "ref", "db_to_power", finite=False)
    x = _arrays.to_numpy(S_db) if _arrays.is_torch(S_db) else np.asarray(S_db)
    return _arrays.like(ref * np.power(x.dtype.type(10.0) if x.dtype.kind == "f" else 10.0, 0.1 * x), S_db)


@dask_route("db_to_amplitude")
def db_to_amplitude(S_db: Any, *, ref: float = 1.0) -> Any:
    """Decibels to amplitude: ``ref * 10 ** (S_db / 20)``, the inverse of :func:`amplitude_to_db` without a
    floor.

    Backends: cpu.

    Parameters
    ----------
    S_db : array, dB
    ref : float
        The amplitude of 0 dB.

    Returns
    -------
    array, same shape, amplitude

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> specux.db_to_amplitude(np.array([0.0, 20.0])).tolist()
    [1.0, 10.0]
    """
    ref = _validate.real(ref, "ref", "db_to_amplitude", finite=False)
    x = _arrays.to_numpy(S_db) if _arrays.is_torch(S_db) else np.asarray(S_db)
    return _arrays.like(ref * np.power(x.dtype.type(10.0) if x.dtype.kind == "f" else 10.0, 0.05 * x), S_db)
