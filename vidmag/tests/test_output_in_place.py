"""``vidmag.magnify`` on the opencl and vulkan backends writes the output frames straight into the array it
returns (cuda and metal too: the shared kernel tier of vulkan's, checked here on Vulkan).

The opencl output kernel writes through a buffer over host memory, the kernel tier reads the render's bytes
back into the slot; :class:`vidmag.backend.output.HostOutput` hands
it each batch's slots of the final array, so ``magnify`` copies no frame (on a processor the copy and the
first touch of per-batch arrays cost about a third of the colour run). What must hold: every frame is in
place (none copied), in its slot (the result equals the frames of :func:`vidmag.run`, which writes into
fresh arrays), over several batches, for every linear pipeline and both semantics (the MIT one has fewer
output frames than input frames, laplacian_ideal one fewer again). Backends that cannot write there are
copied as before.
"""

from __future__ import annotations

import numpy as np
import pytest

import vidmag
from vidmag.backend import output
from vidmag.backend.output import HostOutput
from vidmag.pipelines import run

LINEAR = ("gaussian_ideal", "laplacian_ideal", "laplacian_butterworth", "laplacian_iir")


@pytest.fixture
def placed(monkeypatch):
    """Counts of the frames ``magnify`` found in place and copied: ``{"in place": n, "copied": m}``."""
    counts = {"in place": 0, "copied": 0}
    holds = HostOutput.holds

    def counting(self, frame, index):
        found = holds(self, frame, index)
        counts["in place" if found else "copied"] += 1
        return found

    monkeypatch.setattr(output.HostOutput, "holds", counting)
    return counts


def _small_batches(monkeypatch, backend: str, frame_bytes: int) -> None:
    """Batches of 5 frames on either kind of device: the slots of several batches, the last one shorter."""
    if backend == "opencl":
        from vidmag.backend.opencl import pipelines as opencl_pipelines

        for name in ("CHUNK_BYTES_CPU", "CHUNK_BYTES_CPU_GAUSSIAN", "CHUNK_BYTES"):
            monkeypatch.setattr(opencl_pipelines, name, 5 * frame_bytes)
    else:
        from vidmag.backend.vulkan import fused

        monkeypatch.setattr(fused, "CHUNK_BYTES", 5 * frame_bytes)


@pytest.mark.parametrize("backend", ["opencl", "vulkan"])
@pytest.mark.parametrize("compat", [None, "mit"])
@pytest.mark.parametrize("pipeline", LINEAR)
def test_the_backend_writes_every_frame_in_place_and_in_order(
    pipeline, compat, backend, require_backend, make_clip, synthetic_params, placed, monkeypatch
):
    require_backend(backend)
    clip = make_clip(T=23, H=40, W=36, seed=2)  # rows of whole words (the grid kernels) on vulkan
    _small_batches(monkeypatch, backend, clip[0].nbytes)
    params = synthetic_params[pipeline]
    out = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend=backend, compat=compat, **params)
    assert placed == {"in place": len(out), "copied": 0}
    streamed = np.stack(list(run(lambda: iter(clip), fs=30.0, pipeline=pipeline, backend=backend,
                                 compat=compat, **params)))
    np.testing.assert_array_equal(out, streamed)

def test_a_backend_without_host_output_is_copied(make_clip, synthetic_params, placed):
    clip = make_clip(T=12, H=32, W=32)
    out = vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="cpu",
                         **synthetic_params["laplacian_iir"])
    assert placed == {"in place": 0, "copied": len(out)}


def test_slots_are_consecutive_views_and_the_end_is_guarded():
    into = HostOutput()
    with pytest.raises(RuntimeError, match="before its array was set"):
        into.take(1)
    into.array = np.zeros((5, 2, 3, 3), np.uint8)
    first, second = into.take(2), into.take(3)
    second[:] = 9
    assert into.holds(second[0], 2) and not into.holds(second[0], 0) and not into.holds(first[1], 2)
    assert into.array[2:].min() == 9 and into.array[:2].max() == 0
    with pytest.raises(RuntimeError, match="frames 5 to 5 of an output of 5 frames"):
        into.take(1)


def test_the_kernel_tier_render_refuses_a_wrong_output_array(require_backend):
    _, backend = require_backend("vulkan")
    rt = backend.fused.rt
    frames = rt.to_device(np.zeros((2, 4, 8, 3), np.uint8))
    eye = np.eye(3) / 255.0
    with pytest.raises(ValueError, match=r"into must be a C-contiguous uint8 array of shape \(2, 4, 8, 3\)"):
        backend.fused.render(frames, None, None, eye, np.zeros((3, 3)),
                             into=np.empty((2, 4, 8, 3), np.float32))
    with pytest.raises(ValueError, match="not contiguous"):
        backend.fused.render(frames, None, None, eye, np.zeros((3, 3)),
                             into=np.empty((2, 4, 16, 3), np.uint8)[:, :, ::2])


def test_opencl_render_refuses_a_wrong_output_array(require_backend):
    _, backend = require_backend("opencl")
    fused = backend.fused
    with pytest.raises(ValueError, match=r"into must be a C-contiguous uint8 array of shape \(2, 4, 8, 3\)"):
        fused.output_buffer((2, 4, 8, 3), into=np.empty((2, 4, 8, 3), np.float32))
    with pytest.raises(ValueError, match="not contiguous"):
        fused.output_buffer((2, 4, 8, 3), into=np.empty((2, 4, 16, 3), np.uint8)[:, :, ::2])
