"""The primitives on a Vulkan device: the shared :class:`~vidmag.backend.kernels.operations.KernelOperations`
over :class:`~vidmag.backend.vulkan.device.Device`."""

from __future__ import annotations

from typing import Any

from vidmag.backend.kernels.operations import KernelOperations, Stack, _floats
from vidmag.backend.vulkan.device import Device

__all__ = ["Stack", "VulkanOperations", "_floats"]


class VulkanOperations(KernelOperations):
    """The primitives on one Vulkan device (float32 for everything but the bytes).

    Parameters
    ----------
    runtime : kernelkit.vulkan.VulkanRuntime or Device, optional
        The device; by default kernelkit's process-wide runtime on the device its probe chose.
    """

    def __init__(self, runtime: Any = None) -> None:
        super().__init__(runtime if isinstance(runtime, Device) else Device(runtime))
