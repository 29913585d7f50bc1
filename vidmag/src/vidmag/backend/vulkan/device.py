"""The vulkan backend's device layer: the shared :class:`~vidmag.backend.kernels.device.KernelDevice` on a
kernelkit Vulkan runtime, with launches recorded in batches.

kernelkit owns the device (its probe builds and runs a kernel; ``KERNELKIT_VULKAN_DEVICE`` pins one), the
compiler (GLSL -> SPIR-V with glslang, cached on disk), storage buffers, push constants and submissions. What
this module adds is the batching: launches are recorded into one open ``runtime.batch()`` and submitted
together when the host next needs a result (a download, a write into a buffer, :meth:`Device.synchronize`),
so a batch of frames through a whole pipeline is one submission.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelkit.dialects import GLSL
from kernelkit.vulkan import VulkanRuntime, default_runtime
from vidmag.backend.kernels.device import TABLE_BYTES, BatchedDevice, DeviceArray
from vidmag.backend.kernels.templates import MAX_GROUPS, cover

__all__ = ["MAX_GROUPS", "TABLE_BYTES", "Device", "VkArray", "cover"]


class VkArray(DeviceArray):
    """A device array in a Vulkan storage buffer (see :class:`~vidmag.backend.kernels.device.DeviceArray`)."""


class Device(BatchedDevice):
    """One Vulkan device: vidmag's kernels on it, batched launches, arrays, scratch arrays and tables.

    Parameters
    ----------
    runtime : kernelkit.vulkan.VulkanRuntime, optional
        By default kernelkit's process-wide runtime on the device its probe chose.
    """

    dialect = GLSL
    array_type = VkArray
    limit = "maxStorageBufferRange"

    def __init__(self, runtime: VulkanRuntime | None = None) -> None:
        runtime = runtime if runtime is not None else default_runtime()
        #: the largest buffer a kernel may bind: the device's maxStorageBufferRange (128 MiB on lavapipe)
        super().__init__(runtime, int(runtime.max_buffer_range))

    def _write(self, buffer: Any, host: np.ndarray) -> None:
        self.runtime.write(buffer, host)

    def _read(self, buffer: Any, out: np.ndarray) -> None:
        self.runtime.download(buffer, out)

    def _fill_table(self, buffer: Any, host: np.ndarray) -> None:
        # A new table in host-visible memory is written through its mapping: a fresh buffer is used by nothing
        # recorded, so the open batch goes on (the runtime's write would submit it first). Behind staging (a
        # discrete GPU) the copy does submit the batch, once per table.
        if buffer.mapped is not None:
            buffer.mapped[: host.nbytes] = host.reshape(-1).view(np.uint8)
        else:
            super()._fill_table(buffer, host)
