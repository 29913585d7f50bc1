"""The metal backend's device layer: the shared :class:`~vidmag.backend.kernels.device.KernelDevice` on
kernelkit's Metal runtime (never run: written against the Metal API and kernelkit's runtime, checked on Linux
only as far as importing and the MSL syntax check go).

Buffers are in shared storage, so host arrays are copied straight into and out of their contents. Launches are
encoded into one open ``runtime.batch()`` (one command buffer, one serial compute encoder) and committed when
the host next needs a result (a download, a write into a buffer, :meth:`MetalDevice.synchronize`), as the
vulkan device layer does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelkit.dialects import METAL
from vidmag.backend.kernels.device import BatchedDevice, DeviceArray

__all__ = ["MetalArray", "MetalDevice"]


class MetalArray(DeviceArray):
    """A device array in a shared-storage Metal buffer (see
    :class:`~vidmag.backend.kernels.device.DeviceArray`)."""


class MetalDevice(BatchedDevice):
    """The default Metal device: vidmag's kernels as MSL, batched launches, arrays, scratch and tables.

    Parameters
    ----------
    runtime : kernelkit.metal.MetalRuntime, optional
        By default kernelkit's runtime of the system's default device, once its probe passed.
    """

    dialect = METAL
    array_type = MetalArray
    limit = "maxBufferLength"
    flush_waits = True  # the batch's exit commits its command buffer and waits for it

    def __init__(self, runtime: Any = None) -> None:
        if runtime is None:
            from kernelkit.metal import default_runtime

            runtime = default_runtime()
        super().__init__(runtime, int(runtime.device.maxBufferLength()))

    @property
    def device_name(self) -> str:
        return self.runtime.arch()

    def _write(self, buffer: Any, host: np.ndarray) -> None:
        raw = host.reshape(-1).view(np.uint8)
        view = np.frombuffer(buffer.contents().as_buffer(raw.nbytes), dtype=np.uint8)
        view[:] = raw

    def _fill_table(self, buffer: Any, host: np.ndarray) -> None:
        # a fresh buffer is used by nothing encoded: written through its contents, the open batch goes on
        self._write(buffer, host)

    def _read(self, buffer: Any, out: np.ndarray) -> None:
        self.runtime.download(buffer, out)
