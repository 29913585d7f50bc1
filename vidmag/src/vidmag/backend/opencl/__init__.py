"""The ``opencl`` backend: OpenCL C kernels on any OpenCL device, float32, through kernelkit.

It runs on GPUs of every vendor with an OpenCL driver and, through a software driver such as PoCL, on the
processor (that is how CI runs it). kernelkit chooses the device (one that builds and runs a probe kernel;
``KERNELKIT_OPENCL_DEVICE=PLATFORM:DEVICE`` pins one), compiles the kernel files and caches their binaries.
The primitives (``operations``) are each a launch or three over a whole batch of frames; the fused tier
(``pipelines``: tap maps, matrix apply, band-pass projection, scan and the output kernel) is what the
pipelines of ``vidmag.backend.generic`` run on, keeping each batch on the device and doing the per-pixel work
of each stage in one kernel.

Importing this package imports no OpenCL library; :func:`probe` looks for one, :func:`create` loads it.
"""

from __future__ import annotations

from vidmag.backend import kernelkit_device

__all__ = ["create", "pinned_by", "probe"]


def probe() -> str | None:
    """Why the opencl backend cannot run here, or None when it can.

    kernelkit's probe: a device counts only once a small kernel has been built and run on it, so a driver
    that lists a device and then builds nothing (the PoCL of the pyopencl wheels on an AMD Zen 5) is a
    reason, not a failure in the middle of a run.
    """
    return kernelkit_device.probe("opencl", "pyopencl", "pyopencl is not installed (pip install pyopencl)")


def pinned_by() -> str | None:
    """``"KERNELKIT_OPENCL_DEVICE='...'"`` (``PLATFORM:DEVICE`` indices, as ``clinfo -l`` lists them) when
    that variable is set: "auto" then stops here if OpenCL cannot run, instead of moving on."""
    return kernelkit_device.pinned_by("opencl")


def create():
    """The backend: the pipelines over the fused tier (:class:`OpenCLFused`), :class:`OpenCLOperations` as its
    primitives."""
    from vidmag.backend.generic import bind
    from vidmag.backend.opencl.operations import OpenCLOperations
    from vidmag.backend.opencl.pipelines import OpenCLFused

    operations = OpenCLOperations()
    return bind(operations, name="opencl", fused=OpenCLFused(operations))
