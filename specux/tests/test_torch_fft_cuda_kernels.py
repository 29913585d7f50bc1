"""The FFT ops' CUDA kernels without a GPU: their routing and the adjoints they build from the primitives.

On CUDA, ``r2c_backward`` and ``c2r_backward`` are the cuda backend's ``c2r`` / ``r2c`` with per-bin weights
(``specux.torch._ops_fft``). Those formulas are checked here with a stand-in backend (``torch.fft`` on CPU
tensors) against the CPU ops' NumPy adjoints; the real kernels run only in
``test_torch_cuda_gradient_parity.py``, on a machine with a GPU.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

import specux.torch  # noqa: E402,F401  (registers the ops)
from specux._torch_hook import routed  # noqa: E402
from specux.torch._ops_fft import c2r_adjoint_via_r2c, r2c_adjoint_via_c2r  # noqa: E402

ops = torch.ops.specux


class TorchFFT:
    """The cuda backend's three entry points, computed by torch.fft (unnormalised, times ``scale``)."""

    def r2c(self, x, axis, scale):
        return torch.fft.rfft(x, dim=axis) * scale

    def c2r(self, x, axis, n, scale):
        return torch.fft.irfft(x, n=n, dim=axis, norm="forward") * scale

    def c2c(self, x, axis, inverse, scale):
        f = torch.fft.ifft if inverse else torch.fft.fft
        return f(x, dim=axis, norm="forward" if inverse else "backward") * scale


@pytest.mark.parametrize("n", [1, 2, 7, 8, 33])
@pytest.mark.parametrize("dim", [0, -1])
def test_r2c_adjoint_from_c2r(n: int, dim: int) -> None:
    shape = (n // 2 + 1, 3) if dim == 0 else (3, n // 2 + 1)
    g = torch.randn(*shape, dtype=torch.complex128)
    got = r2c_adjoint_via_c2r(TorchFFT(), g, dim % 2, n, 0.5)
    torch.testing.assert_close(got, ops.r2c_backward(g, dim, n, 0.5), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 7, 8, 33])
@pytest.mark.parametrize("dim", [0, -1])
def test_c2r_adjoint_from_r2c(n: int, dim: int) -> None:
    g = torch.randn(n, 3, dtype=torch.float64) if dim == 0 else torch.randn(3, n, dtype=torch.float64)
    got = c2r_adjoint_via_r2c(TorchFFT(), g, dim % 2, 2.0)
    torch.testing.assert_close(got, ops.c2r_backward(g, dim, 2.0), rtol=1e-12, atol=1e-12)


def test_adjoint_identity_of_the_device_formulas() -> None:
    """<r2c x, g> = <x, r2c^T g> (real inner product of the complex outputs)."""
    b = TorchFFT()
    x = torch.randn(4, 10, dtype=torch.float64)
    g = torch.randn(4, 6, dtype=torch.complex128)
    lhs = (torch.view_as_real(b.r2c(x, 1, 1.0)) * torch.view_as_real(g)).sum()
    rhs = (x * r2c_adjoint_via_c2r(b, g, 1, 10, 1.0)).sum()
    torch.testing.assert_close(lhs, rhs, rtol=1e-12, atol=1e-12)


def _tensor(device: str, dtype: str, requires_grad: bool = False):
    return SimpleNamespace(device=SimpleNamespace(type=device), dtype=dtype, requires_grad=requires_grad)


def test_which_tensors_take_the_ops() -> None:
    # CPU tensors: every op, under "auto" / "cpu"
    assert routed("stft", _tensor("cpu", "torch.float32"), "auto")
    assert not routed("stft", _tensor("cpu", "torch.float32"), "opencl")
    # a CPU tensor that requires grad, with a named device backend: the device ops (their adjoint kernels)
    assert routed("stft", _tensor("cpu", "torch.float32", requires_grad=True), "opencl")
    assert routed("chroma_stft", _tensor("cpu", "torch.float32", requires_grad=True), "opencl")
    assert routed("icqt", _tensor("cpu", "torch.complex64", requires_grad=True), "opencl")
    # the FFT family has no device ops: a CPU tensor with a named device backend keeps the frontend's path
    assert not routed("fft.rfft", _tensor("cpu", "torch.float32", requires_grad=True), "opencl")
    # CUDA tensors: the FFT family in float32 / float64, under "auto" / "cuda"
    assert routed("fft.rfft", _tensor("cuda", "torch.float32"), "auto")
    assert routed("fft.fft", _tensor("cuda", "torch.complex128"), "cuda")
    assert not routed("fft.rfft", _tensor("cuda", "torch.float16"), "auto")  # half: the backend's own path
    # the device-routed transforms on CUDA tensors: through the device ops when they require grad, else the
    # frontend's own path (the same kernels, in place)
    assert not routed("stft", _tensor("cuda", "torch.float32"), "auto")
    assert routed("stft", _tensor("cuda", "torch.float32", requires_grad=True), "auto")
    assert routed("mfcc", _tensor("cuda", "torch.float64", requires_grad=True), "cuda")
    assert not routed("stft", _tensor("cuda", "torch.float32", requires_grad=True), "opencl")
    assert not routed("stft", _tensor("cuda", "torch.float16", requires_grad=True), "auto")
    assert routed("chroma_cqt", _tensor("cuda", "torch.float32", requires_grad=True), "auto")
    assert not routed("chroma_cqt", _tensor("cuda", "torch.float32"), "auto")
    assert not routed("fft.rfft", _tensor("mps", "torch.float32"), "auto")


def test_cuda_kernels_are_registered() -> None:
    for name in ("c2c", "r2c", "r2c_backward", "c2r", "c2r_backward"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key(f"specux::{name}", "CUDA"), name
