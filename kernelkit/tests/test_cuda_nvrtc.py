"""kernelkit.cuda with no GPU: NVRTC compiles many-kernel programs to cubins for sm_80, sm_90 and sm_100
(64-bit indexing included), the probes say why CUDA cannot run, pointer arguments are resolved by device
pointer, and a launch packs its arguments and its 1-, 2- or 3-D configuration as the driver reads them
(checked against a stand-in for the driver; only a GPU run, scripts/dev/gpu_check.sh, checks the real one)."""

# the stand-in must use the driver API's own names (cuLaunchKernel, ...)
# ruff: noqa: N802

from __future__ import annotations

import ctypes
import enum
import struct

import numpy as np
import pytest

from kernelkit import cuda
from kernelkit.dialects import CUDA, Param
from kernelkit.program import KernelSignature, LaunchConfig, ObjectCode, Program

ARCHS = ("sm_80", "sm_90", "sm_100")

_SOURCE = """\
extern "C" __global__ void axpb(const float* __restrict__ x, float* __restrict__ y, const float a,
                                const int n) {
    const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n) y[i] = a * x[i] + 1.0f;
}

extern "C" __global__ void grid3(int* __restrict__ out) {
    const unsigned nx = gridDim.x * blockDim.x, ny = gridDim.y * blockDim.y;
    const unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    const unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
    out[(z * ny + y) * nx + x] = (int)(x + 100 * y + 10000 * z);
}

// 64-bit indexing: buffers past 2**31 elements
extern "C" __global__ void scale64(double* __restrict__ y, const long long n, const double s) {
    const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long j = i; j < (unsigned long long)n; j += stride) y[j] *= s;
}
"""
_PROGRAM = Program(
    _SOURCE,
    CUDA,
    (
        KernelSignature(
            "axpb",
            (Param("x", "f32", True, True), Param("y", "f32", True), Param("a", "f32"), Param("n", "int")),
        ),
        KernelSignature("grid3", (Param("out", "int", True),)),
        KernelSignature("scale64", (Param("y", "f64", True), Param("n", "i64"), Param("s", "f64"))),
    ),
    name="three",
)


@pytest.fixture
def nvrtc(require):
    require("nvrtc", cuda.nvrtc_probe("sm_90"))
    return cuda


@pytest.mark.parametrize("arch", ARCHS)
def test_a_many_kernel_program_compiles_to_a_cubin_with_no_gpu(nvrtc, arch):
    assert nvrtc.nvrtc_probe(arch) is None
    ok, cubin, log = nvrtc.compile_cubin(_PROGRAM.source, _PROGRAM.name, arch, nvrtc.CudaRuntime.options)
    assert ok, log
    assert cubin[:4] == b"\x7fELF"
    for kernel in _PROGRAM.kernels:  # one module, every entry point under its plain (extern "C") name
        assert kernel.name.encode() + b"\x00" in cubin, kernel.name


def test_a_compile_error_returns_the_log(nvrtc):
    ok, cubin, log = nvrtc.compile_cubin('extern "C" __global__ void k() { undefined_name(); }', "k", "sm_90")
    assert not ok and cubin == b"" and "undefined_name" in log


def test_an_unknown_architecture_is_a_reason_not_an_exception(nvrtc):
    reason = nvrtc.nvrtc_probe("sm_1")
    assert reason is not None and "sm_1" in reason


def test_the_probe_says_why_cuda_cannot_run_and_never_raises():
    reason = cuda.probe()
    if reason is None:
        pytest.skip("a CUDA device is present and ran the probe kernel")
    assert any(
        key in reason
        for key in ("cuda-bindings is not installed", "libcuda not found", "cuInit failed", "no CUDA device",
                    "NVRTC not found", "probe kernel")
    ), reason
    with pytest.raises(RuntimeError, match="CUDA cannot run here"):
        cuda.default_runtime()


def test_without_cuda_bindings_the_reasons_name_the_packages(monkeypatch):
    monkeypatch.setattr(cuda, "_IMPORT_ERROR", "ModuleNotFoundError: No module named 'cuda'")
    monkeypatch.setattr(cuda, "_verdict", [])
    cuda.nvrtc_probe.cache_clear()
    try:
        for reason in (cuda.probe(), cuda.nvrtc_probe()):
            assert "cuda-bindings is not installed" in reason
            assert "pip install cuda-bindings nvidia-cuda-nvrtc" in reason
            assert "nvidia-cuda-nvrtc" in reason
    finally:
        cuda.nvrtc_probe.cache_clear()


class _Tensor:
    """Looks like a torch tensor to device_pointer."""

    def __init__(self, ptr, device=0, is_cuda=True):
        self._ptr, self._device, self.is_cuda = ptr, device, is_cuda
        self.device = f"cuda:{device}" if is_cuda else "cpu"

    def data_ptr(self):
        return self._ptr

    def get_device(self):
        return self._device if self.is_cuda else -1


class _CupyLike:
    def __init__(self, ptr, device=0):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (4,), "typestr": "<f4", "version": 3}
        self.device = type("Device", (), {"id": device})()


def test_pointer_arguments_by_device_pointer():
    assert cuda.device_pointer(cuda.ForeignBuffer(object(), 0x1000)) == 0x1000
    assert cuda.device_pointer(_Tensor(0x2000), ordinal=0) == 0x2000
    assert cuda.device_pointer(_CupyLike(0x3000), ordinal=0) == 0x3000
    with pytest.raises(ValueError, match="cuda:1 passed to a kernel on cuda:0"):
        cuda.device_pointer(_Tensor(0x2000, device=1), ordinal=0)
    with pytest.raises(ValueError, match="cuda:1 passed to a kernel on cuda:0"):
        cuda.device_pointer(_CupyLike(0x3000, device=1), ordinal=0)
    with pytest.raises(ValueError, match="not CUDA device memory"):
        cuda.device_pointer(_Tensor(0x2000, is_cuda=False))
    with pytest.raises(TypeError, match="got ndarray"):
        cuda.device_pointer(np.zeros(4))


def test_a_torch_cpu_tensor_is_not_device_memory():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="not CUDA device memory"):
        cuda.device_pointer(torch.zeros(4))


class _Ok(enum.Enum):
    CUDA_SUCCESS = 0


class _Driver:
    """The few driver calls a launch makes, recording what cuLaunchKernel receives: the configuration and
    each argument read from kernelParams in the layout ``formats`` gives."""

    class CUresult:
        CUDA_SUCCESS = _Ok.CUDA_SUCCESS

    def __init__(self, formats=()):
        self.formats = formats
        self.calls = []
        self.arguments = []

    def cuCtxPushCurrent(self, context):
        return (_Ok.CUDA_SUCCESS,)

    def cuCtxPopCurrent(self):
        return (_Ok.CUDA_SUCCESS, None)

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.calls.append(((gx, gy, gz), (bx, by, bz), shared, stream, extra))
        pointers = np.frombuffer((ctypes.c_uint64 * len(self.formats)).from_address(params), np.uint64)
        self.arguments.append([
            struct.unpack(fmt, ctypes.string_at(int(p), struct.calcsize(fmt)))[0]
            for p, fmt in zip(pointers, self.formats)
        ])
        return (_Ok.CUDA_SUCCESS,)


def _runtime_over(monkeypatch, driver):
    monkeypatch.setattr(cuda, "cu", driver)
    monkeypatch.setattr(cuda, "check", lambda result: None)
    rt = object.__new__(cuda.CudaRuntime)  # no device: only what launch reads
    rt.closed, rt.ordinal, rt.context, rt.own_stream = False, 0, "context", "stream"
    rt._local = __import__("threading").local()
    rt._big_shared = set()
    rt.pid = __import__("os").getpid()
    return rt


@pytest.mark.parametrize(
    "config", [LaunchConfig(7, 128), LaunchConfig((3, 5), (16, 8)), LaunchConfig((2, 3, 4), (8, 4, 2), 4096)]
)
def test_a_launch_packs_arguments_and_its_grid_as_the_driver_reads_them(monkeypatch, config):
    driver = _Driver(["<Q", "<i", "<q", "<I", "<f", "<d", "<Q"])
    rt = _runtime_over(monkeypatch, driver)
    params = (Param("x", "f32", True, True), Param("n", "int"), Param("big", "i64"), Param("u", "u32"),
              Param("a", "f32"), Param("b", "f64"), Param("y", "f64", True))
    program = Program("", CUDA, (KernelSignature("k", params),), name="k")
    kernel = ObjectCode(rt, program, {"k": "function"}).kernel("k")
    kernel.launch(config, cuda.ForeignBuffer(None, 0xDEAD0000), -3, 3 * 2**40, 2**32 - 1, 0.5, np.pi,
                  _Tensor(0xBEEF0000))
    assert driver.calls == [(config.grid3, config.block3, config.shared_mem, "stream", 0)]
    assert driver.arguments == [[0xDEAD0000, -3, 3 * 2**40, 2**32 - 1, 0.5, np.pi, 0xBEEF0000]]


def test_a_scalar_that_does_not_fit_raises_instead_of_wrapping(monkeypatch):
    rt = _runtime_over(monkeypatch, _Driver())
    program = Program("", CUDA, (KernelSignature("k", (Param("n", "int"),)),), name="k")
    kernel = ObjectCode(rt, program, {"k": "function"}).kernel("k")
    with pytest.raises(ValueError, match="'n' = 2147483648 does not fit a int"):
        kernel.launch(LaunchConfig(1, 1), 2**31)


def test_an_allocation_outside_a_session_makes_the_context_current(monkeypatch):
    """Stream-ordered allocation happens with the runtime's context current, in a session or not (the probe
    allocates outside one)."""

    class Allocating(_Driver):
        depth = 0

        def cuCtxPushCurrent(self, context):
            self.depth += 1
            return super().cuCtxPushCurrent(context)

        def cuCtxPopCurrent(self):
            self.depth -= 1
            return super().cuCtxPopCurrent()

        def cuMemAllocAsync(self, nbytes, stream):
            self.calls.append(("alloc", nbytes, stream, self.depth))
            return (_Ok.CUDA_SUCCESS, 0x1000)

    driver = Allocating()
    rt = _runtime_over(monkeypatch, driver)
    monkeypatch.setattr(cuda, "check", lambda result: result[1] if len(result) > 1 else None)
    rt._released = True  # the fake buffers free nothing when collected
    rt.alloc(64)
    with rt.session("caller"):
        rt.alloc(32)
    assert driver.calls == [("alloc", 64, "stream", 1), ("alloc", 32, "caller", 1)]


def test_compiling_leaves_python_s_shared_bytes_alone(require):
    # An empty NVRTC log is one NUL byte; written into the shared one-byte object b" " it broke every later
    # os.environ assignment of a value with a space ("embedded null byte")
    from kernelkit import cuda

    reason = cuda.nvrtc_probe("sm_80")
    if reason:
        require("nvrtc", reason)
    ok, cubin, _ = cuda.compile_cubin('extern "C" __global__ void k() {}', "k", "sm_80")
    assert ok and cubin[:4] == b"\x7fELF"
    assert b" " == bytes([32]) and b" " == bytes([32])
