"""The cuda backend's device layer: the shared :class:`~vidmag.backend.kernels.device.KernelDevice` on
kernelkit's CUDA runtime.

Launches go in order onto the runtime's stream (its own non-blocking stream, or the caller's inside
``runtime.session``), so nothing is batched. Host arrays go in and out through the runtime's page-locked
staging buffers (slot 0 in, slot 1 out) with asynchronous copies on the same stream: an upload returns once
the bytes are staged, and the copy and the launches after it run while the host goes on; the host waits when
it reads a result and before it refills a staging buffer (so the transfers of one batch do not yet overlap
the compute of another: that needs two staging buffers per direction and events). Device memory is
stream-ordered (``cuMemAllocAsync`` / ``cuMemFreeAsync``), so an array dropped while launches that read it
are still queued is freed after them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelkit import cuda as kk
from kernelkit.dialects import CUDA
from vidmag.backend.kernels.device import DeviceArray, KernelDevice

__all__ = ["CudaArray", "CudaDevice"]

#: pinned staging slots of the runtime this layer uses
_IN, _OUT = 0, 1


class CudaArray(DeviceArray):
    """A device array in CUDA device memory (see :class:`~vidmag.backend.kernels.device.DeviceArray`)."""


class CudaDevice(KernelDevice):
    """One CUDA device: vidmag's kernels compiled by NVRTC for its architecture, arrays, scratch, tables.

    Parameters
    ----------
    runtime : kernelkit.cuda.CudaRuntime, optional
        By default kernelkit's runtime of device 0, once its probe passed.
    """

    dialect = CUDA
    array_type = CudaArray
    limit = "the kernels' 32-bit indices"

    def __init__(self, runtime: Any = None) -> None:
        runtime = runtime if runtime is not None else kk.default_runtime()
        super().__init__(runtime, 2**31 - 4)

    def alloc(self, nbytes: int) -> Any:
        # stream-ordered allocation wants this device's context current (launches push it themselves)
        with self.runtime.current():
            return super().alloc(nbytes)

    def synchronize(self) -> None:
        if self.runtime.closed:
            return
        with self.runtime.current():
            self.runtime.synchronize()

    def _write(self, buffer: Any, host: np.ndarray) -> None:
        rt = self.runtime
        raw = host.reshape(-1).view(np.uint8)
        with rt.current():
            # the staging buffer may still feed the previous upload's copy: wait for the stream first
            kk.check(kk.cu.cuStreamSynchronize(rt.stream))
            staging = rt.pinned(raw.nbytes, _IN)
            staging[:] = raw
            kk.check(kk.cu.cuMemcpyHtoDAsync(kk.device_pointer(buffer, rt.ordinal), staging.ctypes.data,
                                             raw.nbytes, rt.stream))

    def _read(self, buffer: Any, out: np.ndarray) -> None:
        rt = self.runtime
        raw = out.reshape(-1).view(np.uint8)
        with rt.current():
            staging = rt.pinned(raw.nbytes, _OUT)
            kk.check(kk.cu.cuMemcpyDtoHAsync(staging.ctypes.data, kk.device_pointer(buffer, rt.ordinal),
                                             raw.nbytes, rt.stream))
            kk.check(kk.cu.cuStreamSynchronize(rt.stream))
            raw[:] = staging
