"""The ``metal`` backend: the kernels written once (:mod:`vidmag.backend.kernels`), emitted as Metal Shading
Language and compiled at run time by the Metal framework through pyobjc, on kernelkit's Metal runtime.

The primitives and the fused tier are the shared host code of :mod:`vidmag.backend.kernels` over the device
layer :class:`~vidmag.backend.metal.device.MetalDevice`: buffers in shared (CPU / GPU) storage, the launches
of a batch of frames encoded into one command buffer. Both streaming pipelines stream frame by frame like
every other backend.

It has never run: it needs macOS and an Apple GPU, and this project's machines are Linux. What is checked is
that every kernel's MSL passes a C++ syntax check against a stub of ``metal_stdlib`` (a weak check: it catches
typos, undeclared names and type errors, not Metal's own rules), and that the same templates' OpenCL build
gives the reference's results on PoCL. Importing this package imports no Metal library.
"""

from __future__ import annotations

__all__ = ["create", "pinned_by", "probe"]


def probe() -> str | None:
    """Why the metal backend cannot run here, or None when it can: kernelkit's probe ("Metal needs macOS"
    elsewhere, pyobjc-framework-Metal missing, no Metal device, or a small kernel that does not build and
    run)."""
    from vidmag.backend.kernels import backend

    return backend.probe("metal")


def pinned_by() -> str | None:
    """Always None: kernelkit's Metal runtime runs the system's default device, which no setting names."""
    return None


def create():
    """The backend: the pipelines over the shared fused tier, the shared primitives and the Riesz pipelines of
    :mod:`vidmag.backend.kernels.riesz` (a :class:`~vidmag.backend.phase.PhaseBackend`), on a
    :class:`~vidmag.backend.metal.device.MetalDevice`."""
    from vidmag.backend.kernels import backend
    from vidmag.backend.metal.device import MetalDevice

    return backend.create(MetalDevice(), "metal")
