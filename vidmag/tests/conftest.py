"""Shared fixtures of vidmag's tests: the required-backend rule and small synthetic clips.

A test of a backend that cannot run here is skipped with the backend's reason, unless the backend is listed in
``VIDMAG_REQUIRE_BACKENDS`` (comma-separated; CI sets it), in which case it fails with that reason.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

REQUIRE_ENV = "VIDMAG_REQUIRE_BACKENDS"


def required_backends() -> set[str]:
    """Backend names listed in ``VIDMAG_REQUIRE_BACKENDS``."""
    return {name.strip() for name in os.environ.get(REQUIRE_ENV, "").split(",") if name.strip()}


def require_backend_or_skip(name: str):
    """The backend ``name`` as ``(name, backend)``; skip (or fail, if required) when it cannot run here."""
    from vidmag.backend import registry, select

    reason = registry.unavailable_reason(name)
    if reason is not None:
        message = f"backend {name!r} cannot run here: {reason}"
        if name in required_backends():
            pytest.fail(f"{message} (required by {REQUIRE_ENV})")
        pytest.skip(message)
    return select(name)


@pytest.fixture
def require_backend():
    """``require_backend(name) -> (name, backend)``, skipping or failing per ``VIDMAG_REQUIRE_BACKENDS``."""
    return require_backend_or_skip


def synthetic_clip(T: int = 24, H: int = 48, W: int = 64, seed: int = 0, fs: float = 30.0) -> np.ndarray:
    """A textured uint8 (T, H, W, 3) clip with a 2 Hz colour pulse and a small 2 Hz sub-pixel drift."""
    rng = np.random.default_rng(seed)
    t = np.arange(T) / fs
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float64)
    shift = 0.4 * np.sin(2 * np.pi * 2.0 * t)
    texture = np.sin(0.35 * (xx[None] + shift[:, None, None])) * np.cos(0.23 * yy[None])
    pulse = 2.5 * np.sin(2 * np.pi * 2.0 * t)[:, None, None]
    clip = np.empty((T, H, W, 3))
    for c, (base, depth) in enumerate(((150, 40), (110, 30), (90, 20))):
        clip[..., c] = base + depth * texture + pulse * (1.0 if c == 0 else 0.5)
    clip += rng.normal(0.0, 0.7, clip.shape)
    return np.clip(np.round(clip), 0, 255).astype(np.uint8)


@pytest.fixture
def make_clip():
    """:func:`synthetic_clip`, for tests that need other sizes (test modules cannot import conftest)."""
    return synthetic_clip


@pytest.fixture
def backend_param_runs(request):
    """Skip a case whose ``backend`` parameter cannot run here, or fail it where ``VIDMAG_REQUIRE_BACKENDS``
    names that backend (a ``skipif`` mark on the parameter would skip a required backend without a word).
    Modules whose cases are parametrised by ``backend`` use it through
    ``pytestmark = pytest.mark.usefixtures("backend_param_runs")``."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and "backend" in callspec.params:
        require_backend_or_skip(callspec.params["backend"])


@pytest.fixture
def make_clip_file(tmp_path):
    """``make_clip_file(T, H, W) -> path``: :func:`synthetic_clip` of that size encoded losslessly
    (``quality=0``) into ``clip.mp4`` in the test's temporary directory."""

    def make(T: int, H: int, W: int) -> str:
        from vidmag import io

        path = str(tmp_path / "clip.mp4")
        with io.VideoWriter(path, width=W, height=H, fps=30, quality=0) as writer:
            for frame in synthetic_clip(T=T, H=H, W=W):
                writer.write(frame)
        return path

    return make


@pytest.fixture(scope="session")
def clip() -> np.ndarray:
    """24 frames of 48 x 64 (the synthetic clip)."""
    return synthetic_clip()


#: Parameters of each pipeline that suit the synthetic clip at 30 Hz.
SYNTHETIC_PARAMS = {
    "gaussian_ideal": dict(alpha=20.0, level=2, fl=1.5, fh=2.5, chrom_attenuation=0.5),
    "laplacian_ideal": dict(alpha=10.0, lambda_c=8.0, fl=1.5, fh=2.5, chrom_attenuation=0.5),
    "laplacian_butterworth": dict(alpha=10.0, lambda_c=8.0, fl=1.0, fh=3.0, chrom_attenuation=0.5),
    "laplacian_iir": dict(alpha=10.0, lambda_c=8.0, r1=0.4, r2=0.05, chrom_attenuation=0.5),
    "riesz_ideal": dict(alpha=10.0, fl=1.5, fh=2.5, sigma=2.0),
    "riesz_butterworth": dict(alpha=10.0, fl=1.0, fh=3.0, sigma=2.0),
    "riesz_iir": dict(alpha=10.0, r1=0.4, r2=0.05, sigma=2.0),
    "steerable_ideal": dict(alpha=10.0, fl=1.5, fh=2.5, sigma=2.0, orientations=4, bands_per_octave=1,
                            attenuate_other_freq=False),
}


@pytest.fixture
def synthetic_params():
    """Pipeline name -> parameters for the synthetic clip (a fresh copy)."""
    return {name: dict(p) for name, p in SYNTHETIC_PARAMS.items()}


# --- property tests (test_properties_*.py) ------------------------------------------------------------------
# Hypothesis profiles (ci, thorough) are registered once, in the repository's conftest.py.


@pytest.fixture(scope="session")
def backend_check():
    """``require_backend`` for property tests: hypothesis refuses function-scoped fixtures in ``@given``
    tests, and this one keeps no state between examples."""
    return require_backend_or_skip


def _filtered_motion(kind: str, d: np.ndarray, fs: float, **band) -> np.ndarray:
    """A pipeline's temporal filter applied to a motion series `d` (the part of it that gets magnified),
    written out from the reference's filter steps: ``kind`` "ideal" (fl, fh), "butterworth" (fl, fh) or
    "iir" (r1, r2); the causal filters start at d[0] with output 0."""
    from vidmag._reference.temporal import butterworth_lowpass, butterworth_step, ideal_bandpass, iir_step

    if kind == "ideal":
        return ideal_bandpass(d, band["fl"], band["fh"], fs, mit=False)
    out = np.zeros_like(d)
    if kind == "butterworth":
        hi = butterworth_lowpass(band["fh"], fs, mit=False)
        lo = butterworth_lowpass(band["fl"], fs, mit=False)
        a = b = prev = d[0]
        for i in range(1, len(d)):
            a, b, prev = butterworth_step(a, d[i], prev, hi), butterworth_step(b, d[i], prev, lo), d[i]
            out[i] = a - b
        return out
    a = b = d[0]
    for i in range(1, len(d)):
        a, b = iir_step(a, d[i], band["r1"]), iir_step(b, d[i], band["r2"])
        out[i] = a - b
    return out


@pytest.fixture(scope="session")
def filtered_motion():
    """``filtered_motion(kind, d, fs, **band)``: the temporal filter of a pipeline applied to a motion
    series (the phase pipelines' translation and noise tests predict their output with it)."""
    return _filtered_motion
