"""Every kernel the cuda backend launches compiles with NVRTC to a cubin for sm_80, sm_90 and sm_100 (no GPU
needed), and the OpenCL C of the same templates builds and runs on PoCL, which is what vouches for the
arithmetic the CUDA text shares with it.

NVRTC missing is a skip here, and a failure where ``nvrtc`` is listed in ``KERNELKIT_REQUIRE_DEVICES`` or
``VIDMAG_REQUIRE_BACKENDS`` (CI lists it in the first).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

from vidmag.backend import registry
from vidmag.backend.kernels.templates import KERNELS, cover, program

# the shared helpers (vidmag/tests/_backend_support.py), by path: pytest imports with --import-mode=importlib
_SUPPORT = Path(__file__).with_name("_backend_support.py")
_spec = importlib.util.spec_from_file_location("_backend_support", _SUPPORT)
support = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(support)

ARCHES = ("sm_80", "sm_90", "sm_100")


def _required() -> bool:
    listed = set()
    for variable in ("KERNELKIT_REQUIRE_DEVICES", "VIDMAG_REQUIRE_BACKENDS"):
        listed |= {n.strip() for n in os.environ.get(variable, "").split(",")}
    return "nvrtc" in listed


@pytest.fixture(scope="module")
def nvrtc():
    from kernelkit import cuda

    missing = cuda.nvrtc_probe("sm_90")
    if missing is not None:
        message = f"NVRTC cannot run here: {missing}"
        if _required():
            pytest.fail(f"{message} (nvrtc is required)")
        pytest.skip(message)
    return cuda


@pytest.mark.parametrize("arch", ARCHES)
def test_every_kernel_compiles_with_nvrtc(nvrtc, arch):
    failures = support.nvrtc_failures(nvrtc, program, KERNELS, arch)
    assert not failures, "\n".join(failures)


def test_the_cuda_text_is_cuda_and_the_templates_ask_no_target():
    for name in KERNELS:
        cuda, opencl = program(name, "cuda").source, program(name, "opencl").source
        assert f'extern "C" __global__ void {name}(' in cuda and "blockIdx.y" in cuda
        assert f"__kernel void {name}(" in opencl and "get_global_id(1)" in opencl
        # one layout everywhere: bytes in 32-bit words, no 8-bit or vector-3 types on any target
        for text in (cuda, opencl, program(name, "glsl").source, program(name, "metal").source):
            assert "uchar" not in text and "uvec3" not in text and "uint3 v" not in text


def test_program_refuses_unknown_names():
    with pytest.raises(ValueError, match="name must be one of"):
        program("nope", "cuda")
    with pytest.raises(ValueError, match="dialect must be one of"):
        program("axpby", "hlsl")


def test_the_opencl_build_of_the_templates_runs_on_pocl(require_backend):
    """Every template builds as OpenCL C; the byte kernels (the ones whose word packing differs most from a
    plain float loop) give the reference's bytes."""
    require_backend("opencl")
    from kernelkit import opencl
    from vidmag._reference.colour import YIQ_TO_RGB_MIT, yiq_to_rgb_uint8

    rt = opencl.default_runtime()
    for name in KERNELS:
        rt.kernel(program(name, "opencl"), name)
    rng = np.random.default_rng(0)
    pixels = 13  # not a multiple of 4: the last item writes a partial group of words
    yiq = rng.uniform(-0.3, 1.2, (pixels, 3)).astype(np.float32)
    words = -(-3 * pixels // 4)
    src, dst = rt.upload(yiq), rt.alloc(4 * words)
    kernel = rt.kernel(program("to_bytes", "opencl"), "to_bytes")
    total = -(-pixels // 4)
    kernel.launch(cover(total), src, dst, *(float(v) for v in YIQ_TO_RGB_MIT.ravel()), pixels, total)
    got = rt.download(dst, np.empty(words, np.uint32)).view(np.uint8)[: 3 * pixels].reshape(pixels, 3)
    expected = yiq_to_rgb_uint8(yiq.astype(np.float64), mit=True)
    assert np.abs(got.astype(int) - expected.astype(int)).max() <= 1


def test_the_reason_here_is_the_true_one():
    """On a machine without the NVIDIA driver the reason says so (never "not part of this build")."""
    reason = registry.unavailable_reason("cuda")
    assert reason is None or "not part of this build" not in reason
    from kernelkit import cuda as cuda_rt

    if cuda_rt.init_reason() is not None and "libcuda" in cuda_rt.init_reason():
        assert "driver" in reason and "libcuda" in reason


def test_vidmag_backends_prints_the_true_reasons():
    import subprocess
    import sys

    from kernelkit import cuda as cuda_rt

    done = subprocess.run([sys.executable, "-m", "vidmag.cli", "backends"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "not part of this build" not in done.stdout
    if cuda_rt.init_reason() is not None and "libcuda" in cuda_rt.init_reason():
        assert "cuda: libcuda not found: no NVIDIA driver" in done.stdout
    if sys.platform != "darwin":
        assert "metal: Metal needs macOS" in done.stdout
