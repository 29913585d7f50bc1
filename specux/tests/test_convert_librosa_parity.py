"""Unit conversions against librosa 0.11."""

from __future__ import annotations

import numpy as np
import pytest

import specux

librosa = pytest.importorskip("librosa")


def test_frequency_scales():
    f = np.array([0.0, 20.0, 440.0, 999.9, 1000.0, 1000.1, 8000.0, 20000.0])
    for htk in (False, True):
        np.testing.assert_allclose(specux.hz_to_mel(f, htk=htk), librosa.hz_to_mel(f, htk=htk), rtol=1e-13)
        m = specux.hz_to_mel(f, htk=htk)
        np.testing.assert_allclose(specux.mel_to_hz(m, htk=htk), librosa.mel_to_hz(m, htk=htk), rtol=1e-13)
        np.testing.assert_allclose(specux.mel_to_hz(m, htk=htk), f, rtol=1e-12, atol=1e-9)
    assert isinstance(specux.hz_to_mel(440.0), float)
    fp = f[1:]
    np.testing.assert_allclose(specux.hz_to_midi(fp), librosa.hz_to_midi(fp), rtol=1e-13)
    np.testing.assert_allclose(
        specux.midi_to_hz([21, 60.5, 69]), librosa.midi_to_hz([21, 60.5, 69]), rtol=1e-13
    )
    for tuning, bpo in ((0.0, 12), (-0.3, 24)):
        kw = dict(tuning=tuning, bins_per_octave=bpo)
        np.testing.assert_allclose(specux.hz_to_octs(fp, **kw), librosa.hz_to_octs(fp, **kw), rtol=1e-13)
        np.testing.assert_allclose(specux.octs_to_hz([1.0, 4.5], **kw), librosa.octs_to_hz([1.0, 4.5], **kw))
    for note in ("A4", "C#3", "Eb5", "B-1", "G♯2"):
        assert specux.note_to_hz(note) == pytest.approx(librosa.note_to_hz(note), rel=1e-13)
    np.testing.assert_allclose(specux.note_to_hz(["C4", "A4"]), librosa.note_to_hz(["C4", "A4"]))
    with pytest.raises(ValueError, match="improper note format"):
        specux.note_to_hz("H2")


def test_decibels():
    rng = np.random.default_rng(0)
    S = rng.random((2, 30, 40)) ** 4
    for kw in (dict(), dict(ref=np.max), dict(top_db=None), dict(amin=1e-5, top_db=40.0), dict(ref=0.3)):
        np.testing.assert_allclose(specux.power_to_db(S, **kw), librosa.power_to_db(S, **kw), rtol=1e-12)
        np.testing.assert_allclose(
            specux.amplitude_to_db(S, **kw), librosa.amplitude_to_db(S, **kw), rtol=1e-12
        )
    D = specux.power_to_db(S.astype(np.float32))
    assert D.dtype == np.float32
    np.testing.assert_allclose(specux.db_to_power(D), librosa.db_to_power(D), rtol=1e-6)
    np.testing.assert_allclose(
        specux.db_to_amplitude(D, ref=2.0), librosa.db_to_amplitude(D, ref=2.0), rtol=1e-6
    )
    with pytest.raises(ValueError, match="amin must be strictly positive"):
        specux.power_to_db(S, amin=0)
    with pytest.raises(ValueError, match="top_db must be non-negative"):
        specux.amplitude_to_db(S, top_db=-1)


def test_nan_does_not_poison_the_floor():
    S = np.array([[1.0, 1e-12, np.nan], [1e-3, 1.0, 1.0]])
    out = specux.power_to_db(S)
    assert np.isnan(out[0, 2]) and np.isfinite(np.delete(out.ravel(), 2)).all()
    assert out[0, 1] == -80.0


def test_tiny():
    assert specux.tiny(np.float32(1.0)) == np.finfo(np.float32).tiny
    assert specux.tiny(np.zeros(3, np.complex64)) == np.finfo(np.float32).tiny
    assert specux.tiny(1) == np.finfo(np.float64).tiny == librosa.util.tiny(1.0)
    assert specux.tiny(np.float64) == np.finfo(np.float64).tiny
