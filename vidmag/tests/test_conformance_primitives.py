"""Conformance of each accelerated backend's primitives with the NumPy ones (float32 against float64).

Tolerances are float32 ones: values of order 1 agree to a few 1e-7 (a few units in the last place of float32),
scaled by the size of the values compared. Inputs are float32 numbers, so both sides see the same input.
"""

from __future__ import annotations

import numpy as np
import pytest

from vidmag._reference.temporal import butterworth_lowpass
from vidmag.backend.numpy import NumpyOperations
from vidmag.backend.operations import PRIMITIVES

BACKENDS = ("torch", "opencl", "vulkan")
REF = NumpyOperations()


@pytest.fixture(params=BACKENDS)
def ops(request, require_backend):
    _, backend = require_backend(request.param)
    return backend.operations


def _f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def _host(ops, x) -> np.ndarray:
    """A device float array back on the host (download() is for bytes)."""
    if hasattr(x, "get"):
        return x.get()
    return x.cpu().numpy()


def _device(ops, x: np.ndarray):
    """A host float32 array on the device, in the backend's array type."""
    if hasattr(ops, "rt"):
        return ops.rt.to_device(_f32(x))
    return ops.torch.as_tensor(_f32(x), device=ops.device)


def _close(got, expected, rel=4e-6):
    expected = np.asarray(expected, dtype=np.float64)
    scale = max(1.0, float(np.abs(expected).max()))
    assert got.shape == expected.shape
    err = float(np.abs(got.astype(np.float64) - expected).max())
    assert err <= rel * scale, f"max error {err:.3g} for values up to {scale:.3g}"


def _yiq(rng, shape):
    return _f32(rng.uniform(-0.3, 1.0, shape))


def test_every_primitive_is_there(ops):
    assert [p for p in PRIMITIVES if not callable(getattr(ops, p, None))] == []


def test_upload_download_round_trip(ops):
    frames = np.random.default_rng(0).integers(0, 256, (3, 7, 9, 3), dtype=np.uint8)
    back = ops.download(ops.upload(frames))
    assert back.dtype == np.uint8
    np.testing.assert_array_equal(back, frames)


def test_rgb_to_yiq(ops):
    frames = np.random.default_rng(1).integers(0, 256, (4, 9, 11, 3), dtype=np.uint8)
    _close(_host(ops, ops.rgb_to_yiq(ops.upload(frames))), REF.rgb_to_yiq(frames))


@pytest.mark.parametrize("mit", [False, True])
def test_yiq_to_rgb_uint8(ops, mit):
    rng = np.random.default_rng(2)
    yiq = _f32(
        np.concatenate([rng.uniform(0, 1, (2, 16, 16, 1)), rng.uniform(-0.4, 0.4, (2, 16, 16, 2))], -1)
    )
    yiq[0, 0, 0] = (1.5, 0.3, 0.2)  # a pixel above 1: divided by its largest channel
    yiq[0, 0, 1] = (-0.2, 0.0, 0.0)  # negative: clamped to 0
    got = ops.download(ops.yiq_to_rgb_uint8(_device(ops, yiq), mit=mit))
    expected = REF.yiq_to_rgb_uint8(yiq.astype(np.float64), mit=mit)
    diff = np.abs(got.astype(np.int16) - expected.astype(np.int16))
    assert got.dtype == np.uint8 and diff.max() <= 1 and (diff > 0).mean() < 1e-3
    np.testing.assert_array_equal(got[0, 0, :2], expected[0, 0, :2])


@pytest.mark.parametrize("size", [(20, 33), (9, 15), (10, 11), (5, 40)])
def test_pyramid_reduce_and_expand(ops, size):
    rng = np.random.default_rng(3)
    image = _yiq(rng, (3, *size, 3))
    low = REF.pyramid_reduce(image.astype(np.float64))
    _close(_host(ops, ops.pyramid_reduce(_device(ops, image))), low)
    low32 = _f32(low)
    _close(
        _host(ops, ops.pyramid_expand(_device(ops, low32), size)),
        REF.pyramid_expand(low32.astype(np.float64), size),
    )


def test_expand_to_a_side_of_five_drops_a_tap(ops):
    """matlabPyrTools' upConv quirk at n = 5 (and the same at 10 = 5 * 2, which expands to 5 on the way)."""
    coarse = _yiq(np.random.default_rng(4), (2, 3, 5, 3))
    for size in [(5, 10), (5, 9)]:
        _close(
            _host(ops, ops.pyramid_expand(_device(ops, coarse), size)),
            REF.pyramid_expand(coarse.astype(np.float64), size),
        )


@pytest.mark.parametrize("size", [(40, 36), (11, 7)])
def test_gaussian_reduce(ops, size):
    image = _yiq(np.random.default_rng(5), (2, *size, 3))
    _close(
        _host(ops, ops.gaussian_reduce(_device(ops, image))), REF.gaussian_reduce(image.astype(np.float64))
    )


@pytest.mark.parametrize(("small", "size"), [((5, 4), (80, 64)), ((3, 7), (11, 20)), ((6, 6), (6, 9))])
def test_resize_bicubic(ops, small, size):
    image = _yiq(np.random.default_rng(6), (2, *small, 3))
    _close(
        _host(ops, ops.resize_bicubic(_device(ops, image), size)),
        REF.resize_bicubic(image.astype(np.float64), size),
    )


def test_arithmetic_leaves_its_inputs_alone(ops):
    rng = np.random.default_rng(7)
    a, b = _yiq(rng, (2, 5, 6, 3)), _yiq(rng, (2, 5, 6, 3))
    da, db = _device(ops, a), _device(ops, b)
    _close(_host(ops, ops.add(da, db)), a.astype(np.float64) + b)
    _close(_host(ops, ops.subtract(da, db)), a.astype(np.float64) - b)
    _close(_host(ops, ops.scale(da, 2.5, -0.25)), REF.scale(a.astype(np.float64), 2.5, -0.25))
    np.testing.assert_array_equal(_host(ops, da), a)
    np.testing.assert_array_equal(_host(ops, db), b)


def test_concat_and_take_frames(ops):
    rng = np.random.default_rng(8)
    parts = [_yiq(rng, (n, 4, 5, 3)) for n in (2, 3, 1)]
    stack = ops.concat_frames([_device(ops, p) for p in parts])
    whole = np.concatenate(parts)
    _close(_host(ops, stack), whole)
    _close(_host(ops, ops.take_frames(stack, 2, 5)), whole[2:5])


@pytest.mark.parametrize("mit", [False, True])
@pytest.mark.parametrize("band", [(0.8, 1.2), (0.0, 3.0), (0.4, 15.0), (3.0, 15.0), (1.0, 14.0)])
@pytest.mark.parametrize("n", [40, 41])
def test_ideal_bandpass(ops, band, mit, n):
    x = _f32(0.5 + 0.2 * np.random.default_rng(9).standard_normal((n, 3, 4, 3)))
    expected = REF.ideal_bandpass(x.astype(np.float64).copy(), *band, 30.0, mit=mit)
    _close(_host(ops, ops.ideal_bandpass(_device(ops, x), *band, 30.0, mit=mit)), expected, rel=2e-6)


def _run_filter(step, chunks):
    state, out = None, []
    for chunk in chunks:
        filtered, state = step(state, chunk)
        out.append(filtered)
    return out


@pytest.mark.parametrize("which", ["iir", "butterworth"])
@pytest.mark.parametrize("mit", [False, True])
def test_first_order_filters_carry_their_state_across_batches(ops, which, mit):
    x = _f32(0.5 + 0.3 * np.random.default_rng(10).standard_normal((12, 3, 4, 3)))
    cuts = [(0, 1), (1, 5), (5, 12)]  # the first batch holds only the first frame, which starts the state
    if which == "iir":

        def dev(s, c):
            return ops.iir_step(s, c, 0.4, 0.05)

        def ref(s, c):
            return REF.iir_step(s, c, 0.4, 0.05)
    else:
        high, low = (
            tuple(butterworth_lowpass(3.0, 30.0, mit=mit)),
            tuple(butterworth_lowpass(0.4, 30.0, mit=mit)),
        )

        def dev(s, c):
            return ops.butterworth_step(s, c, high, low)

        def ref(s, c):
            return REF.butterworth_step(s, c, high, low)

    got = _run_filter(dev, [_device(ops, x[a:b]) for a, b in cuts])
    expected = _run_filter(ref, [x[a:b].astype(np.float64) for a, b in cuts])
    for g, e in zip(got, expected):
        _close(_host(ops, g), e, rel=2e-6)
    assert float(np.abs(expected[-1]).max()) > 0.01  # the filters pass something: the check has teeth
