"""CUDA through cuda-bindings: NVRTC compiles generated CUDA C++ straight to a cubin for the device's
architecture, the driver API loads and launches it.

Why these choices:

- cubin, not PTX: the cubin needs no JIT at load time, and a PTX from a newer NVRTC than the driver knows is
  rejected (DESIGN.md's stacks table); the cache key carries NVRTC's version and the ``sm_XX`` target.
- the primary context of each device: torch and cupy use it too, so their device pointers are valid in
  ours and nothing is copied between contexts.
- stream-ordered memory (``cuMemAllocAsync`` / ``cuMemFreeAsync``) for numpy calls, and the caller's
  allocator (torch / cupy) on the caller's current stream for their arrays, so scratch buffers are released
  in stream order without a device synchronisation.
- numpy inputs are staged through page-locked (pinned) host buffers, which lets the copies run asynchronously
  on the stream and at full PCIe / NVLink bandwidth.

NVRTC is found by cuda-bindings (``cuda.pathfinder``): from the ``nvidia-cuda-nvrtc`` wheel (specux[cuda13] /
specux[cuda12], also what torch's CUDA wheels install), or a CUDA toolkit (``CUDA_HOME`` / system paths).
"""

from __future__ import annotations

import ctypes
import threading
from contextlib import contextmanager
from typing import Any

import numpy as np
from cuda.bindings import driver as cu
from cuda.bindings import nvrtc

from specux._codegen.dialects import CUDA
from specux._codegen.fft_kernels import KernelSource
from specux._runtime.device import DeviceRuntime

_SCALARS = {"int": np.int32, "f32": np.float32, "f64": np.float64}


class CudaError(RuntimeError):
    """A CUDA driver or NVRTC call failed."""


def check(result: Any) -> Any:
    """Unpack a cuda-bindings result tuple ``(status, *values)``, raising on an error status."""
    status, *values = result if isinstance(result, tuple) else (result,)
    if isinstance(status, cu.CUresult):
        if status != cu.CUresult.CUDA_SUCCESS:
            _, name = cu.cuGetErrorName(status)
            raise CudaError(f"CUDA driver error {name.decode() if name else status}")
    elif isinstance(status, nvrtc.nvrtcResult) and status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CudaError(f"NVRTC error {nvrtc.nvrtcGetErrorString(status)[1].decode()}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def nvrtc_version() -> tuple[int, int]:
    return check(nvrtc.nvrtcVersion())


def compile_cubin(
    source: str, name: str, arch: str, options: tuple[str, ...] = ()
) -> tuple[bool, bytes, str]:
    """NVRTC: ``source`` to a cubin for ``arch`` (e.g. ``"sm_90"``); works without a GPU or driver.

    Returns (ok, cubin bytes, compiler log).
    """
    prog = check(nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], []))
    try:
        opts = [f"--gpu-architecture={arch}".encode(), *(o.encode() for o in options)]
        status = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
        size = check(nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * size
        check(nvrtc.nvrtcGetProgramLog(prog, log))
        text = log.rstrip(b"\x00 ").decode(errors="replace")
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return False, b"", text
        size = check(nvrtc.nvrtcGetCUBINSize(prog))
        cubin = b" " * size
        check(nvrtc.nvrtcGetCUBIN(prog, cubin))
        return True, cubin, text
    finally:
        check(nvrtc.nvrtcDestroyProgram(prog))


class DeviceBuffer:
    """Device memory owned by specux, freed in order on the stream that last used it."""

    def __init__(self, nbytes: int, stream: Any, context: Any):
        self.stream = stream
        self.context = context
        self.ptr = int(check(cu.cuMemAllocAsync(max(int(nbytes), 1), stream)))

    def __del__(self) -> None:
        # garbage collection may run outside any specux call: make the owning context current for the free
        try:
            cu.cuCtxPushCurrent(self.context)
            cu.cuMemFreeAsync(self.ptr, self.stream)
            cu.cuCtxPopCurrent()
        except Exception:  # interpreter shutdown: the context goes with the process
            pass


class ForeignBuffer:
    """Memory of a torch tensor or cupy array: kept alive by holding the array, addressed by its pointer."""

    def __init__(self, array: Any, ptr: int):
        self.array = array
        self.ptr = int(ptr)


class CudaRuntime(DeviceRuntime):
    """Kernels, tables and launches on one CUDA device, in its primary context."""

    dialect = CUDA
    binary_suffix = ".cubin"
    options = ("--std=c++14",)

    def __init__(self, ordinal: int):
        super().__init__()
        self.ordinal = ordinal
        self.device = check(cu.cuDeviceGet(ordinal))
        self.context = check(cu.cuDevicePrimaryCtxRetain(self.device))
        attr = cu.CUdevice_attribute
        major = check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.device))
        minor = check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.device))
        self.sm = f"sm_{major}{minor}"
        self.name = check(cu.cuDeviceGetName(64, self.device)).split(b"\x00")[0].decode()
        with self.current():
            self.own_stream = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING))
        self._local = threading.local()
        self._pinned: dict[int, tuple[int, int]] = {}
        self._pinned_lock = threading.Lock()

    # -- context and call state --------------------------------------------------------------------------

    @contextmanager
    def current(self):
        check(cu.cuCtxPushCurrent(self.context))
        try:
            yield
        finally:
            check(cu.cuCtxPopCurrent())

    @contextmanager
    def session(self, stream: Any, allocate: Any | None = None):
        """Launches and scratch allocations inside go to ``stream``; ``allocate(nbytes)`` overrides
        allocation."""
        previous = getattr(self._local, "state", None)
        self._local.state = (stream, allocate)
        try:
            with self.current():
                yield
        finally:
            self._local.state = previous

    @property
    def stream(self) -> Any:
        state = getattr(self._local, "state", None)
        return self.own_stream if state is None else state[0]

    # -- DeviceRuntime -----------------------------------------------------------------------------------

    def compiler_version(self) -> str:
        major, minor = nvrtc_version()
        return f"nvrtc {major}.{minor}"

    def arch(self) -> str:
        return self.sm

    def _build(self, ks: KernelSource) -> tuple[bool, Any, str]:
        ok, cubin, log = compile_cubin(ks.source, ks.name, self.sm, self.options)
        if not ok:
            return False, None, log
        return True, (self._load(cubin, ks), cubin), log

    def _load(self, binary: bytes, ks: KernelSource) -> Any:
        with self.current():
            module = check(cu.cuModuleLoadData(binary))
            function = check(cu.cuModuleGetFunction(module, ks.name.encode()))
        # the module must outlive the function handle
        return module, function

    def alloc(self, nbytes: int) -> Any:
        state = getattr(self._local, "state", None)
        if state is not None and state[1] is not None:
            return state[1](nbytes)
        return DeviceBuffer(nbytes, self.stream, self.context)

    def upload(self, host: np.ndarray) -> DeviceBuffer:
        """A table or input copied to the device (synchronously: tables are uploaded once)."""
        host = np.ascontiguousarray(host)
        with self.current():
            buf = DeviceBuffer(host.nbytes, self.own_stream, self.context)
            check(cu.cuStreamSynchronize(self.own_stream))
            if host.nbytes:
                check(cu.cuMemcpyHtoD(buf.ptr, host.ctypes.data, host.nbytes))
        return buf

    def download(self, buf: Any, out: np.ndarray) -> np.ndarray:
        """Copy device memory into ``out`` after the current stream's work (pageable: off the hot path)."""
        with self.current():
            check(cu.cuStreamSynchronize(self.stream))
            if out.nbytes:
                check(cu.cuMemcpyDtoH(out.ctypes.data, buf.ptr, out.nbytes))
        return out

    def launch(self, handle: Any, ks: KernelSource, groups: int, args: list[Any]) -> None:
        _, function = handle
        values = [
            np.array([a.ptr], dtype=np.uint64) if p.pointer else np.array([a], dtype=_SCALARS[p.kind])
            for p, a in zip(ks.params, args)
        ]
        pointers = np.array([v.ctypes.data for v in values], dtype=np.uint64)
        check(
            cu.cuLaunchKernel(function, groups, 1, 1, ks.block, 1, 1, 0, self.stream, pointers.ctypes.data, 0)
        )

    # -- pinned staging for numpy ------------------------------------------------------------------------

    def pinned(self, nbytes: int, slot: int) -> np.ndarray:
        """A page-locked host byte buffer of at least ``nbytes`` (slot 0: input, 1: output), grown on need."""
        with self._pinned_lock:
            ptr, size = self._pinned.get(slot, (0, 0))
            if size < nbytes:
                if ptr:
                    check(cu.cuMemFreeHost(ptr))
                size = max(nbytes, 1 << 20)
                with self.current():
                    ptr = int(check(cu.cuMemHostAlloc(size, 0)))
                self._pinned[slot] = (ptr, size)
        return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr))

    def synchronize(self) -> None:
        check(cu.cuStreamSynchronize(self.stream))


_lock = threading.Lock()
_runtimes: dict[int, CudaRuntime] = {}
_init_error: str | None = None


def init_reason() -> str | None:
    """None when the driver initialises and sees a device, else why not (never raises)."""
    try:
        status = cu.cuInit(0)[0]
    except RuntimeError as exc:  # cuda.pathfinder cannot dlopen libcuda: no driver installed
        return f"libcuda not found: no NVIDIA driver on this machine ({exc})"
    if status != cu.CUresult.CUDA_SUCCESS:
        name = cu.cuGetErrorName(status)[1]
        return f"cuInit failed: {name.decode() if name else status} (driver present but unusable)"
    count = check(cu.cuDeviceGetCount())
    if count == 0:
        return "the NVIDIA driver reports no CUDA device"
    return None


def runtime(ordinal: int = 0) -> CudaRuntime:
    """The runtime of device ``ordinal`` (created on first use)."""
    with _lock:
        if ordinal not in _runtimes:
            _runtimes[ordinal] = CudaRuntime(ordinal)
        return _runtimes[ordinal]
