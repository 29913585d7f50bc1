"""The Riesz pipelines on the shared kernel tier (vidmag.backend.kernels.riesz over riesz_templates.py): on
vulkan (lavapipe here) within 1 grey level of the NumPy reference, whole clip and streamed one frame at a
time, the stream equal to the whole-clip run, retune mid-stream; every Riesz template compiled by NVRTC for
sm_80, sm_90 and sm_100 and its MSL through the C++ syntax check; and the cuda backend's Riesz path end to end
against the emulated CUDA driver of test_cuda_backend_emulated.py (each launch's OpenCL build of the same
template on PoCL). Nothing here runs on a GPU: the cuda path's arithmetic on NVIDIA's compiler and the metal
backend are unchecked by this module.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

import vidmag
from vidmag.backend.kernels import riesz_templates, templates
from vidmag.params import PHASE_BACKENDS

# the shared helpers (vidmag/tests/_backend_support.py), by path: pytest imports with --import-mode=importlib
_SUPPORT = Path(__file__).with_name("_backend_support.py")
_spec = importlib.util.spec_from_file_location("_backend_support", _SUPPORT)
support = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(support)

# small random-looking clips at alpha 10 to 20 clip a little; the warning is another test module's subject
pytestmark = pytest.mark.filterwarnings("ignore::vidmag.pipelines.SaturationWarning")

PARAMS = support.RIESZ_PARAMS
ARCHES = ("sm_80", "sm_90", "sm_100")


_within_one = support.within_one


def _streamed(clip: np.ndarray, pipeline: str, backend: str, **params) -> np.ndarray:
    with vidmag.open_stream(clip.shape[1:], fs=30, pipeline=pipeline, backend=backend, **params) as stream:
        return np.stack([stream.push(frame) for frame in clip])


# --- vulkan (lavapipe) --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("pipeline", "changes"), [("riesz_butterworth", {}), ("riesz_iir", {}),
                                                   ("riesz_iir", dict(sigma=0.0))])
def test_vulkan_matches_the_reference_whole_clip_and_streamed(require_backend, make_clip, pipeline, changes):
    require_backend("vulkan")
    clip = make_clip(T=8, H=24, W=36, seed=3)
    params = {**PARAMS[pipeline], **changes}
    want = vidmag.magnify(clip, fs=30, pipeline=pipeline, backend="cpu", **params)
    assert np.abs(want.astype(int) - clip).max() > 4  # the parameters magnify: not a round trip
    got = vidmag.magnify(clip, fs=30, pipeline=pipeline, backend="vulkan", **params)
    _within_one(got, want)
    streamed = _streamed(clip, pipeline, "vulkan", **params)
    # the same kernels in the same order, one frame at a time either way: the same bytes
    assert np.array_equal(streamed, got)
    assert np.array_equal(streamed[0], clip[0])


def test_vulkan_riesz_ideal_and_the_mit_matrix(require_backend, make_clip):
    require_backend("vulkan")
    clip = make_clip(T=8, H=24, W=36, seed=5)
    params = PARAMS["riesz_ideal"]
    for compat in (None, "mit"):
        want = vidmag.magnify(clip, fs=30, pipeline="riesz_ideal", backend="cpu", compat=compat, **params)
        _within_one(vidmag.magnify(clip, fs=30, pipeline="riesz_ideal", backend="vulkan", compat=compat,
                                   **params), want)


@pytest.mark.parametrize("shape", [(10, 80), (80, 10), (31, 17)])
def test_vulkan_narrow_and_odd_frames(require_backend, shape):
    # the smallest frames the pipelines take, one side long (mirror borders on levels of 5 samples), and
    # frames whose bytes are not whole 32-bit words
    require_backend("vulkan")
    support.check_narrow_and_odd_frames("vulkan", shape)


def test_vulkan_retune_mid_stream(require_backend, make_clip):
    require_backend("vulkan")
    clip = make_clip(T=9, H=24, W=36, seed=2)
    params = PARAMS["riesz_butterworth"]
    with vidmag.open_stream(clip.shape[1:], fs=30, pipeline="riesz_butterworth", backend="vulkan",
                            **params) as stream:
        support.check_retune(stream, clip, "vulkan", 6)


def test_the_live_magnifier_runs_on_vulkan(require_backend, make_clip):
    require_backend("vulkan")
    support.check_live_magnifier("vulkan", make_clip(T=7, H=24, W=36, seed=4))


def test_every_kernel_tier_backend_is_listed_for_the_riesz_pipelines():
    for pipeline in ("riesz_ideal", "riesz_butterworth", "riesz_iir"):
        runs = PHASE_BACKENDS[pipeline]
        assert {"vulkan", "cuda", "metal"} <= set(runs) and runs[-1] == "cpu"
        assert runs.index("opencl") < runs.index("vulkan")  # PoCL runs them faster than lavapipe here


# --- the text on every target -------------------------------------------------------------------------------
def test_the_templates_are_one_kernel_each_and_ask_no_target():
    for name in riesz_templates.KERNELS:
        assert name not in templates.KERNELS  # one namespace of kernel names on a device
        glsl = riesz_templates.program(name, "glsl").source
        cuda = riesz_templates.program(name, "cuda").source
        assert glsl.count("void main()") == 1 and "#version 450" in glsl
        assert f'extern "C" __global__ void {name}(' in cuda
        assert f"__kernel void {name}(" in riesz_templates.program(name, "opencl").source
    with pytest.raises(ValueError, match="name must be one of"):
        riesz_templates.program("riesz_nothing")


@pytest.fixture(scope="module")
def nvrtc():
    from kernelkit import cuda

    missing = cuda.nvrtc_probe("sm_90")
    if missing is not None:
        pytest.skip(f"NVRTC cannot run here: {missing}")
    return cuda


@pytest.mark.parametrize("arch", ARCHES)
def test_every_riesz_kernel_compiles_with_nvrtc(nvrtc, arch):
    failures = support.nvrtc_failures(nvrtc, riesz_templates.program, riesz_templates.KERNELS, arch)
    assert not failures, "\n".join(failures)


CXX = shutil.which("g++") or shutil.which("clang++")

# the stub of test_metal_backend_msl.py plus the float functions the Riesz kernels call
STUB = support.MSL_STUB_HEAD + """\
float sqrt(float);
float sin(float);
float cos(float);
float atan2(float, float);
}
"""


@pytest.mark.skipif(CXX is None, reason="no C++ compiler (g++ or clang++) for the MSL syntax check")
@pytest.mark.parametrize("name", list(riesz_templates.KERNELS))
def test_every_riesz_kernel_passes_the_msl_syntax_check(name, tmp_path):
    (tmp_path / "metal_stdlib").write_text(STUB)
    (signature,) = riesz_templates.program(name, "metal").kernels
    assert len(signature.params) <= 31  # Metal's argument table
    source = riesz_templates.program(name, "metal").source
    assert "double" not in source and "#include <metal_stdlib>" in source
    proc = support.msl_syntax_check(CXX, source, tmp_path / f"{name}.metal", tmp_path)
    assert proc.returncode == 0, proc.stderr[:2000]


# --- cuda against the emulated driver -----------------------------------------------------------------------
def _emulation():
    """test_cuda_backend_emulated.py as a module (pytest imports test modules by path, not by name)."""
    path = Path(__file__).with_name("test_cuda_backend_emulated.py")
    spec = importlib.util.spec_from_file_location("_riesz_cuda_emulation", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_emulated = _emulation()
emulated = _emulated.emulated  # its fixture: the cuda backend over the emulated driver


@pytest.fixture
def riesz_emulated(emulated, monkeypatch):
    """The emulated driver, running the OpenCL build of the Riesz templates as well as the shared ones."""

    def either(name, dialect="glsl"):
        source = riesz_templates if name in riesz_templates.KERNELS else templates
        return source.program(name, dialect)

    monkeypatch.setattr(_emulated, "program", either)
    return emulated


@pytest.mark.skipif(_emulated.missing is not None, reason=f"NVRTC unavailable: {_emulated.missing}")
@pytest.mark.parametrize("pipeline", ["riesz_butterworth", "riesz_iir", "riesz_ideal"])
def test_cuda_riesz_against_the_emulated_driver(riesz_emulated, make_clip, pipeline):
    _, driver = riesz_emulated
    clip = make_clip(T=6, H=24, W=32, seed=1)
    params = PARAMS[pipeline]
    want = vidmag.magnify(clip, fs=30, pipeline=pipeline, backend="cpu", **params)
    got = vidmag.magnify(clip, fs=30, pipeline=pipeline, backend="cuda", **params)
    _within_one(got, want)
    # a render per frame (the streaming ones give frame 0 back as it came)
    assert driver.launches["riesz_phase"] and driver.launches["riesz_render"] >= len(clip) - 1
    if pipeline == "riesz_ideal":
        return
    assert np.array_equal(_streamed(clip, pipeline, "cuda", **params), got)
