"""Types of parameters (issue 19, items 4 and 5): a flag takes a bool (numpy's too), a number takes a number
(numpy's too) and never a string or a bool; anything else is a TypeError that names the parameter."""

from __future__ import annotations

import numpy as np
import pytest

import specux
from specux import filters

SR = 16000


def _y(n: int = 4000) -> np.ndarray:
    return np.random.default_rng(1).standard_normal(n).astype(np.float32)


_D = np.ones((129, 12), np.complex64)

#: (name, call taking the flag's value, the flag's name)
FLAGS = [
    ("stft", lambda v: specux.stft(_y(), n_fft=256, center=v), "center"),
    ("istft", lambda v: specux.istft(_D, center=v), "center"),
    ("melspectrogram center", lambda v: specux.melspectrogram(_y(), sr=SR, n_fft=256, center=v), "center"),
    ("melspectrogram htk", lambda v: specux.melspectrogram(_y(), sr=SR, n_fft=256, n_mels=20, htk=v), "htk"),
    ("mfcc htk", lambda v: specux.mfcc(_y(), sr=SR, n_fft=256, n_mels=20, htk=v), "htk"),
    ("mfcc center", lambda v: specux.mfcc(_y(), sr=SR, n_fft=256, n_mels=20, center=v), "center"),
    ("lfcc log_lf", lambda v: specux.lfcc(_y(), n_filter=40, log_lf=v), "log_lf"),
    ("lfcc center", lambda v: specux.lfcc(_y(), n_filter=40, center=v), "center"),
    ("cqt scale", lambda v: specux.cqt(_y(8000), sr=SR, n_bins=24, fmin=200.0, scale=v), "scale"),
    ("vqt scale", lambda v: specux.vqt(_y(8000), sr=SR, n_bins=24, fmin=200.0, scale=v), "scale"),
    ("chroma_stft base_c", lambda v: specux.chroma_stft(_y(), sr=SR, tuning=0.0, base_c=v), "base_c"),
    ("chroma_stft center", lambda v: specux.chroma_stft(_y(), sr=SR, tuning=0.0, center=v), "center"),
    ("hz_to_mel", lambda v: specux.hz_to_mel(440.0, htk=v), "htk"),
    ("mel_to_hz", lambda v: specux.mel_to_hz(10.0, htk=v), "htk"),
    ("mel_frequencies", lambda v: filters.mel_frequencies(10, htk=v), "htk"),
    ("filters.mel", lambda v: filters.mel(sr=SR, n_fft=512, n_mels=20, htk=v), "htk"),
    ("filters.mel_torchaudio", lambda v: filters.mel_torchaudio(sr=SR, n_fft=512, n_mels=20, htk=v), "htk"),
    ("filters.chroma", lambda v: filters.chroma(sr=SR, n_fft=512, base_c=v), "base_c"),
    ("filters.get_window", lambda v: filters.get_window("hann", 16, fftbins=v), "fftbins"),
    (
        "filters.wavelet",
        lambda v: filters.wavelet(freqs=np.array([440.0, 880.0]), sr=SR, pad_fft=v),
        "pad_fft",
    ),
    ("filters.constant_q", lambda v: filters.constant_q(sr=SR, fmin=200.0, n_bins=12, pad_fft=v), "pad_fft"),
    ("filters.cq_to_chroma", lambda v: filters.cq_to_chroma(24, base_c=v), "base_c"),
]
IDS = [f[0] for f in FLAGS]


@pytest.mark.parametrize("name,call,flag", FLAGS, ids=IDS)
@pytest.mark.parametrize("bad", ["False", "no", "", 0, 1, None, 1.0], ids=repr)
def test_flags_refuse_anything_but_bools(name, call, flag, bad):
    if bad is None and flag == "htk" and name.startswith(("melspectrogram", "mfcc")):
        pytest.skip("htk=None is the derived default there")
    with pytest.raises(TypeError, match=rf"{flag} must be a bool \(True or False\); got {bad!r}"):
        call(bad)


@pytest.mark.parametrize("name,call,flag", FLAGS, ids=IDS)
def test_flags_take_numpy_bools(name, call, flag):
    for value in (False, True):
        got, want = call(np.bool_(value)), call(value)
        if isinstance(want, tuple):
            got, want = got[0], want[0]
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_the_string_false_no_longer_means_true():
    y = _y()
    with pytest.raises(TypeError, match="center"):
        specux.stft(y, center="False")
    with pytest.raises(TypeError, match="htk"):
        specux.melspectrogram(y, sr=SR, htk="no")
    np.testing.assert_array_equal(specux.stft(y, center=np.False_), specux.stft(y, center=False))


#: (name, call taking the number, the parameter's name); each call works with the number itself
NUMBERS = [
    ("melspectrogram sr", lambda v: specux.melspectrogram(_y(), sr=v, n_fft=256, n_mels=20), "sr", 16000),
    (
        "melspectrogram fmin",
        lambda v: specux.melspectrogram(_y(), sr=SR, n_fft=256, n_mels=20, fmin=v),
        "fmin",
        20,
    ),
    (
        "melspectrogram fmax",
        lambda v: specux.melspectrogram(_y(), sr=SR, n_fft=256, n_mels=20, fmax=v),
        "fmax",
        7000,
    ),
    (
        "melspectrogram power",
        lambda v: specux.melspectrogram(_y(), sr=SR, n_fft=256, n_mels=20, power=v),
        "power",
        2,
    ),
    ("mfcc lifter", lambda v: specux.mfcc(_y(), sr=SR, n_fft=256, n_mels=20, lifter=v), "lifter", 22),
    ("mfcc top_db", lambda v: specux.mfcc(_y(), sr=SR, n_fft=256, n_mels=20, top_db=v), "top_db", 80),
    ("stft n_fft", lambda v: specux.stft(_y(), n_fft=v), "n_fft", 256),
    ("cqt sr", lambda v: specux.cqt(_y(8000), sr=v, n_bins=24, fmin=200.0), "sr", 16000),
    ("cqt fmin", lambda v: specux.cqt(_y(8000), sr=SR, n_bins=24, fmin=v), "fmin", 200),
    (
        "cqt filter_scale",
        lambda v: specux.cqt(_y(8000), sr=SR, n_bins=24, fmin=200.0, filter_scale=v),
        "filter_scale",
        1,
    ),
    ("cqt tuning", lambda v: specux.cqt(_y(8000), sr=SR, n_bins=24, fmin=200.0, tuning=v), "tuning", 0),
    ("chroma_stft sr", lambda v: specux.chroma_stft(_y(), sr=v, tuning=0.0), "sr", 16000),
    ("chroma_stft tuning", lambda v: specux.chroma_stft(_y(), sr=SR, tuning=v), "tuning", 0),
    ("chroma_stft ctroct", lambda v: specux.chroma_stft(_y(), sr=SR, tuning=0.0, ctroct=v), "ctroct", 5),
    (
        "chroma_cqt sr",
        lambda v: specux.chroma_cqt(_y(8000), sr=v, fmin=100.0, n_octaves=3, tuning=0.0),
        "sr",
        16000,
    ),
    (
        "chroma_cqt threshold",
        lambda v: specux.chroma_cqt(_y(8000), sr=SR, fmin=100.0, n_octaves=3, tuning=0.0, threshold=v),
        "threshold",
        0,
    ),
    ("lfcc sample_rate", lambda v: specux.lfcc(_y(), sample_rate=v, n_filter=40), "sample_rate", 16000),
    ("lfcc f_min", lambda v: specux.lfcc(_y(), n_filter=40, f_min=v), "f_min", 0),
    ("lfcc power", lambda v: specux.lfcc(_y(), n_filter=40, power=v), "power", 2),
    (
        "pitch_tuning resolution",
        lambda v: specux.pitch_tuning([440.0, 441.0], resolution=v),
        "resolution",
        0.25,
    ),
    ("estimate_tuning sr", lambda v: specux.estimate_tuning(_y(), sr=v), "sr", 16000),
    ("amplitude_to_db amin", lambda v: specux.amplitude_to_db(np.ones(4), amin=v), "amin", 1e-5),
    ("amplitude_to_db top_db", lambda v: specux.amplitude_to_db(np.ones(4), top_db=v), "top_db", 80),
    ("amplitude_to_db ref", lambda v: specux.amplitude_to_db(np.ones(4), ref=v), "ref", 1),
    ("power_to_db amin", lambda v: specux.power_to_db(np.ones(4), amin=v), "amin", 1e-10),
    ("db_to_power ref", lambda v: specux.db_to_power(np.ones(4), ref=v), "ref", 1),
    ("db_to_amplitude ref", lambda v: specux.db_to_amplitude(np.ones(4), ref=v), "ref", 1),
    ("hz_to_mel", lambda v: specux.hz_to_mel(v), "frequencies", 440),
    ("mel_to_hz", lambda v: specux.mel_to_hz(v), "mels", 10),
    ("hz_to_midi", lambda v: specux.hz_to_midi(v), "frequencies", 440),
    ("midi_to_hz", lambda v: specux.midi_to_hz(v), "notes", 69),
    ("hz_to_octs tuning", lambda v: specux.hz_to_octs(440.0, tuning=v), "tuning", 0),
    ("fftfreq d", lambda v: specux.fft.fftfreq(8, d=v), "d", 2),
    ("rfftfreq d", lambda v: specux.fft.rfftfreq(8, d=v), "d", 2),
    ("filters.mel sr", lambda v: filters.mel(sr=v, n_fft=512, n_mels=20), "sr", 16000),
    ("filters.mel fmin", lambda v: filters.mel(sr=SR, n_fft=512, n_mels=20, fmin=v), "fmin", 10),
    ("filters.linear sr", lambda v: filters.linear(sr=v, n_fft=512, n_filter=20), "sr", 16000),
    ("filters.chroma sr", lambda v: filters.chroma(sr=v, n_fft=512), "sr", 16000),
    ("filters.chroma tuning", lambda v: filters.chroma(sr=SR, n_fft=512, tuning=v), "tuning", 0),
    ("filters.cq_frequencies fmin", lambda v: filters.cq_frequencies(12, fmin=v), "fmin", 100),
    ("plans.describe n", lambda v: specux.plans.describe(v), "n", 256),
]
NUMBER_IDS = [n[0] for n in NUMBERS]


@pytest.mark.parametrize("name,call,param,good", NUMBERS, ids=NUMBER_IDS)
def test_strings_and_bools_are_not_numbers(name, call, param, good):
    for bad in (str(good), True):
        with pytest.raises(TypeError, match=param):
            call(bad)


@pytest.mark.parametrize("name,call,param,good", NUMBERS, ids=NUMBER_IDS)
def test_numpy_numbers_are_numbers(name, call, param, good):
    want = call(good)
    scalar = np.int64 if isinstance(good, int) else np.float64
    for value in (scalar(good), np.float32(good) if isinstance(good, float) else np.int32(good)):
        got = call(value)
        if isinstance(want, dict):
            assert got == want
        else:
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_the_calls_of_the_issue():
    y = _y()
    with pytest.raises(TypeError, match="melspectrogram: sr must be a positive number; got '16000'"):
        specux.melspectrogram(y, sr="16000")
    with pytest.raises(TypeError, match="cqt: sr must be a positive number; got '16000'"):
        specux.cqt(_y(8000), sr="16000")
    with pytest.raises(TypeError, match="chroma_stft: sr must be a positive number; got '16000'"):
        specux.chroma_stft(y, sr="16000")
    with pytest.raises(TypeError, match="lfcc: sample_rate must be a positive number; got '16000'"):
        specux.lfcc(y, sample_rate="16000")


@pytest.mark.parametrize("dtype", ["float32", np.float32, np.dtype(np.float32), np.complex64])
def test_describe_takes_dtype_objects(dtype):
    assert specux.plans.describe(256, dtype) == specux.plans.describe(256, "float32")


def test_describe_names_the_precisions():
    for dtype in ("int8", np.int16, "no-such-type", None):
        with pytest.raises(ValueError, match=r"dtype must be one of \['float16', 'float32', 'float64'\]"):
            specux.plans.describe(256, dtype)
    assert specux.plans.describe(256, np.float16) == specux.plans.describe(256, "float16")


def test_a_bool_is_not_one_of_numbered_choices():
    with pytest.raises(TypeError, match="dct_type"):
        specux.mfcc(_y(), sr=SR, n_fft=256, n_mels=20, dct_type=True)
