"""Gradients of specux.icqt for torch tensors (issue 14): float64 gradcheck with every resampler on short
responses, with several octaves (upsampling by 8, where libsoxr's start-up needs its measured correction)
and with ``length``; dot-product tests of the upsamplers' adjoints; torch.compile(fullgraph=True).

As for the forward (test_cqt_gradients_short.py), libsoxr's qualities other than "soxr_vhq" compute in single
precision, so gradcheck's default step measures their rounding; the inverse is linear, so those are checked
with a large step, at which finite differences are exact up to that rounding.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("soxr")

import specux  # noqa: E402
from specux._resample import RES_TYPES  # noqa: E402
from specux._upsample import upsample, upsample_adjoint  # noqa: E402

_DOUBLE = ("soxr_vhq", "polyphase")
KW = dict(sr=8000, hop_length=64, fmin=100.0, bins_per_octave=12)


def _responses(n_bins: int, n_frames: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    re = torch.randn(1, n_bins, n_frames, dtype=torch.float64, generator=g)
    im = torch.randn(1, n_bins, n_frames, dtype=torch.float64, generator=g)
    return torch.complex(re, im).requires_grad_()


def _gradcheck(fn, C, res_type):
    if res_type in _DOUBLE:
        return torch.autograd.gradcheck(fn, (C,), fast_mode=True)
    return torch.autograd.gradcheck(fn, (C,), eps=0.5, atol=1e-5, rtol=1e-4, fast_mode=True)


@pytest.mark.parametrize("res_type", RES_TYPES)
def test_gradcheck_two_octaves(res_type):
    C = _responses(24, 8)
    assert _gradcheck(lambda c: specux.icqt(c, **KW, res_type=res_type), C, res_type)


@pytest.mark.parametrize("res_type", ["soxr_hq", "soxr_vhq", "polyphase"])
def test_gradcheck_four_octaves_and_length(res_type):
    # the lowest octave is upsampled by 8: libsoxr's multi-stage start weighs the first outputs differently
    C = _responses(48, 6, seed=1)
    assert _gradcheck(lambda c: specux.icqt(c, **KW, res_type=res_type, length=200), C, res_type)


def test_gradient_matches_autograd_of_a_dense_map():
    # the analytic gradient of a loss equals the loss's gradient through the explicit Jacobian columns
    C = _responses(24, 5, seed=2)
    kw = dict(KW, res_type="polyphase")
    y = specux.icqt(C, **kw)
    w = torch.randn(y.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    (g,) = torch.autograd.grad((y * w).sum(), C)
    base = C.detach().numpy()
    flat = np.zeros(base.size, np.complex128)
    expected = np.zeros(base.size, np.complex128)
    for i in range(base.size):
        for unit in (1.0, 1j):
            flat[:] = 0
            flat[i] = unit
            col = specux.icqt(flat.reshape(base.shape), **kw)
            expected[i] += unit * float(np.sum(col * w.numpy()))
    np.testing.assert_allclose(g.numpy().ravel(), expected, rtol=1e-10, atol=1e-12)


def test_double_backward():
    C = _responses(24, 5, seed=4)
    fn = lambda c: specux.icqt(c, **KW, res_type="polyphase")  # noqa: E731
    assert torch.autograd.gradgradcheck(fn, (C,), fast_mode=True)


@pytest.mark.parametrize("res_type", RES_TYPES)
@pytest.mark.parametrize("factor", [2, 8])
def test_upsample_adjoint_dot_product(res_type, factor):
    rng = np.random.default_rng(factor)
    for n in (1, 5, 40, 300):
        x = rng.standard_normal((2, n))
        g = rng.standard_normal((2, factor * n))
        y = upsample(x, factor, res_type)
        assert y.shape == g.shape
        lhs = float(np.sum(y * g))
        rhs = float(np.sum(x * upsample_adjoint(g, n, factor, res_type)))
        # scipy's FIR is exact; libsoxr's measured taps stop at 1e-9 of their peak ("soxr_vhq", double
        # precision), and the other qualities round to single precision (about 1e-7 of the peak per output)
        tol = {"polyphase": 1e-12, "soxr_vhq": 1e-9}.get(res_type, 2e-6)
        assert abs(lhs - rhs) <= tol * np.abs(y).max() * np.abs(g).sum()


def test_torch_compile_fullgraph():
    C = _responses(24, 6, seed=5)
    kw = dict(KW, res_type="polyphase")

    def loss(c):
        return (specux.icqt(c, **kw) ** 2).sum()

    compiled = torch.compile(loss, fullgraph=True, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = compiled(C)
    (g1,) = torch.autograd.grad(value, C)
    (g2,) = torch.autograd.grad(loss(C), C)
    torch.testing.assert_close(g1, g2)


@pytest.mark.parametrize("res_type", _DOUBLE)
def test_gradcheck_seven_octaves(res_type):
    # librosa's default bank (84 bins from C1 at 22.05 kHz): the lowest octave is upsampled by 64. (With
    # "soxr_hq" the same check passes too, but measuring libsoxr's upsamplers by 8 to 64 takes seconds.)
    C = _responses(84, 5, seed=6)
    assert _gradcheck(lambda c: specux.icqt(c, sr=22050, res_type=res_type), C, res_type)
