"""specux's kernel generator: pure ``str -> str``, importable without any GPU library.

- :mod:`.dialects`: one table of spellings per target (OpenCL C, CUDA C++, Metal Shading Language);
- :mod:`.emitter`: indented text and the shared complex helpers;
- :mod:`.butterflies`: the small DFTs (radices 2, 3, 4, 5, 7, 8, 11, 13);
- :mod:`.fft_kernels`: the kernel templates of the FFT family;
- :mod:`.fft_plan`: how a length is decomposed into those kernels, and the float64 tables they read.
"""

from specux._codegen.dialects import CUDA, DIALECTS, METAL, OPENCL
from specux._codegen.fft_kernels import KernelSource, render
from specux._codegen.fft_plan import plan

__all__ = ["CUDA", "DIALECTS", "METAL", "OPENCL", "KernelSource", "plan", "render"]
