"""What the vulkan backend adds to the conformance suites (which cover its numbers): the device's buffer limit
(stacks in pieces, large frames refused), launches batched into few submissions, an interrupted run drained,
the probe's reasons, and a package import that loads no Vulkan library."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import vidmag
from vidmag.backend import generic
from vidmag.params import make_plan

PARAMS = {
    "gaussian_ideal": dict(alpha=20.0, level=2, fl=1.5, fh=2.5, chrom_attenuation=0.5),
    "laplacian_ideal": dict(alpha=10.0, lambda_c=8.0, fl=1.5, fh=2.5, chrom_attenuation=0.5),
    "laplacian_iir": dict(alpha=10.0, lambda_c=8.0, r1=0.4, r2=0.05, chrom_attenuation=0.5),
}


@pytest.fixture
def vulkan(require_backend):
    return require_backend("vulkan")[1]


def _within_one(got, expected):
    assert got.shape == expected.shape
    assert np.abs(got.astype(np.int16) - expected.astype(np.int16)).max() <= 1


@pytest.mark.parametrize("pipeline", ["gaussian_ideal", "laplacian_ideal"])
@pytest.mark.parametrize("tier", ["fused", "primitives"])
def test_stacks_larger_than_one_buffer_are_cut_into_pieces(pipeline, tier, vulkan, clip, monkeypatch):
    """With pieces of stacks capped at 6800 bytes (a few dozen values each, not a multiple of 3: the
    per-channel gains must follow each piece's offset), the ideal pipelines still match the reference."""
    monkeypatch.setattr(vulkan.operations, "stack_bytes", 6800)
    runner = vulkan if tier == "fused" else generic.bind(vulkan.operations, name="vulkan-primitives")
    plan = make_plan(pipeline, fs=30.0, compat=None, params=PARAMS[pipeline], frame_shape=clip.shape[1:])
    # one stack, the fused tier's level-1 bands: 24 frames x 24 x 32 x 3 values
    stack = vulkan.operations.concat_frames([vulkan.operations.rt.to_device(np.ones((24, 24, 32, 3)))])
    assert len(stack.pieces) > 1 and stack.pieces[1][0] % 3 != 0
    if tier == "fused":
        got = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend="vulkan", **PARAMS[pipeline])
    else:
        got = np.stack(list(runner.run(plan, lambda: iter(clip))))
    monkeypatch.undo()
    expected = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend="cpu", **PARAMS[pipeline])
    _within_one(got, expected)


def test_frames_too_large_for_one_buffer_are_refused_up_front(vulkan, clip, monkeypatch):
    monkeypatch.setattr(vulkan.operations.rt, "max_bytes", 4096)
    with pytest.raises(ValueError, match="maxStorageBufferRange"):
        vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="vulkan", **PARAMS["laplacian_iir"])


def test_a_batch_of_frames_is_one_submission(vulkan, clip, monkeypatch):
    """The launches of a batch (about 30 for laplacian_iir) go to the device together: one submission to
    upload the frames' bytes after, and one for the rest when the render's bytes are read back."""
    from vidmag.backend.vulkan import fused

    runtime = vulkan.operations.rt.runtime
    submissions = []
    original = type(runtime)._submit_and_wait

    def counting(self):
        submissions.append(self._dispatches)
        return original(self)

    monkeypatch.setattr(fused, "CHUNK_BYTES", 6 * clip[0].nbytes)
    monkeypatch.setattr(type(runtime), "_submit_and_wait", counting)
    vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="vulkan", **PARAMS["laplacian_iir"])
    batches = len(clip) // 6
    busy = [n for n in submissions if n]
    assert len(busy) <= batches + 1, submissions
    assert sum(busy) >= 20 * batches


def test_an_interrupted_run_is_drained_and_the_next_one_is_right(vulkan, clip, monkeypatch):
    """Ctrl-C between two launches: the run wrapper's synchronize() submits what was recorded and waits; no
    batch is left open on the runtime, and the next run gives the reference's output."""
    device = vulkan.operations.rt
    calls = {"n": 0}
    enqueue = type(device)._enqueue  # where every launch is recorded, flat or over the 3-D grid

    def interrupting(self, *args):
        calls["n"] += 1
        if calls["n"] == 40:
            raise KeyboardInterrupt
        return enqueue(self, *args)

    monkeypatch.setattr(type(device), "_enqueue", interrupting)
    with pytest.raises(KeyboardInterrupt):
        vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="vulkan", **PARAMS["laplacian_iir"])
    monkeypatch.undo()
    assert device._batch is None and not device.runtime._recording and not device.runtime._in_flight
    got = vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="vulkan", **PARAMS["laplacian_iir"])
    expected = vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="cpu",
                              **PARAMS["laplacian_iir"])
    _within_one(got, expected)


def test_the_probe_is_kernelkits_and_names_the_remedy(monkeypatch):
    import importlib.util

    from vidmag.backend import vulkan

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "vulkan" else real(name, *a))
    assert "pip install vulkan" in vulkan.probe()
    monkeypatch.undo()
    kernelkit_vulkan = pytest.importorskip("kernelkit.vulkan")
    monkeypatch.setattr(kernelkit_vulkan, "probe", lambda: "no device, says kernelkit")
    assert vulkan.probe() == "no device, says kernelkit"


def test_a_pin_is_reported(monkeypatch):
    from vidmag.backend import vulkan

    monkeypatch.setenv("KERNELKIT_VULKAN_DEVICE", "3")
    assert vulkan.pinned_by() == "KERNELKIT_VULKAN_DEVICE='3'"
    monkeypatch.setenv("KERNELKIT_VULKAN_DEVICE", " ")
    assert vulkan.pinned_by() is None


def test_importing_the_backend_loads_no_vulkan_library():
    code = (
        "import sys, vidmag.backend.vulkan as v; assert callable(v.probe) and callable(v.create);"
        "bad = [m for m in ('vulkan', 'kernelkit.vulkan') if m in sys.modules]; print(bad);"
        "sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
