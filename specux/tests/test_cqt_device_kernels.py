"""specux.cqt / specux.vqt on the opencl backend (PoCL in CI) against the cpu backend.

``res_type="polyphase"`` and ``None`` run the CPU's own filters, so they agree to float rounding; the soxr
qualities run the device's filter designed to libsoxr's specification (:mod:`specux._runtime.cq_exec`),
held to the goal of docs/specux/constant-q.md ("On a device"). Also: batches and strided input, every
pad_mode, short signals (the warning), NaN locality, float64, the decimation kernel against the CPU's
linear forms, and the refused resampler.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from specux_test_support import device_dtypes, rel_err, tolerance

import specux
from specux._resample import downsample
from specux._runtime import cq_exec
from specux._runtime import device_array as da

rng = np.random.default_rng(20261202)
#: the device's soxr-like filter against libsoxr through the whole transform (max |a - b| / max |b| and the
#: relative L2 distance), per quality: the goal of docs/specux/constant-q.md ("On a device"); "soxr_lq" has
#: libsoxr's medium roll-off below its passband end, which its specification numbers do not pin down
SOXR_GOAL = {"soxr_hq": 1e-3, "soxr_vhq": 1e-3, "soxr_mq": 1e-3, "soxr_lq": 2e-3}
#: frames of the output that libsoxr's start-up transient of a decimation by 4 or more reaches
_STARTUP_FRAMES = 16


def _music(n: int, sr: float, gen: np.random.Generator) -> np.ndarray:
    """A chord of decaying partials with clicks (music-like: tonal peaks and transients)."""
    t = np.arange(n) / sr
    partials = (220.0, 277.18, 329.63, 440.0, 1320.0)
    y = sum(np.sin(2 * np.pi * f * t) * np.exp(-3.0 * (t % 0.5)) for f in partials)
    y = y + 0.3 * gen.standard_normal(n) * ((t % 0.25) < 0.005)
    return y


def _rel_l2(a, b) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(n_bins=48, hop_length=256, pad_mode="reflect"),
        dict(n_bins=36, bins_per_octave=36, fmin=200.0, hop_length=128, pad_mode="edge"),
        dict(n_bins=24, hop_length=100, filter_scale=0.8, norm=2, scale=False, window="hamming"),
        dict(n_bins=30, hop_length=64, fmin=60.0, sparsity=0.0, pad_mode="wrap"),
    ],
    ids=["defaults", "reflect", "36 per octave", "odd hop, no scale", "no sparsity, wrap"],
)
@pytest.mark.parametrize("res_type", ["polyphase", None])
def test_cqt_matches_cpu_to_float_rounding(opencl, kw, res_type):
    y = rng.standard_normal((2, 11025)).astype(np.float32)
    args = dict(sr=22050, res_type=res_type, **kw)
    got = specux.cqt(y, backend="opencl", **args)
    want = specux.cqt(y, backend="cpu", **args)
    assert got.dtype == want.dtype == np.complex64 and got.shape == want.shape
    assert rel_err(got, want) <= tolerance("vqt", "float32")


def test_vqt_and_float64_match_cpu(opencl):
    for dtype in device_dtypes(opencl, ("float32", "float64")):
        y = rng.standard_normal(8000).astype(dtype)
        for res_type in ("polyphase", None):
            args = dict(sr=16000, n_bins=36, hop_length=128, gamma=None, res_type=res_type)
            got = specux.vqt(y, backend="opencl", **args)
            want = specux.vqt(y, backend="cpu", **args)
            assert got.dtype == want.dtype
            assert rel_err(got, want) <= tolerance("vqt", dtype), (dtype, res_type)
    y = rng.standard_normal(6000).astype(np.float32)
    if "float64" in opencl.dtypes:  # float32 input, complex128 output: computed in float64 as on the CPU
        args = dict(sr=16000, n_bins=24, hop_length=64, res_type="polyphase", dtype=np.complex128)
        got = specux.cqt(y, backend="opencl", **args)
        assert got.dtype == np.complex128
        assert rel_err(got, specux.cqt(y, backend="cpu", **args)) <= tolerance("vqt", "float64")


def test_batches_and_strided_input(opencl):
    y = rng.standard_normal((2, 3, 16000)).astype(np.float32)[..., ::2]  # not contiguous
    args = dict(sr=16000, n_bins=36, hop_length=64, res_type="polyphase")
    got = specux.cqt(y, backend="opencl", **args)
    assert got.shape[:2] == (2, 3)
    assert rel_err(got, specux.cqt(y, backend="cpu", **args)) <= tolerance("vqt", "float32")
    # each row as computed alone
    one = specux.cqt(np.ascontiguousarray(y[1, 2]), backend="opencl", **args)
    assert rel_err(got[1, 2], one) <= tolerance("vqt", "float32")


@pytest.mark.parametrize("res_type", ["soxr_hq", "soxr_vhq", "soxr_mq", "soxr_lq"])
def test_soxr_like_filter_is_within_the_goal_of_libsoxr(opencl, res_type):
    pytest.importorskip("soxr")
    local = np.random.default_rng(7)
    sr, goal = 22050, SOXR_GOAL[res_type]
    signals = {"music": _music(3 * sr, sr, local), "noise": local.standard_normal(3 * sr)}
    for name, y in signals.items():
        y = np.stack([y, y[::-1]]).astype(np.float32)
        # no early downsampling (halvings only): no start-up transient of libsoxr's multi-stage decimation
        for kw in (dict(), dict(n_bins=252, bins_per_octave=36)):
            args = dict(sr=sr, res_type=res_type, **kw)
            got = specux.cqt(y, backend="opencl", **args)
            want = specux.cqt(y, backend="cpu", **args)
            assert rel_err(got, want) <= goal, (name, kw)
            assert _rel_l2(got, want) <= goal, (name, kw)
        # early downsampling by 8: libsoxr's start-up transient shows in the first frames only
        args = dict(sr=sr, res_type=res_type, n_bins=48, hop_length=256)
        got = specux.cqt(y, backend="opencl", **args)[..., _STARTUP_FRAMES:]
        want = specux.cqt(y, backend="cpu", **args)[..., _STARTUP_FRAMES:]
        assert rel_err(got, want) <= goal, name
        assert _rel_l2(got, want) <= goal, name


def test_soxr_like_filter_meets_the_specification():
    """The designed taps: linear phase, unit DC gain, the passband flat and the stopband down to libsoxr's
    attenuation for the quality (checked on a dense frequency grid)."""
    for res_type in ("soxr_hq", "soxr_vhq", "soxr_mq", "soxr_lq"):
        passband, stopband, attenuation = cq_exec.soxr_spec(res_type)
        for factor in (2, 4, 8):
            taps = cq_exec.soxr_like_filter(factor, res_type)
            assert taps.size % 2 == 1 and np.allclose(taps, taps[::-1], rtol=0, atol=1e-15)
            assert abs(taps.sum() - 1.0) < 1e-9
            H = np.abs(np.fft.rfft(taps, 1 << 16))
            w = np.linspace(0, np.pi, H.size)
            edge_p, edge_s = np.pi * passband / factor, np.pi * stopband / factor
            ripple = 10.0 ** (-attenuation / 20.0)
            assert np.abs(H[w <= edge_p] - 1).max() <= ripple, (res_type, factor)
            assert H[w >= edge_s].max() <= ripple, (res_type, factor)
    assert cq_exec.soxr_spec("soxr_hq")[2] == pytest.approx(120.41, abs=0.01)


@pytest.mark.parametrize("factor", [2, 4, 8])
@pytest.mark.parametrize("n", [1, 2, 3, 40, 41, 1000])
def test_decimation_kernel_matches_the_polyphase_downsampler(opencl, factor, n):
    x = rng.standard_normal((2, n)).astype(np.float32)
    rt = opencl.runtime
    out = cq_exec._decimate(rt, da.upload(rt, x), factor, "polyphase", np.sqrt(factor), "float32")
    got = da.download(rt, out)
    want = downsample(x, factor, "polyphase")
    assert got.shape == want.shape
    assert rel_err(got, want) <= tolerance("vqt", "float32")


def test_short_signal_warns_as_on_the_cpu(opencl):
    y = rng.standard_normal(50).astype(np.float32)
    args = dict(sr=16000, n_bins=48, res_type="polyphase", hop_length=16)
    with pytest.warns(UserWarning, match="longer than the signal"):
        got = specux.cqt(y, backend="opencl", **args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        want = specux.cqt(y, backend="cpu", **args)
    assert rel_err(got, want) <= tolerance("vqt", "float32")


@pytest.mark.parametrize("res_type", ["polyphase", "soxr_hq", None])
def test_nan_stays_in_the_frames_that_reach_it(opencl, res_type):
    """A NaN reaches the frames whose support (widened by the resamplers' filters in downsampled octaves)
    holds it; frames far from it stay finite and equal to those of the signal without it."""
    sr, n, hop = 16000, 48000, 256
    y = rng.standard_normal(n).astype(np.float32)
    bad = y.copy()
    bad[24000] = np.nan
    args = dict(sr=sr, hop_length=hop, n_bins=24, fmin=200.0, res_type=res_type)
    got = specux.cqt(bad, backend="opencl", **args)
    clean = specux.cqt(y, backend="opencl", **args)
    frame = 24000 // hop
    assert np.isnan(got[:, frame]).all()
    finite = np.isfinite(got).all(axis=0)
    assert finite.sum() >= got.shape[1] - 40  # only frames near the NaN
    far = np.r_[: frame - 40, frame + 41 : got.shape[1]]
    assert finite[far].all()
    assert rel_err(got[:, far], clean[:, far]) <= tolerance("vqt", "float32")


def test_soxr_qq_is_refused_on_a_device_with_the_allowed_values(opencl):
    y = rng.standard_normal(4000).astype(np.float32)
    with pytest.raises(ValueError, match=r"res_type='soxr_qq'.*polyphase"):
        specux.cqt(y, sr=16000, n_bins=24, res_type="soxr_qq", backend="opencl")


def test_torch_cpu_tensor_on_the_opencl_backend(opencl):
    torch = pytest.importorskip("torch")
    y = torch.from_numpy(rng.standard_normal(6000).astype(np.float32))
    args = dict(sr=16000, n_bins=24, hop_length=64, res_type="polyphase")
    got = specux.cqt(y, backend="opencl", **args)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.complex64
    assert rel_err(got.numpy(), specux.cqt(y.numpy(), backend="cpu", **args)) <= tolerance("vqt", "float32")


# -- the adjoint (gradient with respect to the signal) -----------------------------------------------------


def _device_params(x, **kw):
    from specux._spec.cqt import validate_vqt

    args = dict(sr=8000, hop_length=64, fmin=100.0, n_bins=24, intervals="equal", gamma=0, bins_per_octave=12,
                tuning=0.0, filter_scale=1, norm=1, sparsity=0.01, window="hann", scale=True,
                pad_mode="constant", res_type="polyphase", dtype=None)
    args.update(kw)
    return validate_vqt(x, "vqt", device=True, **args)[1]


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(res_type="soxr_hq"),
        dict(res_type=None, sparsity=0.0),
        dict(pad_mode="reflect", hop_length=96, n_bins=36),
        dict(n_bins=36, hop_length=256, pad_mode="wrap", scale=False),
        dict(gamma=None, res_type="soxr_hq", n_bins=30, bins_per_octave=10, pad_mode="edge"),
    ],
    ids=["polyphase", "soxr_hq", "no resampling", "odd hop, reflect", "hop 256, wrap, no scale", "vqt, edge"],
)
@pytest.mark.parametrize("n", [600, 3000])
def test_vqt_adjoint_passes_the_dot_product_test(opencl, kw, n):
    """<g, A x> = <A^T g, x> (real inner product) for the whole device transform, float64."""
    if "float64" not in opencl.dtypes:
        pytest.skip("the dot-product test runs in float64; this OpenCL device has no cl_khr_fp64")
    rt = opencl.runtime
    x = rng.standard_normal((2, n))
    p = _device_params(x, **kw)
    y = da.download(rt, cq_exec.vqt(rt, (da.upload(rt, x),), p))
    g = (rng.standard_normal(y.shape) + 1j * rng.standard_normal(y.shape)).astype(y.dtype)
    gx = da.download(rt, cq_exec.vqt_adjoint(rt, da.upload(rt, g), p, n))
    assert gx.shape == x.shape and gx.dtype == np.float64
    lhs, rhs = np.real(np.vdot(g, y)), float(np.dot(gx.ravel(), x.ravel()))
    assert abs(lhs - rhs) <= 1e-12 * abs(lhs)


@pytest.mark.parametrize("factor", [1, 2, 4, 8])
def test_decimation_adjoint_passes_the_dot_product_test(opencl, factor):
    if "float64" not in opencl.dtypes:
        pytest.skip("the dot-product test runs in float64; this OpenCL device has no cl_khr_fp64")
    rt = opencl.runtime
    for n in (1, 5, 41, 999):
        x = rng.standard_normal((2, n))
        base = rng.standard_normal((2, n))
        if factor == 1:
            y = x
        else:
            y = da.download(rt, cq_exec._decimate(rt, da.upload(rt, x), factor, "soxr_hq", 1.5, "float64"))
        g = rng.standard_normal(y.shape)
        res = None if factor == 1 else "soxr_hq"
        out = cq_exec._decimate_adjoint(rt, da.upload(rt, g), n, factor, res, 1.0 if factor == 1 else 1.5,
                                        base=da.upload(rt, base))
        gx = da.download(rt, out) - base
        assert abs(np.vdot(g, y) - np.vdot(gx, x)) <= 1e-12 * max(1.0, abs(np.vdot(g, y)))


def test_vqt_adjoint_matches_the_cpu_gradient_with_polyphase(opencl):
    """The device's transpose against torch autograd through the CPU's custom op (the same filters)."""
    torch = pytest.importorskip("torch")
    if "float64" not in opencl.dtypes:
        pytest.skip("compared in float64; this OpenCL device has no cl_khr_fp64")
    rt = opencl.runtime
    x = rng.standard_normal((2, 1500))
    args = dict(sr=8000, hop_length=64, fmin=100.0, n_bins=24, res_type="polyphase")
    p = _device_params(x, **{k: v for k, v in args.items()})
    t = torch.from_numpy(x.copy()).requires_grad_()
    y = specux.cqt(t, **args)
    g = torch.from_numpy(rng.standard_normal(tuple(y.shape)) + 1j * rng.standard_normal(tuple(y.shape)))
    torch.real(torch.sum(torch.conj(g) * y)).backward()
    got = da.download(rt, cq_exec.vqt_adjoint(rt, da.upload(rt, g.numpy()), p, x.shape[-1]))
    assert rel_err(got, t.grad.numpy()) <= 1e-10


# -- chroma_cqt's folding on the device ------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(norm=2, threshold=0.01, n_chroma=24, bins_per_octave=48, n_octaves=5, fmin=65.4),
        dict(norm=None, window=np.hanning(3)),
    ],
    ids=["defaults", "24 chroma, threshold, 2-norm", "no norm, window"],
)
def test_chroma_cqt_folding_matches_the_cpu(opencl, kw):
    from specux._spec.cqt import validate_vqt
    from specux.filters import cq_to_chroma

    y = rng.standard_normal((2, 11025)).astype(np.float32)
    args = dict(sr=22050, tuning=0.0, res_type="polyphase", **kw)
    want = specux.chroma_cqt(y, backend="cpu", **args)
    n_chroma, bpo = kw.get("n_chroma", 12), kw.get("bins_per_octave", 36)
    n_bins = kw.get("n_octaves", 7) * bpo
    _, vp = validate_vqt(y, "chroma_cqt", device=True, sr=22050, hop_length=512, fmin=kw.get("fmin"),
                         n_bins=n_bins, intervals="equal", gamma=0, bins_per_octave=bpo, tuning=0.0,
                         filter_scale=1, norm=1, sparsity=0.01, window="hann", scale=True,
                         pad_mode="constant", res_type="polyphase", dtype=None)
    fold = cq_to_chroma(n_bins, bins_per_octave=bpo, n_chroma=n_chroma, fmin=kw.get("fmin"),
                        window=kw.get("window"))
    p = cq_exec.ChromaCqtParams(vp, fold, kw.get("threshold", 0.0), kw.get("norm", np.inf))
    rt = opencl.runtime
    got = da.download(rt, cq_exec.chroma_cqt(rt, (da.upload(rt, y),), p))
    assert got.shape == want.shape
    assert rel_err(got, want) <= tolerance("chroma_cqt", "float32")
    # a given magnitude C: the folding alone
    C = np.abs(specux.cqt(y, sr=22050, n_bins=n_bins, bins_per_octave=bpo, fmin=kw.get("fmin"),
                          res_type="polyphase", backend="cpu"))
    p = cq_exec.ChromaCqtParams(None, fold, kw.get("threshold", 0.0), kw.get("norm", np.inf))
    got = da.download(rt, cq_exec.chroma_cqt(rt, (da.upload(rt, C),), p))
    assert rel_err(got, specux.chroma_cqt(C=C, backend="cpu", **args)) <= tolerance("chroma_cqt", "float32")


@pytest.mark.parametrize(
    "kw",
    [
        dict(res_type="polyphase", tuning=0.0),
        dict(norm=2, threshold=0.01, n_chroma=24, bins_per_octave=48, n_octaves=5, fmin=65.4,
             res_type="polyphase", tuning=0.0),
        dict(norm=None, window=np.hanning(3), res_type=None, tuning=0.0),
    ],
    ids=["polyphase", "24 chroma, threshold, 2-norm", "no norm, window, no resampling"],
)
def test_public_chroma_cqt_runs_on_the_device(opencl, monkeypatch, kw):
    """specux.chroma_cqt(backend="opencl") computes the transform and the fold on the device: the host
    transform it used to call (the front's own cqt) is never reached, and the result is the cpu's."""
    from specux.ops import chroma as chroma_front

    y = rng.standard_normal((2, 11025)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the filters are longer than the half-second signal
        want = specux.chroma_cqt(y, sr=22050, backend="cpu", **kw)

        def host_cqt(*args, **kwargs):
            raise AssertionError("chroma_cqt on opencl called the host cqt")

        monkeypatch.setattr(chroma_front, "cqt", host_cqt)
        got = specux.chroma_cqt(y, sr=22050, backend="opencl", **kw)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert rel_err(got, want) <= tolerance("chroma_cqt", "float32")


def test_public_chroma_cqt_device_soxr_and_given_magnitude(opencl):
    """The default resampler (the device's soxr_hq-spec filter) within the constant-Q page's 1e-3 of the
    cpu's libsoxr chroma; a given magnitude C folded on the device; tuning=None estimated from host input."""
    y = rng.standard_normal((2, 22050)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        want = specux.chroma_cqt(y, sr=22050, backend="cpu")
        got = specux.chroma_cqt(y, sr=22050, backend="opencl")
        assert rel_err(got, want) <= 1e-3
        C = np.abs(specux.cqt(y, sr=22050, n_bins=252, bins_per_octave=36, backend="cpu"))
    got_c = specux.chroma_cqt(C=C, backend="opencl")
    assert rel_err(got_c, specux.chroma_cqt(C=C, backend="cpu")) <= tolerance("chroma_cqt", "float32")
    with pytest.raises(TypeError, match="C"):
        specux.chroma_cqt(C=C.astype(np.int32), backend="opencl")
