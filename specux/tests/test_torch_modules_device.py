"""The nn.Module wrappers on CUDA tensors: STFT, ISTFT, MelSpectrogram, MFCC, LFCC and Chroma run the device
ops on the cuda backend with their buffers as constants; CQT, VQT and Chroma("cqt") with precomputed octave
weights refuse a CUDA tensor by name.

No GPU here: a CPU tensor is made to take the CUDA branch (``_modules._on_cuda``) and the device op's
backend is the opencl one (PoCL in CI), so what is checked is the module -> device op plumbing (which op,
arguments in order, the buffers passed, the layout of STFT's result, gradients), against the same module
on the CPU ops. The CUDA kernels themselves run only on a GPU (scripts/dev/gpu_check.py).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from specux_test_support import rel_err, tolerance

torch = pytest.importorskip("torch")

import specux.torch as st  # noqa: E402
from specux.errors import UnsupportedOperationError  # noqa: E402
from specux.torch import _device_op, _modules  # noqa: E402

SR = 8000
#: Chroma("cqt") with tuning=None (estimated per call: the fold is its only buffer), a device resampler
CHROMA_CQT = dict(sr=SR, hop_length=64, fmin=200.0, n_octaves=2, res_type="polyphase")

MODULES = {
    "stft": lambda: st.STFT(n_fft=256, hop_length=64),
    "stft_real_imag": lambda: st.STFT(n_fft=200, hop_length=50, output="real_imag", window="hamming"),
    "melspectrogram": lambda: st.MelSpectrogram(sr=SR, n_fft=256, hop_length=64, n_mels=20),
    "mfcc": lambda: st.MFCC(sr=SR, n_fft=256, hop_length=64, n_mels=20, n_mfcc=13),
    "lfcc": lambda: st.LFCC(sample_rate=SR, n_fft=256, hop_length=64, n_filter=24, n_lfcc=10),
    "chroma_stft": lambda: st.Chroma(sr=SR, n_fft=256, hop_length=64, tuning=0.0),
    "chroma_stft_estimated": lambda: st.Chroma(sr=SR, n_fft=256, hop_length=64, norm=2, n_chroma=24),
    "chroma_cqt_estimated": lambda: st.Chroma("cqt", **CHROMA_CQT),
}
#: the tolerance key of each (also the device op it runs)
KEYS = {
    "stft_real_imag": "stft",
    "chroma_stft_estimated": "chroma_stft",
    "chroma_cqt_estimated": "chroma_cqt",
}


def _value_and_grad(module, y):
    x = y.detach().clone().requires_grad_()
    out = module(x)
    w = torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float32)
    loss = (torch.view_as_real(out) if out.is_complex() else out)
    loss = (loss * (torch.view_as_real(w.to(out.dtype)) if out.is_complex() else w)).sum()
    (g,) = torch.autograd.grad(loss, x)
    return out.detach(), g


@pytest.mark.parametrize("name", sorted(MODULES))
def test_the_cuda_branch_runs_the_device_op_with_the_buffers(name, opencl, monkeypatch):
    module = MODULES[name]()
    y = torch.randn(2, 3000, generator=torch.Generator().manual_seed(0))
    want, want_grad = _value_and_grad(module, y)
    used = []
    real_backend_of = _device_op.backend_of

    def backend_of(backend, op, real):
        assert backend == "cuda"
        used.append(op)
        return real_backend_of("opencl", op, real)

    monkeypatch.setattr(_modules, "_on_cuda", lambda x: True)
    monkeypatch.setattr(_device_op, "backend_of", backend_of)
    got, got_grad = _value_and_grad(module, y)
    key = KEYS.get(name, name)
    assert used and set(used) == {key}
    assert got.shape == want.shape and got.dtype == want.dtype
    assert rel_err(got.numpy(), want.numpy()) <= tolerance(key, "float32")
    assert rel_err(got_grad.numpy(), want_grad.numpy()) <= tolerance(key, "float32")


def test_istft_module_on_the_cuda_branch(opencl, monkeypatch):
    module = st.ISTFT(n_fft=256, hop_length=64)
    D = st.STFT(n_fft=256, hop_length=64)(torch.randn(2, 3000, generator=torch.Generator().manual_seed(2)))
    want = module(D, length=3000)
    real_backend_of = _device_op.backend_of
    monkeypatch.setattr(_modules, "_on_cuda", lambda x: True)
    monkeypatch.setattr(_device_op, "backend_of", lambda b, op, real: real_backend_of("opencl", op, real))
    got = module(D, length=3000)
    assert got.shape == want.shape == (2, 3000)
    assert rel_err(got.numpy(), want.numpy()) <= tolerance("istft", "float32")


def test_a_changed_buffer_reaches_the_device_op(opencl, monkeypatch):
    """The module's window is the one the device computes with (not re-derived from the arguments)."""
    module = st.STFT(n_fft=256, hop_length=64, output="magnitude")
    with torch.no_grad():
        module.window.mul_(2.0)
    y = torch.randn(3000, generator=torch.Generator().manual_seed(3))
    want = module(y)
    real_backend_of = _device_op.backend_of
    monkeypatch.setattr(_modules, "_on_cuda", lambda x: True)
    monkeypatch.setattr(_device_op, "backend_of", lambda b, op, real: real_backend_of("opencl", op, real))
    got = module(y)
    assert rel_err(got.numpy(), want.numpy()) <= tolerance("stft", "float32")


def _on_the_cuda_branch(monkeypatch, used=None):
    """CPU tensors take the modules' CUDA branch, whose device op runs on the opencl backend."""
    real_backend_of = _device_op.backend_of

    def backend_of(backend, op, real):
        assert backend == "cuda"
        if used is not None:
            used.append(op)
        return real_backend_of("opencl", op, real)

    monkeypatch.setattr(_modules, "_on_cuda", lambda x: True)
    monkeypatch.setattr(_device_op, "backend_of", backend_of)


def _reverse_fold(module):
    with torch.no_grad():
        module.fold.copy_(torch.flip(module.fold, dims=[0]))  # the pitch classes in reverse order


#: (the module whose state is saved, after ``edit``; the module that loads it)
LOADED = {
    # a bank built for another tuning is replaced by tuning 0's
    "chroma_stft": (
        lambda: st.Chroma(sr=SR, n_fft=256, hop_length=64, tuning=0.0),
        lambda: st.Chroma(sr=SR, n_fft=256, hop_length=64, tuning=0.4),
        lambda module: None,
    ),
    # the same arguments; the saved fold has its pitch classes reversed
    "chroma_cqt": (
        lambda: st.Chroma("cqt", **CHROMA_CQT), lambda: st.Chroma("cqt", **CHROMA_CQT), _reverse_fold
    ),
}


@pytest.mark.parametrize("op", sorted(LOADED))
def test_a_loaded_chroma_buffer_is_the_one_the_device_op_computes_with(opencl, monkeypatch, op):
    """state_dict round trip: a module loaded with another's chroma bank or fold gives that module's
    chromagram on the device branch too (the buffer reaches the op, not one re-derived from the
    arguments)."""
    make_source, make_target, edit = LOADED[op]
    source, target = make_source(), make_target()
    edit(source)
    y = torch.randn(2, 3000, generator=torch.Generator().manual_seed(4))
    want = source(y)
    assert rel_err(target(y).numpy(), want.numpy()) > 0.01  # the two buffers differ where it shows
    target.load_state_dict(source.state_dict())
    used = []
    _on_the_cuda_branch(monkeypatch, used)
    got = target(y)
    assert used == [op]
    assert rel_err(got.numpy(), want.numpy()) <= tolerance(op, "float32")


def test_chroma_cqt_with_octave_weights_refuses_a_cuda_tensor():
    """Its weights buffers have no device op that would use them (a device builds its own basis): refused
    by name, pointing at tuning=None, rather than ignored."""
    module = st.Chroma("cqt", sr=SR, hop_length=64, fmin=100.0, n_octaves=2, tuning=0.0, res_type=None)
    stand_in = SimpleNamespace(device=SimpleNamespace(type="cuda"))  # forward reads only its device first
    with pytest.raises(UnsupportedOperationError, match=r"Chroma: runs on CPU.*'cqt' with tuning=None"):
        module(stand_in)


@pytest.mark.parametrize(
    "make",
    [
        lambda: st.CQT(sr=SR, hop_length=64, fmin=100.0, n_bins=12, tuning=0.0),
        lambda: st.Chroma("cqt", sr=SR, hop_length=64, fmin=100.0, n_octaves=1, tuning=0.0),
    ],
    ids=["CQT", "Chroma-cqt"],
)
def test_modules_without_a_device_route_refuse_other_devices(make):
    module = make()
    stand_in = SimpleNamespace(device=SimpleNamespace(type="cuda"))
    with pytest.raises(UnsupportedOperationError, match=f"specux.torch.{type(module).__name__}: runs on CPU"):
        _modules._op(module, "cqt", stand_in, device=False)
    with pytest.raises(UnsupportedOperationError, match="MelSpectrogram"):
        _modules._op(module, "cqt", SimpleNamespace(device=SimpleNamespace(type="mps")))


@pytest.mark.parametrize("bad", [{"power": "2"}, {"f_min": "0"}])
def test_lfcc_module_checks_its_arguments_as_the_function_does(bad):
    """LFCC read power and f_min through float() and so took strings that specux.lfcc refuses."""
    with pytest.raises(TypeError, match=f"lfcc: {next(iter(bad))} must be"):
        st.LFCC(sample_rate=SR, **bad)
    assert st.LFCC(sample_rate=SR, f_min=0, power=2)(torch.randn(2000)).shape[0] == 40


def test_chroma_module_on_the_cuda_branch_compiles_whole(opencl, monkeypatch):
    """torch.compile(fullgraph=True) of Chroma with tuning=None on the device branch: the device op (whose
    second output, the estimated bank, goes to the backward op) is one node each way; eager's result and
    gradient."""
    module = st.Chroma(sr=SR, n_fft=256, hop_length=64, norm=2)
    y = torch.randn(2, 3000, generator=torch.Generator().manual_seed(6))
    _on_the_cuda_branch(monkeypatch)
    want, want_grad = _value_and_grad(module, y)
    torch._dynamo.reset()
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager", dynamic=False)
    got, got_grad = _value_and_grad(compiled, y)
    assert torch.equal(got, want) and torch.equal(got_grad, want_grad)
