"""torch autograd on a device backend: torch CPU tensors with ``backend="opencl"`` (PoCL in CI).

The forward and the backward run the device's generated kernels and adjoint kernels
(:mod:`specux.torch._device_op`); checked here: the device gradient against the CPU backend's torch gradient
(polyphase and ``res_type=None`` for the constant-Q family, whose device filters are the CPU's), gradcheck in
float64 of the device's own gradient for every device resampler (the soxr qualities run the device's
soxr-spec FIR, so their reference is the device's own forward), short signals, long signals with many
octaves, ``torch.compile(fullgraph=True)`` forward and backward, and the refusals of what has no device
adjoint.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from specux_test_support import rel_err, tolerance

torch = pytest.importorskip("torch")

import specux  # noqa: E402
from specux import _torch_hook  # noqa: E402
from specux._runtime.cq_exec import DEVICE_RES_TYPES  # noqa: E402
from specux.errors import BackendUnavailableError, UnsupportedOperationError  # noqa: E402
from specux.torch import _ops_device  # noqa: E402

SR = 8000

#: (public op, tolerance key, keyword arguments): one case per device adjoint chain
CASES = [
    ("stft", "stft", dict(n_fft=256, hop_length=64)),
    ("stft", "stft", dict(n_fft=200, hop_length=50, output="magnitude", pad_mode="reflect")),
    ("stft", "stft", dict(n_fft=256, hop_length=100, output="power", center=False)),
    ("stft", "stft", dict(n_fft=128, output="real_imag", window="hamming")),
    ("melspectrogram", "melspectrogram", dict(sr=SR, n_fft=256, hop_length=64, n_mels=20)),
    ("melspectrogram", "melspectrogram", dict(sr=SR, n_fft=256, hop_length=64, n_mels=16, power=1.0)),
    ("mfcc", "mfcc", dict(sr=SR, n_fft=256, hop_length=64, n_mels=20, n_mfcc=13)),
    ("lfcc", "lfcc", dict(sample_rate=SR, n_fft=256, hop_length=64, n_filter=24, n_lfcc=10)),
    ("cqt", "vqt", dict(sr=SR, hop_length=64, fmin=100.0, n_bins=36, res_type="polyphase")),
    ("cqt", "vqt", dict(sr=SR, hop_length=64, fmin=100.0, n_bins=24, res_type=None)),
    ("vqt", "vqt", dict(sr=SR, hop_length=64, fmin=80.0, n_bins=36, gamma=None, res_type="polyphase")),
    # intervals: a list argument that is not a tensor, whose gradient slot is None (not a list of them)
    ("vqt", "vqt", dict(sr=SR, hop_length=64, fmin=110.0, n_bins=8, bins_per_octave=4,
                        intervals=[1.0, 1.1, 1.25, 1.5], res_type=None)),
]


def _signal(shape, dtype, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype)


def _weights_like(out: torch.Tensor, seed: int = 1) -> torch.Tensor:
    """A fixed random cotangent: the loss ``Re sum(out * W)`` weighs every output entry differently."""
    g = torch.Generator().manual_seed(seed)
    if out.is_complex():
        real = torch.randn(*out.shape, 2, generator=g, dtype=out.real.dtype)
        return torch.view_as_complex(real)
    return torch.randn(*out.shape, generator=g, dtype=out.dtype)


def _value_and_grad(fn, y: torch.Tensor, **kw):
    x = y.detach().clone().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the short-signal warning of the constant-Q family
        out = fn(x, **kw)
    W = _weights_like(out)
    loss = (out * W).real.sum() if out.is_complex() else (out * W).sum()
    (grad,) = torch.autograd.grad(loss, x)
    return out.detach(), grad


def _float64(opencl) -> None:
    if "float64" not in opencl.dtypes:
        pytest.skip("this OpenCL device has no cl_khr_fp64")


def test_hook_lists_exactly_the_device_ops() -> None:
    assert tuple(sorted(_ops_device.OPS)) == _torch_hook.DEVICE_ROUTED_OPS


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op, key, kw", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_device_gradient_matches_cpu_gradient(opencl, op, key, kw, dtype):
    if dtype == "float64":
        _float64(opencl)
    fn = getattr(specux, op)
    y = _signal((2, 3000), getattr(torch, dtype))
    out, grad = _value_and_grad(fn, y, backend="opencl", **kw)
    out_cpu, grad_cpu = _value_and_grad(fn, y, backend="cpu", **kw)
    assert out.dtype == out_cpu.dtype and out.shape == out_cpu.shape
    assert grad.dtype == y.dtype and grad.shape == y.shape
    assert rel_err(out.numpy(), out_cpu.numpy()) <= tolerance(key, dtype)
    assert rel_err(grad.numpy(), grad_cpu.numpy()) <= tolerance(key, dtype)


def test_istft_gradient_matches_cpu(opencl):
    for dtype in (torch.float32, torch.float64):
        if dtype == torch.float64 and "float64" not in opencl.dtypes:
            continue
        D = specux.stft(_signal((2, 2000), dtype), n_fft=256, hop_length=64)
        kw = dict(hop_length=64, length=1990)
        out, grad = _value_and_grad(specux.istft, D, backend="opencl", **kw)
        out_cpu, grad_cpu = _value_and_grad(specux.istft, D, backend="cpu", **kw)
        name = str(dtype).removeprefix("torch.")
        assert out.shape == out_cpu.shape == (2, 1990) and grad.dtype == D.dtype
        assert rel_err(out.numpy(), out_cpu.numpy()) <= tolerance("istft", name)
        assert rel_err(grad.numpy(), grad_cpu.numpy()) <= tolerance("istft", name)


def test_batched_and_strided_signals(opencl):
    base = _signal((3, 2, 5000), torch.float32)
    y = base[:, :, ::2]  # non-contiguous
    kw = dict(sr=SR, hop_length=64, fmin=100.0, n_bins=24, res_type="polyphase")
    out, grad = _value_and_grad(specux.cqt, y, backend="opencl", **kw)
    out_cpu, grad_cpu = _value_and_grad(specux.cqt, y, backend="cpu", **kw)
    assert grad.shape == (3, 2, 2500)
    assert rel_err(out.numpy(), out_cpu.numpy()) <= tolerance("vqt", "float32")
    assert rel_err(grad.numpy(), grad_cpu.numpy()) <= tolerance("vqt", "float32")


# --- work done: the stfts each pass computes -------------------------------------------------------------

#: every device op whose backward reads the signal's spectrum (the modulus' adjoint), with the options that
#: change its backward's chain (the logarithm and its floor, power 1 or 2)
SPECTRUM_READERS = [
    ("stft", dict(n_fft=256, hop_length=64, output="magnitude")),
    ("stft", dict(n_fft=256, hop_length=64, output="power")),
    ("melspectrogram", dict(sr=SR, n_fft=256, hop_length=64, n_mels=20)),
    ("melspectrogram", dict(sr=SR, n_fft=256, hop_length=64, n_mels=20, power=1.0)),
    ("mfcc", dict(sr=SR, n_fft=256, hop_length=64, n_mels=20, n_mfcc=13)),
    ("mfcc", dict(sr=SR, n_fft=256, hop_length=64, n_mels=20, n_mfcc=13, top_db=None, power=1.0)),
    ("lfcc", dict(sample_rate=SR, n_fft=256, hop_length=64, n_filter=24, n_lfcc=10)),
    ("lfcc", dict(sample_rate=SR, n_fft=256, hop_length=64, n_filter=24, n_lfcc=10, log_lf=True)),
]


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize(
    "op, kw", SPECTRUM_READERS, ids=[f"{c[0]}-{i}" for i, c in enumerate(SPECTRUM_READERS)]
)
def test_each_pass_computes_the_stft_once(opencl, monkeypatch, op, kw, fused):
    """The forward computes the signal's spectrum once, and so does the backward: mfcc's and lfcc's read it
    for the bands their logarithm's adjoint needs and for the modulus' adjoint (it computed two before);
    melspectrogram's and stft's for the modulus' adjoint only. What autograd holds between the passes is
    the signal (docs/specux/torch.md, Devices)."""
    from specux._runtime import feature_exec as fe
    from specux._runtime import spectral_exec as se

    monkeypatch.setattr(fe, "FUSED", fused)
    count = [0]
    real_spectrum = se._spectrum

    def spectrum(*args, **kw):
        count[0] += 1
        return real_spectrum(*args, **kw)

    monkeypatch.setattr(se, "_spectrum", spectrum)
    x = _signal((2, 3000), torch.float32).requires_grad_()
    out = getattr(specux, op)(x, backend="opencl", **kw)
    assert count[0] == 1
    out.backward(_weights_like(out))
    assert count[0] == 2
    assert x.grad is not None and bool(torch.isfinite(x.grad).all())


# --- gradcheck in float64 of the constant-Q family, every device resampler ----------------------------------


def _gradcheck(fn, y: torch.Tensor) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.autograd.gradcheck(fn, (y,), eps=1e-6, atol=1e-7, rtol=1e-5, fast_mode=True)


@pytest.mark.parametrize("res_type", [*DEVICE_RES_TYPES, None])
@pytest.mark.parametrize("n", [600, 1500])
def test_gradcheck_short_signals(opencl, res_type, n):
    """The issue's case (8 kHz, hop 64, 24 bins from 100 Hz) on signals shorter than the longest filter."""
    _float64(opencl)
    y = _signal((2, n), torch.float64, seed=n).requires_grad_()
    kw = dict(sr=SR, hop_length=64, fmin=100.0, n_bins=24, bins_per_octave=12, res_type=res_type)
    assert _gradcheck(lambda x: specux.cqt(x, backend="opencl", **kw).abs(), y)


@pytest.mark.parametrize("res_type", ["polyphase", "soxr_hq", "soxr_lq"])
def test_gradcheck_long_signal_many_octaves(opencl, res_type):
    """Seven octaves from 32.7 Hz at 16 kHz: early downsampling by 8, then three halvings."""
    _float64(opencl)
    y = _signal((1, 24000), torch.float64, seed=7).requires_grad_()
    kw = dict(sr=16000, hop_length=256, n_bins=84, bins_per_octave=12, res_type=res_type)
    assert _gradcheck(lambda x: torch.view_as_real(specux.cqt(x, backend="opencl", **kw)), y)


def test_gradcheck_vqt_and_features(opencl):
    _float64(opencl)
    y = _signal((1, 3000), torch.float64, seed=3).requires_grad_()
    vkw = dict(sr=SR, hop_length=64, fmin=80.0, n_bins=48, gamma=20.0, res_type="soxr_vhq")
    assert _gradcheck(lambda x: torch.view_as_real(specux.vqt(x, backend="opencl", **vkw)), y)
    mkw = dict(sr=SR, n_fft=256, hop_length=64, n_mels=20, n_mfcc=13)
    assert _gradcheck(lambda x: specux.mfcc(x, backend="opencl", **mkw), y)
    assert _gradcheck(lambda x: specux.stft(x, n_fft=256, output="magnitude", backend="opencl"), y)


# --- torch.compile ------------------------------------------------------------------------------------------


def _model(x: torch.Tensor) -> torch.Tensor:
    C = specux.cqt(x, sr=SR, hop_length=64, fmin=100.0, n_bins=24, res_type="polyphase", backend="opencl")
    M = specux.melspectrogram(x, sr=SR, n_fft=256, hop_length=64, n_mels=16, backend="opencl")
    X = specux.stft(x, n_fft=256, hop_length=64, backend="opencl")
    y = specux.istft(X, hop_length=64, length=x.shape[-1], backend="opencl")
    return C.abs().mean() + torch.log(M + 1e-6).mean() + (y * x).mean()


def test_compile_fullgraph_forward_and_backward(opencl):
    y = _signal((2, 3000), torch.float32)
    x_eager = y.clone().requires_grad_()
    want = _model(x_eager)
    (g_eager,) = torch.autograd.grad(want, x_eager)
    torch._dynamo.reset()
    compiled = torch.compile(_model, fullgraph=True, backend="aot_eager")
    x = y.clone().requires_grad_()
    got = compiled(x)
    (g,) = torch.autograd.grad(got, x)
    assert torch.allclose(got, want, rtol=1e-6, atol=0)
    assert rel_err(g.numpy(), g_eager.numpy()) <= 1e-6


# --- what stays refused -------------------------------------------------------------------------------------


def test_window_gradient_refused_naming_option_and_backend(opencl):
    y = _signal((1, 2000), torch.float32).requires_grad_()
    w = torch.hann_window(256, dtype=torch.float64).requires_grad_()
    X = specux.stft(y, n_fft=256, window=w, backend="opencl")
    with pytest.raises(UnsupportedOperationError, match=r"the window.*'opencl'"):
        X.abs().sum().backward()


def test_power_without_device_adjoint_refused(opencl):
    y = _signal((1, 2000), torch.float32).requires_grad_()
    M = specux.melspectrogram(y, sr=SR, n_fft=256, n_mels=16, power=1.5, backend="opencl")
    with pytest.raises(UnsupportedOperationError, match=r"power=1\.0 or power=2\.0.*1\.5"):
        M.sum().backward()


def test_cq_weights_refused_on_device(opencl):
    y = _signal((1, 2000), torch.float32)
    args = [float(SR), 64, 100.0, 24, 12, 0.0, 1.0, 1.0, 0.01, "hann", True, "constant", "polyphase"]
    with pytest.raises(UnsupportedOperationError, match=r"weights.*backend='cpu'"):
        _ops_device.cqt_device(y, [torch.zeros(4, 4)], *args, "opencl")


def test_given_spectrogram_refused_on_device(opencl):
    """Only the signal's chain has device adjoints (chroma_stft / chroma_cqt have theirs since issue 13:
    test_chroma_device_autograd.py)."""
    y = _signal((1, 4000), torch.float32).requires_grad_()
    S = specux.stft(y.detach(), n_fft=256, output="power").requires_grad_()
    with pytest.raises(UnsupportedOperationError, match="S= variant"):
        specux.melspectrogram(S=S, sr=SR, n_fft=256, n_mels=16, backend="opencl")


def test_no_grad_keeps_the_frontend_path(opencl):
    y = _signal((2, 3000), torch.float32)
    kw = dict(sr=SR, hop_length=64, fmin=100.0, n_bins=24, res_type="polyphase")
    front = specux.cqt(y, backend="opencl", **kw)
    op = specux.cqt(y.clone().requires_grad_(), backend="opencl", **kw).detach()
    assert front.dtype == op.dtype and rel_err(op.numpy(), front.numpy()) <= tolerance("vqt", "float32")


def test_unavailable_backend_raises_its_reason():
    from specux._backends import registry

    if registry._load("metal")[0] is None:
        pytest.skip("metal is available here")
    y = _signal((1, 2000), torch.float32).requires_grad_()
    with pytest.raises(BackendUnavailableError):
        specux.stft(y, n_fft=256, backend="metal")


def test_float64_refused_where_the_device_lacks_it(opencl, monkeypatch):
    monkeypatch.setattr(opencl, "dtypes", frozenset({"float16", "float32"}))
    y = _signal((1, 2000), torch.float64).requires_grad_()
    with pytest.raises(TypeError, match=r"float64.*backend='cpu'"):
        specux.cqt(y, sr=SR, n_bins=24, fmin=100.0, res_type="polyphase", backend="opencl")


def test_weights_of_loss_are_used() -> None:
    # the cotangent helper must weigh entries differently, else a wrong gradient layout could pass
    W = _weights_like(torch.zeros(3, 4, dtype=torch.complex64))
    assert np.unique(W.real.numpy()).size == 12


# --- fftconvolve through the public front (two differentiable inputs) ---------------------------------------


@pytest.mark.parametrize("grad_of", ["in1", "in2", "both"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_fftconvolve_gradients_on_the_device_through_the_front(opencl, grad_of, mode):
    """A learnable filter (only ``in2`` requiring grad) takes the device op too, never a silent detach."""
    sig = _signal((2, 700), torch.float32, seed=3)
    ker = _signal((1, 33), torch.float32, seed=4)

    def grads(backend):
        a = sig.clone().requires_grad_(grad_of in ("in1", "both"))
        b = ker.clone().requires_grad_(grad_of in ("in2", "both"))
        out = specux.fftconvolve(a, b, mode=mode, axes=-1, backend=backend)
        (out * _weights_like(out)).sum().backward()
        return out.detach(), a.grad, b.grad

    got, want = grads("opencl"), grads("cpu")
    assert rel_err(got[0].numpy(), want[0].numpy()) <= tolerance("fftconvolve", "float32")
    for g, w in zip(got[1:], want[1:]):
        assert (g is None) == (w is None)
        if w is not None:
            assert g.shape == w.shape and rel_err(g.numpy(), w.numpy()) <= tolerance("fftconvolve", "float32")


def test_fftconvolve_filter_gradient_is_never_dropped_where_no_op_runs():
    """in2 requiring grad beside a NumPy in1 (the front's own path, which detaches) is refused, as an in1
    requiring grad is; it used to be computed without a word and its gradient lost."""
    sig = np.random.default_rng(0).standard_normal(400).astype(np.float32)
    ker = _signal((9,), torch.float32).requires_grad_()
    with pytest.raises(UnsupportedOperationError, match=r"specux\.fftconvolve: gradients flow"):
        specux.fftconvolve(sig, ker, backend="opencl")
    with torch.no_grad():  # no gradient wanted: runs
        specux.fftconvolve(sig, ker, backend="cpu")
