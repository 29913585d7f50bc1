"""The two tiers of the backend contract agree: every stage of the pipelines derived from a backend's
primitives (``PrimitiveStages``) equals the same stage over its native fused tier (``FusedStages``) within the
conformance rule, and a fused tier written from its contract alone runs every pipeline like the reference.

The stages are compared one at a time on the same inputs: float stages (the Gaussian down stack, the Laplacian
bands, the band-pass, the scan, the collapse) to float32 rounding, after taking the fused tier's byte-space
values to YIQ; the render's bytes within 1 of each other with fewer than 1% differing at all. The whole
pipelines through each tier are compared with the reference in test_conformance_pipelines.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import vidmag
from vidmag._reference.colour import fit_to_unit_range, to_uint8
from vidmag.backend import generic, spatial_taps
from vidmag.backend.bandpass_basis import bandpass_basis
from vidmag.backend.numpy import NumpyOperations
from vidmag.backend.operations import FUSED
from vidmag.backend.stages import FusedStages, PrimitiveStages, TemporalFilter, kept_levels
from vidmag.params import make_plan

BACKENDS = ("torch", "opencl", "vulkan")
PARAMS = {
    "gaussian_ideal": dict(alpha=20.0, level=2, fl=1.5, fh=2.5, chrom_attenuation=0.5),
    "laplacian_ideal": dict(alpha=10.0, lambda_c=8.0, fl=1.5, fh=2.5, chrom_attenuation=0.5),
    "laplacian_butterworth": dict(alpha=10.0, lambda_c=8.0, fl=1.0, fh=3.0, chrom_attenuation=0.5),
    "laplacian_iir": dict(alpha=10.0, lambda_c=8.0, r1=0.4, r2=0.05, chrom_attenuation=0.5),
}
#: Odd sides (a scalar tail in every vectorised kernel) and a side of 5 * 2^3 (the expand's dropped tap).
SIZE = (40, 37)


def _plan(pipeline: str, compat=None, size=SIZE):
    return make_plan(pipeline, fs=30.0, compat=compat, params=PARAMS[pipeline], frame_shape=(*size, 3))


@pytest.fixture(params=BACKENDS)
def tiers(request, require_backend):
    """(derived stages, native stages, backend) of one accelerated backend."""
    _, backend = require_backend(request.param)
    return PrimitiveStages(backend.operations), FusedStages(backend.fused), backend


def _host(x) -> np.ndarray:
    if hasattr(x, "get"):  # a pyopencl array
        return x.get()
    if hasattr(x, "cpu"):  # a torch tensor
        return x.cpu().numpy()
    return np.asarray(x)


def _device(backend, x: np.ndarray):
    """Host values as a float32 array on the backend's device."""
    ops = backend.operations
    x = np.ascontiguousarray(x, dtype=np.float32)
    if hasattr(ops, "rt"):
        return ops.rt.to_device(x)
    return ops.torch.as_tensor(x, device=ops.device)


def _yiq(stages, x) -> np.ndarray:
    """A stage's signal in YIQ, float64 on the host."""
    return _host(x).astype(np.float64) @ np.asarray(stages.space).T


def _in_space(stages, yiq: np.ndarray) -> np.ndarray:
    """YIQ values in a stage form's own colour space."""
    return yiq @ np.linalg.inv(stages.space).T


def _close(got: np.ndarray, expected: np.ndarray, rel: float = 2e-5) -> None:
    assert got.shape == expected.shape
    scale = max(1e-3, float(np.abs(expected).max()))
    err = float(np.abs(got - expected).max())
    assert err <= rel * scale, f"max error {err:.3g} for values up to {scale:.3g}"


def _bytes_agree(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype == np.uint8 and got.shape == expected.shape
    diff = np.abs(got.astype(np.int16) - expected.astype(np.int16))
    assert diff.max() <= 1 and (diff > 0).mean() < 0.01


def _frames(n: int = 5, size=SIZE, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0 : size[0], 0 : size[1]]
    base = 120 + 60 * np.sin(xx / 3.1 + yy / 5.3)[None, ..., None] + rng.normal(0, 8, (n, *size, 3))
    return np.clip(np.round(base), 0, 255).astype(np.uint8)


def _signal(shape: tuple, seed: int, amplitude: float = 0.05) -> np.ndarray:
    return amplitude * np.random.default_rng(seed).standard_normal(shape)


def test_the_gaussian_down_stack(tiers):
    derived, native, _ = tiers
    frames = _frames()
    for level in (1, 3):
        expected = _host(derived.gaussian_down(derived.upload(list(frames)), level))
        _close(_yiq(native, native.gaussian_down(native.upload(list(frames)), level)), expected)


def test_the_laplacian_bands(tiers):
    derived, native, _ = tiers
    plan = _plan("laplacian_iir")
    kept = kept_levels(plan)
    frames = _frames()
    expected = derived.bands(derived.upload(list(frames)), plan, kept, scratch=False)
    got = native.bands(native.upload(list(frames)), plan, kept, scratch=True)
    assert sorted(got) == sorted(expected) == kept
    for level in kept:
        _close(_yiq(native, got[level]), _host(expected[level]))


@pytest.mark.parametrize("mit", [False, True])
def test_the_band_pass_with_a_gain(tiers, mit):
    derived, native, backend = tiers
    stack = 0.4 + _signal((30, 6, 5, 3), seed=1, amplitude=0.2)
    results = []
    for stages in (derived, native):
        pieces = [_device(backend, _in_space(stages, stack[a:b])) for a, b in ((0, 12), (12, 30))]
        filtered = stages.bandpass(stages.concat(pieces), 1.0, 4.0, 30.0, mit=mit, gain=2.5)
        results.append(_yiq(stages, stages.take(filtered, 7, 19)))
    _close(results[1], results[0])
    assert np.abs(results[0]).max() > 0.01  # something passes the band: the check has teeth


@pytest.mark.parametrize("pipeline", ["laplacian_iir", "laplacian_butterworth"])
@pytest.mark.parametrize("compat", [None, "mit"])
def test_the_scan_carries_its_state_across_batches(tiers, pipeline, compat):
    derived, native, backend = tiers
    filt = TemporalFilter.of(_plan(pipeline, compat))
    band = 0.3 + _signal((12, 7, 9, 3), seed=2, amplitude=0.2)
    results = []
    for stages in (derived, native):
        x = _in_space(stages, band)
        state = stages.scan_state(_device(backend, x[:1]), filt)
        out = [stages.scan(state, _device(backend, x[a:b]), filt, -1.5) for a, b in ((1, 2), (2, 7), (7, 12))]
        results.append([_yiq(stages, o) for o in out])
    for got, expected in zip(results[1], results[0]):
        _close(got, expected)
    assert np.abs(results[0][-1]).max() > 0.01


def test_the_collapse(tiers):
    derived, native, backend = tiers
    plan = _plan("laplacian_iir")
    sizes, kept = plan.level_sizes, kept_levels(plan)
    bands = {level: _signal((2, *sizes[level], 3), seed=level) for level in kept}
    results = []
    for stages in (derived, native):
        filtered = {level: _device(backend, _in_space(stages, b)) for level, b in bands.items()}
        results.append(_yiq(stages, stages.collapse(filtered, plan)))
    assert results[0].shape == (2, *sizes[1], 3)
    _close(results[1], results[0])


@pytest.mark.parametrize("compat", [None, "mit"])
@pytest.mark.parametrize("kind", ["bicubic", "expand", "none"])
def test_the_render(tiers, kind, compat):
    derived, native, backend = tiers
    pipeline = "gaussian_ideal" if kind == "bicubic" else "laplacian_iir"
    plan = _plan(pipeline, compat)
    small = (10, 10) if kind == "bicubic" else plan.level_sizes[1]
    frames = _frames(3, seed=4)
    signal = _signal((3, *small, 3), seed=5, amplitude=0.02 if kind == "bicubic" else 0.2)
    results = []
    for stages in (derived, native):
        s = None if kind == "none" else _device(backend, _in_space(stages, signal))
        out = stages.render(stages.upload(list(frames)), s, plan, kind="expand" if kind == "none" else kind,
                            gain=20.0 if kind == "bicubic" else 1.0, chroma=0.5)
        results.append(out if isinstance(out, np.ndarray) else stages.download(out))
    _bytes_agree(results[1], results[0])
    if kind != "none":  # the signal changes the output: the check has teeth
        assert np.abs(results[0].astype(int) - frames).max() >= 4


# --- a fused tier written from its contract alone -----------------------------------------------------------


class NumpyFused:
    """The fused tier of operations.py in float64 NumPy, written from the docstrings (dense tap matrices,
    the projection's own check, the reference's output handling): what a new device writes."""

    def batch_frames(self, plan):
        return 4  # small batches: states and buffers carry across them

    def upload_frames(self, frames):
        return np.stack(frames) if isinstance(frames, (list, tuple)) else np.asarray(frames)

    def download(self, frames):
        return np.asarray(frames)

    def map_axis(self, frames, taps, axis, *, other=None, sign=1, scratch=None):
        moved = np.moveaxis(frames.astype(np.float64), axis, 0)
        out = np.moveaxis(np.tensordot(spatial_taps.to_dense(taps), moved, axes=1), 0, axis)
        return out if other is None else other + sign * out

    def apply_matrix(self, frames, matrix):
        return frames.astype(np.float64) @ np.asarray(matrix).T

    def concat_frames(self, batches):
        out = np.concatenate(batches)
        batches.clear()
        return out

    def take_frames(self, stack, start, stop):
        return stack[start:stop]

    def bandpass(self, stack, fl, fh, fs, *, mit, gains):
        return bandpass_basis(len(stack), fl, fh, fs, mit).apply(stack) * np.asarray(gains)

    def scan_state(self, first):
        return [first[0].copy(), first[0].copy(), first[0].copy()]

    def first_order_scan(self, state, frames, c1, c2, gain):
        out = np.empty_like(frames)
        lp1, lp2, prev = state
        for i, x in enumerate(frames):
            lp1 = c1[0] * lp1 + c1[1] * x + c1[2] * prev
            lp2 = c2[0] * lp2 + c2[1] * x + c2[2] * prev
            prev = x
            out[i] = gain * (lp1 - lp2)
        state[:] = [lp1, lp2, prev]
        return out

    def render(self, frames, signal, taps, c, e):
        v = self.apply_matrix(frames, c)
        if signal is not None:
            v = v + self.apply_matrix(self.map_axis(signal, taps, 1), e)
        return to_uint8(fit_to_unit_range(v))


def test_bind_checks_the_fused_tier():
    class Partial(NumpyFused):
        render = None

    with pytest.raises(TypeError, match="render"):
        generic.bind(NumpyOperations(), fused=Partial())
    assert generic.bind(NumpyOperations(), fused=NumpyFused()).overrides.keys() == set(generic.PIPELINES)
    assert all(callable(getattr(NumpyFused, name)) for name in FUSED)


@pytest.mark.parametrize("compat", [None, "mit"])
@pytest.mark.parametrize("pipeline", list(PARAMS))
def test_a_fused_tier_from_its_contract_runs_every_pipeline(pipeline, compat, clip, monkeypatch):
    backend = generic.bind(NumpyOperations(), name="numpy-fused", fused=NumpyFused())
    expected = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend="cpu", compat=compat,
                              **PARAMS[pipeline])
    monkeypatch.setattr(vidmag.backend, "select", lambda name: (backend.name, backend))
    got = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend=backend.name, compat=compat,
                         **PARAMS[pipeline])
    _bytes_agree(got, expected)
    if pipeline.startswith("laplacian_") and pipeline != "laplacian_ideal":
        with backend.open(_plan(pipeline, compat, size=clip.shape[1:3])) as stream:
            streamed = np.stack([stream.push(frame) for frame in clip])
        np.testing.assert_array_equal(streamed[: len(got)], got)
