"""The ``opencl`` backend: OpenCL C kernels through pyopencl, float32, on any OpenCL device.

It runs on GPUs of every vendor with an OpenCL driver and, through a software driver such as PoCL, on the
processor (that is how CI runs it). The primitives (``operations``) are each a launch or three over a whole
batch of frames; the pipelines that matter for speed are replaced by fused versions (``pipelines``) that keep
the clip on the device and do the per-pixel work of each stage in one kernel.

Importing this package imports no OpenCL library; :func:`probe` looks for one, :func:`create` loads it.
"""

from __future__ import annotations

import importlib.util

__all__ = ["create", "probe"]


def probe() -> str | None:
    """Why the opencl backend cannot run here, or None when it can (a platform with a device exists)."""
    if importlib.util.find_spec("pyopencl") is None:
        return "pyopencl is not installed (pip install vidmag[opencl])"
    try:
        from vidmag.backend.opencl.runtime import find_device
    except Exception as error:  # a broken pyopencl install (missing shared library, ...)
        return f"pyopencl failed to import: {type(error).__name__}: {error}"
    try:
        _, reason = find_device()
    except Exception as error:
        return f"querying OpenCL devices failed: {type(error).__name__}: {error}"
    return reason


def create():
    """The backend: the generic pipelines over :class:`OpenCLOperations`, with fused whole-clip pipelines."""
    from vidmag.backend.generic import bind
    from vidmag.backend.opencl.operations import OpenCLOperations
    from vidmag.backend.opencl.pipelines import fused_pipelines

    operations = OpenCLOperations()
    return bind(operations, name="opencl", overrides=fused_pipelines(operations))
