"""Where a torch device op runs its arrays (:mod:`specux.torch._device_op`): host staging for CPU tensors,
the tensor's own memory for CUDA tensors on the cuda backend.

No GPU here: the CUDA place's own plumbing (which inputs travel, the input skipped when the adjoint does not
read it, dtypes, the result's aliasing rule) is run against a stand-in of the cuda backend's ``in_place``
over the opencl runtime (PoCL in CI), so the same kernels compute both ways and the results must agree bit
for bit. The cuda backend's ``in_place`` itself (raw pointers on torch's stream) is the one the generated ops
use for CUDA tensors without grad; it runs only on a GPU (``test_torch_cuda_gradient_parity.py``,
``scripts/dev/gpu_check.py autograd``).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402

import specux  # noqa: E402
import specux.torch as st  # noqa: E402
from specux import _torch_hook  # noqa: E402
from specux._runtime import device_array as da  # noqa: E402
from specux.torch import _device_op, _modules, _ops_device  # noqa: E402


def _stand_in(device: str, dtype: str = "torch.float32", requires_grad: bool = True):
    return SimpleNamespace(device=SimpleNamespace(type=device), dtype=dtype, requires_grad=requires_grad)


def test_every_device_op_has_a_cuda_kernel() -> None:
    for name in _ops_device.OPS:
        for op in (f"specux::{name}_device", f"specux::{name}_device_backward"):
            assert torch._C._dispatch_has_kernel_for_dispatch_key(op, "CUDA"), op
            assert torch._C._dispatch_has_kernel_for_dispatch_key(op, "CPU"), op


def test_auto_names_cuda_for_a_cuda_tensor() -> None:
    cuda, cpu = _stand_in("cuda"), _stand_in("cpu")
    assert _torch_hook._route_backend("stft", cuda, "auto") == "cuda"
    assert _torch_hook._route_backend("stft", cuda, "cuda") == "cuda"
    assert _torch_hook._route_backend("stft", cpu, "auto") == "auto"
    # the FFT family's ops pick their CUDA kernels themselves
    assert _torch_hook._route_backend("fft.rfft", cuda, "auto") == "auto"


def test_places_and_refusals() -> None:
    assert _device_op.place_of(_stand_in("cpu"), "opencl", "stft") is _device_op.HOST
    assert _device_op.place_of(_stand_in("cpu"), "cuda", "stft") is _device_op.HOST
    assert _device_op.place_of(_stand_in("cuda"), "cuda", "stft") is _device_op.CUDA
    for device, backend in (("cuda", "opencl"), ("cuda", "metal"), ("mps", "metal"), ("mps", "cuda")):
        with pytest.raises(ValueError, match=f"specux.stft: .*backend={backend!r} for a tensor on"):
            _device_op.place_of(_stand_in(device), backend, "stft")


class _InPlaceOverHost:
    """The cuda backend's ``in_place`` contract (torch tensors in, ``run(rt, device arrays)``, a torch tensor
    out) computed on a host backend's runtime; records what it was given."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.runtime = backend.runtime
        self.calls: list[tuple[str, list[torch.dtype]]] = []

    def in_place(self, op, arrays, library, run):
        assert library == "torch"
        self.calls.append((op, [a.dtype for a in arrays]))
        rt = self.runtime
        with _device_op._lock(rt):
            inputs = tuple(da.upload(rt, a.detach().contiguous().numpy()) for a in arrays)
            return torch.from_numpy(da.download(rt, run(rt, inputs)))


def _grad(fn, y):
    x = y.detach().clone().requires_grad_()
    out = fn(x)
    g = torch.Generator().manual_seed(1)
    if out.is_complex():
        w = torch.view_as_complex(torch.randn(*out.shape, 2, generator=g, dtype=out.real.dtype))
        loss = (out * w).real.sum()
    else:
        loss = (out * torch.randn(*out.shape, generator=g, dtype=out.dtype)).sum()
    (grad,) = torch.autograd.grad(loss, x)
    return out.detach(), grad


CASES = {
    # complex output: the adjoint does not read the input (it stays on the host: None in the place)
    "stft": lambda x: specux.stft(x, n_fft=256, hop_length=64, backend="opencl"),
    # magnitude: the adjoint reads the input (both travel)
    "stft_magnitude": lambda x: specux.stft(
        x, n_fft=200, hop_length=50, output="magnitude", backend="opencl"
    ),
    "melspectrogram": lambda x: specux.melspectrogram(x, sr=8000, n_fft=256, n_mels=20, backend="opencl"),
    "mfcc": lambda x: specux.mfcc(x, sr=8000, n_fft=256, n_mels=20, n_mfcc=13, backend="opencl"),
    "cqt": lambda x: specux.cqt(
        x, sr=8000, hop_length=64, fmin=100.0, n_bins=24, res_type=None, backend="opencl"
    ),
    # complex responses built from the signal (torch differentiates the packing on the host): the device op
    # takes complex64 and its adjoint reads only the gradient; soxr_hq by 4 in the lowest octave
    "icqt": lambda x: specux.icqt(
        torch.complex(x[:, :1440].reshape(2, 36, 40), x[:, 1440:2880].reshape(2, 36, 40)),
        sr=8000, hop_length=64, fmin=100.0, res_type="soxr_hq", length=2000, backend="opencl",
    ),
    # tuning=None: the estimate downloads the device's power spectrogram inside the place's run
    "chroma_stft": lambda x: specux.chroma_stft(x, sr=8000, n_fft=256, norm=2, backend="opencl"),
    "chroma_cqt": lambda x: specux.chroma_cqt(
        x, sr=8000, hop_length=64, fmin=200.0, n_octaves=2, threshold=0.01, res_type="polyphase",
        tuning=0.0, backend="opencl",
    ),
}
#: the dtype each case's device op takes its input in (the others: the float32 signal)
INPUT_DTYPE = {"icqt": torch.complex64}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_cuda_place_computes_what_the_host_place_does(opencl, monkeypatch, name) -> None:
    fn = CASES[name]
    y = torch.randn(2, 3000, generator=torch.Generator().manual_seed(0))
    out_host, grad_host = _grad(fn, y)
    stand_in = _InPlaceOverHost(opencl)
    real_backend_of = _device_op.backend_of
    monkeypatch.setattr(_device_op, "place_of", lambda x, backend, op: _device_op.CUDA)
    def backend_of(name, op, real):
        real_backend_of(name, op, real)  # its checks still run
        return stand_in

    monkeypatch.setattr(_device_op, "backend_of", backend_of)
    out_cuda, grad_cuda = _grad(fn, y)
    # the same kernels on the same device and inputs
    assert torch.equal(out_cuda, out_host) and torch.equal(grad_cuda, grad_host)
    assert grad_cuda.dtype == y.dtype and out_cuda.dtype == out_host.dtype
    forward, backward = stand_in.calls
    assert forward[1] == [INPUT_DTYPE.get(name, torch.float32)]
    reads_input = name in ("stft_magnitude", "melspectrogram", "mfcc", "chroma_stft", "chroma_cqt")
    assert len(backward[1]) == (2 if reads_input else 1)


MODULES = {
    # tuning=None: no bank buffer, the device op estimates the tuning inside the place's run
    "Chroma-stft-estimated": lambda: st.Chroma(sr=8000, n_fft=256, hop_length=64, norm=2),
    # the bank buffer is the op's constant
    "Chroma-stft-bank": lambda: st.Chroma(sr=8000, n_fft=256, hop_length=64, tuning=0.2, norm=np.inf),
    # the fold buffer is the op's constant
    "Chroma-cqt": lambda: st.Chroma(
        "cqt", sr=8000, hop_length=64, fmin=200.0, n_octaves=2, threshold=0.01, res_type="polyphase"
    ),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_chroma_modules_on_the_cuda_place(opencl, monkeypatch, name) -> None:
    """A Chroma module given a CUDA tensor runs its device op on backend 'cuda', in the CUDA place (the
    stand-in): the same result and gradient, bit for bit, as the device op on the host place; the module's
    buffers stay constants (only the signal, then the gradient and the signal, travel)."""
    module = MODULES[name]()
    y = torch.randn(2, 3000, generator=torch.Generator().manual_seed(0))
    op = "chroma_cqt" if "cqt" in name else "chroma_stft"
    stand_in = _InPlaceOverHost(opencl)
    real_backend_of = _device_op.backend_of
    backends = []
    in_place = []  # empty: the host place; then the CUDA place over the stand-in

    def backend_of(backend, op, real):
        backends.append(backend)
        opencl_backend = real_backend_of("opencl", op, real)  # its checks still run
        return stand_in if in_place else opencl_backend

    monkeypatch.setattr(_modules, "_on_cuda", lambda x: True)
    monkeypatch.setattr(_device_op, "backend_of", backend_of)
    out_host, grad_host = _grad(module, y)
    in_place.append(True)
    monkeypatch.setattr(_device_op, "place_of", lambda x, backend, op: _device_op.CUDA)
    out_cuda, grad_cuda = _grad(module, y)
    assert set(backends) == {"cuda"}
    assert torch.equal(out_cuda, out_host) and torch.equal(grad_cuda, grad_host)
    assert [c[0] for c in stand_in.calls] == [f"{op} (torch device op)"] * 2
    forward, backward = stand_in.calls
    assert forward[1] == [torch.float32] and backward[1] == [torch.float32, torch.float32]


def test_a_result_that_is_its_input_is_copied() -> None:
    """A custom op's result must not alias its arguments: an exec function returning its input's own array
    (a view) gives a copy."""
    x = torch.arange(6.0)

    class Backend:
        def in_place(self, op, arrays, library, run):
            return arrays[0]  # what the cuda backend returns when the exec function hands back its input

    out = _device_op.CUDA.run(Backend(), "stft", ((x, "float32"),), lambda rt, ins: ins[0])
    assert torch.equal(out, x) and out.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


def test_the_autocast_policy_covers_cpu_and_cuda() -> None:
    """Inside torch.autocast on either device type the ops compute in float32 (specux.torch._autocast)."""
    from specux.torch._autocast import FORWARD_OPS

    for name in FORWARD_OPS:
        for key in ("AutocastCPU", "AutocastCUDA"):
            assert torch._C._dispatch_has_kernel_for_dispatch_key(name, key), (name, key)


def test_a_device_op_under_cpu_autocast_computes_in_float32(opencl) -> None:
    y = torch.randn(2, 2000).to(torch.bfloat16).requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        S = specux.melspectrogram(y, sr=8000, n_fft=256, n_mels=16, backend="opencl")
    assert S.dtype == torch.float32
    S.sum().backward()
    assert y.grad.dtype == torch.bfloat16 and torch.isfinite(y.grad.float()).all()


def test_fftconvolve_device_op_under_cpu_autocast_computes_in_float32(opencl) -> None:
    a = torch.randn(300).to(torch.bfloat16).requires_grad_()
    b = torch.randn(20).to(torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = specux.fftconvolve(a, b, backend="opencl")
    assert out.dtype == torch.float32
    out.sum().backward()
    assert a.grad.dtype == torch.bfloat16
