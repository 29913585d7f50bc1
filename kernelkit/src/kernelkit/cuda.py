"""CUDA through cuda-bindings: NVRTC compiles a program straight to a cubin for the device's architecture, the
driver API loads it as one module and launches its kernels.

Why these choices:

- cubin, not PTX: a cubin needs no JIT at load time, and a PTX from a newer NVRTC than the driver knows
  is rejected (a CUDA 13.0 ptxas refuses NVRTC 13.5's ``.version 9.5``); the cache key carries NVRTC's
  version and the ``sm_XX`` target. NVRTC needs no GPU and no driver, which is what lets CI compile every
  CUDA kernel.
- one module per program: a program may define many kernels (``extern "C"`` entry points, so that the driver
  finds them by their plain names); they are loaded together and share the module's lifetime.
- the primary context of each device: torch and cupy use it too, so their device pointers are valid in ours
  and nothing is copied between contexts.
- stream-ordered memory (``cuMemAllocAsync`` / ``cuMemFreeAsync``) on the runtime's own non-blocking stream,
  and, inside :meth:`CudaRuntime.session`, the caller's stream and allocator (torch's or cupy's on their
  current stream), so scratch buffers are released in stream order without a device synchronisation.
- page-locked (pinned) host staging buffers (:meth:`CudaRuntime.pinned`) for host arrays, which lets the
  copies run asynchronously on the stream and at full PCIe / NVLink bandwidth.

Pointer arguments of a launch may be this runtime's :class:`DeviceBuffer`, a :class:`ForeignBuffer`, or any
object with ``data_ptr()`` (a torch CUDA tensor) or ``__cuda_array_interface__`` (a cupy array, numba, ...),
taken by device pointer. Scalars are converted by the parameter's kind (``int`` int32, ``i64`` int64, ``u32``,
``u64``, ``f16``, ``f32``, ``f64``); a value that does not fit raises instead of wrapping.

NVRTC is found by cuda-bindings (``cuda.pathfinder``): the ``nvidia-cuda-nvrtc`` wheel (``kernelkit[cuda13]``;
``nvidia-cuda-nvrtc-cu12`` for ``kernelkit[cuda12]``, also what torch's CUDA wheels install) or a CUDA toolkit
(``CUDA_HOME`` / system paths). Importing this module imports cuda-bindings when it is installed; without it
the module still imports, and :func:`probe` says what is missing.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import numpy as np

from kernelkit.dialects import CUDA, Param
from kernelkit.program import Kernel, KernelSignature, LaunchConfig, Program
from kernelkit.runtime import DeviceRuntime

try:
    from cuda.bindings import driver as cu
    from cuda.bindings import nvrtc
except Exception as exc:  # not installed, or a broken install: probe() reports it
    cu = nvrtc = None
    _IMPORT_ERROR: str | None = f"{type(exc).__name__}: {exc}"
else:
    _IMPORT_ERROR = None

INSTALL = (
    "pip install cuda-bindings nvidia-cuda-nvrtc "
    "(CUDA 13; for CUDA 12: 'cuda-bindings<13' nvidia-cuda-nvrtc-cu12)"
)
NVRTC_REMEDY = (
    "pip install nvidia-cuda-nvrtc (CUDA 13) or nvidia-cuda-nvrtc-cu12 (CUDA 12), or install a CUDA toolkit"
)

#: how each scalar kind is laid out in its 8-byte argument slot (little-endian, as the device reads it)
_FORMATS = {"int": "<i", "i64": "<q", "u32": "<I", "u64": "<Q", "f16": "<e", "f32": "<f", "f64": "<d"}
#: dynamic shared memory a kernel gets without opting in (cuFuncSetAttribute) on every architecture
_DEFAULT_SHARED = 48 * 1024

_PROBE_SOURCE = """\
extern "C" __global__ void kk_probe(const float* __restrict__ x, float* __restrict__ y, const int n) {
    const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}
"""
_PROBE = Program(
    _PROBE_SOURCE,
    CUDA,
    (
        KernelSignature(
            "kk_probe", (Param("x", "f32", True, True), Param("y", "f32", True), Param("n", "int"))
        ),
    ),
    name="kk_probe",
)


class CudaError(RuntimeError):
    """A CUDA driver or NVRTC call failed."""


def _require() -> None:
    if _IMPORT_ERROR is not None:
        raise RuntimeError(f"cuda-bindings is not installed ({_IMPORT_ERROR}); {INSTALL}")


def check(result: Any) -> Any:
    """Unpack a cuda-bindings result tuple ``(status, *values)``, raising :class:`CudaError` on an error."""
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
    """(major, minor) of the NVRTC library cuda-bindings loads (raises when there is none)."""
    _require()
    return check(nvrtc.nvrtcVersion())


def compile_cubin(
    source: str, name: str, arch: str, options: tuple[str, ...] = ()
) -> tuple[bool, bytes, str]:
    """NVRTC: ``source`` to a cubin for ``arch`` (e.g. ``"sm_90"``); works without a GPU or driver.

    Returns ``(ok, cubin bytes, compiler log)``; a program that does not compile gives ``(False, b"", log)``.
    """
    _require()
    prog = check(nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], []))
    try:
        opts = [f"--gpu-architecture={arch}".encode(), *(o.encode() for o in options)]
        status = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
        # NVRTC writes into the buffers it is given: they must be fresh, mutable ones. (``b" " * 1`` is
        # CPython's shared one-byte object: an empty log's terminating NUL written into it turned every
        # b" " of the process into b"\x00", and os.environ then refused any value holding a space.)
        size = check(nvrtc.nvrtcGetProgramLogSize(prog))
        log = bytearray(size)
        check(nvrtc.nvrtcGetProgramLog(prog, log))
        text = bytes(log).rstrip(b"\x00 ").decode(errors="replace")
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return False, b"", text
        size = check(nvrtc.nvrtcGetCUBINSize(prog))
        cubin = bytearray(size)
        check(nvrtc.nvrtcGetCUBIN(prog, cubin))
        return True, bytes(cubin), text
    finally:
        check(nvrtc.nvrtcDestroyProgram(prog))


class DeviceBuffer:
    """Device memory owned by a :class:`CudaRuntime`, freed in order on the stream it was allocated on."""

    def __init__(self, runtime: CudaRuntime, nbytes: int, stream: Any):
        self.runtime = runtime
        self.stream = stream
        self.nbytes = max(int(nbytes), 1)
        self.ptr = int(check(cu.cuMemAllocAsync(self.nbytes, stream)))

    def __del__(self) -> None:
        # Garbage collection may run outside any call of ours: make the owning context current for the free.
        # Once the runtime released its context, the context may be gone: the memory went with it (or goes at
        # exit). Buffers dropped while it closes (its tables) are still freed in stream order.
        rt = getattr(self, "runtime", None)
        if rt is None or getattr(rt, "_released", True) or not getattr(self, "ptr", 0):
            return
        try:
            if cu.cuCtxPushCurrent(rt.context)[0] != cu.CUresult.CUDA_SUCCESS:
                return
            try:
                cu.cuMemFreeAsync(self.ptr, self.stream)
            finally:
                cu.cuCtxPopCurrent()
        except Exception:  # interpreter shutdown: the context goes with the process
            pass


class ForeignBuffer:
    """Memory of another library (a torch tensor, a cupy array): kept alive by holding the array, addressed by
    its device pointer."""

    def __init__(self, array: Any, ptr: int):
        self.array = array
        self.ptr = int(ptr)


def device_pointer(value: Any, ordinal: int | None = None) -> int:
    """The device address of a buffer argument (see the module docstring for what is accepted).

    With ``ordinal``, a torch tensor or cupy array on another device, or a torch tensor in host memory, raises
    ``ValueError``: its pointer would be read by the wrong device.
    """
    if isinstance(value, (DeviceBuffer, ForeignBuffer)):
        return value.ptr
    data_ptr = getattr(value, "data_ptr", None)
    if callable(data_ptr):  # torch
        if getattr(value, "is_cuda", True) is False:
            raise ValueError(f"a tensor on {value.device} is not CUDA device memory")
        if ordinal is not None and hasattr(value, "get_device") and value.get_device() != ordinal:
            raise ValueError(f"a tensor on {value.device} passed to a kernel on cuda:{ordinal}")
        return int(data_ptr())
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:  # cupy, numba, ...
        device = getattr(getattr(value, "device", None), "id", None)
        if ordinal is not None and isinstance(device, int) and device != ordinal:
            raise ValueError(f"an array on cuda:{device} passed to a kernel on cuda:{ordinal}")
        return int(interface["data"][0])
    if cu is not None and isinstance(value, cu.CUdeviceptr):
        return int(value)
    raise TypeError(
        "a pointer argument must be a DeviceBuffer, a ForeignBuffer, a torch CUDA tensor or an object with "
        f"__cuda_array_interface__; got {type(value).__name__}"
    )


class CudaRuntime(DeviceRuntime):
    """Programs, buffers and launches on one CUDA device, in its primary context."""

    dialect = CUDA
    name = "cuda"
    binary_suffix = ".cubin"
    options = ("--std=c++14",)

    def __init__(self, ordinal: int):
        _require()
        super().__init__()
        self.ordinal = ordinal
        self.device = check(cu.cuDeviceGet(ordinal))
        self.context = check(cu.cuDevicePrimaryCtxRetain(self.device))
        attr = cu.CUdevice_attribute
        major = check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.device))
        minor = check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.device))
        self.sm = f"sm_{major}{minor}"
        self.device_name = check(cu.cuDeviceGetName(64, self.device)).split(b"\x00")[0].decode()
        with self.current():
            self.own_stream = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING))
        self._local = threading.local()
        self._pinned: dict[int, tuple[int, int]] = {}
        self._pinned_lock = threading.Lock()
        self._big_shared: set[tuple[int, int]] = set()
        self._released = False

    # -- context and call state --------------------------------------------------------------------------

    @contextmanager
    def current(self) -> Iterator[None]:
        """This device's context made current on the calling thread for the duration."""
        check(cu.cuCtxPushCurrent(self.context))
        try:
            yield
        finally:
            check(cu.cuCtxPopCurrent())

    @contextmanager
    def session(self, stream: Any, allocate: Any | None = None) -> Iterator[None]:
        """Launches, copies and scratch allocations inside go to ``stream`` (a torch or cupy current stream,
        as a ``CUstream``); ``allocate(nbytes)`` overrides allocation (return a :class:`ForeignBuffer`)."""
        previous = getattr(self._local, "state", None)
        self._local.state = (stream, allocate)
        try:
            with self.current():
                yield
        finally:
            self._local.state = previous

    @property
    def stream(self) -> Any:
        """The stream of the current session on this thread, else the runtime's own."""
        state = getattr(self._local, "state", None)
        return self.own_stream if state is None else state[0]

    # -- DeviceRuntime -----------------------------------------------------------------------------------

    def compiler_version(self) -> str:
        major, minor = nvrtc_version()
        return f"nvrtc {major}.{minor}"

    def arch(self) -> str:
        return self.sm

    def _build(self, program: Program) -> tuple[bool, Any, str]:
        options = (*self.options, *program.options)
        ok, cubin, log = compile_cubin(program.source, program.name, self.sm, options)
        if not ok:
            return False, None, log
        handles, module = self._load(cubin, program)
        return True, (handles, module, cubin), log

    def _load(self, binary: bytes, program: Program) -> tuple[dict[str, Any], Any]:
        with self.current():
            module = check(cu.cuModuleLoadData(binary))
            handles = {
                k.name: check(cu.cuModuleGetFunction(module, k.name.encode())) for k in program.kernels
            }
        return handles, module

    def alloc(self, nbytes: int) -> Any:
        state = getattr(self._local, "state", None)
        if state is not None and state[1] is not None:
            return state[1](nbytes)
        if state is None:  # outside a session no context of ours need be current (the probe allocates so)
            with self.current():
                return DeviceBuffer(self, nbytes, self.stream)
        return DeviceBuffer(self, nbytes, self.stream)

    def upload(self, host: np.ndarray) -> DeviceBuffer:
        """A table or input copied to the device (synchronously: tables are uploaded once)."""
        self._check_open()
        host = np.ascontiguousarray(host)
        with self.current():
            buf = DeviceBuffer(self, host.nbytes, self.own_stream)
            check(cu.cuStreamSynchronize(self.own_stream))
            if host.nbytes:
                check(cu.cuMemcpyHtoD(buf.ptr, host.ctypes.data, host.nbytes))
        return buf

    def download(self, buf: Any, out: np.ndarray) -> np.ndarray:
        """Copy device memory into ``out`` after the current stream's work (pageable: off the hot path)."""
        with self.current():
            check(cu.cuStreamSynchronize(self.stream))
            if out.nbytes:
                check(cu.cuMemcpyDtoH(out.ctypes.data, device_pointer(buf, self.ordinal), out.nbytes))
        return out

    def launch(self, kernel: Kernel, config: LaunchConfig, args: list[Any]) -> None:
        self._check_open()
        params = kernel.params
        if len(args) != len(params):
            raise TypeError(f"kernel {kernel.name!r} takes {len(params)} arguments; got {len(args)}")
        # every argument in its own 8-byte slot of one buffer; kernelParams points at each slot
        slots = bytearray(8 * max(len(params), 1))
        for i, (p, a) in enumerate(zip(params, args)):
            if p.pointer:
                struct.pack_into("<Q", slots, 8 * i, device_pointer(a, self.ordinal))
                continue
            try:
                struct.pack_into(_FORMATS[p.kind], slots, 8 * i, a)
            except KeyError:
                kinds = sorted(_FORMATS)
                raise TypeError(f"parameter {p.name!r} has kind {p.kind!r}, not one of {kinds}") from None
            except struct.error as exc:
                raise ValueError(f"argument {p.name!r} = {a!r} does not fit a {p.kind}: {exc}") from None
        holder = (ctypes.c_char * len(slots)).from_buffer(slots)
        base = ctypes.addressof(holder)
        pointers = (ctypes.c_uint64 * max(len(params), 1))(*(base + 8 * i for i in range(len(params))))
        gx, gy, gz = config.grid3
        bx, by, bz = config.block3
        if getattr(self._local, "state", None) is None:
            with self.current():
                self._enqueue(kernel, config, gx, gy, gz, bx, by, bz, pointers)
        else:
            self._enqueue(kernel, config, gx, gy, gz, bx, by, bz, pointers)

    def _enqueue(self, kernel: Kernel, config: LaunchConfig, gx: int, gy: int, gz: int, bx: int, by: int,
                 bz: int, pointers: Any) -> None:
        shared = config.shared_mem
        if shared > _DEFAULT_SHARED:
            key = (id(kernel.code), hash(kernel.name))
            if key not in self._big_shared:  # dynamic shared memory past 48 KiB must be opted into
                attribute = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                check(cu.cuFuncSetAttribute(kernel.handle, attribute, shared))
                self._big_shared.add(key)
        address = ctypes.addressof(pointers) if kernel.params else 0
        check(cu.cuLaunchKernel(kernel.handle, gx, gy, gz, bx, by, bz, shared, self.stream, address, 0))

    # -- pinned staging for host arrays ------------------------------------------------------------------

    def pinned(self, nbytes: int, slot: int) -> np.ndarray:
        """A page-locked host byte buffer of at least ``nbytes`` (e.g. slot 0 input, 1 output), grown on need.

        Callers that share a slot between threads must serialise their use of it.
        """
        with self._pinned_lock:
            ptr, size = self._pinned.get(slot, (0, 0))
            if size < nbytes:
                size = max(nbytes, 1 << 20)
                with self.current():
                    if ptr:
                        # an interrupted call may have left a copy from or to it in flight
                        check(cu.cuCtxSynchronize())
                        self._pinned.pop(slot, None)
                        check(cu.cuMemFreeHost(ptr))
                    ptr = int(check(cu.cuMemHostAlloc(size, 0)))
                self._pinned[slot] = (ptr, size)
        return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr))

    def synchronize(self) -> None:
        check(cu.cuStreamSynchronize(self.stream))

    def _release(self) -> None:
        # the stream was drained by close(); pinned memory, the stream, then our hold on the primary context
        with self._pinned_lock:
            pinned, self._pinned = list(self._pinned.values()), {}
        try:
            with self.current():
                for ptr, _ in pinned:
                    cu.cuMemFreeHost(ptr)
                cu.cuStreamDestroy(self.own_stream)
        finally:
            self._released = True
            cu.cuDevicePrimaryCtxRelease(self.device)


# -- devices and the probes -------------------------------------------------------------------------------

_lock = threading.RLock()
_runtimes: dict[int, CudaRuntime] = {}
_verdict: list[str | None] = []


def init_reason() -> str | None:
    """None when the driver initialises and sees a device, else why not (never raises)."""
    if _IMPORT_ERROR is not None:
        return f"cuda-bindings is not installed ({_IMPORT_ERROR}); {INSTALL}"
    try:
        status = cu.cuInit(0)[0]
    except RuntimeError as exc:  # cuda.pathfinder cannot dlopen libcuda: no driver installed
        return f"libcuda not found: no NVIDIA driver on this machine ({exc})"
    except Exception as exc:
        return f"cuInit failed: {type(exc).__name__}: {exc}"
    if status != cu.CUresult.CUDA_SUCCESS:
        name = cu.cuGetErrorName(status)[1]
        return f"cuInit failed: {name.decode() if name else status} (driver present but unusable)"
    try:
        count = check(cu.cuDeviceGetCount())
    except Exception as exc:
        return f"cuDeviceGetCount failed: {exc}"
    if count == 0:
        return "the NVIDIA driver reports no CUDA device"
    return None


def runtime(ordinal: int = 0) -> CudaRuntime:
    """The runtime of device ``ordinal`` (created on first use, and again after it was closed)."""
    with _lock:
        rt = _runtimes.get(ordinal)
        if rt is None or rt.closed:
            rt = _runtimes[ordinal] = CudaRuntime(ordinal)
        return rt.usable()


def _run_probe() -> str | None:
    try:
        rt = runtime(0)
        kernel = rt.kernel(_PROBE, "kk_probe")
        x = np.arange(64, dtype=np.float32)
        xb, yb = rt.upload(x), rt.alloc(x.nbytes)
        kernel.launch(LaunchConfig(2, 32), xb, yb, 64)
        y = rt.download(yb, np.empty_like(x))
    except Exception as exc:  # any failure makes the device unusable, with the driver's own words
        text = str(exc).strip().splitlines()
        first = text[0] if text else ""
        return f"building or running a probe kernel on cuda:0 failed: {type(exc).__name__}: {first}"
    if not np.array_equal(y, 2 * x + 1):
        return f"the probe kernel ran on cuda:0 ({rt.device_name}) but returned wrong values"
    return None


def probe() -> str | None:
    """None when CUDA device 0 builds and runs a probe kernel, else why not: cuda-bindings missing, libcuda
    not found, cuInit failed, no device, NVRTC missing, or the probe's own failure. Once per process; never
    raises."""
    with _lock:
        if not _verdict:
            try:
                reason = init_reason()
                if reason is None:
                    try:
                        nvrtc_version()
                    except Exception as exc:
                        reason = f"NVRTC not found ({type(exc).__name__}: {exc}); {NVRTC_REMEDY}"
                if reason is None:
                    reason = _run_probe()
            except Exception as exc:  # a broken install must not break the caller
                reason = f"CUDA could not be queried: {type(exc).__name__}: {exc}"
            _verdict.append(reason)
        return _verdict[0]


@lru_cache(maxsize=8)
def nvrtc_probe(arch: str = "sm_90") -> str | None:
    """None when NVRTC compiles a kernel to a cubin for ``arch`` here (no GPU needed), else why not.

    For CI's compile-only check of the CUDA text on machines without a GPU. Never raises.
    """
    if _IMPORT_ERROR is not None:
        return f"cuda-bindings is not installed ({_IMPORT_ERROR}); {INSTALL}"
    try:
        major, minor = nvrtc_version()
    except Exception as exc:
        return f"NVRTC not found ({type(exc).__name__}: {exc}); {NVRTC_REMEDY}"
    try:
        ok, cubin, log = compile_cubin(_PROBE_SOURCE, "kk_probe", arch, CudaRuntime.options)
    except Exception as exc:
        return f"NVRTC {major}.{minor} failed on the probe kernel: {type(exc).__name__}: {exc}"
    if not ok:
        return f"NVRTC {major}.{minor} could not compile the probe kernel for {arch}: {log.strip()[:300]}"
    if not cubin.startswith(b"\x7fELF"):
        return f"NVRTC {major}.{minor} returned something that is not a cubin for {arch}"
    return None


def default_runtime() -> CudaRuntime:
    """The runtime of device 0 once it passed the probe (raises RuntimeError with the reason otherwise)."""
    reason = probe()
    if reason is not None:
        raise RuntimeError(f"CUDA cannot run here: {reason}")
    return runtime(0)


def forget() -> None:
    """Forget the probe's verdict and close the runtimes (tests that change the environment use this)."""
    with _lock:
        for rt in _runtimes.values():
            try:
                rt.close()
            except Exception:
                pass
        _runtimes.clear()
        _verdict.clear()
        nvrtc_probe.cache_clear()
