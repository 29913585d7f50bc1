"""Compile, cache and launch generated kernels: one module per device API.

- :mod:`.cache`: the compiled-kernel cache (memory LRU + disk), source dumps and the compile error;
- :mod:`.device`: what every device runtime provides, and the bounded kernel / table caches they share;
- :mod:`.fft_exec`: runs an FFT plan from :mod:`specux._codegen.fft_plan` on any device runtime;
- :mod:`.opencl` (pyopencl), :mod:`.cuda` (cuda-bindings: NVRTC + driver API), :mod:`.metal` (pyobjc).

Nothing here is imported by ``import specux``; the backends import the runtime they need when first used.
"""

from specux._runtime.cache import KernelCompileError

__all__ = ["KernelCompileError"]
