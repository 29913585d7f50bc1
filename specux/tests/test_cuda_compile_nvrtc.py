"""The CUDA dialect of every kernel the planner chooses compiles with NVRTC to a cubin for sm_80, sm_90 and
sm_100.

No GPU or driver is needed: NVRTC is a compiler library. By default a structural cover of the kernels is
compiled (every radix, stage form, storage combination, four-step pass and Bluestein piece; the rest differ
only in integer constants); ``SPECUX_NVRTC_ALL=1`` compiles every one of the ~400 distinct kernels. Cubins
land in kernelkit's kernel cache (``KERNELKIT_CACHE_DIR``), so reruns are quick. This checks that CUDA
accepts the code; it says nothing about results, which only a GPU run (scripts/dev/gpu_check.sh) can show.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from kernelkit import cache
from kernelkit import cuda as cuda_rt
from specux._codegen import CUDA, family_cover, fft_plan, render

nvrtc_missing = cuda_rt.nvrtc_probe("sm_90")


@pytest.fixture(autouse=True)
def _compiler_present(require_check):
    if nvrtc_missing is not None:
        require_check("nvrtc", f"NVRTC unavailable (pip install nvidia-cuda-nvrtc): {nvrtc_missing}")


ARCHS = ("sm_80", "sm_90", "sm_100")


def _specs():
    specs = fft_plan.kernel_specs(fft_plan.conformance_sizes())
    if os.environ.get("SPECUX_NVRTC_ALL", "") not in ("", "0"):
        return specs
    return fft_plan.structural_cover(specs)


def _compile(job):
    source, name, arch = job
    options = cuda_rt.CudaRuntime.options
    major, minor = cuda_rt.nvrtc_version()
    key = cache.cache_key(source, options, f"nvrtc {major}.{minor}", arch)
    if cache.disk_get(key, ".cubin"):
        return name, arch, True, ""
    ok, cubin, log = cuda_rt.compile_cubin(source, name, arch, options)
    if ok:
        assert cubin[:4] == b"\x7fELF", "NVRTC returned something that is not a cubin"
        cache.disk_put(key, ".cubin", cubin)
    return name, arch, ok, log


def _compile_all(kernels) -> list:
    """Compile each distinct source of ``kernels`` (KernelSource) for every arch; assert none fails."""
    sources = {ks.source: ks.name for ks in kernels}
    jobs = [(src, name, arch) for src, name in sources.items() for arch in ARCHS]
    # NVRTC releases the GIL while compiling, so threads use every core
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        results = list(pool.map(_compile, jobs))
    failures = [f"{name} ({arch}):\n{log}" for name, arch, ok, log in results if not ok]
    assert not failures, "\n\n".join(failures[:3])
    return results


def test_every_planned_kernel_compiles_to_cubin_for_sm80_sm90_and_sm100():
    results = _compile_all({render(spec, CUDA) for spec in _specs()})
    assert len(results) >= len(ARCHS) * 40  # the cover really holds the kernel variety


def test_every_other_kernel_family_compiles_to_cubin_for_sm80_sm90_and_sm100():
    """stft framing, istft gather, filter banks, dB, DCT, fftconvolve: their structural covers in every
    storage."""
    covers = family_cover(("f16", "f32", "f64"))
    results = _compile_all({family_render(spec, CUDA) for family_render, spec in covers})
    assert results, "no kernel family beyond the FFT was found"


def test_constant_q_kernels_compile_to_cubin_for_sm80_sm90_and_sm100():
    """cqt / vqt's decimating FIR and sparse basis product (specux._codegen.cq_kernels) in every storage."""
    from specux._codegen import cq_kernels

    covers = cq_kernels.cover(("f16", "f32", "f64"))
    results = _compile_all({cq_kernels.render(spec, CUDA) for spec in covers})
    assert len(results) >= len(ARCHS) * 6


def test_compile_error_carries_the_log():
    ok, cubin, log = cuda_rt.compile_cubin(
        'extern "C" __global__ void k() { undefined_name(); }', "k", "sm_90"
    )
    assert not ok and cubin == b""
    assert "undefined_name" in log


def test_half_storage_uses_no_header():
    """Half conversion is inline PTX, so NVRTC needs no include path (toolkit, torch wheel or pip NVRTC)."""
    spec = fft_plan.plan(64, "f32", "f16", "f16").specs()[0]
    source = render(spec, CUDA).source
    assert "#include" not in source
    assert "cvt.f32.f16" in source and "cvt.rn.f16.f32" in source
