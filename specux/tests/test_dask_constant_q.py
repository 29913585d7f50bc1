"""cqt / vqt / chroma_cqt on dask arrays split along time (specux._dask.constant_q): each task computes a
block of output frames from its samples plus a halo (the filters' and resamplers' reach), not the whole axis.

Tolerance: the largest difference relative to the largest magnitude of the in-memory result. Measured on these
signals: float32 up to 1.0e-6 (BLAS groups a block's frames differently; 1.3e-6 on other signals); float64
3.6e-16 for None / "polyphase", and 4.7e-7 for "soxr_hq" (mq 4.4e-7, lq 3.8e-7, vhq 7.6e-12, qq 2.5e-16),
libsoxr's own precision (it computes in single precision whatever the input, and its FFT blocks fall elsewhere
in a block than in the whole signal).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import specux

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
pytest.importorskip("soxr")

from specux._dask import constant_q  # noqa: E402  (after the skip: it needs nothing, its callers need dask)

#: relative tolerance per (dtype, resampler family)
TOL = {
    (np.float32, "exact"): 2e-6,
    (np.float32, "soxr"): 2e-6,
    (np.float64, "exact"): 1e-12,
    (np.float64, "soxr"): 1e-6,
}
SR = 16000
L = 3 * SR + 37

#: time chunkings: borders off the hop grid, very short chunks (merged into tasks), a one-sample chunk
CHUNKINGS = {
    "awkward": (12001, 333, 7, 15000, L - 12001 - 333 - 7 - 15000),
    "short": (1000,) * (L // 1000) + (L % 1000,),
    "one-sample": (20000, 1, L - 20001),
}

OPS = {
    "cqt": lambda y, rt: specux.cqt(y, sr=SR, hop_length=128, n_bins=48, fmin=65.4, res_type=rt),
    "cqt_odd_hop": lambda y, rt: specux.cqt(y, sr=SR, hop_length=96, n_bins=36, fmin=110.0, res_type=rt),
    "vqt": lambda y, rt: specux.vqt(y, sr=SR, hop_length=64, n_bins=36, fmin=110.0, res_type=rt),
    "chroma_cqt": lambda y, rt: specux.chroma_cqt(
        y, sr=SR, hop_length=256, fmin=65.4, n_octaves=3, tuning=0.0, res_type=rt
    ),
}
RES_TYPES = [None, "polyphase", "soxr_hq"]


def _forbid(*args, **kwargs):
    raise AssertionError("a dask graph was computed while it was being built")


def _signal(dtype, batch=3, length=L):
    t = np.arange(length) / SR
    rng = np.random.default_rng(4)
    rows = [np.sin(2 * np.pi * (110 * 2**k) * t) + 0.3 * rng.standard_normal(length) for k in range(batch)]
    return np.stack(rows).astype(dtype)


def _check(op, rt, dtype, chunks):
    fn = OPS[op]
    y = _signal(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = np.asarray(fn(y, rt))
        d = da.from_array(y, chunks=chunks)
        with dask.config.set(scheduler=_forbid):  # lazy: nothing computed while the graph is built
            r = fn(d, rt)
        assert isinstance(r, da.Array)
        assert r.shape == ref.shape and r.dtype == ref.dtype
        got = r.compute(scheduler="sync")
    assert got.shape == ref.shape and got.dtype == ref.dtype
    scale = float(np.abs(ref).max())
    err = float(np.abs(got - ref).max()) / scale
    family = "soxr" if rt is not None and rt.startswith("soxr") else "exact"
    assert err <= TOL[(dtype, family)], f"{op} {rt}: relative error {err:.3g}"
    return r


@pytest.mark.parametrize("chunking", list(CHUNKINGS))
@pytest.mark.parametrize("rt", RES_TYPES)
@pytest.mark.parametrize("op", list(OPS))
def test_split_float32(op, rt, chunking):
    r = _check(op, rt, np.float32, ((2, 1), CHUNKINGS[chunking]))
    # several tasks along time, each reading a slice of the signal, none the whole axis
    assert r.numblocks[-1] > 1, r.chunks
    assert r.numblocks[0] == 2


@pytest.mark.parametrize("rt", RES_TYPES)
@pytest.mark.parametrize("op", ["cqt", "vqt", "chroma_cqt"])
def test_split_float64(op, rt):
    r = _check(op, rt, np.float64, ((1, 2), CHUNKINGS["awkward"]))
    assert r.numblocks[-1] > 1


@pytest.mark.parametrize("rt", ["soxr_vhq", "soxr_mq", "soxr_lq", "soxr_qq"])
def test_split_other_soxr_qualities(rt):
    r = _check("cqt", rt, np.float64, ((1, 2), CHUNKINGS["awkward"]))
    assert r.numblocks[-1] > 1


@pytest.mark.parametrize("pad_mode", ["reflect", "edge", "wrap"])
def test_pad_modes(pad_mode):
    """Padding other than zeros is read at the signal's true ends only; wrap padding reads the other end, so
    it keeps the time axis in one chunk."""
    y = _signal(np.float64, batch=1)
    kw = dict(sr=SR, hop_length=128, n_bins=48, fmin=65.4, pad_mode=pad_mode, res_type="polyphase")
    ref = specux.cqt(y, **kw)
    r = specux.cqt(da.from_array(y, chunks=(1, CHUNKINGS["awkward"])), **kw)
    assert (r.numblocks[-1] == 1) == (pad_mode == "wrap")
    got = r.compute(scheduler="sync")
    assert np.abs(got - ref).max() <= 1e-12 * np.abs(ref).max()


@pytest.mark.parametrize("rt", RES_TYPES)
def test_nan_next_to_a_slice_border(rt):
    """A NaN 99 samples past a chunk border: the same frames are NaN as in memory, the others agree."""
    y = _signal(np.float32, batch=1)
    y[0, 12100] = np.nan
    kw = dict(sr=SR, hop_length=128, n_bins=48, fmin=65.4, res_type=rt)
    ref = specux.cqt(y, **kw)
    got = specux.cqt(da.from_array(y, chunks=(1, CHUNKINGS["awkward"])), **kw).compute(scheduler="sync")
    assert np.isnan(ref).any()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    finite = np.isfinite(ref)
    assert np.abs(got[finite] - ref[finite]).max() <= 2e-6 * np.abs(ref[finite]).max()


def test_one_dimensional_and_single_chunk():
    """A 1-D signal splits the same way; a single time chunk stays one task."""
    y = _signal(np.float32, batch=1)[0]
    ref = specux.cqt(y, sr=SR, hop_length=128, n_bins=48, fmin=65.4)
    r = specux.cqt(da.from_array(y, chunks=CHUNKINGS["awkward"]), sr=SR, hop_length=128, n_bins=48, fmin=65.4)
    assert r.ndim == 2 and r.numblocks[-1] > 1
    np.testing.assert_allclose(r.compute(scheduler="sync"), ref, rtol=0, atol=2e-6 * np.abs(ref).max())
    one = specux.cqt(da.from_array(y, chunks=-1), sr=SR, hop_length=128, n_bins=48, fmin=65.4)
    assert one.numblocks == (1, 1)


def test_tasks_read_a_halo_not_the_axis():
    """Every task reads its frames' samples plus the halo, clipped to the signal: less than the whole axis."""
    p = specux._spec.cqt.validate_vqt(
        np.zeros(512, np.float32), "cqt", sr=SR, hop_length=128, fmin=65.4, n_bins=48, intervals="equal",
        gamma=0, bins_per_octave=12, tuning=0.0, filter_scale=1, norm=1, sparsity=0.01, window="hann",
        scale=True, pad_mode="constant", res_type="soxr_hq", dtype=None,
    )[1]  # fmt: skip
    lay = constant_q.layout(p)
    left, right = constant_q.halo(lay)
    assert left > 0 and right > 0
    edges = [0, 12001, 12334, 12341, 27341, L]
    tasks = constant_q.spans(lay, edges, L)
    assert len(tasks) > 1
    assert tasks[0][0] == 0 and tasks[-1][1] == lay.block_frames(L)
    for (_, t1, _, _), (t0, _, _, _) in itertools.pairwise(tasks):
        assert t1 == t0  # contiguous, no frame twice
    for t0, t1, a, b in tasks:
        assert a % 128 == 0 and b - a < L
        assert t1 - t0 >= max(left, right) or len(tasks) == 1
    # a block away from the ends: only the frames past the halo are exact
    j0, j1 = constant_q.good_frames(lay, 200 * 128, False, False)
    assert j0 == left and 0 < j1 < lay.block_frames(200 * 128)
    assert constant_q.good_frames(lay, 200 * 128, True, True) == (0, lay.block_frames(200 * 128))


def test_chunks_smaller_than_the_halo_are_merged():
    """Tiny chunks are merged into tasks of at least the halo's frames; a signal shorter than that is one
    task."""
    y = _signal(np.float32, batch=1)
    d = da.from_array(y, chunks=(1, 100))
    r = specux.cqt(d, sr=SR, hop_length=128, n_bins=48, fmin=65.4)
    assert 1 < r.numblocks[-1] < d.numblocks[-1]
    short = da.from_array(y[:, :4000], chunks=(1, 1000))
    assert specux.cqt(short, sr=SR, hop_length=128, n_bins=48, fmin=65.4).numblocks[-1] == 1
