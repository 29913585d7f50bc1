"""The opencl backend's streams over per-level fused kernels: few launches per pushed frame (counted, not
timed), output within 1 of the NumPy reference, the stream equal to the whole-clip run, and
``Stream.retune`` (the Magnifier's way to change parameters) exact for the gains."""

from __future__ import annotations

import numpy as np
import pytest

import vidmag
from vidmag.backend import spatial_taps
from vidmag.backend.stages import kept_levels
from vidmag.params import make_plan
from vidmag.pipelines import open_stream

from .conftest import synthetic_clip

STREAMING = ("laplacian_butterworth", "laplacian_iir")


@pytest.fixture
def counted(monkeypatch):
    """Every kernel launch of pyopencl, counted (kernelkit's launches and the streams' own)."""
    import pyopencl as cl

    launches = [0]
    enqueue = cl.enqueue_nd_range_kernel

    def counting(*args, **kwargs):
        launches[0] += 1
        return enqueue(*args, **kwargs)

    monkeypatch.setattr(cl, "enqueue_nd_range_kernel", counting)
    return launches


def _launches_per_frame(counted, pipeline: str, params: dict, shape: tuple[int, int]) -> float:
    clip = synthetic_clip(T=5, H=shape[0], W=shape[1])
    with open_stream(clip.shape[1:], fs=30.0, pipeline=pipeline, backend="opencl", **params) as stream:
        stream.push(clip[0])
        stream.push(clip[1])  # the launches of a frame are set up at its first push
        counted[0] = 0
        for frame in clip[2:]:
            stream.push(frame)
    return counted[0] / len(clip[2:])


@pytest.mark.parametrize("pipeline", STREAMING)
def test_a_pushed_frame_is_a_few_launches(pipeline, counted, synthetic_params, require_backend):
    require_backend("opencl")
    params = synthetic_params[pipeline]
    plan = make_plan(pipeline, fs=30.0, compat=None, params=params, frame_shape=(120, 160, 3))
    assert kept_levels(plan) == [1, 2, 3, 4]
    # two launches to level 1, one to level 2; levels 2 to 4 (30 x 40 pixels and less) down and up in one;
    # level 1 (60 x 80) up in one; two for the output. The stages' path took about 7 per level.
    assert _launches_per_frame(counted, pipeline, params, (120, 160)) == 7


def test_a_720p_frame_is_fifteen_launches(counted, synthetic_params, require_backend):
    require_backend("opencl")
    params = synthetic_params["laplacian_iir"]
    plan = make_plan("laplacian_iir", fs=30.0, compat=None, params=params, frame_shape=(720, 1280, 3))
    assert kept_levels(plan) == [1, 2, 3, 4, 5, 6, 7]
    # 2 to level 1, 2 to level 2 (the width, then the height), 1 each to levels 3 and 4, 1 for levels 4 to 7
    # (45 x 80 and less), 2 for each of levels 3, 2, 1 on the way up (widen, then 8 values per work item),
    # 2 for the output: 15 (52 before)
    assert _launches_per_frame(counted, "laplacian_iir", params, (720, 1280)) == 15


@pytest.mark.parametrize("pipeline", STREAMING)
def test_stream_within_one_of_the_reference_and_equal_to_the_whole_clip(pipeline, synthetic_params,
                                                                         require_backend):
    require_backend("opencl")
    clip = synthetic_clip(T=10, H=96, W=136)  # level widths not all multiples of 8: both level kernels
    params = synthetic_params[pipeline]
    reference = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend="cpu", **params)
    whole = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend="opencl", **params)
    with open_stream(clip.shape[1:], fs=30.0, pipeline=pipeline, backend="opencl", **params) as stream:
        single = np.stack([stream.push(frame) for frame in clip])
    with open_stream(clip.shape[1:], fs=30.0, pipeline=pipeline, backend="opencl", **params) as stream:
        mixed = np.concatenate([stream.push(clip[:3]), stream.push(clip[3:4]), stream.push(clip[4:])])
    assert np.abs(whole.astype(np.int16) - reference).max() <= 1
    np.testing.assert_array_equal(single, whole)
    np.testing.assert_array_equal(mixed, whole)


def test_large_levels_take_the_split_kernels_and_agree(synthetic_params, require_backend):
    # 512 x 512: level 1 (256 x 256) goes down in two launches, levels 1 to 3 up through widen2 + level_up8
    require_backend("opencl")
    clip = synthetic_clip(T=3, H=512, W=512)
    params = synthetic_params["laplacian_iir"]
    reference = vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="cpu", **params)
    with open_stream(clip.shape[1:], fs=30.0, pipeline="laplacian_iir", backend="opencl", **params) as s:
        got = np.stack([s.push(frame) for frame in clip])
        names = {launch.kernel.function_name for launch in s._state._cache[(1, False)]}
    assert {"widen2_k3", "level_up8_k3", "cols8_f32_k5", "reduce2d_k5", "tail_levels"} <= names
    assert np.abs(got.astype(np.int16) - reference).max() <= 1


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_retune_of_the_gains_is_exact(backend, synthetic_params, require_backend):
    require_backend(backend)
    clip = synthetic_clip(T=10, H=48, W=64)
    params = synthetic_params["laplacian_iir"]
    changed = {**params, "alpha": 4.0, "chrom_attenuation": 0.2}
    expected = vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend=backend, **changed)
    with open_stream(clip.shape[1:], fs=30.0, pipeline="laplacian_iir", backend=backend, **params) as s:
        s.push(clip[:4])
        plan = make_plan("laplacian_iir", fs=30.0, compat=None, params=changed, frame_shape=clip.shape[1:])
        assert s.retune(plan) is True
        assert s.plan is plan
        got = s.push(clip[4:])
    np.testing.assert_array_equal(got, expected[4:])


def test_retune_refuses_what_the_state_cannot_carry(synthetic_params, require_backend):
    require_backend("opencl")
    clip = synthetic_clip(T=4, H=48, W=64)
    params = synthetic_params["laplacian_iir"]
    with open_stream(clip.shape[1:], fs=30.0, pipeline="laplacian_iir", backend="opencl",
                     **{**params, "alpha": 0.0}) as s:
        s.push(clip[:2])
        raised = make_plan("laplacian_iir", fs=30.0, compat=None, params=params, frame_shape=clip.shape[1:])
        assert s.retune(raised) is False  # a level with gain now, and no state for it
        other = make_plan("laplacian_iir", fs=30.0, compat=None, params=params, frame_shape=(32, 48, 3))
        assert s.retune(other) is False
        assert s.plan.params["alpha"] == 0.0  # unchanged
        s.push(clip[2:])
    assert s.retune(raised) is False  # closed


def test_a_cpu_device_takes_smaller_batches(require_backend):
    """On a CPU device the batch's buffers are the process's memory: its batch is the smaller one (baby's
    peak under 500 MB depends on it); a GPU keeps the larger, fewer launches per frame."""
    require_backend("opencl")
    from types import SimpleNamespace

    from vidmag.backend.opencl import pipelines as fused

    plan = make_plan("laplacian_iir", fs=30.0, compat=None, params=dict(alpha=10.0, lambda_c=16.0, r1=0.4,
                     r2=0.05, chrom_attenuation=0.1), frame_shape=(544, 960, 3))
    frame_bytes = 544 * 960 * 3
    tier = fused.OpenCLFused.__new__(fused.OpenCLFused)
    for on_cpu, chunk in ((True, fused.CHUNK_BYTES_CPU), (False, fused.CHUNK_BYTES)):
        tier.rt = SimpleNamespace(runtime=SimpleNamespace(on_cpu=on_cpu))
        assert tier.batch_frames(plan) == chunk // frame_bytes
    assert fused.CHUNK_BYTES_CPU // frame_bytes < fused.CHUNK_BYTES // frame_bytes
    # the device this run has (PoCL in CI) is a CPU device and takes the smaller batch
    from vidmag.backend.opencl.operations import OpenCLOperations

    real = fused.OpenCLFused(OpenCLOperations())
    expected = fused.CHUNK_BYTES_CPU if real.rt.runtime.on_cpu else fused.CHUNK_BYTES
    assert real.batch_frames(plan) == max(1, expected // frame_bytes)


def test_gaussian_ideal_takes_larger_batches_on_a_cpu_device(require_backend):
    """gaussian_ideal's batch holds float images 2^level times shorter than its frames, so on a CPU device it
    takes the larger CHUNK_BYTES_CPU_GAUSSIAN (fewer launches); the Laplacian pipelines keep CHUNK_BYTES_CPU,
    and a GPU CHUNK_BYTES for every pipeline."""
    require_backend("opencl")
    from types import SimpleNamespace

    from vidmag.backend.opencl import pipelines as fused

    plan = make_plan("gaussian_ideal", fs=30.0, compat=None, params=dict(alpha=50.0, level=4, fl=50 / 60,
                     fh=1.0, chrom_attenuation=1.0), frame_shape=(592, 528, 3))
    frame_bytes = 592 * 528 * 3
    tier = fused.OpenCLFused.__new__(fused.OpenCLFused)
    tier.rt = SimpleNamespace(runtime=SimpleNamespace(on_cpu=True))
    assert tier.batch_frames(plan) == fused.CHUNK_BYTES_CPU_GAUSSIAN // frame_bytes
    assert fused.CHUNK_BYTES_CPU_GAUSSIAN > fused.CHUNK_BYTES_CPU
    tier.rt = SimpleNamespace(runtime=SimpleNamespace(on_cpu=False))
    assert tier.batch_frames(plan) == fused.CHUNK_BYTES // frame_bytes


def test_frames_wrapped_without_a_copy_live_until_the_queue_is_done(require_backend):
    """Frames that lie one after another in memory are read in place (USE_HOST_PTR) by kernels that run after
    upload_frames returns. Decoded frames can lie so by chance, and their caller drops them for the next
    group at once: freed under a running kernel, they crashed a file run of baby.mp4 (SIGSEGV in cols16_u8).
    The fused tier keeps every such frame alive until the queue has been waited for."""
    import gc
    import weakref

    _, backend = require_backend("opencl")
    fused = backend.fused
    block = np.zeros((3, 16, 24, 3), np.uint8)  # three frames, adjacent: read in place
    alive = weakref.ref(block)
    group = list(block)  # views of the block, as a decoder's adjacent frames are of their buffers
    uploaded = fused.upload_frames(group)
    fused.map_axis(uploaded, spatial_taps.reduce(16, "laplacian"), 1)  # a kernel reading them, not waited
    del group, block, uploaded
    gc.collect()
    assert alive() is not None  # held while the kernel may still read it
    fused.synchronize()
    gc.collect()
    assert alive() is None  # let go once the queue is done
