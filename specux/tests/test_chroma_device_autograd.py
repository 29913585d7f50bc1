"""Autograd of chroma_stft and chroma_cqt on a device backend: ``specux::chroma_stft_device`` /
``specux::chroma_cqt_device`` (:mod:`specux.torch._ops_device_chroma`) on PoCL.

Checked: the device gradient against the CPU op's torch gradient (float32 and float64, 1-D and batched,
every norm, the estimated tuning, chroma_cqt's threshold, polyphase and no resampling, whose device filters
are the CPU's); gradcheck in float64 of the device's own gradient, also with a soxr quality (the device runs
a FIR designed to libsoxr's specification, not libsoxr: its reference is the device's own forward); the
dot-product test of the new adjoint kernel (the column norm's, with and without chroma_cqt's threshold cut)
against the device's forward kernels; torch.compile(fullgraph=True) forward and backward; bitwise-repeatable
backward; the refusals.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from specux_test_support import rel_err, tolerance

torch = pytest.importorskip("torch")

import specux  # noqa: E402
from specux._backends.cpu.adjoint_features import normalize_backward  # noqa: E402
from specux._codegen import cq_kernels as ck  # noqa: E402
from specux._runtime import device_array as da  # noqa: E402
from specux._runtime import feature_exec as fe  # noqa: E402
from specux._runtime.launch import groups, launch  # noqa: E402
from specux.errors import UnsupportedOperationError  # noqa: E402
from specux.torch import _ops_device  # noqa: E402

SR = 8000
NORMS = [np.inf, -np.inf, 0, 1, 2, None]
STFT = dict(sr=SR, n_fft=256, hop_length=64)
CQT = dict(sr=SR, hop_length=64, fmin=100.0, n_octaves=2)


def _signal(shape, dtype, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _value_and_grad(fn, y: torch.Tensor, **kw):
    x = y.detach().clone().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the constant-Q family's short-signal warning
        out = fn(x, **kw)
    W = torch.randn(*out.shape, generator=torch.Generator().manual_seed(1), dtype=out.dtype)
    (grad,) = torch.autograd.grad((out * W).sum(), x)
    return out.detach(), grad


def _need(opencl, dtype: str) -> None:
    if dtype not in opencl.dtypes:
        pytest.skip(f"this OpenCL device has no {dtype}")


def _compare(opencl, fn, key: str, y: torch.Tensor, **kw) -> None:
    dtype = str(y.dtype).removeprefix("torch.")
    _need(opencl, dtype)
    out, grad = _value_and_grad(fn, y, backend="opencl", **kw)
    out_cpu, grad_cpu = _value_and_grad(fn, y, backend="cpu", **kw)
    assert out.dtype == out_cpu.dtype and out.shape == out_cpu.shape
    assert grad.dtype == y.dtype and grad.shape == y.shape
    assert rel_err(out.numpy(), out_cpu.numpy()) <= tolerance(key, dtype)
    assert rel_err(grad.numpy(), grad_cpu.numpy()) <= tolerance(key, dtype)


# --- against the CPU op's gradient --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("norm", NORMS, ids=str)
def test_chroma_stft_gradient_matches_cpu_for_every_norm(opencl, norm, dtype):
    y = _signal((2, 3000), getattr(torch, dtype))
    _compare(opencl, specux.chroma_stft, "chroma_stft", y, norm=norm, tuning=0.0, **STFT)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_chroma_stft_estimated_tuning_is_a_constant_as_on_the_cpu(opencl, dtype):
    """tuning=None: estimated (from the device's power spectrogram) and held constant by the gradient, as
    the CPU op does; 1-D input, and the bank's other options."""
    y = _signal((3000,), getattr(torch, dtype), seed=2)
    _compare(opencl, specux.chroma_stft, "chroma_stft", y, tuning=None, n_chroma=24, base_c=False, **STFT)


def test_chroma_stft_options_batched_and_strided(opencl):
    y = _signal((2, 2, 6000), torch.float32, seed=3)[..., ::2]
    kw = dict(sr=SR, n_fft=200, hop_length=50, win_length=160, window="hamming", center=False, tuning=0.1,
              ctroct=4.0, octwidth=None, norm=2)
    _compare(opencl, specux.chroma_stft, "chroma_stft", y, **kw)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "kw",
    [
        dict(norm=np.inf, threshold=0.0, res_type="polyphase"),
        dict(norm=2, threshold=0.05, res_type="polyphase", n_chroma=12, bins_per_octave=24),
        dict(norm=-np.inf, threshold=0.0, res_type=None),
        dict(norm=0, threshold=0.02, res_type=None),
        dict(norm=1, threshold=0.0, res_type="polyphase", tuning=None),
        dict(norm=None, threshold=0.01, res_type="polyphase"),
    ],
    ids=["inf-polyphase", "2-threshold", "-inf-none", "0-threshold", "1-tuning-estimated", "none-threshold"],
)
def test_chroma_cqt_gradient_matches_cpu(opencl, kw, dtype):
    y = _signal((2, 3000), getattr(torch, dtype), seed=4)
    _compare(opencl, specux.chroma_cqt, "chroma_cqt", y, **CQT, **kw)


def test_chroma_cqt_one_dimensional_and_a_window(opencl):
    """1-D input; a window given (the fold a float64 tensor): float64 output, as on the CPU."""
    y = _signal((3000,), torch.float32, seed=5)
    _compare(opencl, specux.chroma_cqt, "chroma_cqt", y, res_type="polyphase", window=np.hanning(5), **CQT)


def test_chroma_cqt_threshold_cuts_the_gradient(opencl):
    """Values below the threshold carry no gradient: with a threshold above every value, none at all."""
    y = _signal((1, 3000), torch.float32, seed=6)
    _, grad = _value_and_grad(specux.chroma_cqt, y, backend="opencl", threshold=1e9, res_type=None, **CQT)
    assert torch.count_nonzero(grad) == 0


# --- gradcheck in float64 ----------------------------------------------------------------------------------


def _gradcheck(fn, y: torch.Tensor) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.autograd.gradcheck(fn, (y,), eps=1e-6, atol=1e-7, rtol=1e-5, fast_mode=True)


@pytest.mark.parametrize("norm", [np.inf, 2, None], ids=str)
def test_gradcheck_chroma_stft(opencl, norm):
    _need(opencl, "float64")
    y = _signal((2, 1200), torch.float64, seed=7).requires_grad_()
    assert _gradcheck(lambda x: specux.chroma_stft(x, norm=norm, tuning=0.0, backend="opencl", **STFT), y)


@pytest.mark.parametrize("res_type", ["polyphase", "soxr_hq", None])
def test_gradcheck_chroma_cqt(opencl, res_type):
    _need(opencl, "float64")
    y = _signal((1, 1500), torch.float64, seed=8).requires_grad_()
    kw = dict(CQT, bins_per_octave=12, norm=2, res_type=res_type)
    assert _gradcheck(lambda x: specux.chroma_cqt(x, backend="opencl", **kw), y)


# --- the dot-product test of the column norm's adjoint kernel ----------------------------------------------


def _columns(seed: int, shape=(3, 12, 7)) -> np.ndarray:
    """Values away from 0 with distinct magnitudes (no ties for the max / min pick), some negative."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.2, 1.0, shape) * rng.choice([-1.0, 1.0], shape)
    x[1, :, 2] = 1e-310  # a column under the threshold: left as it is by the forward
    return x


def _normalised(rt, x: np.ndarray, norm, cut) -> np.ndarray:
    """The device forward: chroma_cqt's threshold kernel (with ``cut``), then the column norm."""
    a = da.upload(rt, x)
    if cut is not None:
        launch(rt, ck.render, ck.ThresholdSpec(a.storage), groups(a.size, ck.BLOCK), [a.buf, a.size, cut])
    if norm is not None:
        fe.column_norm(rt, a, norm)
    return da.download(rt, a)


@pytest.mark.parametrize(
    "norm, cut",
    [(norm, cut) for cut in (None, 0.5) for norm in NORMS if (norm, cut) != (None, None)],
    ids=str,
)
def test_column_norm_adjoint_dot_product(opencl, norm, cut):
    """<J v, w> = <v, J^T w>: J v from central differences of the device's forward kernels (float64), J^T w
    from the adjoint kernel (no norm and no cut: no kernel runs, the chains pass the gradient)."""
    _need(opencl, "float64")
    rt = opencl.runtime
    x = _columns(0)
    if cut is not None:  # away from the cut, where the map is smooth
        x = np.where(np.abs(np.abs(x) - cut) < 0.05, x * 1.3, x)
    rng = np.random.default_rng(1)
    v, w = rng.standard_normal(x.shape), rng.standard_normal(x.shape)
    v[1, :, 2] = 0.0  # the tiny column would leave the threshold's side under a step
    h = 1e-6
    jv = (_normalised(rt, x + h * v, norm, cut) - _normalised(rt, x - h * v, norm, cut)) / (2 * h)
    jtw = da.download(rt, fe.column_norm_adjoint(rt, da.upload(rt, x), da.upload(rt, w), norm, cut))
    lhs, rhs = float(np.sum(jv * w)), float(np.sum(v * jtw))
    assert abs(lhs - rhs) <= 1e-7 * max(1.0, abs(lhs)), (lhs, rhs)
    # and the CPU op's rule itself (normalize_backward, then the cut's mask), the tiny column included (left
    # as it is by the forward but for the count norm: its gradient passes)
    kept = np.ones(x.shape, bool) if cut is None else x >= cut
    want = normalize_backward(np.where(kept, x, 0.0), w, norm, axis=-2) * kept
    np.testing.assert_allclose(jtw, want, rtol=1e-12, atol=1e-12)
    if norm != 0:
        np.testing.assert_array_equal(jtw[1, :, 2], np.where(kept[1, :, 2], w[1, :, 2], 0.0))


@pytest.mark.parametrize("which", ["chroma bank", "fold"])
def test_bank_transpose_dot_product_on_chroma_matrices(opencl, which):
    """The bank product's transpose (mel's) on the chroma bank and the constant-Q fold: <A x, y> = <x, A^T y>
    exactly up to float64 rounding."""
    _need(opencl, "float64")
    from specux.filters import chroma, cq_to_chroma

    A = chroma(sr=SR, n_fft=256) if which == "chroma bank" else cq_to_chroma(72, bins_per_octave=36)
    rt = opencl.runtime
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, A.shape[1], 5))
    y = rng.standard_normal((2, A.shape[0], 5))
    Ax = da.download(rt, fe.apply(rt, da.upload(rt, x), fe.sparse(rt, A, "f64")))
    ATy = da.download(rt, fe.bank_adjoint(rt, da.upload(rt, y), A))
    assert abs(np.sum(Ax * y) - np.sum(x * ATy)) <= 1e-12 * np.sum(np.abs(Ax * y))


# --- torch.compile, repeatability ---------------------------------------------------------------------------


def _model(x: torch.Tensor) -> torch.Tensor:
    a = specux.chroma_stft(x, tuning=None, norm=2, backend="opencl", **STFT)  # estimated: host step
    b = specux.chroma_cqt(x, res_type="polyphase", threshold=0.01, backend="opencl", **CQT)
    return (a * a).mean() + b.mean()


def test_compile_fullgraph_forward_and_backward(opencl):
    y = _signal((2, 3000), torch.float32, seed=9)
    x_eager = y.clone().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        want = _model(x_eager)
        (g_eager,) = torch.autograd.grad(want, x_eager)
        torch._dynamo.reset()
        compiled = torch.compile(_model, fullgraph=True, backend="aot_eager")
        x = y.clone().requires_grad_()
        got = compiled(x)
        (g,) = torch.autograd.grad(got, x)
    assert torch.allclose(got, want, rtol=1e-6, atol=0)
    assert rel_err(g.numpy(), g_eager.numpy()) <= 1e-6


@pytest.mark.parametrize("public", ["chroma_stft", "chroma_cqt"])
def test_backward_is_bitwise_repeatable(opencl, public):
    fn = getattr(specux, public)
    kw = dict(STFT, tuning=None) if public == "chroma_stft" else dict(CQT, res_type="polyphase", norm=2)
    y = _signal((2, 3000), torch.float32, seed=10)
    first = _value_and_grad(fn, y, backend="opencl", **kw)
    second = _value_and_grad(fn, y, backend="opencl", **kw)
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])


# --- work done ---------------------------------------------------------------------------------------------


def _counted(monkeypatch):
    """Count the device stfts (the signal framed, windowed and transformed: ``spectral_exec._spectrum``) and
    the host tuning estimates (the cpu backend's kernel, which the device op calls)."""
    from specux._backends.cpu import tuning
    from specux._runtime import spectral_exec as se

    counts = {"stft": 0, "estimate": 0}
    real_spectrum, real_estimate = se._spectrum, tuning.estimate_from_spectrogram

    def spectrum(*args, **kw):
        counts["stft"] += 1
        return real_spectrum(*args, **kw)

    def estimate(*args, **kw):
        counts["estimate"] += 1
        return real_estimate(*args, **kw)

    monkeypatch.setattr(se, "_spectrum", spectrum)
    monkeypatch.setattr(tuning, "estimate_from_spectrogram", estimate)
    return counts


@pytest.mark.parametrize("norm", [np.inf, None], ids=str)
@pytest.mark.parametrize("tuning", [None, 0.1], ids=str)
def test_chroma_stft_computes_the_stft_once_per_pass(opencl, monkeypatch, tuning, norm):
    """The forward computes the signal's spectrum once (the tuning's estimate reads the power spectrogram
    the chroma is made of); so does the backward, where the unnormalised chroma of the norm's adjoint and
    the modulus' adjoint both read it. The tuning is estimated once, in the forward: the backward gets the
    forward's bank."""
    counts = _counted(monkeypatch)
    x = _signal((2, 3000), torch.float32).requires_grad_()
    out = specux.chroma_stft(x, tuning=tuning, norm=norm, backend="opencl", **STFT)
    estimated = int(tuning is None)
    assert counts == {"stft": 1, "estimate": estimated}
    out.backward(torch.ones_like(out))
    assert counts == {"stft": 2, "estimate": estimated}


ARGS = ["hann", float(SR), np.inf, 256, 64, None, True, "constant", None, 12, 5.0, 2.0, True, "opencl"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_forward_hands_its_bank_to_the_backward(opencl, dtype):
    """specux::chroma_stft_device returns the bank it computed with (tuning=None: the estimated tuning's,
    the bank specux.filters.chroma makes for that tuning, in float64); the backward op given it is
    bit for bit the backward op that estimates the tuning again."""
    _need(opencl, dtype)
    from specux.filters import chroma
    from specux.ops.tuning import estimate_tuning

    y = _signal((2, 3000), getattr(torch, dtype), seed=13)
    out, bank = torch.ops.specux.chroma_stft_device(y, None, None, *ARGS)
    assert bank.dtype == torch.float64 and bank.shape == (12, 129)
    power = specux.stft(y.numpy(), n_fft=256, hop_length=64, output="power", backend="opencl")
    tuning = estimate_tuning(S=power, sr=SR, bins_per_octave=12)
    np.testing.assert_array_equal(bank.numpy(), chroma(sr=SR, n_fft=256, tuning=tuning))  # its float32 bank
    assert torch.equal(out, _ops_device.OPS["chroma_stft"](y, None, None, *ARGS))
    g = _signal(tuple(out.shape), out.dtype, seed=14)
    backward = torch.ops.specux.chroma_stft_device_backward
    given = backward(g, y, None, bank, *ARGS)
    assert torch.equal(given, backward(g, y, None, None, *ARGS))
    # and the bank is what the backward computes with: another one gives another gradient
    assert not torch.equal(given, backward(g, y, None, torch.flip(bank, dims=[0]), *ARGS))


# --- refusals -----------------------------------------------------------------------------------------------


def test_bank_and_window_gradients_refused_naming_them_and_the_backend(opencl):
    y = _signal((1, 2000), torch.float32).requires_grad_()
    w = torch.hann_window(256, dtype=torch.float32).requires_grad_()
    out = specux.chroma_stft(y, window=w, tuning=0.0, backend="opencl", **STFT)
    with pytest.raises(UnsupportedOperationError, match=r"the window / chroma bank.*'opencl'"):
        out.sum().backward()
    from specux.filters import chroma

    bank = torch.tensor(chroma(sr=SR, n_fft=256)).requires_grad_()
    args = ["hann", float(SR), 2.0, 256, 64, None, True, "constant", 0.0, 12, 5.0, 2.0, True]
    out = _ops_device.OPS["chroma_stft"](y, None, bank, *args, "opencl")
    with pytest.raises(UnsupportedOperationError, match=r"the window / chroma bank.*'opencl'"):
        out.sum().backward()


def test_fold_gradient_and_weights_refused(opencl):
    y = _signal((1, 3000), torch.float32).requires_grad_()
    fold = torch.tensor(specux.filters.cq_to_chroma(72, bins_per_octave=36)).requires_grad_()
    args = [float(SR), 64, 100.0, 2.0, 0.0, 0.0, 12, 2, 36, "polyphase"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        out = _ops_device.OPS["chroma_cqt"](y, [], fold, *args, "opencl")
        with pytest.raises(UnsupportedOperationError, match=r"the per-octave weights / fold.*'opencl'"):
            out.sum().backward()
        with pytest.raises(UnsupportedOperationError, match=r"weights.*backend='cpu'"):
            _ops_device.OPS["chroma_cqt"](y, [torch.zeros(4, 4)], None, *args, "opencl")


def test_a_resampler_no_device_runs_is_refused(opencl):
    y = _signal((1, 3000), torch.float32).requires_grad_()
    with pytest.raises(ValueError, match=r"res_type='soxr_qq'.*backend='cpu'"):
        specux.chroma_cqt(y, res_type="soxr_qq", backend="opencl", **CQT)


def test_float64_refused_where_the_device_lacks_it(opencl, monkeypatch):
    monkeypatch.setattr(opencl, "dtypes", frozenset({"float16", "float32"}))
    y = _signal((1, 2000), torch.float64).requires_grad_()
    with pytest.raises(TypeError, match=r"float64.*backend='cpu'"):
        specux.chroma_stft(y, tuning=0.0, backend="opencl", **STFT)
    with pytest.raises(TypeError, match=r"float64.*backend='cpu'"):
        specux.chroma_cqt(y, tuning=0.0, res_type="polyphase", backend="opencl", **CQT)


def test_a_given_spectrogram_stays_refused_for_tensors(opencl):
    """Only the signal's chain has device ops: S= requiring grad is refused (the front's own refusal)."""
    S = specux.stft(_signal((1, 2000), torch.float32), n_fft=256, output="power").requires_grad_()
    with pytest.raises(UnsupportedOperationError, match=r"specux\.chroma_stft: gradients"):
        specux.chroma_stft(S=S, backend="opencl", **STFT)


def test_the_compile_covers_hold_the_new_kernels():
    """The NVRTC compile (sm_80 / sm_90 / sm_100) and MSL syntax tests compile ``family_cover``: the column
    norm's adjoint, with and without the cut, is in it for both precisions."""
    from specux._codegen import family_cover

    specs = {spec for _, spec in family_cover(("f16", "f32", "f64"))}
    for prec in ("f32", "f64"):
        for cut in (False, True):
            assert fe.fk.ColumnNormAdjointSpec(prec, cut=cut) in specs


def test_opcheck(opencl):
    """torch.library.opcheck of both device ops and their backward ops (schema, fake kernels, autograd
    registration, dynamic-shape tracing)."""
    y = _signal((2, 1500), torch.float32, seed=11).requires_grad_()
    stft_args = ["hann", float(SR), 2.0, 256, 64, None, True, "constant", 0.0, 12, 5.0, 2.0, True, "opencl"]
    cqt_args = [float(SR), 64, 200.0, float("inf"), 0.01, 0.0, 12, 2, 24, "polyphase", "opencl"]
    for name, lead, args in (("chroma_stft", [None, None], stft_args), ("chroma_cqt", [[], None], cqt_args)):
        forward = getattr(torch.ops.specux, f"{name}_device").default
        torch.library.opcheck(forward, (y, *lead, *args))
        out = forward(y.detach(), *lead, *args)
        backward = getattr(torch.ops.specux, f"{name}_device_backward").default
        if name == "chroma_stft":  # (chromagram, the bank it was made with): the backward takes the bank
            out, bank = out
            torch.library.opcheck(backward, (torch.randn_like(out), y.detach(), None, bank, *args))
        torch.library.opcheck(backward, (torch.randn_like(out), y.detach(), *lead, *args))


@pytest.mark.parametrize("public", ["chroma_stft", "chroma_cqt"])
def test_under_cpu_autocast_computes_in_float32(opencl, public):
    """The autocast policy (specux.torch._autocast) holds for the chroma device ops too."""
    kw = dict(STFT, tuning=0.0) if public == "chroma_stft" else dict(CQT, fmin=200.0, res_type="polyphase")
    y = _signal((2, 3000), torch.float32, seed=12).to(torch.bfloat16).requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = getattr(specux, public)(y, backend="opencl", **kw)
    assert out.dtype == torch.float32
    out.pow(2).sum().backward()
    assert y.grad.dtype == torch.bfloat16 and torch.isfinite(y.grad.float()).all()


@pytest.mark.parametrize("public", ["chroma_stft", "chroma_cqt"])
def test_a_negative_norm_is_refused_naming_it(opencl, public):
    """The kernels would take any number: the device op refuses what the CPU op refuses, by name."""
    kw = dict(STFT, tuning=0.0) if public == "chroma_stft" else dict(CQT, tuning=0.0, res_type=None)
    y = _signal((1, 3000), torch.float32).requires_grad_()
    with pytest.raises(ValueError, match=rf"{public}: norm must be None, inf, -inf, 0 or a positive"):
        getattr(specux, public)(y, norm=-1.0, backend="opencl", **kw)
