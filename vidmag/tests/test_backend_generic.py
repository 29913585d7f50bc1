"""``generic.bind``: the four pipelines from primitives only. A NumPy-backed operations object written here,
independently of the reference's code, must give the cpu backend's frames (within one 8-bit step)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.ndimage import correlate1d

import vidmag
from vidmag.backend import generic
from vidmag.backend.numpy import NumpyOperations

SQRT2 = np.sqrt(2.0)
B5 = SQRT2 * np.array([1, 4, 6, 4, 1]) / 16
G5 = np.array([1, 4, 6, 4, 1]) / 16
FWD = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]])
MIT_INV = np.array([[1, 0.95617, 0.62143], [1, -0.27269, -0.64681], [1, -1.10374, 1.70062]])


def _keys(d):
    d = np.abs(d)
    far = np.where(d < 2, -0.5 * d**3 + 2.5 * d**2 - 4 * d + 2, 0)
    return np.where(d <= 1, 1.5 * d**3 - 2.5 * d**2 + 1, far)


def _resize_matrix(n_in, n_out):
    m = np.zeros((n_out, n_in))
    for k in range(n_out):
        x = (k + 0.5) * n_in / n_out + 0.5  # 1-based centre mapping
        for t in range(int(np.floor(x)) - 1, int(np.floor(x)) + 3):
            src = t
            while src < 1 or src > n_in:
                src = 1 - src if src < 1 else 2 * n_in + 1 - src
            m[k, src - 1] += _keys(t - x)
    return m


class ScipyOperations:
    """The primitives in a different style: scipy correlations, matrices, complex FFTs."""

    batch_values = 50_000  # small batches, to exercise batching

    def upload(self, frames):
        return frames.copy()

    def download(self, frames):
        return frames

    def rgb_to_yiq(self, frames):
        return (frames / 255.0) @ FWD.T

    def yiq_to_rgb_uint8(self, frames, *, mit):
        rgb = np.maximum(frames @ (MIT_INV if mit else np.linalg.inv(FWD)).T, 0)
        peak = rgb.max(axis=-1, keepdims=True)
        rgb = np.where(peak > 1, rgb / np.maximum(peak, 1), rgb)
        return np.floor(rgb * 255 + 0.5).astype(np.uint8)

    def _down(self, x, kernel, axis):
        full = correlate1d(x, kernel, axis=axis, mode="mirror")
        return np.take(full, range(0, x.shape[axis], 2), axis=axis)

    def pyramid_reduce(self, frames):
        return self._down(self._down(frames, B5, 2), B5, 1)

    def gaussian_reduce(self, frames):
        return self._down(self._down(frames, G5, 1), G5, 2)

    def _up(self, x, n, axis):
        x = np.moveaxis(x, axis, 0)
        stuffed = np.zeros((n, *x.shape[1:]))
        stuffed[::2] = x
        out = correlate1d(stuffed, B5, axis=0, mode="mirror")
        if n == 5:
            out[4] = B5[0] * x[1] + B5[2] * x[2]
        return np.moveaxis(out, 0, axis)

    def pyramid_expand(self, frames, size):
        return self._up(self._up(frames, size[0], 1), size[1], 2)

    def resize_bicubic(self, frames, size):
        rows = np.einsum("ij,njwc->niwc", _resize_matrix(frames.shape[1], size[0]), frames)
        return np.einsum("ij,nhjc->nhic", _resize_matrix(frames.shape[2], size[1]), rows)

    def add(self, a, b):
        return a + b

    def subtract(self, a, b):
        return a - b

    def scale(self, frames, luma, chroma):
        return frames * np.array([luma, chroma, chroma])

    def concat_frames(self, batches):
        out = np.concatenate(batches)
        batches.clear()
        return out

    def take_frames(self, stack, start, stop):
        return stack[start:stop]

    def ideal_bandpass(self, stack, fl, fh, fs, *, mit):
        n = stack.shape[0]
        f = np.fft.fftfreq(n, 1 / fs)
        keep = ((np.arange(n) * fs / n > fl) & (np.arange(n) * fs / n < fh)) if mit else (
            (np.abs(f) >= fl) & (np.abs(f) <= fh))
        return np.real(np.fft.ifft(np.fft.fft(stack, axis=0) * keep[:, None, None, None], axis=0))

    def butterworth_step(self, state, frames, high, low):
        out = []
        for x in frames:
            if state is None:
                state = (x, x, x)
                out.append(np.zeros_like(x))
                continue
            h, lo, prev = state
            h = (-high[3] * h + high[0] * x + high[1] * prev) / high[2]
            lo = (-low[3] * lo + low[0] * x + low[1] * prev) / low[2]
            state = (h, lo, x)
            out.append(h - lo)
        return np.stack(out), state

    def iir_step(self, state, frames, r1, r2):
        out = []
        for x in frames:
            if state is None:
                state = (x, x)
                out.append(np.zeros_like(x))
                continue
            state = ((1 - r1) * state[0] + r1 * x, (1 - r2) * state[1] + r2 * x)
            out.append(state[0] - state[1])
        return np.stack(out), state


@pytest.mark.parametrize("compat", [None, "mit"])
@pytest.mark.parametrize("name", generic.PIPELINES)
def test_bound_operations_agree_with_cpu(name, compat, clip, synthetic_params):
    from vidmag import pipelines
    from vidmag.params import make_plan

    p = synthetic_params[name]
    mine = generic.bind(ScipyOperations(), name="scipy-test")
    plan = make_plan(name, fs=30, compat=compat, params=p, frame_shape=clip.shape[1:], n_frames=len(clip))
    source = (lambda: pipelines._drop_last(iter(clip), 10)) if compat == "mit" else (lambda: iter(clip))
    got = np.stack(list(mine.run(plan, source)))
    want = vidmag.magnify(clip, fs=30, pipeline=name, backend="cpu", compat=compat, **p)
    assert got.shape == want.shape
    diff = np.abs(got.astype(int) - want)
    assert diff.max() <= 1
    assert (diff > 0).mean() < 1e-3


def test_bind_checks_the_contract():
    class Partial(NumpyOperations):
        iir_step = None

    with pytest.raises(TypeError, match="iir_step"):
        generic.bind(Partial())
    with pytest.raises(ValueError, match="laplacian_fir"):
        generic.bind(NumpyOperations(), overrides={"laplacian_fir": lambda plan, source: iter(())})


def test_a_backend_may_override_one_pipeline(clip, synthetic_params):
    from vidmag.params import make_plan

    calls = []

    def my_iir(plan, source):
        calls.append(plan.pipeline)
        return (np.zeros_like(f) for f in source())

    b = generic.bind(NumpyOperations(), name="partial", overrides={"laplacian_iir": my_iir})
    plan = make_plan("laplacian_iir", fs=30, compat=None, params=synthetic_params["laplacian_iir"],
                     frame_shape=clip.shape[1:])
    assert not np.stack(list(b.run(plan, lambda: iter(clip)))).any() and calls == ["laplacian_iir"]
    plan = make_plan("laplacian_butterworth", fs=30, compat=None,
                     params=synthetic_params["laplacian_butterworth"], frame_shape=clip.shape[1:])
    assert len(list(b.run(plan, lambda: iter(clip)))) == len(clip)
