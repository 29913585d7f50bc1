"""A stream's output equals the whole-clip run of the same backend, frame by frame and in batches.

Every backend here x both streaming pipelines x both semantics x two clips (one with odd sides and a side of
5 * 2^3, so every vectorised kernel has a scalar tail and the expand drops its tap). The whole-clip run is the
same filter state fed batch by batch, and each output frame is computed from the same inputs whatever the
batch it came in, so:

- cpu (the NumPy reference), opencl and vulkan are compared **bitwise**: every NumPy and SciPy operation of
  the reference, and every OpenCL kernel and Vulkan compute shader, computes each output value from the same
  input values by the same instructions whatever the batch's frame count (which only sets a loop bound or a
  grid dimension);
- torch within 1 grey level with fewer than 1% of the bytes differing (the conformance rule): its CPU
  kernels vectorise with a scalar tail, which the compiler may contract into fused multiply-adds, and which
  elements fall in the tail depends on the size of the batch, so the code does not promise equal bits
  (they were equal on every run here).

Under ``compat="mit"`` the whole-clip run reads only the first T - 10 frames; the stream, which has no end to
look ahead to, magnifies every frame it is given, and its first T - 10 frames equal the whole-clip run.
"""

from __future__ import annotations

import numpy as np
import pytest

import vidmag
from vidmag import pipelines

BACKENDS = ("cpu", "torch", "opencl", "vulkan")
STREAMING = ("laplacian_butterworth", "laplacian_iir")
#: Backends whose stream equals the whole-clip run bitwise (see the module docstring).
BITWISE = ("cpu", "opencl", "vulkan")

#: How the clip is pushed: one frame at a time, batches of 3, uneven batches (a list of frames among them).
SPLITS = {
    "frame_by_frame": lambda n: [1] * n,
    "batches_of_3": lambda n: [3] * (n // 3) + ([n % 3] if n % 3 else []),
    "uneven": lambda n: [2, 1, 5, 4, n - 12],
}

_whole: dict[tuple, np.ndarray] = {}


@pytest.fixture(params=["synthetic", "odd_sides"])
def clip_case(request, make_clip):
    if request.param == "synthetic":
        return request.param, make_clip(T=24, H=48, W=64, seed=0)
    return request.param, make_clip(T=22, H=40, W=37, seed=1)


def _whole_clip(backend, clip_name, clip, pipeline, compat, params):
    key = (backend, clip_name, pipeline, compat)
    if key not in _whole:
        _whole[key] = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend=backend, compat=compat,
                                     **params)
    return _whole[key]


def _push_all(stream, clip, split):
    out, start = [], 0
    for i, count in enumerate(SPLITS[split](len(clip))):
        part = clip[start : start + count]
        # a single frame as (H, W, 3), some batches as lists of frames, the others as (n, H, W, 3) arrays
        if count == 1:
            got = stream.push(part[0])
            assert got.shape == clip.shape[1:]
            out.append(got[None])
        elif i % 2:
            out.append(stream.push(list(part)))
        else:
            out.append(stream.push(part))
        assert out[-1].shape == part.shape and out[-1].dtype == np.uint8
        start += count
    assert start == len(clip)
    return np.concatenate(out)


def _assert_equal(backend, got, expected):
    assert got.shape == expected.shape and got.dtype == np.uint8
    if backend in BITWISE:
        np.testing.assert_array_equal(got, expected)
    else:
        diff = np.abs(got.astype(np.int16) - expected.astype(np.int16))
        assert diff.max() <= 1 and (diff > 0).mean() < 0.01


@pytest.mark.parametrize("split", list(SPLITS))
@pytest.mark.parametrize("compat", [None, "mit"])
@pytest.mark.parametrize("pipeline", STREAMING)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_stream_equals_the_whole_clip_run(backend, pipeline, compat, split, clip_case, synthetic_params,
                                            require_backend):
    require_backend(backend)
    clip_name, clip = clip_case
    params = synthetic_params[pipeline]
    expected = _whole_clip(backend, clip_name, clip, pipeline, compat, params)
    with pipelines.open_stream(clip.shape[1:], fs=30.0, pipeline=pipeline, backend=backend, compat=compat,
                               **params) as stream:
        got = _push_all(stream, clip, split)
        assert stream.frames_pushed == len(clip)
    assert len(expected) == (len(clip) - 10 if compat == "mit" else len(clip))
    _assert_equal(backend, got[: len(expected)], expected)
    # frame 0 starts the filters and comes out as its input bytes; the rest is magnified
    np.testing.assert_array_equal(got[0], clip[0])
    assert np.abs(got[1:].astype(np.int16) - clip[1:]).max() >= 4


@pytest.mark.parametrize("pipeline", STREAMING)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_push_larger_than_the_plans_batch_is_done_in_pieces(backend, pipeline, clip, synthetic_params,
                                                              require_backend):
    require_backend(backend)
    params = synthetic_params[pipeline]
    expected = _whole_clip(backend, "synthetic", clip, pipeline, None, params)
    with pipelines.open_stream(clip.shape[1:], fs=30.0, pipeline=pipeline, backend=backend, batch=2,
                               **params) as stream:
        assert stream.batch == 2 and stream.plan.batch == 2
        got = np.concatenate([stream.push(clip[:11]), stream.push(clip[11:])])
    _assert_equal(backend, got, expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_stream_leaves_the_pushed_frames_alone(backend, clip, synthetic_params, require_backend):
    require_backend(backend)
    frames = clip.copy()
    with pipelines.open_stream(clip.shape[1:], fs=30.0, pipeline="laplacian_iir", backend=backend,
                               **synthetic_params["laplacian_iir"]) as stream:
        first = stream.push(frames[:5])
        stream.push(frames[5:])
    np.testing.assert_array_equal(frames, clip)
    assert not np.shares_memory(first, frames)
