"""Conformance: every backend that runs here x every pipeline x both semantics against the NumPy reference.

The reference is the ``cpu`` backend. Every output byte of another backend must be within 1 of the reference's
(one step of the final 8-bit rounding: the accelerated backends compute in float32), with the same number of
frames. A backend that replaces pipelines with its own (fused) versions is checked twice: as registered, and
as ``generic.bind(its operations)``, so that its primitives carry all four pipelines too.

Clips: the synthetic clip of conftest.py, one with sides of 5 * 2^k (the expand's dropped tap) and odd sizes,
and crops of the sample clips (64 x 96, 40 frames), skipped with the reason when the files are absent.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import vidmag
import vidmag.backend
from vidmag.backend.generic import bind

# the shared helpers (vidmag/tests/_backend_support.py), by path: pytest imports with --import-mode=importlib
_SUPPORT = Path(__file__).with_name("_backend_support.py")
_spec = importlib.util.spec_from_file_location("_backend_support", _SUPPORT)
support = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(support)

#: The backends checked against the reference (``cpu`` is the reference itself).
BACKENDS = ("torch", "opencl", "vulkan")
PIPELINES = ("gaussian_ideal", "laplacian_ideal", "laplacian_butterworth", "laplacian_iir")

#: Parameters per clip kind and pipeline (fs 30). The sample-clip parameters follow the paper's presets with
#: bands wide enough to hold several bins of a 40-frame clip.
PARAMS = {
    "synthetic": {
        "gaussian_ideal": dict(alpha=20.0, level=2, fl=1.5, fh=2.5, chrom_attenuation=0.5),
        "laplacian_ideal": dict(alpha=10.0, lambda_c=8.0, fl=1.5, fh=2.5, chrom_attenuation=0.5),
        "laplacian_butterworth": dict(alpha=10.0, lambda_c=8.0, fl=1.0, fh=3.0, chrom_attenuation=0.5),
        "laplacian_iir": dict(alpha=10.0, lambda_c=8.0, r1=0.4, r2=0.05, chrom_attenuation=0.5),
    },
    "sample": {
        "gaussian_ideal": dict(alpha=50.0, level=4, fl=0.5, fh=3.0, chrom_attenuation=1.0),
        "laplacian_ideal": dict(alpha=20.0, lambda_c=16.0, fl=0.5, fh=3.0, chrom_attenuation=0.1),
        "laplacian_butterworth": dict(alpha=20.0, lambda_c=16.0, fl=0.4, fh=3.0, chrom_attenuation=0.1),
        "laplacian_iir": dict(alpha=10.0, lambda_c=16.0, r1=0.4, r2=0.05, chrom_attenuation=0.1),
    },
}


def _synthetic(T: int, H: int, W: int, seed: int) -> np.ndarray:
    # a textured clip with a 2 Hz colour pulse and a 2 Hz sub-pixel drift, as conftest.synthetic_clip
    rng = np.random.default_rng(seed)
    t = np.arange(T) / 30.0
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float64)
    shift = 0.4 * np.sin(2 * np.pi * 2.0 * t)
    texture = np.sin(0.35 * (xx[None] + shift[:, None, None])) * np.cos(0.23 * yy[None])
    pulse = 2.5 * np.sin(2 * np.pi * 2.0 * t)[:, None, None]
    clip = np.empty((T, H, W, 3))
    for c, (base, depth) in enumerate(((150, 40), (110, 30), (90, 20))):
        clip[..., c] = base + depth * texture + pulse * (1.0 if c == 0 else 0.5)
    clip += rng.normal(0.0, 0.7, clip.shape)
    return np.clip(np.round(clip), 0, 255).astype(np.uint8)


#: Clip name -> (kind of parameters, factory). Built lazily, once per session.
CLIPS = {
    "synthetic": ("synthetic", lambda: _synthetic(24, 48, 64, seed=0)),
    "sides_5x2k_odd": ("synthetic", lambda: _synthetic(22, 40, 37, seed=1)),
    "face_crop": ("sample", lambda: support.sample_crop("face.mp4", T=40, H=64, W=96)),
    "baby_crop": ("sample", lambda: support.sample_crop("baby.mp4", T=40, H=64, W=96)),
}

_clip_cache: dict[str, np.ndarray] = {}
_reference_cache: dict[tuple, np.ndarray] = {}


def _clip(name: str) -> np.ndarray:
    if name not in _clip_cache:
        _clip_cache[name] = CLIPS[name][1]()
    return _clip_cache[name]


def _reference(clip_name: str, pipeline: str, compat: str | None) -> np.ndarray:
    key = (clip_name, pipeline, compat)
    if key not in _reference_cache:
        params = PARAMS[CLIPS[clip_name][0]][pipeline]
        _reference_cache[key] = vidmag.magnify(
            _clip(clip_name), fs=30.0, pipeline=pipeline, backend="cpu", compat=compat, **params
        )
    return _reference_cache[key]


def _run(
    backend, clip: np.ndarray, pipeline: str, compat: str | None, params: dict, monkeypatch
) -> np.ndarray:
    """Run a backend object through vidmag.magnify (which then uses it instead of the registry's choice)."""
    monkeypatch.setattr(vidmag.backend, "select", lambda name: (backend.name, backend))
    return vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend=backend.name, compat=compat, **params)


@pytest.mark.parametrize("clip_name", list(CLIPS))
@pytest.mark.parametrize("compat", [None, "mit"])
@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("variant", ["registered", "generic"])
@pytest.mark.parametrize("backend_name", BACKENDS)
def test_backend_matches_reference(
    backend_name, variant, pipeline, compat, clip_name, require_backend, monkeypatch
):
    name, backend = require_backend(backend_name)
    if variant == "generic":
        if not backend.overrides:
            pytest.skip(f"backend {name!r} runs only the generic pipelines (checked as registered)")
        backend = bind(backend.operations, name=f"{name}-generic")
    clip = _clip(clip_name)
    params = PARAMS[CLIPS[clip_name][0]][pipeline]
    expected = _reference(clip_name, pipeline, compat)
    got = _run(backend, clip, pipeline, compat, params, monkeypatch)
    assert got.dtype == np.uint8
    assert got.shape == expected.shape
    diff = np.abs(got.astype(np.int16) - expected.astype(np.int16))
    assert diff.max() <= 1, (
        f"{int(diff.max())} grey levels off at {np.unravel_index(diff.argmax(), diff.shape)}"
    )
    # Most bytes agree exactly: float32 differs only where the float64 result is near a rounding step.
    assert (diff > 0).mean() < 0.01


@pytest.mark.parametrize("clip_name", ["synthetic", "face_crop"])
def test_reference_outputs_are_amplified(clip_name):
    """The conformance clips exercise the amplification: the reference output is far from a round trip."""
    clip = _clip(clip_name)
    for pipeline in PIPELINES:
        out = _reference(clip_name, pipeline, None)
        change = np.abs(out[1:].astype(np.int16) - clip[1 : len(out)].astype(np.int16))
        assert change.max() >= 4, pipeline


@pytest.mark.parametrize("compat", [None, "mit"])
@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("backend_name", BACKENDS)
def test_many_small_chunks_match_reference(backend_name, pipeline, compat, require_backend, monkeypatch):
    """Chunks of 5 frames (the last one shorter): filter states and reused buffers carry across chunks."""
    name, backend = require_backend(backend_name)
    clip = _clip("synthetic")
    frame_bytes = clip[0].nbytes
    if name == "opencl":
        from vidmag.backend.opencl import pipelines as fused

        monkeypatch.setattr(fused, "CHUNK_BYTES", 5 * frame_bytes)  # a GPU's batch
        monkeypatch.setattr(fused, "CHUNK_BYTES_CPU", 5 * frame_bytes)  # a CPU device's (PoCL)
        monkeypatch.setattr(fused, "CHUNK_BYTES_CPU_GAUSSIAN", 5 * frame_bytes)  # its gaussian_ideal's
    if name == "vulkan":
        from vidmag.backend.vulkan import fused

        monkeypatch.setattr(fused, "CHUNK_BYTES", 5 * frame_bytes)
    monkeypatch.setattr(backend.operations, "batch_values", 5 * frame_bytes)
    params = PARAMS["synthetic"][pipeline]
    got = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend=name, compat=compat, **params)
    expected = _reference("synthetic", pipeline, compat)
    assert got.shape == expected.shape
    assert np.abs(got.astype(np.int16) - expected.astype(np.int16)).max() <= 1
