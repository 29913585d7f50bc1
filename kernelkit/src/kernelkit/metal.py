"""Metal through pyobjc (macOS only): a program's MSL compiled with ``newLibraryWithSource``, one compute
pipeline per kernel, buffers in shared (CPU / GPU) storage.

Every launch inside :meth:`MetalRuntime.batch` is encoded into a single command buffer and a single serial
compute encoder, so the dispatches run in order without a round trip to the CPU between them; the caller waits
once at the end. A launch outside a batch is its own command buffer, waited on. Metal has no double precision.
Compiled pipelines are kept in memory per process (Metal's own shader cache keeps the compiled code across
processes); nothing is written to kernelkit's disk cache for this target.

``Metal`` (pyobjc-framework-Metal) is imported only on macOS, so this module imports anywhere and
:func:`probe` says why Metal cannot run elsewhere. It has not been run on Apple hardware: it is written
against the Metal API documentation and exercised only through the MSL syntax checks of the tests.
"""

from __future__ import annotations

import struct
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from kernelkit.dialects import METAL, Param
from kernelkit.program import Kernel, KernelSignature, LaunchConfig, Program
from kernelkit.runtime import DeviceRuntime

Metal: Any = None
_IMPORT_ERROR: str | None = f"Metal needs macOS (this is {sys.platform})"
if sys.platform == "darwin":
    try:
        import Metal  # pyobjc-framework-Metal
    except Exception as exc:  # not installed, or a broken install: probe() reports it
        _IMPORT_ERROR = f'pyobjc-framework-Metal is not installed ({exc}); pip install pyobjc-framework-Metal'
    else:
        _IMPORT_ERROR = None

def compile_options() -> Any:
    """Compile options with IEEE semantics: Metal enables fast math by default, under which the compiler may
    assume no NaN or infinity and fold away ``v != v`` and finiteness tests (the NaN rules of specux's dB and
    reduction kernels). ``mathMode`` safe (macOS 15) where it exists, else ``fastMathEnabled = False``."""
    options = Metal.MTLCompileOptions.new()
    if hasattr(options, "setMathMode_"):
        options.setMathMode_(getattr(Metal, "MTLMathModeSafe", 0))
    else:
        options.setFastMathEnabled_(False)
    return options


#: scalars by parameter kind (Metal has no 64-bit floating point)
_FORMATS = {"int": "<i", "i64": "<q", "u32": "<I", "u64": "<Q", "f16": "<e", "f32": "<f"}

_PROBE_SOURCE = """\
#include <metal_stdlib>
using namespace metal;
kernel void kk_probe(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                     constant int& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if ((int)i < n) y[i] = 2.0f * x[i] + 1.0f;
}
"""
_PROBE = Program(
    _PROBE_SOURCE,
    METAL,
    (
        KernelSignature(
            "kk_probe", (Param("x", "f32", True, True), Param("y", "f32", True), Param("n", "int"))
        ),
    ),
    name="kk_probe",
)


class MetalRuntime(DeviceRuntime):
    """Programs, shared buffers and encoded dispatches on one Metal device."""

    dialect = METAL
    name = "metal"

    def __init__(self, device: Any):
        if _IMPORT_ERROR is not None:
            raise RuntimeError(_IMPORT_ERROR)
        super().__init__()
        self.device = device
        self.queue = device.newCommandQueue()
        self._local = threading.local()

    def compiler_version(self) -> str:
        return "metal"

    def arch(self) -> str:
        return str(self.device.name())

    def _build(self, program: Program) -> tuple[bool, Any, str]:
        options = compile_options()
        library, error = self.device.newLibraryWithSource_options_error_(program.source, options, None)
        if library is None:
            return False, None, str(error)
        handles = {}
        for signature in program.kernels:
            function = library.newFunctionWithName_(signature.name)
            if function is None:
                return False, None, f"the library of {program.name!r} has no kernel {signature.name!r}"
            pipeline, error = self.device.newComputePipelineStateWithFunction_error_(function, None)
            if pipeline is None:
                return False, None, str(error)
            threads = 1
            for b in signature.block or (1,):
                threads *= b
            limit = pipeline.maxTotalThreadsPerThreadgroup()
            if limit < threads:
                need = f"kernel {signature.name} needs {threads} threads per threadgroup"
                return False, None, f"{need}; this device allows {limit}"
            handles[signature.name] = pipeline
        return True, (handles, library, None), ""

    def alloc(self, nbytes: int) -> Any:
        shared = Metal.MTLResourceStorageModeShared
        return self.device.newBufferWithLength_options_(max(int(nbytes), 1), shared)

    def upload(self, host: np.ndarray) -> Any:
        host = np.ascontiguousarray(host)
        if host.nbytes == 0:
            return self.alloc(1)
        return self.device.newBufferWithBytes_length_options_(
            host.tobytes(), host.nbytes, Metal.MTLResourceStorageModeShared
        )

    def download(self, buf: Any, out: np.ndarray) -> np.ndarray:
        if out.nbytes:
            view = buf.contents().as_buffer(out.nbytes)
            out.reshape(-1).view(np.uint8)[:] = np.frombuffer(view, dtype=np.uint8, count=out.nbytes)
        return out

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Encode every launch inside into one command buffer; commit and wait on exit."""
        outer = getattr(self._local, "encoder", None)
        if outer is not None:  # nested: the outer batch commits
            yield
            return
        command = self.queue.commandBuffer()
        encoder = command.computeCommandEncoder()
        self._local.encoder = encoder
        try:
            yield
        finally:
            self._local.encoder = None
            encoder.endEncoding()
            command.commit()
            command.waitUntilCompleted()
        if command.error() is not None:
            raise RuntimeError(f"Metal command buffer failed: {command.error()}")

    def launch(self, kernel: Kernel, config: LaunchConfig, args: list[Any]) -> None:
        self._check_open()
        encoder = getattr(self._local, "encoder", None)
        if encoder is None:
            with self.batch():
                self.launch(kernel, config, args)
            return
        encoder.setComputePipelineState_(kernel.handle)
        for index, (p, a) in enumerate(zip(kernel.params, args)):
            if p.pointer:
                encoder.setBuffer_offset_atIndex_(a, 0, index)
                continue
            if p.kind not in _FORMATS:
                raise TypeError(f"parameter {p.name!r}: Metal has no scalar of kind {p.kind!r}")
            try:
                value = struct.pack(_FORMATS[p.kind], a)
            except struct.error as exc:
                raise ValueError(f"argument {p.name!r} = {a!r} does not fit a {p.kind}: {exc}") from None
            encoder.setBytes_length_atIndex_(value, len(value), index)
        if config.shared_mem:
            encoder.setThreadgroupMemoryLength_atIndex_(config.shared_mem, 0)
        encoder.dispatchThreadgroups_threadsPerThreadgroup_(
            Metal.MTLSizeMake(*config.grid3), Metal.MTLSizeMake(*config.block3)
        )

    def _release(self) -> None:
        self.queue = None
        self.device = None


_lock = threading.RLock()
_runtimes: dict[int, MetalRuntime] = {}
_verdict: list[str | None] = []


def runtime() -> MetalRuntime:
    """The runtime of the system's default Metal device (raises RuntimeError when there is none)."""
    with _lock:
        rt = _runtimes.get(0)
        if rt is None or rt.closed:
            if _IMPORT_ERROR is not None:
                raise RuntimeError(_IMPORT_ERROR)
            device = Metal.MTLCreateSystemDefaultDevice()
            if device is None:
                raise RuntimeError("MTLCreateSystemDefaultDevice found no Metal device")
            rt = _runtimes[0] = MetalRuntime(device)
        return rt.usable()


def _probe() -> str | None:
    if _IMPORT_ERROR is not None:
        return _IMPORT_ERROR
    try:
        rt = runtime()
        kernel = rt.kernel(_PROBE, "kk_probe")
        x = np.arange(64, dtype=np.float32)
        xb, yb = rt.upload(x), rt.alloc(x.nbytes)
        kernel.launch(LaunchConfig(2, 32), xb, yb, 64)
        y = rt.download(yb, np.empty_like(x))
    except Exception as exc:
        text = str(exc).strip().splitlines()
        first = text[0] if text else ""
        return f"building or running a probe kernel on Metal failed: {type(exc).__name__}: {first}"
    if not np.array_equal(y, 2 * x + 1):
        return "the probe kernel ran on Metal but returned wrong values"
    return None


def probe() -> str | None:
    """None when the default Metal device builds and runs a probe kernel, else why not (not macOS, pyobjc
    missing, no device, the probe's failure). Once per process; never raises."""
    with _lock:
        if not _verdict:
            try:
                reason = _probe()
            except Exception as exc:
                reason = f"Metal could not be queried: {type(exc).__name__}: {exc}"
            _verdict.append(reason)
        return _verdict[0]


def default_runtime() -> MetalRuntime:
    """The default device's runtime once it passed the probe (else RuntimeError with the reason)."""
    reason = probe()
    if reason is not None:
        raise RuntimeError(f"Metal cannot run here: {reason}")
    return runtime()


def forget() -> None:
    """Forget the probe's verdict and close the runtime."""
    with _lock:
        for rt in _runtimes.values():
            rt.close()
        _runtimes.clear()
        _verdict.clear()
