"""The CUDA backend's host path, end to end, against an emulated driver: nothing here runs on a GPU.

NVRTC really compiles every kernel to a cubin. The driver API (``cuda.bindings.driver``, as kernelkit's CUDA
runtime calls it) is replaced by a small emulation whose "device memory" is host memory and whose
``cuLaunchKernel`` decodes the ``kernelParams`` array as the driver does (an array of pointers to each
argument's bytes) and runs the same kernel spec's OpenCL build on PoCL with those arguments. This checks
specux's and kernelkit's side of the launch path: pinned staging, the copies, table uploads, scratch
allocation, the argument array (order, pointer values, scalar types and sizes), the grid and the block, and
the release of the runtime's objects on close. It cannot check the real driver, which only
scripts/dev/gpu_check.sh on a GPU can.
"""

# the emulation must use the driver API's own names (cuLaunchKernel, CUstream_flags, ...)
# ruff: noqa: N801, N802

from __future__ import annotations

import ctypes
import enum

import numpy as np
import pytest

from kernelkit import cuda as cuda_rt
from kernelkit.dialects import OPENCL
from kernelkit.program import LaunchConfig
from specux._codegen import render

missing = cuda_rt.nvrtc_probe("sm_90")

pytestmark = pytest.mark.skipif(missing is not None, reason=f"NVRTC unavailable: {missing}")

_SIZES = {"int": 4, "f32": 4, "f64": 8}
_TYPES = {"int": np.int32, "f32": np.float32, "f64": np.float64}


class _Result(enum.Enum):
    CUDA_SUCCESS = 0


class _Driver:
    """Just the driver calls specux makes, over host memory."""

    CUresult = _Result

    class CUdevice_attribute:
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = "major"
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = "minor"

    class CUstream_flags:
        CU_STREAM_NON_BLOCKING = 1

    def __init__(self, opencl_rt):
        self.ok = _Result.CUDA_SUCCESS
        self.memory: dict[int, np.ndarray] = {}
        self.functions: dict[int, object] = {}  # id(function handle) -> kernel spec, filled by the test
        self.cl = opencl_rt
        self.launches = 0
        self.released: list[str] = []

    def _new(self, nbytes):
        block = np.zeros(int(nbytes) + 64, np.uint8)
        address = block.ctypes.data
        self.memory[address] = block
        return address

    def cuGetErrorName(self, status):
        return self.ok, b"EMULATED_ERROR"

    def cuDeviceGet(self, ordinal):
        return self.ok, ordinal

    def cuDevicePrimaryCtxRetain(self, device):
        return self.ok, "context"

    def cuDeviceGetAttribute(self, attr, device):
        return self.ok, 9 if attr == "major" else 0

    def cuDeviceGetName(self, length, device):
        return self.ok, b"Emulated GPU\x00"

    def cuCtxPushCurrent(self, ctx):
        return (self.ok,)

    def cuCtxPopCurrent(self):
        return self.ok, "context"

    def cuStreamCreate(self, flags):
        return self.ok, "stream"

    def cuStreamSynchronize(self, stream):
        return (self.ok,)

    def cuCtxSynchronize(self):
        return (self.ok,)

    def cuStreamDestroy(self, stream):
        self.released.append("stream")
        return (self.ok,)

    def cuDevicePrimaryCtxRelease(self, device):
        self.released.append("context")
        return (self.ok,)

    def cuMemAllocAsync(self, nbytes, stream):
        return self.ok, self._new(nbytes)

    def cuMemFreeAsync(self, ptr, stream):
        self.memory.pop(int(ptr), None)
        return (self.ok,)

    def cuMemHostAlloc(self, nbytes, flags):
        return self.ok, self._new(nbytes)

    def cuMemFreeHost(self, ptr):
        self.memory.pop(int(ptr), None)
        return (self.ok,)

    def _copy(self, dst, src, nbytes):
        ctypes.memmove(int(dst), int(src), int(nbytes))
        return (self.ok,)

    def cuMemcpyHtoD(self, dst, src, nbytes):
        return self._copy(dst, src, nbytes)

    def cuMemcpyDtoH(self, dst, src, nbytes):
        return self._copy(dst, src, nbytes)

    def cuMemcpyHtoDAsync(self, dst, src, nbytes, stream):
        return self._copy(dst, src, nbytes)

    def cuMemcpyDtoHAsync(self, dst, src, nbytes, stream):
        return self._copy(dst, src, nbytes)

    def cuModuleLoadData(self, image):
        assert bytes(image[:4]) == b"\x7fELF", "the runtime must load a cubin"
        return self.ok, object()

    def cuModuleGetFunction(self, module, name):
        return self.ok, object()

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        import pyopencl as cl

        from specux._runtime import fft_exec

        spec = self.functions[id(function)]
        ks = render(spec, OPENCL)
        assert (gy, gz, by, bz, shared, extra) == (1, 1, 1, 1, 0, 0) and bx == ks.block
        pointers = np.frombuffer((ctypes.c_uint64 * len(ks.params)).from_address(int(params)), np.uint64)
        args = []
        for p, where in zip(ks.params, pointers):
            if p.pointer:
                address = int(np.frombuffer((ctypes.c_uint64 * 1).from_address(int(where)), np.uint64)[0])
                block = self.memory[address]  # a pointer specux passes must be the start of an allocation
                args.append(cl.Buffer(self.cl.context, cl.mem_flags.USE_HOST_PTR, hostbuf=block))
            else:
                raw = (ctypes.c_uint8 * _SIZES[p.kind]).from_address(int(where))
                args.append(np.frombuffer(raw, _TYPES[p.kind])[0].item())
        program = fft_exec.program(spec, OPENCL)
        self.cl.launch(self.cl.kernel(program, ks.name), LaunchConfig((gx,), (bx,)), args)
        self.cl.synchronize()
        for a in args:
            if isinstance(a, cl.Buffer):
                a.release()
        self.launches += 1
        return (self.ok,)


@pytest.fixture
def emulated(require_backend, monkeypatch, tmp_path):
    import cuda.bindings

    from kernelkit.opencl import OpenCLRuntime
    from specux._backends import cuda as cuda_backend
    from specux._runtime import fft_exec

    opencl = require_backend("opencl")
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    driver = _Driver(OpenCLRuntime(opencl.runtime.device, ("-cl-opt-disable",)))
    monkeypatch.setattr(cuda_rt, "cu", driver)
    monkeypatch.setattr(cuda.bindings, "driver", driver)
    runtimes: dict = {}
    monkeypatch.setattr(cuda_rt, "_runtimes", runtimes)
    specs: dict[int, object] = {}  # id(CUDA program) -> the kernel spec it renders
    program = fft_exec.program

    def program_of(spec, dialect):
        prog = program(spec, dialect)
        specs[id(prog)] = spec
        return prog

    monkeypatch.setattr(fft_exec, "program", program_of)
    compile_ = cuda_rt.CudaRuntime.compile

    def compile_and_register(self, prog):
        code = compile_(self, prog)
        for kernel in code.kernels.values():
            driver.functions[id(kernel.handle)] = specs[id(prog)]
        return code

    monkeypatch.setattr(cuda_rt.CudaRuntime, "compile", compile_and_register)
    yield cuda_backend.CudaBackend(), driver
    # close the emulated runtimes while the emulation is still in place
    for rt in runtimes.values():
        rt.close()
    driver.cl.close()


def _err(got, want):
    return np.linalg.norm(np.asarray(got) - want) / np.linalg.norm(want)


def test_numpy_path_through_the_emulated_driver(emulated):
    backend, driver = emulated
    rng = np.random.default_rng(3)
    for n in (60, 17, 3000):  # local, Bluestein, four-step (float32)
        z = (rng.standard_normal((3, n)) + 1j * rng.standard_normal((3, n))).astype(np.complex64)
        got = backend.c2c(z, 1, False, 1.0)
        assert got.dtype == np.complex64 and _err(got, np.fft.fft(z.astype(np.complex128))) <= 1e-5
        got = backend.c2c(z.T.copy(), 0, True, 1.0 / n)
        assert _err(got, np.fft.ifft(z.T.astype(np.complex128), axis=0)) <= 1e-5
    big = (rng.standard_normal((70, 2048)) + 1j * rng.standard_normal((70, 2048))).astype(np.complex64)
    got = backend.c2c(big, 1, False, 1.0)  # past the first pinned staging buffers (1 MiB): they grow
    assert _err(got, np.fft.fft(big.astype(np.complex128))) <= 1e-5
    x = rng.standard_normal((2, 5, 33))
    got = backend.r2c(x, 2, 1.0)
    assert got.dtype == np.complex128 and _err(got, np.fft.rfft(x)) <= 1e-12
    back = backend.c2r(got, 2, 33, 1.0 / 33)
    assert back.dtype == np.float64 and _err(back, x) <= 1e-12
    h = rng.standard_normal((2, 64)).astype(np.float16)
    got = backend.r2c(h, 1, 1.0)
    assert got.dtype == np.complex64 and _err(got, np.fft.rfft(h.astype(np.float64))) <= 1e-5
    assert driver.launches >= 12
    rt = backend.runtime
    assert driver.memory  # tables and pinned staging buffers are held between calls
    rt.close()
    assert driver.released == ["stream", "context"]
    assert driver.memory == {}  # closing freed them all, before releasing the stream and the context
