"""specux's kernel generator: pure ``str -> str``, importable without any GPU library.

The spellings of each target language (OpenCL C, CUDA C++, Metal Shading Language) and the line emitter come
from the hardware layer (:mod:`kernelkit.dialects`, :mod:`kernelkit.emitter`); what is specux's lives here:

- :mod:`.butterflies`: the small DFTs (radices 2, 3, 4, 5, 7, 8, 11, 13);
- :mod:`.fft_kernels`: the kernel templates of the FFT family;
- :mod:`.fft_plan`: how a length is decomposed into those kernels, and the float64 tables they read.
"""

from kernelkit.dialects import CUDA, METAL, OPENCL
from specux._codegen.fft_kernels import KernelSource, render
from specux._codegen.fft_plan import plan

#: the dialects specux's FFT templates are written for (kernelkit's tables)
DIALECTS = {d.name: d for d in (OPENCL, CUDA, METAL)}

__all__ = ["CUDA", "DIALECTS", "METAL", "OPENCL", "KernelSource", "plan", "render"]
