"""The ``vulkan`` backend: GLSL compute shaders on any Vulkan device, float32, through kernelkit.

It runs on GPUs of every vendor with a Vulkan driver and, through Mesa's lavapipe, on the processor (that is
how CI runs it). kernelkit chooses the device (one that builds and runs a probe kernel, GPUs first;
``KERNELKIT_VULKAN_DEVICE=INDEX`` pins one), compiles the GLSL to SPIR-V with glslang and caches the modules.
The kernels (:mod:`~vidmag.backend.vulkan.kernels`) are those of the opencl backend, one compute shader
each; the primitives (:mod:`~vidmag.backend.vulkan.operations`) and the fused tier
(:mod:`~vidmag.backend.vulkan.fused`) launch them over whole batches of frames, and the launches of one batch
go to the device in one submission.

Limits: a storage buffer binds at most the device's ``maxStorageBufferRange`` (128 MiB on lavapipe; 2 GiB
at most is used elsewhere). Batches are sized under it, the ideal band-pass's whole-clip stacks are cut into
pieces of whole time series under it, and frames too large for one buffer are refused with a ``ValueError``
that says so.

Importing this package imports no Vulkan library; :func:`probe` looks for one, :func:`create` loads it.
"""

from __future__ import annotations

from vidmag.backend import kernelkit_device

__all__ = ["create", "pinned_by", "probe"]


def probe() -> str | None:
    """Why the vulkan backend cannot run here, or None when it can.

    kernelkit's probe: a device counts only once a small GLSL kernel has been compiled to SPIR-V and run on
    it; its reasons name the remedy (the binding, the loader, a driver such as lavapipe, glslang).
    """
    missing = "the vulkan package is not installed (pip install vulkan)"
    return kernelkit_device.probe("vulkan", "vulkan", missing)


def pinned_by() -> str | None:
    """``"KERNELKIT_VULKAN_DEVICE='...'"`` when that variable is set: "auto" then stops here if Vulkan cannot
    run, instead of moving on to another backend."""
    return kernelkit_device.pinned_by("vulkan")


def create():
    """The backend: the pipelines over the fused tier (:class:`VulkanFused`), :class:`VulkanOperations` as its
    primitives, and the Riesz pipelines of :mod:`vidmag.backend.kernels.riesz` (a
    :class:`~vidmag.backend.phase.PhaseBackend`)."""
    from vidmag.backend.generic import bind
    from vidmag.backend.kernels.riesz import phase_backend
    from vidmag.backend.vulkan.fused import VulkanFused
    from vidmag.backend.vulkan.operations import VulkanOperations

    operations = VulkanOperations()
    return phase_backend(bind(operations, name="vulkan", fused=VulkanFused(operations)))
