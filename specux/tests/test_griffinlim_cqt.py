"""specux.griffinlim_cqt against librosa.griffinlim_cqt (issue 14), its convergence, and bad arguments.

Given the same random_state both start from the same phases and run the same iteration; what differs is
each step's rounding (librosa's inverse basis is complex64, libsoxr's single precision), which the
iteration carries along: after 4 iterations the outputs agree to 2e-6 of the peak with "polyphase" and
"soxr_vhq" (bounded here by 1e-5) and to 1e-5 with "soxr_hq" (bounded by 1e-4).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

librosa = pytest.importorskip("librosa")
pytest.importorskip("soxr")

import specux  # noqa: E402
from specux.errors import UnsupportedOperationError  # noqa: E402

SR = 8000
KW = dict(sr=SR, hop_length=64, fmin=60.0, bins_per_octave=12)
N_BINS = 48


def _magnitudes(dtype=np.float64, res_type="soxr_hq", n=2000, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n) / SR
    y = 0.4 * np.sin(2 * np.pi * 440.0 * t) + 0.3 * np.sin(2 * np.pi * 150.0 * t)
    y = y + 0.02 * rng.standard_normal(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return np.abs(librosa.cqt(y.astype(dtype), n_bins=N_BINS, res_type=res_type, **KW)), y


def _rel(a, b):
    return float(np.abs(np.asarray(a, np.float64) - b).max() / np.abs(b).max())


@pytest.mark.parametrize(
    "res_type, dtype, tol",
    [
        ("polyphase", np.float64, 1e-5),
        ("soxr_vhq", np.float64, 1e-5),
        ("polyphase", np.float32, 1e-4),
        ("soxr_hq", np.float64, 1e-4),
        ("soxr_hq", np.float32, 1e-4),
    ],
)
def test_matches_librosa(res_type, dtype, tol):
    S, _ = _magnitudes(dtype, res_type)
    kw = dict(KW, n_iter=4, res_type=res_type, random_state=0)
    ours = specux.griffinlim_cqt(S, **kw)
    theirs = librosa.griffinlim_cqt(S, **kw)
    assert ours.shape == theirs.shape
    assert ours.dtype == dtype
    assert _rel(ours, theirs) < tol


def test_zero_phase_start_generator_seed_momentum_and_length():
    S, _ = _magnitudes(res_type="polyphase")
    kw = dict(KW, n_iter=3, res_type="polyphase", init=None, momentum=0.5, length=2000)
    ours = specux.griffinlim_cqt(S, **kw)
    theirs = librosa.griffinlim_cqt(S, **kw)
    assert ours.shape == (2000,)
    assert _rel(ours, theirs) < 1e-5
    # a length whose cqt has fewer frames than S (librosa fails to broadcast): the frames are fitted to S's
    assert specux.griffinlim_cqt(S, **{**kw, "length": 1500}).shape == (1500,)
    kw = dict(KW, n_iter=2, res_type="polyphase")
    ours = specux.griffinlim_cqt(S, **kw, random_state=np.random.default_rng(7))
    theirs = librosa.griffinlim_cqt(S, **kw, random_state=np.random.default_rng(7))
    assert _rel(ours, theirs) < 1e-5


def test_batch_rows_are_independent():
    S0, _ = _magnitudes(res_type="polyphase", seed=0)
    S1, _ = _magnitudes(res_type="polyphase", seed=1)
    kw = dict(KW, n_iter=2, res_type="polyphase", init=None)
    batch = specux.griffinlim_cqt(np.stack([S0, S1]), **kw)
    assert _rel(batch[1], specux.griffinlim_cqt(S1, **kw)) < 1e-12


def test_iterations_reduce_the_spectral_error():
    S, _ = _magnitudes(res_type="polyphase")
    kw = dict(KW, res_type="polyphase", random_state=0)

    def spectral_error(n_iter):
        y_hat = specux.griffinlim_cqt(S, n_iter=n_iter, **kw)
        R = np.abs(specux.cqt(y_hat, n_bins=N_BINS, res_type="polyphase", **KW))
        return np.linalg.norm(R - S) / np.linalg.norm(S)

    first, later = spectral_error(1), spectral_error(16)
    # measured: 0.47 after one iteration, 0.36 after 16 (a short signal, 12 bins per octave)
    assert later < 0.85 * first


@pytest.mark.parametrize(
    "kw, error, match",
    [
        (dict(n_iter=0), ValueError, "n_iter"),
        (dict(momentum=-0.1), ValueError, "momentum"),
        (dict(init="zeros"), ValueError, "init must be 'random' or None"),
        (dict(random_state="seed"), TypeError, "random_state"),
        (dict(res_type="fft"), ValueError, "res_type"),
        (dict(pad_mode="mirror"), ValueError, "pad_mode"),
        (dict(length=-3), ValueError, "length"),
    ],
)
def test_bad_arguments_name_the_parameter(kw, error, match):
    S = np.ones((24, 8))
    with pytest.raises(error, match=match):
        specux.griffinlim_cqt(S, **{**KW, **kw})


def test_complex_input_refused_and_soxr_qq_refused_on_a_device():
    """A device backend now serves griffinlim_cqt (test_icqt_device_kernels.py); "soxr_qq" has no device
    filter and is refused there, naming res_type."""
    with pytest.raises(TypeError, match="real magnitudes"):
        specux.griffinlim_cqt(np.ones((24, 8), np.complex64), **KW)
    with pytest.raises((ValueError, specux.BackendUnavailableError), match=r"res_type|opencl"):
        specux.griffinlim_cqt(np.ones((24, 8), np.float32), **KW, res_type="soxr_qq", backend="opencl")


def test_torch_tensor_in_torch_tensor_out_and_grad_refused():
    torch = pytest.importorskip("torch")
    S, _ = _magnitudes(np.float32, "polyphase")
    kw = dict(KW, n_iter=2, res_type="polyphase", random_state=0)
    out = specux.griffinlim_cqt(torch.from_numpy(S), **kw)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), specux.griffinlim_cqt(S, **kw), rtol=0, atol=1e-7)
    with pytest.raises(UnsupportedOperationError, match="gradients"):
        specux.griffinlim_cqt(torch.from_numpy(S).requires_grad_(), **kw)
