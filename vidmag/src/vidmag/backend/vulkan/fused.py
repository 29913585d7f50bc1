"""The ``vulkan`` backend's fused tier: the shared :class:`~vidmag.backend.kernels.fused.KernelFused` on a
Vulkan device. Every launch of a batch of frames is recorded into one command buffer, submitted when the
render's bytes are read back: one submission per batch."""

from __future__ import annotations

from vidmag.backend.kernels.fused import KernelFused

__all__ = ["CHUNK_BYTES", "VulkanFused"]

#: Bytes of input frames one batch holds (as the opencl backend's: 10 baby frames, 17 face frames). The
#: batch's largest float buffer (level 0 reduced along the height) is twice that, well under lavapipe's
#: 128 MiB storage buffers.
CHUNK_BYTES = 16 * 2**20


class VulkanFused(KernelFused):
    """The fused tier on one Vulkan device, over its
    :class:`~vidmag.backend.vulkan.operations.VulkanOperations`.

    Parameters
    ----------
    ops : VulkanOperations
    """

    name = "vulkan"

    def chunk_bytes(self) -> int:
        return CHUNK_BYTES  # read at every call: tests set smaller batches here
