"""The ``cuda`` backend: the kernels written once (:mod:`vidmag.backend.kernels`), emitted as CUDA C++ and
compiled at run time by NVRTC straight to a cubin for the device's architecture, on kernelkit's CUDA runtime
(cuda-bindings: the driver API and NVRTC; no compiler at install time).

The primitives and the fused tier are the shared host code of :mod:`vidmag.backend.kernels` over the device
layer :class:`~vidmag.backend.cuda.device.CudaDevice`: stream-ordered device memory, launches in order on the
runtime's non-blocking stream, NumPy frames in and out through page-locked (pinned) staging buffers, copied
asynchronously on that stream. Both streaming pipelines stream frame by frame through the same code as every
other backend (:meth:`vidmag.backend.generic.Backend.open`).

What it has not been: run on an NVIDIA GPU. Every kernel is compiled by NVRTC for sm_80, sm_90 and sm_100 in
the tests, and the whole host path runs there against an emulated driver that runs each launch's OpenCL build
of the same kernel on PoCL; ``scripts/dev/gpu_check.sh`` checks it on a GPU when one is lent.

Importing this package imports no CUDA library; :func:`probe` looks for one, :func:`create` loads it.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["count_clipped", "create", "magnify_owned", "owns", "pinned_by", "probe", "to_host"]


def probe() -> str | None:
    """Why the cuda backend cannot run here, or None when it can.

    kernelkit's probe: cuda-bindings missing, the NVIDIA driver (libcuda) missing, cuInit failing, no device,
    NVRTC missing, or a small kernel that does not build and run on device 0, each with its remedy.
    """
    from vidmag.backend.kernels import backend

    return backend.probe("cuda")


def pinned_by() -> str | None:
    """Always None: kernelkit's CUDA runtime runs device 0 (choose it with ``CUDA_VISIBLE_DEVICES``), and no
    setting of ours names a CUDA device, so "auto" moves past cuda when it cannot run."""
    return None


def create():
    """The backend: the pipelines over the shared fused tier, the shared primitives and the Riesz pipelines of
    :mod:`vidmag.backend.kernels.riesz` (a :class:`~vidmag.backend.phase.PhaseBackend`), on a
    :class:`~vidmag.backend.cuda.device.CudaDevice`."""
    from vidmag.backend.cuda.device import CudaDevice
    from vidmag.backend.kernels import backend

    return backend.create(CudaDevice(), "cuda")


# --- routing of device arrays (see vidmag.backend.registry) -------------------------------------------------
# cupy arrays only: torch tensors, CUDA ones included, belong to the torch backend (which the registry asks
# after this one); vidmag.backend.cuda.arrays.magnify_array takes torch CUDA tensors when called directly.


def owns(frames: Any) -> bool:
    """Whether ``frames`` is a cupy array, decided without importing cupy (``sys.modules``)."""
    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(frames, cupy.ndarray)


def magnify_owned(frames: Any, *, fs: float, pipeline: str, compat: str | None = None, **params: Any) -> Any:
    """:func:`vidmag.backend.cuda.arrays.magnify_array` (the registry's name for it)."""
    from vidmag.backend.cuda.arrays import magnify_array

    return magnify_array(frames, fs=fs, pipeline=pipeline, compat=compat, **params)


def to_host(frames: Any, *, backend: str) -> Any:
    """Always a ``ValueError``: a cupy array lives on a GPU, and another backend would copy it through the
    host."""
    raise ValueError(
        f"frames: a cupy array runs only on backend='cuda' (or 'auto'); backend={backend!r} would copy it "
        "through the host; use cupy.asnumpy(frames) if you mean that"
    )


def count_clipped(frames: Any, row_step: int) -> tuple[int, int]:
    """(bytes at 0 or 255, bytes looked at) in every ``row_step``-th row of a (T, H, W, 3) device array."""
    rows = frames[:, ::row_step]
    return int(((rows == 0) | (rows == 255)).sum()), int(rows.size)
