"""The cuda backend's device layer: the shared :class:`~vidmag.backend.kernels.device.KernelDevice` on
kernelkit's CUDA runtime.

Launches go in order onto the runtime's stream (its own non-blocking stream, or the caller's inside
``runtime.session``), so nothing is batched. Host arrays go in and out through the runtime's page-locked
staging buffers with asynchronous copies on the same stream: an upload returns once the bytes are staged, and
the copy and the launches after it run while the host goes on. Uploads take two staging buffers in turn, each
with an event recorded after its copy, so the host fills one while the device still copies from the other and
waits only for the copy out of the buffer it refills; a download waits for the stream (the pipelines need the
bytes on the host at once). Device memory is
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

#: pinned staging slots of the runtime this layer uses: two for uploads, taken in turn, one for downloads
#: (specux, on the same runtime, uses 0 and 1)
_IN, _OUT = (16, 17), 18


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
        self._turn = 0
        #: upload slot -> an event recorded after the last copy out of it
        self._copied: dict[int, Any] = {}

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
        # Two staging buffers in turn: while the device copies from one (and runs the launches queued after
        # the copy), the host fills the other; it waits only for the copy out of the buffer it refills.
        rt = self.runtime
        raw = host.reshape(-1).view(np.uint8)
        slot = _IN[self._turn]
        self._turn ^= 1
        with rt.current():
            copied = self._copied.get(slot)
            if copied is not None:
                kk.check(kk.cu.cuEventSynchronize(copied))
            staging = rt.pinned(raw.nbytes, slot)
            staging[:] = raw
            kk.check(kk.cu.cuMemcpyHtoDAsync(kk.device_pointer(buffer, rt.ordinal), staging.ctypes.data,
                                             raw.nbytes, rt.stream))
            if copied is None:
                flags = kk.cu.CUevent_flags.CU_EVENT_DISABLE_TIMING
                copied = self._copied[slot] = kk.check(kk.cu.cuEventCreate(flags))
            kk.check(kk.cu.cuEventRecord(copied, rt.stream))

    def _read(self, buffer: Any, out: np.ndarray) -> None:
        rt = self.runtime
        raw = out.reshape(-1).view(np.uint8)
        with rt.current():
            staging = rt.pinned(raw.nbytes, _OUT)
            kk.check(kk.cu.cuMemcpyDtoHAsync(staging.ctypes.data, kk.device_pointer(buffer, rt.ordinal),
                                             raw.nbytes, rt.stream))
            kk.check(kk.cu.cuStreamSynchronize(rt.stream))
            raw[:] = staging
