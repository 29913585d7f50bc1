"""specux: spectral transforms with one API on the CPU and (as they are built) GPU backends.

The functional API mirrors the libraries users know: librosa for stft / istft / melspectrogram / mfcc / cqt /
vqt / chroma, torchaudio for lfcc, scipy.signal for fftconvolve and numpy.fft for :mod:`specux.fft`. Every
transform takes ``backend="auto"``; :func:`backends` lists the backends and why any is unavailable. Importing
specux imports no GPU library and not torch.
"""

from specux import fft, filters, plans
from specux._backends.registry import BackendInfo
from specux._backends.registry import backends as backends
from specux._determinism import deterministic, is_deterministic
from specux.convert import (
    amplitude_to_db,
    db_to_amplitude,
    db_to_power,
    hz_to_mel,
    hz_to_midi,
    hz_to_octs,
    mel_to_hz,
    midi_to_hz,
    note_to_hz,
    octs_to_hz,
    power_to_db,
    tiny,
)
from specux.errors import (
    BackendUnavailableError,
    EmptyFilterWarning,
    MemoryLimitError,
    NolaError,
    UnsupportedOperationError,
)
from specux.ops.cepstral import lfcc, mfcc
from specux.ops.chroma import chroma_cqt, chroma_stft
from specux.ops.convolve import fftconvolve
from specux.ops.cqt import cqt, vqt
from specux.ops.inverse import griffinlim, mel_to_audio, mel_to_stft, mfcc_to_audio, mfcc_to_mel
from specux.ops.inverse_cq import griffinlim_cqt, icqt
from specux.ops.mel import melspectrogram
from specux.ops.stft import istft, stft
from specux.ops.tuning import estimate_tuning, pitch_tuning
from specux.plans import autotune, autotune_op

__version__ = "0.1.0"

__all__ = [
    "BackendInfo",
    "BackendUnavailableError",
    "EmptyFilterWarning",
    "MemoryLimitError",
    "NolaError",
    "UnsupportedOperationError",
    "amplitude_to_db",
    "autotune",
    "autotune_op",
    "backends",
    "chroma_cqt",
    "chroma_stft",
    "cqt",
    "db_to_amplitude",
    "db_to_power",
    "deterministic",
    "estimate_tuning",
    "fft",
    "fftconvolve",
    "filters",
    "griffinlim",
    "griffinlim_cqt",
    "hz_to_mel",
    "hz_to_midi",
    "hz_to_octs",
    "icqt",
    "is_deterministic",
    "istft",
    "lfcc",
    "mel_to_audio",
    "mel_to_hz",
    "mel_to_stft",
    "melspectrogram",
    "mfcc",
    "mfcc_to_audio",
    "mfcc_to_mel",
    "midi_to_hz",
    "note_to_hz",
    "octs_to_hz",
    "pitch_tuning",
    "plans",
    "power_to_db",
    "stft",
    "tiny",
    "vqt",
]
