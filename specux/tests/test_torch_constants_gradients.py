"""Gradients of the constant tensors: the stft window; the window, filter bank and DCT matrix of
melspectrogram, mfcc and lfcc; the per-octave weights of cqt / vqt.

These make learnable front ends possible (``specux.torch.MelSpectrogram(trainable=True)``): each is checked
with gradcheck in float64 (together with the signal's gradient), with a shorter window than ``n_fft`` where it
matters, and through the modules and ``torch.compile``.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import specux.torch  # noqa: E402
from specux._spec.features import dct_matrix  # noqa: E402
from specux.filters import mel as mel_bank  # noqa: E402

ops = torch.ops.specux
SR = 4000.0
F64 = torch.float64


def _signal(n: int = 300) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return torch.randn(2, 2 * n, generator=g, dtype=F64)[:, ::2].requires_grad_()


def _param(values) -> torch.Tensor:
    return torch.tensor(np.array(values, dtype=np.float64)).requires_grad_()


def _window(n: int) -> torch.Tensor:
    return torch.hann_window(n, periodic=True, dtype=F64).requires_grad_()


def _check(fn, *inputs) -> None:
    assert torch.autograd.gradcheck(fn, inputs, fast_mode=True, atol=1e-6)


@pytest.mark.parametrize("output", ["complex", "real_imag", "power", "magnitude"])
@pytest.mark.parametrize("win_length", [None, 24])
def test_stft_window(output: str, win_length: int | None) -> None:
    w = _window(32 if win_length is None else win_length)
    _check(lambda y, w: ops.stft(y, w, "boxcar", 32, 8, win_length, True, "reflect", output), _signal(), w)


def test_stft_window_outside_a_short_support_gets_no_gradient() -> None:
    """A full-length window with win_length < n_fft: samples outside the support do not reach the forward."""
    w = _window(32)
    ops.stft(_signal(), w, "boxcar", 32, 8, 20, True, "constant", "power").sum().backward()
    assert (w.grad[:6] == 0).all() and (w.grad[26:] == 0).all() and (w.grad[6:26] != 0).any()


@pytest.mark.parametrize("power", [1.0, 2.0])
@pytest.mark.parametrize("win_length", [None, 48])
def test_melspectrogram_window_and_bank(power: float, win_length: int | None) -> None:
    w = _window(64 if win_length is None else win_length)
    basis = _param(mel_bank(sr=SR, n_fft=64, n_mels=12))
    rest = (SR, 64, 16, win_length, True, None, power, 12, 0.0, None, None, "auto", None)
    _check(lambda y, w, b: ops.melspectrogram(y, w, b, "boxcar", *rest), _signal(), w, basis)


@pytest.mark.parametrize("top_db", [None, 8.0])
def test_mfcc_window_bank_and_dct(top_db: float | None) -> None:
    w, basis = _window(64), _param(mel_bank(sr=SR, n_fft=64, n_mels=12))
    dct = _param(dct_matrix(8, 12, 2, "ortho", 0.0))
    rest = (SR, 8, 2, "ortho", 0.0, 64, 16, None, True, None, 2.0, 12, 0.0, None, None, "auto", top_db, None)
    _check(lambda y, w, b, d: ops.mfcc(y, w, b, d, "boxcar", *rest), _signal(), w, basis, dct)


def test_lfcc_window_bank_and_dct() -> None:
    from specux._filters.linear import linear

    w = _window(64)
    bank = _param(linear(sr=4000, n_fft=64, n_filter=12, f_min=0.0, f_max=None))
    dct = _param(dct_matrix(6, 12, 2, "ortho", 0.0))
    rest = (4000, 12, 0.0, None, 6, 2, "ortho", False, 64, None, None, 2.0, True, "reflect")
    _check(lambda y, w, b, d: ops.lfcc(y, w, b, d, "boxcar", *rest), _signal(), w, bank, dct)


def test_only_the_requested_constant_is_computed() -> None:
    """A bank that requires grad while the window does not: the window's gradient stays None."""
    y = _signal().detach()
    w = torch.hann_window(64, periodic=True, dtype=F64)
    basis = _param(mel_bank(sr=SR, n_fft=64, n_mels=12))
    rest = (SR, 64, 16, None, True, None, 2.0, 12, 0.0, None, None, "auto", None)
    ops.melspectrogram(y, w, basis, "boxcar", *rest).sum().backward()
    assert basis.grad is not None and basis.grad.shape == basis.shape and w.grad is None and y.grad is None


def _constants_cases():
    """(forward op, gradients op, tensor arguments, other arguments, needs) per op with constant gradients."""
    from specux._backends.cpu.cqt import octave_bases, vqt_plan
    from specux._filters.linear import linear
    from specux._spec.cqt import validate_vqt

    y, w = _signal().detach(), _window(64).detach()
    basis = torch.tensor(np.array(mel_bank(sr=SR, n_fft=64, n_mels=12), dtype=np.float64))
    dct = torch.tensor(np.array(dct_matrix(8, 12, 2, "ortho", 0.0)))
    bank = linear(sr=4000, n_fft=64, n_filter=12, f_min=0.0, f_max=None)
    bank = torch.tensor(np.array(bank, dtype=np.float64))
    lfcc_dct = torch.tensor(np.array(dct_matrix(6, 12, 2, "ortho", 0.0)))
    mel_rest = (SR, 64, 16, None, True, None, 2.0, 12, 0.0, None, None, "auto", None)
    mfcc_rest = (SR, 8, 2, "ortho", 0.0, 64, 16, None, True, None, 2.0, 12, 0.0, None, None, "auto", 8.0)
    mfcc_rest = (*mfcc_rest, None)
    lfcc_rest = (4000, 12, 0.0, None, 6, 2, "ortho", False, 64, None, None, 2.0, True, "reflect")
    kw = dict(intervals="equal", gamma=0, tuning=0.0, window="hann", pad_mode="constant", dtype=None)
    _, p = validate_vqt(y.numpy(), "cqt", sr=SR, hop_length=32, fmin=150.0, n_bins=12, bins_per_octave=6,
                        filter_scale=1.0, norm=1.0, sparsity=0.01, scale=True, res_type="soxr_hq", **kw)
    weights = [torch.tensor(np.array(a, dtype=np.float64)) for a, _ in octave_bases(p, vqt_plan(p))]
    vqt_rest = (SR, 32, 150.0, 12, None, 0.0, 6, 0.0, 1.0, 1.0, 0.01, "hann", True, "constant", "soxr_hq")
    return {
        "stft": (ops.stft, ops.stft_constants_backward, (y, w),
                 ("boxcar", 64, 16, None, True, "constant", "complex"), [True]),
        "melspectrogram": (ops.melspectrogram, ops.melspectrogram_constants_backward, (y, w, basis),
                           ("boxcar", *mel_rest), [True, True]),
        "mfcc": (ops.mfcc, ops.mfcc_constants_backward, (y, w, basis, dct), ("boxcar", *mfcc_rest),
                 [True, False, True]),
        "lfcc": (ops.lfcc, ops.lfcc_constants_backward, (y, w, bank, lfcc_dct), ("boxcar", *lfcc_rest),
                 [False, True, True]),
        "vqt": (ops.vqt, ops.vqt_weights_backward, (y, weights), vqt_rest, [True, False]),
    }


@pytest.mark.parametrize("name", ["stft", "melspectrogram", "mfcc", "lfcc", "vqt"])
def test_opcheck_constants_backward_ops(name: str) -> None:
    forward, backward, tensors, rest, needs = _constants_cases()[name]
    grad = torch.randn_like(forward(*tensors, *rest))
    torch.library.opcheck(backward, (grad, *tensors, *rest, needs))


@pytest.mark.parametrize("name", ["stft", "melspectrogram", "mfcc", "lfcc", "vqt"])
def test_constants_gradients_bitwise_reproducible(name: str) -> None:
    from specux._determinism import deterministic

    forward, backward, tensors, rest, needs = _constants_cases()[name]
    tensors = tuple(t.float() if isinstance(t, torch.Tensor) else [w.float() for w in t] for t in tensors)
    grad = torch.randn_like(forward(*tensors, *rest))
    with deterministic(True):
        a = backward(grad, *tensors, *rest, needs)
        b = backward(grad, *tensors, *rest, needs)
    assert all(torch.equal(u, v) for u, v in zip(a, b))


@pytest.mark.parametrize(
    "module, names",
    [
        (lambda **k: specux.torch.STFT(n_fft=64, hop_length=16, **k), ["window"]),
        (lambda **k: specux.torch.MelSpectrogram(sr=SR, n_fft=64, hop_length=16, n_mels=12, **k),
         ["window", "mel_basis"]),
        (lambda **k: specux.torch.MFCC(sr=SR, n_fft=64, hop_length=16, n_mels=12, n_mfcc=8, **k),
         ["window", "mel_basis", "dct"]),
        (lambda **k: specux.torch.LFCC(sample_rate=4000, n_fft=64, n_filter=12, n_lfcc=6, **k),
         ["window", "filter_bank", "dct"]),
        (lambda **k: specux.torch.CQT(sr=SR, fmin=150.0, n_bins=12, bins_per_octave=6, hop_length=32, **k),
         ["weights_0", "weights_1"]),
    ],
)
def test_trainable_modules_learn(module, names) -> None:
    m = module(trainable=True)
    assert sorted(n for n, _ in m.named_parameters()) == sorted(names)
    frozen = module()
    assert list(frozen.parameters()) == [] and sorted(n for n, _ in frozen.named_buffers()) == sorted(names)
    # a step of gradient descent on the front end changes its output, and only the chosen tensors move
    y = _signal().detach().float()
    before = {n: p.detach().clone() for n, p in m.named_parameters()}
    opt = torch.optim.SGD(m.parameters(), lr=1e-3)
    out = m(y)
    loss = (out.abs() if out.is_complex() else out).pow(2).mean()
    loss.backward()
    opt.step()
    for n, p in m.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), n
        assert not torch.equal(p.detach(), before[n]), n
    one = module(trainable=names[-1:])
    assert [n for n, _ in one.named_parameters()] == names[-1:]


@pytest.mark.parametrize("res_type", [None, "soxr_hq"])
def test_constant_q_weights(res_type) -> None:
    from specux._backends.cpu.cqt import octave_bases, vqt_plan
    from specux._spec.cqt import validate_vqt

    y = _signal(400)
    kw = dict(intervals="equal", gamma=0, tuning=0.0, window="hann", pad_mode="constant", dtype=None)
    _, p = validate_vqt(y.detach().numpy(), "cqt", sr=SR, hop_length=32, fmin=150.0, n_bins=12,
                        bins_per_octave=6, filter_scale=1.0, norm=1.0, sparsity=0.01, scale=True,
                        res_type=res_type, **kw)
    ws = [_param(w) for w, _ in octave_bases(p, vqt_plan(p))]
    assert len(ws) == 2

    rest = (SR, 32, 150.0, 12, 6, 0.0, 1.0, 1.0, 0.01, "hann", True, "constant", res_type)

    def fn(y, *ws):
        return ops.cqt(y, list(ws), *rest)

    # libsoxr computes in single precision: a large step (the map is linear in y and in the weights)
    eps = 1e-6 if res_type is None else 1.0
    assert torch.autograd.gradcheck(fn, (y, *ws), fast_mode=True, atol=1e-6, eps=eps)


def test_modules_backpropagate_with_frozen_tensors() -> None:
    """A module whose tensors are buffers passes the signal's gradient (the weights need none)."""
    for m in (
        specux.torch.CQT(sr=SR, fmin=150.0, n_bins=12, bins_per_octave=6, hop_length=32),
        specux.torch.Chroma(source="cqt", sr=SR, fmin=150.0, n_octaves=1, bins_per_octave=12, hop_length=32,
                            tuning=0.0),
        specux.torch.MelSpectrogram(sr=SR, n_fft=64, n_mels=12),
    ):
        y = _signal(400).detach().float().requires_grad_()
        out = m(y)
        (out.abs() if out.is_complex() else out).sum().backward()
        assert y.grad is not None and torch.isfinite(y.grad).all(), type(m).__name__


def test_trainable_is_refused_where_there_is_no_gradient() -> None:
    with pytest.raises(ValueError, match="trainable"):
        specux.torch.ISTFT(64, trainable=True)
    with pytest.raises(ValueError, match="trainable"):
        specux.torch.STFT(n_fft=64, trainable=["mel_basis"])
    with pytest.raises(TypeError, match="trainable"):
        specux.torch.STFT(n_fft=64, trainable="window")


@pytest.mark.parametrize(
    "build",
    [
        lambda: specux.torch.MelSpectrogram(sr=SR, n_fft=64, hop_length=16, n_mels=12, trainable=True),
        lambda: specux.torch.CQT(
            sr=SR, fmin=150.0, n_bins=12, bins_per_octave=6, hop_length=32, trainable=True
        ),
    ],
    ids=["MelSpectrogram", "CQT"],
)
def test_trainable_module_compiles_without_graph_breaks(build) -> None:
    m = build()
    y = _signal(400).detach().float()

    def loss(out):
        return (out.abs() if out.is_complex() else out).sum()

    loss(m(y)).backward()
    grads = {n: p.grad.clone() for n, p in m.named_parameters()}
    m.zero_grad()
    compiled = torch.compile(m, fullgraph=True, backend="aot_eager")
    loss(compiled(y)).backward()
    for n, p in m.named_parameters():
        torch.testing.assert_close(p.grad, grads[n])
