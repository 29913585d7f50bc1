"""specux's kernel generator: pure ``str -> str``, importable without any GPU library.

The spellings of each target language (OpenCL C, CUDA C++, Metal Shading Language) and the line emitter come
from the hardware layer (:mod:`kernelkit.dialects`, :mod:`kernelkit.emitter`); what is specux's lives here:

- :mod:`.butterflies`: the small DFTs (radices 2, 3, 4, 5, 7, 8, 11, 13);
- :mod:`.fft_kernels`: the kernel templates of the FFT family;
- :mod:`.fft_plan`: how a length is decomposed into those kernels, and the float64 tables they read;
- the families of the other operations (:data:`FAMILIES`): ``spectral_kernels`` (stft framing, spectrum
  modes, istft's overlap-add by gather), ``feature_kernels`` (sparse filter banks, dB, DCT, per-frame norms),
  ``convolve_kernels`` (fftconvolve's padding, spectrum products and crops). Each module has
  ``render(spec, dialect) -> KernelSource`` and ``cover(storages) -> list[spec]``, a list holding every
  structural variety of its kernels for those storages (what the NVRTC and MSL checks compile).
"""

import importlib
from collections.abc import Callable
from typing import Any

from kernelkit.dialects import CUDA, METAL, OPENCL
from specux._codegen.fft_kernels import KernelSource, render
from specux._codegen.fft_plan import plan

#: the dialects specux's FFT templates are written for (kernelkit's tables)
DIALECTS = {d.name: d for d in (OPENCL, CUDA, METAL)}

#: kernel families beyond the FFT, by module name under specux._codegen
FAMILIES = ("spectral_kernels", "feature_kernels", "convolve_kernels")


def family_cover(storages: tuple[str, ...]) -> list[tuple[Callable[[Any, Any], KernelSource], Any]]:
    """``(render, spec)`` for the structural cover of every family beyond the FFT that this build has."""
    out = []
    for name in FAMILIES:
        try:
            module = importlib.import_module(f"specux._codegen.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"specux._codegen.{name}":
                raise
            continue
        out.extend((module.render, spec) for spec in module.cover(storages))
    return out


__all__ = [
    "CUDA",
    "DIALECTS",
    "FAMILIES",
    "METAL",
    "OPENCL",
    "KernelSource",
    "family_cover",
    "plan",
    "render",
]
