"""kernelkit: generate, compile, cache and launch compute kernels on CUDA, Metal, OpenCL and Vulkan.

Importing it loads no GPU library: the source side (:mod:`.dialects`, :mod:`.emitter`) is pure ``str -> str``,
and each device runtime (:mod:`.cuda`, :mod:`.opencl`, :mod:`.metal`, :mod:`.vulkan`) is imported when first
used. :func:`devices` lists the runtimes with the reason each one that cannot run here cannot.
"""

from kernelkit._devices import RuntimeStatus, devices
from kernelkit.dialects import DIALECTS, Dialect, Param
from kernelkit.program import KernelSignature, LaunchConfig, Program
from kernelkit.runtime import ForkedProcessError

__all__ = [
    "DIALECTS",
    "Dialect",
    "ForkedProcessError",
    "KernelSignature",
    "LaunchConfig",
    "Param",
    "Program",
    "RuntimeStatus",
    "devices",
]
