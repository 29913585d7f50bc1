"""Run specux's generated kernels on kernelkit's device runtimes.

- :mod:`.fft_exec`: runs an FFT plan from :mod:`specux._codegen.fft_plan` on any
  :class:`kernelkit.runtime.DeviceRuntime` (OpenCL, CUDA, Metal); numpy in -> numpy out;
- :mod:`.tuning`: specux's section of kernelkit's tuning store (autotuning winners per device and length).

Compiling, caching and launching are kernelkit's (:mod:`kernelkit.opencl`, :mod:`kernelkit.cuda`,
:mod:`kernelkit.metal`, :mod:`kernelkit.cache`). Nothing here is imported by ``import specux``; the backends
import what they need when first used.
"""

from kernelkit.cache import KernelCompileError

__all__ = ["KernelCompileError"]
