"""The functional API on torch CPU tensors goes through the specux ops: same values as for numpy, gradients,
torch.compile without graph breaks."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import specux  # noqa: E402
from specux.errors import UnsupportedOperationError  # noqa: E402

SR = 8000


def tones(*batch: int, n: int = 2000, dtype=torch.float64) -> torch.Tensor:
    g = torch.Generator().manual_seed(5)
    t = torch.arange(n, dtype=torch.float64) / SR
    x = torch.sin(2 * math.pi * 440 * t) + 0.2 * torch.randn(*batch, n, generator=g, dtype=torch.float64)
    return x.to(dtype)


PUBLIC = {
    "stft": lambda y: specux.stft(y, n_fft=256, hop_length=64, output="magnitude"),
    "stft_window_tensor": lambda y: specux.stft(
        y, n_fft=256, window=torch.hann_window(200, periodic=True, dtype=torch.float64), win_length=200
    ),
    "stft_kaiser_tuple": lambda y: specux.stft(y, n_fft=255, hop_length=40, window=("kaiser", 8.0)),
    "istft": lambda y: specux.istft(specux.stft(y, n_fft=256, hop_length=64), hop_length=64, length=2000),
    "melspectrogram": lambda y: specux.melspectrogram(y, sr=SR, n_fft=256, hop_length=64, n_mels=20),
    "melspectrogram_torchaudio": lambda y: specux.melspectrogram(y, sr=SR, n_mels=20, compat="torchaudio"),
    "mfcc": lambda y: specux.mfcc(y, sr=SR, n_fft=256, hop_length=64, n_mels=20, n_mfcc=8, lifter=3),
    "lfcc": lambda y: specux.lfcc(y, sample_rate=SR, n_fft=256, n_filter=20, n_lfcc=8, log_lf=True),
    "cqt": lambda y: specux.cqt(y, sr=SR, hop_length=64, fmin=110.0, n_bins=24, res_type=None),
    "vqt": lambda y: specux.vqt(y, sr=SR, hop_length=64, fmin=110.0, n_bins=24, res_type=None, gamma=10.0),
    "chroma_stft": lambda y: specux.chroma_stft(y, sr=SR, n_fft=256, hop_length=64),
    "chroma_cqt": lambda y: specux.chroma_cqt(
        y, sr=SR, hop_length=64, fmin=110.0, n_octaves=2, res_type=None
    ),
    "fftconvolve": lambda y: specux.fftconvolve(y, y[..., :33], mode="same", axes=-1),
}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_function_on_tensor_matches_numpy_and_differentiates(name: str) -> None:
    fn = PUBLIC[name]
    y = tones(2).requires_grad_()
    out = fn(y)
    assert isinstance(out, torch.Tensor) and out.grad_fn is not None
    with torch.no_grad():
        want = fn(y.detach().numpy()) if "window_tensor" not in name else fn(y.detach())
    got = out.detach().numpy()
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-10, atol=1e-10 * np.abs(want).max())
    loss = out.abs().sum() if out.is_complex() else out.sum()
    (grad,) = torch.autograd.grad(loss, y)
    assert torch.isfinite(grad).all() and grad.abs().sum() > 0


FFT_CALLS = [
    ("fft", {}, False),
    ("ifft", {"n": 12, "axis": 0}, False),
    ("rfft", {"norm": "ortho"}, True),
    ("irfft", {"n": 9}, False),
    ("hfft", {"norm": "forward"}, False),
    ("ihfft", {}, True),
    ("fftn", {"s": (4, 6), "axes": (0, 1)}, False),
    ("ifftn", {"axes": (0,)}, False),
    ("rfftn", {}, True),
    ("irfftn", {"s": (5, 8), "axes": (0, 1)}, False),
    ("fft2", {}, False),
    ("ifft2", {"norm": "ortho"}, False),
    ("rfft2", {"s": (6, 7)}, True),
    ("irfft2", {}, False),
]


@pytest.mark.parametrize(("name", "kwargs", "real"), FFT_CALLS, ids=[c[0] for c in FFT_CALLS])
def test_fft_family_on_tensors(name: str, kwargs: dict, real: bool) -> None:
    g = torch.Generator().manual_seed(2)
    a = torch.randn(5, 7, dtype=torch.float64, generator=g)
    if not real:
        a = torch.complex(a, torch.randn(5, 7, dtype=torch.float64, generator=g))
    a = a.requires_grad_()
    fn = getattr(specux.fft, name)
    got = fn(a, **kwargs)
    np.testing.assert_allclose(
        got.detach().numpy(), getattr(np.fft, name)(a.detach().numpy(), **kwargs), rtol=1e-12, atol=1e-12
    )
    assert torch.autograd.gradcheck(lambda x: fn(x, **kwargs), (a,), fast_mode=True)


def test_fft_precision_follows_numpy_rules() -> None:
    assert specux.fft.fft(torch.ones(8, dtype=torch.float32)).dtype == torch.complex64
    assert specux.fft.rfft(torch.arange(8)).dtype == torch.complex128  # integers promote to float64


def test_public_functions_compile_with_zero_graph_breaks() -> None:
    torch._dynamo.reset()

    def loss(y: torch.Tensor) -> torch.Tensor:
        M = specux.melspectrogram(y, sr=SR, n_fft=256, hop_length=64, n_mels=20)
        C = specux.mfcc(y, sr=SR, n_fft=256, hop_length=64, n_mels=20, n_mfcc=8)
        D = specux.stft(y, n_fft=128, hop_length=32)
        r = specux.istft(D, hop_length=32, length=y.shape[-1])
        F = specux.fft.rfft(r, norm="ortho")
        k = specux.fftconvolve(y, y[..., :16], mode="valid", axes=-1)
        return M.log1p().sum() + C.sum() * 1e-2 + F.abs().pow(2).sum() * 1e-3 + k.pow(2).mean()

    y = tones(2)
    ye = y.clone().requires_grad_()
    loss(ye).backward()
    yc = y.clone().requires_grad_()
    torch.compile(loss, fullgraph=True, backend="aot_eager", dynamic=False)(yc).backward()
    torch.testing.assert_close(yc.grad, ye.grad, rtol=1e-8, atol=1e-10)


def test_spectrogram_inputs_differentiate_through_torch() -> None:
    S = specux.stft(tones(2), n_fft=256, output="power").detach().requires_grad_()
    M = specux.melspectrogram(S=S, sr=SR, n_mels=20)
    np.testing.assert_allclose(
        M.detach().numpy(), specux.melspectrogram(S=S.detach().numpy(), sr=SR, n_mels=20), rtol=1e-12
    )
    M.sum().backward()
    assert S.grad is not None
    db = torch.log10(M.detach() + 1e-10).requires_grad_()
    C = specux.mfcc(S=db, n_mfcc=5)
    np.testing.assert_allclose(C.detach().numpy(), specux.mfcc(S=db.detach().numpy(), n_mfcc=5), rtol=1e-12)


def test_default_constant_q_is_differentiable() -> None:
    """The default resampler (soxr_hq, librosa's) carries gradients; values equal the numpy path's."""
    pytest.importorskip("soxr")
    y = tones(n=4000, dtype=torch.float64).requires_grad_()
    out = specux.cqt(y, sr=SR, fmin=110.0, n_bins=24)
    np.testing.assert_array_equal(
        out.detach().numpy(), specux.cqt(y.detach().numpy(), sr=SR, fmin=110.0, n_bins=24)
    )
    w = torch.randn(out.shape, dtype=out.dtype, generator=torch.Generator().manual_seed(0))
    (out * w).real.sum().backward()
    # the transform is linear: <grad, d> equals the change of the output along d
    d = torch.randn(y.shape, dtype=y.dtype, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        delta = (specux.cqt(y + d, sr=SR, fmin=110.0, n_bins=24) - out) * w
    assert torch.isclose((y.grad * d).sum(), delta.real.sum(), rtol=1e-5)


def test_dtype_argument_sets_the_precision() -> None:
    D = specux.stft(tones(n=600, dtype=torch.float32), n_fft=128, dtype=np.complex128)
    assert D.dtype == torch.complex128
    assert specux.istft(D, dtype=np.float32).dtype == torch.float32


def test_bad_arguments_raise_the_functional_api_errors() -> None:
    with pytest.raises(ValueError, match="pad_mode"):
        specux.stft(tones(), n_fft=128, pad_mode="bogus")
    with pytest.raises(ValueError, match="n_mfcc"):
        specux.mfcc(tones(), n_mels=10, n_mfcc=11)
    with pytest.raises(ValueError, match="backend"):
        specux.stft(tones(), backend="nope")


def test_unrouted_backends_refuse_gradients_instead_of_detaching() -> None:
    available = {b.name for b in specux.backends() if b.available and "fft" in b.ops}
    if "opencl" not in available:
        pytest.skip(f"no second host-memory backend serving the FFT family (available: {sorted(available)})")
    y = tones(n=64).requires_grad_()
    with pytest.raises(UnsupportedOperationError, match="gradients"):
        specux.fft.fft(y, backend="opencl")
    with torch.no_grad():
        out = specux.fft.fft(y, backend="opencl")
    np.testing.assert_allclose(out.numpy(), np.fft.fft(y.detach().numpy()), rtol=1e-9, atol=1e-9)


def test_public_functions_under_autocast_compute_in_float32() -> None:
    y = tones(2, dtype=torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert specux.melspectrogram(y, sr=SR, n_fft=256, n_mels=20).dtype == torch.float32
        assert specux.stft(y, n_fft=256).dtype == torch.complex64
        assert specux.fft.rfft(y).dtype == torch.complex64
        assert specux.fftconvolve(y, y[..., :9], axes=-1).dtype == torch.float32
    with pytest.raises(TypeError, match="bfloat16"):
        specux.fft.rfft(y)  # outside autocast the CPU backend computes in float32 / float64 only


@pytest.mark.parametrize(
    "name",
    [
        "stft",
        "istft",
        "melspectrogram",
        "mfcc",
        "lfcc",
        "vqt",
        "cqt",
        "chroma_stft",
        "chroma_cqt",
        "fftconvolve",
    ],
)
def test_route_takes_exactly_the_public_parameters(name: str) -> None:
    """The route receives every public argument by name: its parameters must be the public function's."""
    import inspect

    from specux.torch import _route

    public = list(inspect.signature(getattr(specux, name)).parameters)
    routed = list(inspect.signature(_route._PUBLIC[name]).parameters)
    assert routed == public
