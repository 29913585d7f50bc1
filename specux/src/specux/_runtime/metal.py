"""Metal through pyobjc (macOS only): the generated MSL compiled with ``newLibraryWithSource``, one compute
pipeline per kernel, buffers in shared (CPU/GPU) storage.

Every kernel of one transform is encoded into a single command buffer and a single serial compute encoder, so
the dispatches run in order without a round trip to the CPU between them; the caller waits once at the end.
Metal has no double precision: plans are float32 (and float16 storage) only. Compiled pipelines are cached in
memory per process (Metal's own shader cache keeps the compiled code across processes); nothing is written to
specux's disk cache for this target.

This module cannot run on Linux and has not been run on Apple hardware: it is written against the Metal API
documentation and exercised only through the MSL syntax check in the tests.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any

import Metal  # pyobjc-framework-Metal
import numpy as np

from specux._codegen.dialects import METAL
from specux._codegen.fft_kernels import KernelSource
from specux._runtime.device import DeviceRuntime

_SCALARS = {"int": np.int32, "f32": np.float32}


class MetalRuntime(DeviceRuntime):
    """Kernels, shared buffers and encoded dispatches on one Metal device."""

    dialect = METAL

    def __init__(self, device: Any):
        super().__init__()
        self.device = device
        self.queue = device.newCommandQueue()
        self._local = threading.local()

    def compiler_version(self) -> str:
        return "metal"

    def arch(self) -> str:
        return str(self.device.name())

    def _build(self, ks: KernelSource) -> tuple[bool, Any, str]:
        library, error = self.device.newLibraryWithSource_options_error_(ks.source, None, None)
        if library is None:
            return False, None, str(error)
        function = library.newFunctionWithName_(ks.name)
        pipeline, error = self.device.newComputePipelineStateWithFunction_error_(function, None)
        if pipeline is None:
            return False, None, str(error)
        if pipeline.maxTotalThreadsPerThreadgroup() < ks.block:
            return (
                False,
                None,
                (
                    f"kernel {ks.name} needs {ks.block} threads per threadgroup; this device allows "
                    f"{pipeline.maxTotalThreadsPerThreadgroup()}"
                ),
            )
        return True, (pipeline, None), ""

    def alloc(self, nbytes: int) -> Any:
        return self.device.newBufferWithLength_options_(
            max(int(nbytes), 1), Metal.MTLResourceStorageModeShared
        )

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
    def batch(self):
        """Encode every launch inside into one command buffer; commit and wait on exit."""
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

    def launch(self, handle: Any, ks: KernelSource, groups: int, args: list[Any]) -> None:
        encoder = getattr(self._local, "encoder", None)
        if encoder is None:
            with self.batch():
                self.launch(handle, ks, groups, args)
            return
        pipeline, _ = handle
        encoder.setComputePipelineState_(pipeline)
        for index, (p, a) in enumerate(zip(ks.params, args)):
            if p.pointer:
                encoder.setBuffer_offset_atIndex_(a, 0, index)
            else:
                value = np.array([a], dtype=_SCALARS[p.kind]).tobytes()
                encoder.setBytes_length_atIndex_(value, len(value), index)
        encoder.dispatchThreadgroups_threadsPerThreadgroup_(
            Metal.MTLSizeMake(groups, 1, 1), Metal.MTLSizeMake(ks.block, 1, 1)
        )


_lock = threading.Lock()
_runtime: list[MetalRuntime] = []


def runtime() -> MetalRuntime:
    with _lock:
        if not _runtime:
            device = Metal.MTLCreateSystemDefaultDevice()
            if device is None:
                raise RuntimeError("MTLCreateSystemDefaultDevice returned no device")
            _runtime.append(MetalRuntime(device))
        return _runtime[0]
