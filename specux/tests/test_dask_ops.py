"""specux transforms on dask arrays: lazy (shape, dtype and chunks known before any compute, nothing computed
while the graph is built) and equal to the in-memory result, with chunk borders in awkward places.

Tolerance: the largest difference relative to the largest magnitude of the in-memory result (what FFT-based
results can promise element by element), per op and dtype in ``TOL``. Most cases come out bit for bit equal
(each frame's FFT is the same call); convolution pieces and bank products round differently.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import specux

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

#: relative tolerance (to the result's largest magnitude) per dtype
TOL = {np.float32: 2e-6, np.float64: 1e-12}
#: the constant-Q ops with libsoxr ("soxr_hq", their default) split along time: libsoxr computes in single
#: precision whatever the input and its FFT blocks fall elsewhere in a block than in the whole signal, so
#: float64 agrees to libsoxr's precision (measured 2.8e-7; see test_dask_constant_q.py)
TOL_SOXR = {"cqt": 1e-6, "chroma_cqt": 1e-6}
L = 6000
#: time chunkings: borders not multiples of any hop, a chunk shorter than n_fft, a one-sample chunk, and one
#: chunk
CHUNKINGS = {
    "awkward": (2501, 300, 3199),
    "one-sample": (1000, 1, 2000, 2999),
    "single": (L,),
}


def _forbid(*args, **kwargs):
    raise AssertionError("a dask graph was computed while it was being built")


def _signal(dtype, batch=3, length=L):
    t = np.arange(length) / 16000
    rng = np.random.default_rng(1)
    rows = [np.sin(2 * np.pi * (220 + 110 * k) * t) + 0.3 * rng.standard_normal(length) for k in range(batch)]
    return np.stack(rows).astype(dtype)


def _check(fn, x, chunks, dtype, op):
    """``fn`` on ``x`` as numpy and as a dask array of ``chunks``: equal within ``TOL``, built lazily."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short-signal warnings of the constant-Q cases, the same both ways
        ref = np.asarray(fn(x))
        d = da.from_array(x, chunks=chunks)
        with dask.config.set(scheduler=_forbid):
            r = fn(d)
        assert isinstance(r, da.Array), op
        assert r.shape == ref.shape and r.dtype == ref.dtype, (op, r.shape, ref.shape, r.dtype, ref.dtype)
        got = r.compute(scheduler="sync")
    assert got.shape == ref.shape and got.dtype == ref.dtype
    # every block has the shape its chunks declared (dask would not notice a mismatch until later)
    assert tuple(map(sum, r.chunks)) == ref.shape
    scale = max(float(np.abs(ref).max()), np.finfo(dtype).tiny)
    err = float(np.abs(got.astype(ref.dtype) - ref).max()) / scale
    tol = max(TOL[dtype], TOL_SOXR.get(op, 0.0))
    assert err <= tol, f"{op}: relative error {err:.3g} > {tol}"
    return r


SIGNAL_OPS = {
    "stft": lambda y: specux.stft(y, n_fft=512, hop_length=160),
    "stft_odd_reflect": lambda y: specux.stft(y, n_fft=401, hop_length=97, pad_mode="reflect"),
    "stft_nocenter_power": lambda y: specux.stft(y, n_fft=256, hop_length=100, center=False, output="power"),
    "stft_real_imag": lambda y: specux.stft(y, n_fft=128, hop_length=50, output="real_imag"),
    "melspectrogram": lambda y: specux.melspectrogram(y, sr=16000, n_fft=512, hop_length=160, n_mels=40),
    "melspectrogram_torchaudio": lambda y: specux.melspectrogram(y, compat="torchaudio", n_mels=32),
    "mfcc": lambda y: specux.mfcc(y, sr=16000, n_fft=512, hop_length=160, n_mels=40, lifter=22),
    "mfcc_torchaudio": lambda y: specux.mfcc(y, compat="torchaudio", n_mels=32, n_mfcc=13),
    "mfcc_no_floor": lambda y: specux.mfcc(y, sr=16000, n_fft=256, hop_length=64, n_mels=20, top_db=None),
    "lfcc": lambda y: specux.lfcc(y, n_filter=48, n_lfcc=20),
    "lfcc_log": lambda y: specux.lfcc(y, n_filter=48, n_lfcc=20, log_lf=True, hop_length=77),
    "chroma_stft": lambda y: specux.chroma_stft(y, sr=16000, n_fft=512, hop_length=128, tuning=0.0),
    "chroma_stft_tuning_estimated": lambda y: specux.chroma_stft(y, sr=16000, n_fft=512, hop_length=128),
    "cqt": lambda y: specux.cqt(y, sr=16000, hop_length=64, n_bins=24, fmin=220.0),
    "vqt": lambda y: specux.vqt(y, sr=16000, hop_length=32, n_bins=24, fmin=220.0, res_type="polyphase"),
    "chroma_cqt": lambda y: specux.chroma_cqt(
        y, sr=16000, hop_length=64, fmin=220.0, n_octaves=2, tuning=0.0
    ),
    "rfft": lambda y: specux.fft.rfft(y),
    "irfft": lambda y: specux.fft.irfft(y, n=1000),
    "fft_batch_axis": lambda y: specux.fft.fft(y, n=4, axis=0, norm="ortho"),
    "fftn": lambda y: specux.fft.fftn(y, s=(2, 512)),
    "irfft2": lambda y: specux.fft.irfft2(y),
    "power_to_db": lambda y: specux.power_to_db(y**2),
    "power_to_db_ref_max": lambda y: specux.power_to_db(y**2, ref=np.max, top_db=60.0),
    "amplitude_to_db": lambda y: specux.amplitude_to_db(y, ref=np.max, top_db=40.0),
    "db_to_power": lambda y: specux.db_to_power(y),
    "fftconvolve_full": lambda y: specux.fftconvolve(y, np.hanning(31)[None].astype(y.dtype), axes=-1),
    "fftconvolve_same": lambda y: specux.fftconvolve(y, _kernels(y.dtype), mode="same", axes=-1),
    "fftconvolve_valid": lambda y: specux.fftconvolve(y, _kernels(y.dtype), mode="valid", axes=-1),
}


def _kernels(dtype):
    """One kernel per row (3, 700): longer than the short chunks."""
    return np.random.default_rng(2).standard_normal((3, 700)).astype(dtype)


@pytest.mark.parametrize("chunking", list(CHUNKINGS))
@pytest.mark.parametrize("op", list(SIGNAL_OPS))
def test_signal_ops_float32(op, chunking):
    y = _signal(np.float32)
    _check(SIGNAL_OPS[op], y, ((2, 1), CHUNKINGS[chunking]), np.float32, op)


@pytest.mark.parametrize(
    "op", ["stft", "mfcc", "lfcc", "chroma_stft", "cqt", "fftconvolve_same", "amplitude_to_db"]
)
def test_signal_ops_float64(op):
    _check(SIGNAL_OPS[op], _signal(np.float64), ((1, 2), CHUNKINGS["awkward"]), np.float64, op)


def test_framing_ops_keep_time_chunks():
    """Framing transforms leave the time axis in about as many chunks as the signal (no rechunk to one)."""
    d = da.from_array(_signal(np.float32), chunks=(1, (2000, 2000, 2000)))
    r = specux.melspectrogram(d, sr=16000, n_fft=512, hop_length=160, n_mels=40)
    # frame t starts at t * 160 of the signal padded by 256: 15 frames start in the first chunk (2000 + 256)
    assert r.chunks[-1] == (15, 12, 11) and r.chunks[0] == (1, 1, 1)
    assert specux.cqt(d, sr=16000, hop_length=64, n_bins=24, fmin=220.0).chunks[-1] == (94,)


ISTFT_CASES = {
    "default": dict(n_fft=512, hop_length=128),
    "odd": dict(n_fft=401, hop_length=100, win_length=300),
    "nocenter": dict(n_fft=256, hop_length=64, center=False),
    "length_longer": dict(n_fft=256, hop_length=64, length=L + 700),
    "length_shorter": dict(n_fft=256, hop_length=64, length=2345),
}


@pytest.mark.parametrize("case", list(ISTFT_CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_istft(case, dtype):
    kw = dict(ISTFT_CASES[case])
    length = kw.pop("length", None)
    S = specux.stft(_signal(dtype), **kw)
    T = S.shape[-1]
    for frames in [(T // 3, 1, T - T // 3 - 1), (5, 2) * (T // 7) + (T - 7 * (T // 7),), (T,)]:
        frames = tuple(f for f in frames if f)
        _check(lambda D: specux.istft(D, length=length, **kw), S, ((2, 1), -1, frames), dtype, "istft")


def test_istft_nola_raise_is_one_task_along_time():
    S = specux.stft(_signal(np.float32), n_fft=256, hop_length=64)
    r = specux.istft(da.from_array(S, chunks=(1, -1, 20)), hop_length=64, nola="raise")
    assert r.numblocks == (3, 1)
    np.testing.assert_array_equal(r.compute(scheduler="sync"), specux.istft(S, hop_length=64, nola="raise"))


def test_spectrogram_inputs_map_along_frames():
    """S / C inputs: frame by frame, the frame axis keeps its chunks."""
    y = _signal(np.float32)
    S = specux.stft(y, n_fft=512, hop_length=128, output="power")
    chunks = ((3,), -1, (10, 1, 36))
    _check(lambda s: specux.melspectrogram(S=s, sr=16000, n_mels=30), S, chunks, np.float32, "mel S")
    _check(lambda s: specux.chroma_stft(S=s, sr=16000, tuning=0.0), S, chunks, np.float32, "chroma S")
    db = specux.power_to_db(specux.melspectrogram(y, sr=16000, n_fft=512, hop_length=128, n_mels=30))
    r = _check(lambda s: specux.mfcc(S=s, n_mfcc=13), db, chunks, np.float32, "mfcc S")
    assert r.chunks[-1] == (10, 1, 36)
    C = np.abs(specux.cqt(y, sr=16000, hop_length=64, n_bins=72, fmin=220.0, bins_per_octave=36))
    _check(lambda c: specux.chroma_cqt(C=c, bins_per_octave=36), C, ((2, 1), -1, (50, 44)), np.float32, "C")


def test_fftconvolve_2d_and_dask_kernel():
    rng = np.random.default_rng(3)
    img, k = rng.standard_normal((50, 61)), rng.standard_normal((5, 4))
    for mode in ("full", "same", "valid"):
        _check(lambda a, m=mode: specux.fftconvolve(a, k, mode=m), img, (13, 17), np.float64, f"2-D {mode}")
    y = _signal(np.float32)
    kernel = da.from_array(_kernels(np.float32), chunks=(1, 350))
    _check(
        lambda a: specux.fftconvolve(a, kernel, mode="same", axes=-1),
        y,
        (2, (2501, 300, 3199)),
        np.float32,
        "dask kernel",
    )


def test_lazy_without_compute_and_block_count():
    """Building the graph of every op computes nothing (the scheduler raises if called), and mfcc's graph
    holds one task per time chunk and stage, not one per sample."""
    d = da.from_array(_signal(np.float32), chunks=(1, 500))
    with dask.config.set(scheduler=_forbid):
        r = specux.mfcc(d, sr=16000, n_fft=512, hop_length=160, n_mels=40)
        assert r.numblocks == (3, 1, 12)
        assert len(r.__dask_graph__()) < 2000


def test_bad_arguments_raise_at_the_call():
    d = da.from_array(_signal(np.float32), chunks=(1, 2000))
    with pytest.raises(ValueError, match="win_length"):
        specux.stft(d, n_fft=256, win_length=512)
    with pytest.raises(ValueError, match="n_mfcc"):
        specux.mfcc(d, n_mels=10, n_mfcc=20)
    with pytest.raises(TypeError, match="dtype"):
        specux.stft(da.from_array(np.arange(5000), chunks=1000), n_fft=256)
    with pytest.raises(ValueError, match="center=False"):
        specux.stft(da.from_array(np.zeros(100, np.float32), chunks=30), n_fft=256, center=False)


def test_numpy_blocks_run_the_public_front(monkeypatch):
    """Each block goes through the public function (so a cupy block would take the cuda backend)."""
    calls = []
    original = specux.stft

    def spy(y, **kw):
        calls.append(type(y))
        return original(y, **kw)

    monkeypatch.setattr(specux, "stft", spy)
    d = da.from_array(_signal(np.float32), chunks=(3, 2000))
    original(d, n_fft=256, hop_length=64).compute(scheduler="sync")
    assert calls and all(t is np.ndarray for t in calls)


def test_overlap_spans_cover_every_frame_once():
    from specux._dask import overlap

    for length, n_fft, hop, chunks in [
        (6000, 512, 160, (2501, 300, 3199)),
        (1000, 64, 7, (1,) * 10 + (990,)),
    ]:
        edges = [0, *overlap.bounds(chunks)[1:-1], length]
        frames = overlap.n_frames(length, n_fft, hop, center=False)
        spans = overlap.frame_spans(edges, frames, hop, n_fft)
        covered = [t for t0, t1, _, _ in spans for t in range(t0, t1)]
        assert covered == list(range(frames))
        assert all(b <= length and b - a == (t1 - t0 - 1) * hop + n_fft for t0, t1, a, b in spans)


def test_tuning_estimates_are_lazy_scalars():
    y = np.sin(2 * np.pi * 445 * np.arange(2 * 22050) / 22050).astype(np.float32)
    d = da.from_array(y, chunks=5000)
    freqs = np.array([440.0, 445.0, 450.0, 452.0])
    with dask.config.set(scheduler=_forbid):
        r = specux.estimate_tuning(d, sr=22050, threshold=0.2)  # piptrack's keywords pass on
        p = specux.pitch_tuning(da.from_array(freqs, chunks=3))
    assert r.shape == () and p.shape == ()
    assert r.compute(scheduler="sync") == specux.estimate_tuning(y, sr=22050, threshold=0.2)
    assert p.compute(scheduler="sync") == specux.pitch_tuning(freqs)


def test_a_dask_array_elsewhere_than_the_signal_is_refused():
    y = _signal(np.float32)
    with pytest.raises(TypeError, match="window is a dask array; only y"):
        specux.stft(y, n_fft=256, window=da.from_array(np.hanning(256)))


def test_signal_and_spectrogram_both_given():
    """mel / mfcc refuse y with S as in memory; chroma_stft / chroma_cqt use the spectrogram, as in memory."""
    y = _signal(np.float32)
    d = da.from_array(y, chunks=(1, 2500))
    S = specux.stft(y, n_fft=512, hop_length=128, output="power")
    with pytest.raises(ValueError, match="exactly one"):
        specux.melspectrogram(d, S=da.from_array(S), sr=16000)
    r = specux.chroma_stft(d, S=da.from_array(S, chunks=(1, -1, 20)), sr=16000, tuning=0.0)
    _same(r.compute(scheduler="sync"), specux.chroma_stft(y, S=S, sr=16000, tuning=0.0))
    C = np.abs(specux.cqt(y, sr=16000, hop_length=64, n_bins=72, fmin=220.0, bins_per_octave=36))
    r = specux.chroma_cqt(d, C=da.from_array(C), bins_per_octave=36)
    _same(r.compute(scheduler="sync"), specux.chroma_cqt(y, C=C, bins_per_octave=36))


def _same(got, ref):
    """Equal within TOL of the largest magnitude (a bank product over fewer frames rounds differently)."""
    assert got.shape == ref.shape and got.dtype == ref.dtype
    assert np.abs(got - ref).max() <= TOL[np.float32] * np.abs(ref).max()
