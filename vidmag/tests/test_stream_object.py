"""The Stream object: its life cycle (push, close, context manager), what it refuses and how, the ideal
pipelines' refusal, a failed push, tensors in and out, and streams of backends bound from primitives."""

from __future__ import annotations

import numpy as np
import pytest

import vidmag
from vidmag import pipelines
from vidmag.backend import generic
from vidmag.backend.numpy import NumpyOperations
from vidmag.params import make_plan

BACKENDS = ("cpu", "torch", "opencl", "vulkan")


def _open(clip, params, backend="cpu", pipeline="laplacian_iir", **kwargs):
    return pipelines.open_stream(clip.shape[1:], fs=30.0, pipeline=pipeline, backend=backend,
                                 **{**params[pipeline], **kwargs})


@pytest.mark.parametrize("backend", BACKENDS)
def test_push_after_close_raises_and_close_is_idempotent(backend, clip, synthetic_params, require_backend):
    require_backend(backend)
    stream = _open(clip, synthetic_params, backend)
    assert not stream.closed and stream.push(clip[:2]).shape == (2, *clip.shape[1:])
    stream.close()
    assert stream.closed
    stream.close()
    with pytest.raises(ValueError, match="closed stream"):
        stream.push(clip[2])
    with _open(clip, synthetic_params, backend) as other:
        other.push(clip[0])
    assert other.closed
    with pytest.raises(ValueError, match="closed stream"):
        other.push(clip[1])


@pytest.mark.parametrize("pipeline", ["gaussian_ideal", "laplacian_ideal"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_ideal_pipelines_refuse_to_stream_and_say_why(backend, pipeline, clip, synthetic_params,
                                                          require_backend):
    _, chosen = require_backend(backend)
    plan = make_plan(pipeline, fs=30.0, compat=None, params=synthetic_params[pipeline],
                     frame_shape=clip.shape[1:])
    assert not plan.streams
    for attempt in (lambda: chosen.open(plan), lambda: _open(clip, synthetic_params, backend, pipeline)):
        with pytest.raises(ValueError, match=rf"^{pipeline} cannot stream: .*whole clip") as error:
            attempt()
        assert "laplacian_butterworth or laplacian_iir" in str(error.value)


def test_plans_say_which_pipelines_stream(clip, synthetic_params):
    for pipeline, streams in [("laplacian_iir", True), ("laplacian_butterworth", True),
                              ("gaussian_ideal", False), ("laplacian_ideal", False)]:
        plan = make_plan(pipeline, fs=30.0, compat=None, params=synthetic_params[pipeline],
                         frame_shape=clip.shape[1:])
        assert plan.streams is streams and plan.batch is None


def test_bad_frames_are_refused_and_lose_nothing(clip, synthetic_params):
    expected = vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="cpu",
                              **synthetic_params["laplacian_iir"])
    with _open(clip, synthetic_params) as stream:
        got = [stream.push(clip[:3])]
        bad = [clip[3:5, :-1], clip[3:5].astype(np.float32) / 255, clip[3, ..., :2],
               clip[3:5].astype(np.int16), [clip[3], clip[4, :-1]], clip[3:5][None]]
        for frames in bad:
            with pytest.raises(ValueError, match="frames"):
                stream.push(frames)
        assert stream.frames_pushed == 3
        empty = stream.push(clip[:0])
        assert empty.shape == (0, *clip.shape[1:]) and empty.dtype == np.uint8
        got.append(stream.push(clip[3:]))
    np.testing.assert_array_equal(np.concatenate(got), expected)


def test_open_stream_checks_everything_up_front(clip, synthetic_params):
    params = synthetic_params["laplacian_iir"]
    with pytest.raises(TypeError, match="frame_shape"):
        pipelines.open_stream(clip, fs=30.0, pipeline="laplacian_iir", backend="cpu", **params)
    with pytest.raises(TypeError, match="frame_shape"):
        pipelines.open_stream((48.0, 64, 3), fs=30.0, pipeline="laplacian_iir", backend="cpu", **params)
    with pytest.raises(ValueError, match="too small"):
        pipelines.open_stream((8, 64, 3), fs=30.0, pipeline="laplacian_iir", backend="cpu", **params)
    with pytest.raises(ValueError, match="batch must be an integer >= 1"):
        _open(clip, synthetic_params, batch=0)
    with pytest.raises(TypeError, match="batch"):
        _open(clip, synthetic_params, batch="2")
    with pytest.raises(TypeError, match="r1"):
        pipelines.open_stream(clip.shape[1:], fs=30.0, pipeline="laplacian_iir", backend="cpu",
                              alpha=10.0, lambda_c=8.0, r2=0.05, chrom_attenuation=0.5)
    with pytest.raises(ValueError, match="backend"):
        _open(clip, synthetic_params, backend="gpu")
    assert vidmag.open_stream is pipelines.open_stream


@pytest.mark.parametrize("backend", BACKENDS)
def test_streams_hold_their_own_state(backend, clip, synthetic_params, require_backend):
    """Two streams of one backend pushed in turns (and a whole-clip run between their pushes) give what each
    gives alone: the filter state is inside the object, and the buffers a device reuses hold nothing from
    one push to the next."""
    require_backend(backend)
    other = clip[::-1].copy()
    with _open(clip, synthetic_params, backend) as a, _open(clip, synthetic_params, backend) as b:
        mixed_a, mixed_b = [], []
        for i in range(0, len(clip), 5):
            mixed_a.append(a.push(clip[i : i + 5]))
            mixed_b.append(b.push(other[i : i + 5]))
            if i == 5:
                vidmag.magnify(other[:7], fs=30.0, pipeline="laplacian_iir", backend=backend,
                               **synthetic_params["laplacian_iir"])
    for frames, mixed in ((clip, mixed_a), (other, mixed_b)):
        alone = vidmag.magnify(frames, fs=30.0, pipeline="laplacian_iir", backend=backend,
                               **synthetic_params["laplacian_iir"])
        diff = np.abs(np.concatenate(mixed).astype(np.int16) - alone.astype(np.int16))
        assert diff.max() <= (1 if backend == "torch" else 0)  # bitwise where streams are (see whole_clip)


def test_no_kept_level_streams_the_colour_round_trip(clip, synthetic_params, require_backend):
    """alpha = 0: every gain is 0 and no band is built; the stream still equals the whole-clip run."""
    for backend in ("cpu", "opencl", "vulkan"):
        require_backend(backend)
        with _open(clip, synthetic_params, backend, alpha=0.0) as stream:
            got = np.stack([stream.push(frame) for frame in clip])
        expected = vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend=backend,
                                  **{**synthetic_params["laplacian_iir"], "alpha": 0.0})
        np.testing.assert_array_equal(got, expected)


class _Failing(NumpyOperations):
    """Raises KeyboardInterrupt in the filter step of its ``fail_at``-th call (as Ctrl-C between launches)."""

    def __init__(self, fail_at: int) -> None:
        self.calls, self.fail_at, self.log = 0, fail_at, []

    def iir_step(self, state, frames, r1, r2):
        self.calls += 1
        if self.calls == self.fail_at:
            raise KeyboardInterrupt
        return super().iir_step(state, frames, r1, r2)

    def synchronize(self) -> None:
        self.log.append("synchronize")


def test_frames_a_backend_cannot_take_are_refused_and_lose_nothing(clip, synthetic_params, require_backend):
    _, backend = require_backend("opencl")
    import pyopencl.array as cla

    plan = make_plan("laplacian_iir", fs=30.0, compat=None, params=synthetic_params["laplacian_iir"],
                     frame_shape=clip.shape[1:])
    expected = vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="opencl",
                              **synthetic_params["laplacian_iir"])
    on_device = cla.to_device(backend.operations.rt.queue, clip[:2])
    got = []
    with backend.open(plan) as stream:
        for part in (clip[:12], clip[12:]):  # refused before frame 0 and after it
            with pytest.raises(TypeError, match="host frames"):
                stream.push(on_device)
            got.append(stream.push(part))
    np.testing.assert_array_equal(np.concatenate(got), expected)


def test_a_failed_push_drains_the_device_and_ends_the_stream(clip, synthetic_params):
    ops = _Failing(fail_at=8)
    backend = generic.bind(ops, name="failing")
    plan = make_plan("laplacian_iir", fs=30.0, compat=None, params=synthetic_params["laplacian_iir"],
                     frame_shape=clip.shape[1:])
    stream = backend.open(plan)
    stream.push(clip[:2])  # frame 0 and 1: the first calls of the filter step
    with pytest.raises(KeyboardInterrupt):
        for frame in clip[2:]:
            stream.push(frame)
    assert ops.log == ["synchronize"]
    with pytest.raises(RuntimeError, match=r"failed push .*open a new stream"):
        stream.push(clip[5])
    stream.close()


@pytest.mark.parametrize("name", ["torch", "opencl", "vulkan"])
def test_a_backend_bound_from_its_primitives_streams_too(name, clip, synthetic_params, require_backend):
    _, registered = require_backend(name)
    backend = generic.bind(registered.operations, name=f"{name}-primitives")
    assert backend.fused is None
    plan = make_plan("laplacian_butterworth", fs=30.0, compat=None,
                     params=synthetic_params["laplacian_butterworth"], frame_shape=clip.shape[1:])
    whole = np.stack(list(backend.run(plan, lambda: iter(clip))))
    with backend.open(plan) as stream:
        streamed = np.concatenate([stream.push(clip[i : i + 4]) for i in range(0, len(clip), 4)])
    diff = np.abs(streamed.astype(np.int16) - whole.astype(np.int16))
    assert diff.max() <= 1 and (diff > 0).mean() < 0.01


def test_torch_streams_take_tensors_and_give_tensors(clip, synthetic_params, require_backend):
    require_backend("torch")
    import torch

    with _open(clip, synthetic_params, "torch") as on_arrays, \
            _open(clip, synthetic_params, "torch") as on_tensors:
        for i in range(0, len(clip), 5):
            expected = on_arrays.push(clip[i : i + 5])
            got = on_tensors.push(torch.from_numpy(clip[i : i + 5]))
            assert isinstance(got, torch.Tensor) and got.dtype == torch.uint8
            np.testing.assert_array_equal(got.cpu().numpy(), expected)
        with pytest.raises(ValueError, match="uint8"):
            on_tensors.push(torch.zeros((1, *clip.shape[1:]), dtype=torch.float32))
        # refused before anything moved: the stream goes on
        np.testing.assert_array_equal(on_tensors.push(torch.from_numpy(clip[:2])).numpy(),
                                      on_arrays.push(clip[:2]))


def test_the_stream_says_what_it_is(clip, synthetic_params):
    stream = _open(clip, synthetic_params)
    stream.push(clip[:3])
    assert "laplacian_iir" in repr(stream) and "3 frames pushed" in repr(stream)
    stream.close()
    assert "closed" in repr(stream)
