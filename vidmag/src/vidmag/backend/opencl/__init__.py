"""The ``opencl`` backend: OpenCL C kernels on any OpenCL device, float32, through kernelkit.

It runs on GPUs of every vendor with an OpenCL driver and, through a software driver such as PoCL, on the
processor (that is how CI runs it). kernelkit chooses the device (one that builds and runs a probe kernel;
``KERNELKIT_OPENCL_DEVICE=PLATFORM:DEVICE`` pins one), compiles the kernel files and caches their binaries.
The primitives (``operations``) are each a launch or three over a whole batch of frames; the fused tier
(``pipelines``: tap maps, matrix apply, band-pass projection, scan and the output kernel) is what the
pipelines of ``vidmag.backend.generic`` run on, keeping each batch on the device and doing the per-pixel work
of each stage in one kernel.

Importing this package imports no OpenCL library; :func:`probe` looks for one, :func:`create` loads it.
"""

from __future__ import annotations

from vidmag.backend import kernelkit_device

__all__ = ["create", "pinned_by", "probe"]


def probe() -> str | None:
    """Why the opencl backend cannot run here, or None when it can.

    kernelkit's probe: a device counts only once a small kernel has been built and run on it, so a driver
    that lists a device and then builds nothing (the PoCL of the pyopencl wheels on an AMD Zen 5) is a
    reason, not a failure in the middle of a run.
    """
    return kernelkit_device.probe("opencl", "pyopencl", "pyopencl is not installed (pip install pyopencl)")


def pinned_by() -> str | None:
    """``"KERNELKIT_OPENCL_DEVICE='...'"`` (``PLATFORM:DEVICE`` indices, as ``clinfo -l`` lists them) when
    that variable is set: "auto" then stops here if OpenCL cannot run, instead of moving on."""
    return kernelkit_device.pinned_by("opencl")


def create():
    """The backend: the pipelines over the fused tier (:class:`OpenCLFused`), :class:`OpenCLOperations` as its
    primitives, the streaming pipelines (streams and whole clips) over the per-level kernels of
    :mod:`vidmag.backend.opencl.streaming`, and the Riesz pipelines from :mod:`vidmag.backend.opencl.riesz`
    (a :class:`~vidmag.backend.phase.PhaseBackend`)."""
    from vidmag.backend.generic import Backend, bind, groups_of
    from vidmag.backend.opencl import riesz
    from vidmag.backend.opencl.operations import OpenCLOperations
    from vidmag.backend.opencl.pipelines import OpenCLFused
    from vidmag.backend.opencl.streaming import FusedFilterState
    from vidmag.backend.phase import PhaseBackend
    from vidmag.backend.stream import Stream, refuse_stream

    class OpenCLBackend(Backend):
        """A :class:`~vidmag.backend.generic.Backend` whose streams (and the whole-clip runs of the
        streaming pipelines, which are streams fed batch by batch) use :class:`FusedFilterState`."""

        def __init__(self, operations, fused):
            whole = {name: self._whole_clip for name in ("laplacian_butterworth", "laplacian_iir")}
            super().__init__("opencl", operations, whole, fused)

        def _stream(self, plan, name, synchronize, stages=None):
            stages = self.stages if stages is None else stages
            state = FusedFilterState(stages, self.fused, plan)
            return Stream(stages, plan, name=name, synchronize=synchronize, state=state)

        def open(self, plan):
            if not plan.streams:
                raise refuse_stream(plan)
            return self._stream(plan, self.name, self._synchronizer())

        def _whole_clip(self, plan, source, into=None):
            # the stream's stages write the output into the caller's array when there is one (`into`)
            stages = self.stages if into is None else self.stages.writing_into(into)
            stream = self._stream(plan, "whole clip", None, stages)  # the run that holds it drains the device
            for group in groups_of(source(), self.stages.batch_frames(plan)):
                for piece in stream.feed(group):
                    yield from piece
            stream.close()

    class OpenCLPhaseBackend(PhaseBackend):
        """The Riesz pipelines' plans to :mod:`~vidmag.backend.opencl.riesz`; every other plan, streams
        included, to the :class:`OpenCLBackend` it wraps."""

        def __init__(self, linear):
            super().__init__(linear, pipelines=riesz.PIPELINES,
                             frames=lambda plan, source: riesz.frames(linear.operations, plan, source),
                             stream=lambda plan: riesz.OpenCLRieszStream(linear.operations, plan),
                             steps=lambda plan: riesz.IdealSteps(riesz.OpenCLRiesz, linear.operations, plan),
                             bounded=("riesz_ideal",))
            self.linear = linear

        def open(self, plan):
            return super().open(plan) if plan.phase else self.linear.open(plan)

    operations = OpenCLOperations()
    fused = OpenCLFused(operations)
    bind(operations, name="opencl", fused=fused)  # the contract's checks (every operation of both tiers)
    return OpenCLPhaseBackend(OpenCLBackend(operations, fused))
