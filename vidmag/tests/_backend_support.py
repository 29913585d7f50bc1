"""Helpers shared by the backend test modules (the Riesz pipelines on opencl, on the shared kernel tier and
on crops of the sample clips, the cuda / metal emulations, the NVRTC and MSL checks of the kernel text). Not
a test module: a test module loads it by path (pytest runs with ``--import-mode=importlib``, so this folder
is not on ``sys.path``)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np

#: The Riesz pipelines' parameters of the opencl and kernel-tier tests (they magnify: not a round trip).
RIESZ_PARAMS = {
    "riesz_butterworth": dict(alpha=20.0, fl=1.0, fh=4.0, sigma=2.0),
    "riesz_iir": dict(alpha=15.0, r1=0.4, r2=0.05, sigma=1.5),
    "riesz_ideal": dict(alpha=20.0, fl=1.5, fh=6.0, sigma=2.0),
}

#: The sample clips (never committed): ``../shared/data/clips`` beside the repository.
CLIPS_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "clips"

#: The start of a minimal stand-in for <metal_stdlib>; a test appends what its kernels call, then ``}``.
MSL_STUB_HEAD = """\
#pragma once
// Minimal stand-in for <metal_stdlib>: just enough of MSL's surface for a C++ syntax check.
#define kernel
#define device
#define threadgroup
#define constant
typedef unsigned int uint;
namespace metal {
struct uint3 { uint x, y, z; };
struct uint4 { uint x, y, z, w; };
struct float4 {
    float x, y, z, w;
    float4(float a, float b, float c, float d) : x(a), y(b), z(c), w(d) {}
};
"""


def render_launches(fake) -> int:
    """Render launches an emulated device (its ``launches`` by kernel name) ran so far: the flat kernel, or
    the 3-D grid one where a row is whole words."""
    return fake.launches.get("render", 0) + fake.launches.get("render_grid", 0)


def within_one(got: np.ndarray, want: np.ndarray) -> None:
    """uint8 frames of the same shape, nowhere more than 1 grey level apart."""
    assert got.shape == want.shape and got.dtype == np.uint8
    assert np.abs(got.astype(np.int16) - want.astype(np.int16)).max() <= 1


def sample_crop(name: str, T: int, H: int, W: int, *, centre: bool = True) -> np.ndarray:
    """The first ``T`` frames of the sample clip ``name`` (in :data:`CLIPS_DIR`), an ``H`` x ``W`` crop of
    their centre (``centre=False``: of their top-left corner); the test is skipped when the clip is absent."""
    import pytest

    from vidmag import io

    path = CLIPS_DIR / name
    if not path.exists():
        pytest.skip(f"sample clip {path} is absent")
    frames = []
    for frame in io.read_frames(str(path)):
        frames.append(frame)
        if len(frames) == T:
            break
    clip = np.stack(frames)
    top, left = ((clip.shape[1] - H) // 2, (clip.shape[2] - W) // 2) if centre else (0, 0)
    return np.ascontiguousarray(clip[:, top : top + H, left : left + W])


def check_live_magnifier(backend: str, clip: np.ndarray) -> None:
    """The live Magnifier on ``backend`` (riesz_iir): within 1 of the reference, and after set_params the
    frames of the whole-clip run with the new alpha."""
    import vidmag
    from vidmag.live import Magnifier

    params = RIESZ_PARAMS["riesz_iir"]
    with Magnifier("riesz_iir", fs=30.0, backend=backend, **params) as magnifier:
        assert magnifier.backend == backend
        got = np.stack([magnifier.push(frame) for frame in clip[:4]])
        magnifier.set_params(alpha=5.0)
        later = np.stack([magnifier.push(frame) for frame in clip[4:]])
    within_one(got, vidmag.magnify(clip[:4], fs=30, pipeline="riesz_iir", backend="cpu", **params))
    changed = vidmag.magnify(clip, fs=30, pipeline="riesz_iir", backend=backend, **{**params, "alpha": 5.0})
    assert np.array_equal(later, changed[4:])


def check_narrow_and_odd_frames(backend: str, shape: tuple[int, int]) -> None:
    """riesz_butterworth on frames of ``shape`` on ``backend`` within 1 of the reference."""
    import vidmag

    clip = np.random.default_rng(6).integers(30, 220, (5, *shape, 3), dtype=np.uint8)
    params = dict(alpha=10.0, fl=1.0, fh=5.0, sigma=3.0)
    want = vidmag.magnify(clip, fs=30, pipeline="riesz_butterworth", backend="cpu", **params)
    within_one(vidmag.magnify(clip, fs=30, pipeline="riesz_butterworth", backend=backend, **params), want)


def check_retune(stream: Any, clip: np.ndarray, backend: str, split: int) -> None:
    """A riesz_butterworth ``stream`` on ``backend`` (opened with :data:`RIESZ_PARAMS`), retuned after frame 3
    to a new alpha and sigma and after frame ``split - 1`` to a new band: the frames between are those of the
    whole-clip run with the new alpha and sigma, the frames after it within 1 of the reference stream
    retuned the same way."""
    import vidmag
    from vidmag._reference.riesz import RieszStream
    from vidmag.params import make_plan

    params = RIESZ_PARAMS["riesz_butterworth"]
    changed = {**params, "alpha": 8.0, "sigma": 1.0}
    want = vidmag.magnify(clip, fs=30, pipeline="riesz_butterworth", backend=backend, **changed)
    shape = clip.shape[1:]
    first = stream.push(clip[:4])
    assert stream.retune(make_plan("riesz_butterworth", fs=30, compat=None, params=changed,
                                   frame_shape=shape))
    # alpha and sigma act after the filters: the frames after the change are those of the new run
    assert np.array_equal(stream.push(clip[4:split]), want[4:split])
    assert not np.array_equal(first[1:], want[1:4])
    # a new band re-designs the filters, which go on from the state the old ones left: as the reference
    band = {**changed, "fh": 6.0}
    assert stream.retune(make_plan("riesz_butterworth", fs=30, compat=None, params=band, frame_shape=shape))
    got = stream.push(clip[split:])
    reference = RieszStream("butterworth", fs=30.0, **params)
    for frame in clip[:4]:
        reference.push(frame)
    reference.retune(**{k: changed[k] for k in ("alpha", "sigma", "fl", "fh")})
    for frame in clip[4:split]:
        reference.push(frame)
    reference.retune(**{k: band[k] for k in ("alpha", "sigma", "fl", "fh")})
    within_one(got, np.stack([reference.push(frame) for frame in clip[split:]]))


def nvrtc_failures(nvrtc: Any, program: Any, names: Any, arch: str) -> list[str]:
    """What of kernels ``names`` (``program(name, "cuda")``) does not compile cleanly to a cubin for ``arch``
    with NVRTC (``nvrtc``: kernelkit.cuda): a failure or a warning, with its log."""
    failures = []
    for name in names:
        prog = program(name, "cuda")
        ok, cubin, log = nvrtc.compile_cubin(prog.source, prog.name, arch, nvrtc.CudaRuntime.options)
        if not ok or not cubin.startswith(b"\x7fELF"):
            failures.append(f"{name}: {log[:500]}")
        elif "warning" in log.lower():
            failures.append(f"{name} compiles with warnings: {log[:500]}")
    return failures


def msl_syntax_check(cxx: str, source: str, path: Path, include: Path) -> subprocess.CompletedProcess:
    """``source`` written to ``path`` and run through ``cxx``'s C++14 syntax check with the stub of
    ``metal_stdlib`` in ``include``."""
    path.write_text(source)
    return subprocess.run(
        [cxx, "-std=c++14", "-fsyntax-only", "-Wall", "-Wno-attributes", "-Wno-unused-variable",
         "-Wno-unused-parameter", "-Werror", "-x", "c++", "-I", str(include), str(path)],
        capture_output=True, text=True, timeout=120,
    )
