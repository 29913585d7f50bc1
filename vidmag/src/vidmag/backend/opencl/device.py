"""The ``opencl`` backend's view of a kernelkit OpenCL runtime (imports pyopencl).

kernelkit owns the device: which one (its probe builds and runs a kernel on every device of every platform;
``KERNELKIT_OPENCL_DEVICE`` pins one), its context and in-order queue, compiling, the checksummed disk cache
of program binaries, launches and an orderly close at exit. What stays here is vidmag's: the kernel files
(``kernels/*.cl``, package data, each with ``kernels/common.cl`` in front) as kernelkit Programs, launches by
file and kernel name over exact global sizes, and device arrays as ``pyopencl.array.Array`` objects, which
the kernels take as buffer arguments.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import numpy as np
import pyopencl.array as cla

from kernelkit.dialects import OPENCL
from kernelkit.opencl import OpenCLRuntime, default_runtime, kernel_signatures
from kernelkit.program import Kernel, Program

#: The kernel files, without ``common.cl`` (definitions only, put in front of each of them).
KERNEL_FILES = ("arith", "colour", "fused", "resample", "riesz", "temporal")


def kernel_source(name: str) -> str:
    """The source of ``kernels/<name>`` with ``kernels/common.cl`` (shared definitions) in front."""
    kernels = resources.files("vidmag.backend.opencl").joinpath("kernels")
    common = kernels.joinpath("common.cl").read_text(encoding="utf-8")
    return common + "\n" + kernels.joinpath(name).read_text(encoding="utf-8")


@functools.cache
def program(file: str) -> Program:
    """``kernels/<file>.cl`` as a kernelkit Program; its kernels and their parameters read from the source."""
    if file not in KERNEL_FILES:
        raise ValueError(f"file must be one of {', '.join(KERNEL_FILES)}; got {file!r}")
    source = kernel_source(f"{file}.cl")
    return Program(source, OPENCL, kernel_signatures(source), name=f"vidmag-{file}")


class Device:
    """One OpenCL device: vidmag's kernels on it, launches, and pyopencl arrays.

    Parameters
    ----------
    runtime : kernelkit.opencl.OpenCLRuntime, optional
        The device's runtime; by default kernelkit's process-wide one on the device its probe chose.
    """

    def __init__(self, runtime: OpenCLRuntime | None = None) -> None:
        self.runtime = runtime if runtime is not None else default_runtime()
        self._kernels: dict[tuple[str, str], Kernel] = {}

    @property
    def queue(self) -> Any:
        return self.runtime.queue

    @property
    def context(self) -> Any:
        return self.runtime.context

    @property
    def device(self) -> Any:
        return self.runtime.device

    # --- kernels ----------------------------------------------------------------------------------------
    def kernel(self, file: str, name: str) -> Kernel:
        """Kernel ``name`` of ``kernels/<file>.cl``, compiled (or read from the cache) at first use."""
        key = (file, name)
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = self.runtime.kernel(program(file), name)
        return kernel

    def launch(self, file: str, name: str, global_size: tuple[int, ...], *args: Any,
               offset: tuple[int, ...] | None = None) -> None:
        """Enqueue ``name`` over exactly ``global_size`` work items (ids from ``offset`` when given).

        ``args`` in parameter order: pyopencl arrays or buffers for pointers, numbers for scalars. The work
        groups are the runtime's :meth:`~kernelkit.opencl.OpenCLRuntime.cover` (whole rows on a processor).
        """
        kernel = self.kernel(file, name)
        kernel.launch(self.runtime.cover(kernel, global_size, offset=offset), *args)

    def synchronize(self) -> None:
        """Wait for every launch so far (nothing to wait for once the runtime is closed)."""
        if not self.runtime.closed:
            self.runtime.synchronize()

    # --- memory -----------------------------------------------------------------------------------------
    def empty(self, shape: tuple[int, ...], dtype=np.float32) -> cla.Array:
        return cla.empty(self.queue, shape, dtype)

    def to_device(self, host: np.ndarray) -> cla.Array:
        return cla.to_device(self.queue, np.ascontiguousarray(host))

    def constant(self, host: np.ndarray, dtype) -> Any:
        """A small read-only table (tap indices and weights, matrices) on the device, cached by content.

        The runtime's table cache holds it: bounded in count and bytes (least recently used go first) and
        released in order when the runtime closes. Returns a buffer for a kernel argument.
        """
        host = np.ascontiguousarray(host, dtype=dtype)
        key = ("vidmag", host.dtype.str, host.shape, host.tobytes())
        return self.runtime.table(key, lambda: host)
