"""A pipeline that ends early (an interrupt, an error, the caller closing it) drains the device's queue before
its buffers are released.

The crash this prevents: Ctrl-C between two launches of the OpenCL backend left kernels running while the
generator's buffers (host memory wrapped as device buffers among them) were freed, and the process died with
SIGSEGV after printing "interrupted". Here the interrupt is raised at a chosen point and the order of
"queue drained" and "buffer released" is recorded.
"""

from __future__ import annotations

import types
import weakref

import numpy as np
import pytest

import vidmag
from vidmag.backend.generic import bind
from vidmag.backend.numpy import NumpyOperations


class _Held:
    """Stands for a device buffer the pipeline's generator holds."""


class _RecordingOperations(NumpyOperations):
    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log

    def synchronize(self) -> None:
        self.log.append("synchronize")


def _backend(log: list[str], interrupt_after: int | None):
    def pipeline(plan, source):
        held = _Held()
        weakref.finalize(held, log.append, "released")
        for i, frame in enumerate(source()):
            if i == interrupt_after:
                raise KeyboardInterrupt  # as if Ctrl-C came between two launches
            yield frame

    return bind(_RecordingOperations(log), name="recording", overrides={"laplacian_iir": pipeline})


PLAN = types.SimpleNamespace(pipeline="laplacian_iir")


def _frames(n: int = 4):
    return lambda: iter(np.zeros((n, 2, 2, 3), np.uint8))


def test_an_interrupt_inside_the_pipeline_drains_before_release():
    log: list[str] = []
    frames = _backend(log, interrupt_after=2).run(PLAN, _frames())
    assert next(frames) is not None and next(frames) is not None
    with pytest.raises(KeyboardInterrupt):
        next(frames)
    assert log[:1] == ["synchronize"]


def test_closing_the_pipeline_early_drains_then_releases():
    log: list[str] = []
    frames = _backend(log, interrupt_after=None).run(PLAN, _frames())
    next(frames)
    frames.close()
    assert log == ["synchronize", "released"]


def test_a_pipeline_that_runs_to_the_end_does_not_wait_again():
    log: list[str] = []
    frames = _backend(log, interrupt_after=None).run(PLAN, _frames())
    assert len(list(frames)) == 4
    assert "synchronize" not in log


def test_operations_without_synchronize_are_run_as_they_are():
    result = iter([])
    backend = bind(NumpyOperations(), name="plain", overrides={"laplacian_iir": lambda plan, source: result})
    assert backend.run(PLAN, _frames()) is result


def test_ctrl_c_between_the_output_launch_and_its_wait_drains_the_opencl_queue(
    monkeypatch, require_backend, clip, synthetic_params
):
    # The moment of the crash: the fused output kernel is enqueued, writing into a fresh host array
    # (USE_HOST_PTR), and the interrupt arrives before the wait for it. The array must outlive the kernel.
    import pyopencl as cl

    from vidmag.backend.opencl import pipelines

    _, backend = require_backend("opencl")
    log: list[str] = []
    device = backend.operations.rt
    drain = device.synchronize

    def synchronize():
        log.append("synchronize")
        drain()

    class Interrupting:
        def __getattr__(self, name):
            return getattr(cl, name)

        @staticmethod
        def Buffer(context, flags, size=0, hostbuf=None):  # noqa: N802 (pyopencl's name)
            if hostbuf is not None and flags & cl.mem_flags.WRITE_ONLY:
                weakref.finalize(hostbuf, log.append, "host array freed")
            return cl.Buffer(context, flags, size, hostbuf)

        @staticmethod
        def enqueue_map_buffer(*args, **kwargs):
            log.append("interrupt")
            raise KeyboardInterrupt

    monkeypatch.setattr(device, "synchronize", synchronize)
    monkeypatch.setattr(pipelines, "cl", Interrupting())
    with pytest.raises(KeyboardInterrupt):
        vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="opencl",
                       **synthetic_params["laplacian_iir"])
    assert log[:2] == ["interrupt", "synchronize"], log  # drained before anything was let go
    monkeypatch.undo()
    # and the backend goes on working afterwards
    out = vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="opencl",
                         **synthetic_params["laplacian_iir"])
    assert out.shape == clip.shape
