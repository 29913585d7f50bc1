"""OpenCL context, queue and programs for the ``opencl`` backend (imports pyopencl).

The kernels are OpenCL C files shipped as package data beside this module (``kernels/*.cl``). Each file is
built once per context, the first time one of its kernels is needed; pyopencl keeps the compiled binaries in
its own on-disk cache, so later processes skip the compiler.
"""

from __future__ import annotations

import os
from functools import cached_property
from importlib import resources

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

#: Device kinds in the order the backend prefers them.
_DEVICE_PREFERENCE = (cl.device_type.GPU, cl.device_type.ACCELERATOR, cl.device_type.CPU)

#: Environment variable naming the device to use, "PLATFORM_INDEX:DEVICE_INDEX" (as ``clinfo -l`` lists them).
DEVICE_ENV = "VIDMAG_OPENCL_DEVICE"

_BUILD_OPTIONS = ["-cl-std=CL1.2"]


def _platforms() -> list:
    try:
        return cl.get_platforms()
    except cl.LogicError:  # PLATFORM_NOT_FOUND_KHR: no ICD loader entry at all
        return []


def find_device() -> tuple[cl.Device | None, str | None]:
    """The device the backend would use, or None and the reason there is none.

    A GPU is preferred, then an accelerator, then a processor (a software driver such as PoCL);
    ``VIDMAG_OPENCL_DEVICE="p:d"`` names one explicitly.
    """
    platforms = _platforms()
    if not platforms:
        return None, (
            "no OpenCL platform found (install a driver; on a machine without one, "
            "pip install pocl-binary-distribution runs OpenCL on the processor)"
        )
    wanted = os.environ.get(DEVICE_ENV)
    if wanted:
        try:
            p, d = (int(part) for part in wanted.split(":"))
            return platforms[p].get_devices()[d], None
        except (ValueError, IndexError, cl.Error):
            return None, f"{DEVICE_ENV}={wanted!r} names no OpenCL device (expected PLATFORM:DEVICE indices)"
    devices = []
    for platform in platforms:
        try:
            devices.extend(platform.get_devices())
        except cl.Error:  # a platform with no device of any kind raises DEVICE_NOT_FOUND
            continue
    if not devices:
        names = ", ".join(p.name for p in platforms)
        return None, f"no OpenCL device found on the installed platform(s): {names}"
    for kind in _DEVICE_PREFERENCE:
        for device in devices:
            if device.type & kind:
                return device, None
    return devices[0], None


def _kernel_source(name: str) -> str:
    """The source of ``kernels/<name>`` with ``kernels/common.cl`` (shared definitions) in front."""
    kernels = resources.files("vidmag.backend.opencl").joinpath("kernels")
    common = kernels.joinpath("common.cl").read_text(encoding="utf-8")
    return common + "\n" + kernels.joinpath(name).read_text(encoding="utf-8")


class Runtime:
    """One device's context, in-order queue and the built kernel files.

    Parameters
    ----------
    device : pyopencl.Device
    """

    def __init__(self, device: cl.Device) -> None:
        self.device = device
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(self.context)
        self._programs: dict[str, cl.Program] = {}
        self._kernels: dict[tuple[str, str], cl.Kernel] = {}
        self._group_limits: dict[tuple[str, str], int] = {}

    def kernel(self, file: str, name: str) -> cl.Kernel:
        """The kernel ``name`` of ``kernels/<file>.cl``, building the file on first use."""
        key = (file, name)
        if key not in self._kernels:
            if file not in self._programs:
                source = _kernel_source(f"{file}.cl")
                try:
                    self._programs[file] = cl.Program(self.context, source).build(options=_BUILD_OPTIONS)
                except cl.RuntimeError as exc:
                    raise RuntimeError(f"OpenCL build of kernels/{file}.cl failed:\n{exc}") from exc
            self._kernels[key] = getattr(self._programs[file], name)
        return self._kernels[key]

    def launch(self, file: str, name: str, global_size: tuple[int, ...], *args) -> None:
        """Enqueue ``name`` over ``global_size`` work items.

        On a processor device the work groups are :func:`_local_size`'s (capped by what the kernel allows);
        elsewhere the driver picks them.
        """
        kernel = self.kernel(file, name)
        local = None
        if self._on_cpu:
            key = (file, name)
            if key not in self._group_limits:
                info = cl.kernel_work_group_info.WORK_GROUP_SIZE
                self._group_limits[key] = kernel.get_work_group_info(info, self.device)
            local = _local_size(global_size, self._group_limits[key])
        kernel(self.queue, global_size, local, *args)

    @cached_property
    def _on_cpu(self) -> bool:
        return bool(self.device.type & cl.device_type.CPU)

    # --- memory ---------------------------------------------------------------------------------------------
    def empty(self, shape: tuple[int, ...], dtype=np.float32) -> cla.Array:
        return cla.empty(self.queue, shape, dtype)

    def to_device(self, host: np.ndarray) -> cla.Array:
        return cla.to_device(self.queue, np.ascontiguousarray(host))

    def constant(self, host: np.ndarray, dtype) -> cla.Array:
        """A small read-only table (tap indices and weights, matrices), cached by content."""
        host = np.ascontiguousarray(host, dtype=dtype)
        key = (host.dtype.str, host.shape, host.tobytes())
        cache = self._constants
        if key not in cache:
            if len(cache) > 512:
                cache.clear()
            cache[key] = cla.to_device(self.queue, host)
        return cache[key]

    @cached_property
    def _constants(self) -> dict:
        return {}


def _local_size(global_size: tuple[int, ...], limit: int) -> tuple[int, ...]:
    """Work groups spanning as much of the first axis as divides it (at most 512 and ``limit`` work items),
    1 on the others.

    The first axis runs along a row in every kernel here. PoCL, left to choose, often picks small groups, and
    each group costs a fixed overhead there: whole-row groups ran the kernels 1.5 to 3 times faster.
    """
    first = global_size[0]
    size = next(d for d in range(min(first, 512, limit), 0, -1) if first % d == 0)
    return (size,) + (1,) * (len(global_size) - 1)


_RUNTIMES: dict[int, Runtime] = {}


def default_runtime() -> Runtime:
    """The process-wide runtime on :func:`find_device`'s device (raises RuntimeError with the reason)."""
    device, reason = find_device()
    if device is None:
        raise RuntimeError(f"the opencl backend cannot run: {reason}")
    key = device.int_ptr
    if key not in _RUNTIMES:
        _RUNTIMES[key] = Runtime(device)
    return _RUNTIMES[key]
