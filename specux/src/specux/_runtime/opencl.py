"""OpenCL through pyopencl: one context and in-order queue per device, programs built from generated source.

Compiled programs are cached on disk as the device's program binaries (``cl_program`` binaries round-trip on
PoCL and on GPU drivers alike), so a second process skips the OpenCL C compile.
"""

from __future__ import annotations

import os
import shlex
import threading
from typing import Any

import numpy as np
import pyopencl as cl

from specux._codegen.dialects import OPENCL
from specux._codegen.fft_kernels import KernelSource
from specux._runtime.device import DeviceRuntime

_SCALARS = {"int": np.int32, "f32": np.float32, "f64": np.float64}


class OpenCLRuntime(DeviceRuntime):
    """Kernels, buffers and launches on one OpenCL device."""

    dialect = OPENCL
    binary_suffix = ".clbin"

    def __init__(self, device: cl.Device, options: tuple[str, ...] = ()):
        super().__init__()
        self.options = ("-cl-std=CL1.2", *options)
        self.device = device
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(self.context)
        self.fp64 = "cl_khr_fp64" in device.extensions
        self._launch_lock = threading.Lock()

    def compiler_version(self) -> str:
        p = self.device.platform
        return f"{p.name} | {p.version} | {self.device.driver_version}"

    def arch(self) -> str:
        return f"{self.device.name} | {self.device.version}"

    def _build(self, ks: KernelSource) -> tuple[bool, Any, str]:
        program = cl.Program(self.context, ks.source)
        try:
            program.build(options=list(self.options), devices=[self.device])
        except (
            cl.RuntimeError
        ) as exc:  # pyopencl's BUILD_PROGRAM_FAILURE carries the build log in the message
            return False, None, str(exc)
        binary = program.get_info(cl.program_info.BINARIES)[0]
        return True, (getattr(program, ks.name), bytes(binary)), ""

    def _load(self, binary: bytes, ks: KernelSource) -> Any:
        program = cl.Program(self.context, [self.device], [binary])
        program.build(options=list(self.options), devices=[self.device])
        return getattr(program, ks.name)

    def alloc(self, nbytes: int) -> cl.Buffer:
        return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=max(int(nbytes), 1))

    def upload(self, host: np.ndarray) -> cl.Buffer:
        host = np.ascontiguousarray(host)
        if host.nbytes == 0:
            return self.alloc(1)
        return cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)

    def download(self, buf: cl.Buffer, out: np.ndarray) -> np.ndarray:
        if out.nbytes:
            cl.enqueue_copy(self.queue, out, buf)
        return out

    def synchronize(self) -> None:
        self.queue.finish()

    def launch(self, handle: Any, ks: KernelSource, groups: int, args: list[Any]) -> None:
        values = [a if p.pointer else _SCALARS[p.kind](a) for p, a in zip(ks.params, args)]
        # a cl.Kernel holds its arguments: setting and enqueueing must not interleave between threads
        with self._launch_lock:
            handle.set_args(*values)
            cl.enqueue_nd_range_kernel(self.queue, handle, (groups * ks.block,), (ks.block,))


_lock = threading.Lock()
_runtimes: dict[tuple[str, ...], OpenCLRuntime] = {}
_devices: list[cl.Device] = []


def platform_devices() -> list[cl.Device]:
    """Every OpenCL device of every platform, GPUs first (raises pyopencl's error when there is no
    platform)."""
    devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    return sorted(devices, key=lambda d: 0 if d.type & cl.device_type.GPU else 1)


def build_options() -> tuple[str, ...]:
    """Extra OpenCL build options from ``SPECUX_OPENCL_OPTIONS`` (read at every call; part of the cache key).

    ``-cl-opt-disable`` makes PoCL's first launch of a kernel about six times cheaper at the price of slower
    kernels, which suits test sweeps over many lengths that each run once.
    """
    return tuple(shlex.split(os.environ.get("SPECUX_OPENCL_OPTIONS", "")))


def default_runtime() -> OpenCLRuntime:
    """The runtime of the preferred device (GPUs first) for the current build options."""
    options = build_options()
    with _lock:
        if options not in _runtimes:
            if not _devices:
                found = platform_devices()
                if not found:
                    raise RuntimeError("no OpenCL device found")
                _devices.append(found[0])
            _runtimes[options] = OpenCLRuntime(_devices[0], options)
        return _runtimes[options]
