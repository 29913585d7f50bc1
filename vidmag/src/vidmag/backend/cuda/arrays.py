"""Clips held in CUDA device memory (cupy arrays, torch CUDA tensors) magnified on the device, on the caller's
stream, with no copy through the host.

The clip is read where it is: each batch of frames is copied device to device into an array of the backend's
own (4-byte aligned, its size rounded up to whole 32-bit words, which is what the kernels read), the pipeline
runs over the shared fused tier inside ``runtime.session`` on the caller's current stream (cupy's or torch's),
and each output batch is copied device to device into one array of the caller's library, allocated on the
same device. Only uint8 (T, H, W, 3) C-contiguous clips are taken.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from kernelkit import cuda as kk
from vidmag.backend.kernels.device import DeviceArray
from vidmag.backend.kernels.fused import KernelFused

__all__ = ["DeviceClip", "magnify_array"]


def library_of(frames: Any) -> str | None:
    """``"cupy"`` for a cupy array, ``"torch"`` for a torch CUDA tensor, else None (through ``sys.modules``
    only: a library never imported cannot have made ``frames``)."""
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(frames, cupy.ndarray):
        return "cupy"
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(frames, torch.Tensor) and frames.is_cuda:
        return "torch"
    return None


class DeviceClip:
    """Frames ``start:stop`` of a caller's device clip, sliced along frames like a list (what the pipelines'
    groups are); :meth:`upload` copies them into a fresh array of the backend's."""

    def __init__(self, ptr: int, frame_shape: tuple[int, int, int], start: int, stop: int) -> None:
        self.ptr, self.frame_shape, self.start, self.stop = ptr, frame_shape, start, max(start, stop)

    def __len__(self) -> int:
        return self.stop - self.start

    def __getitem__(self, item: slice) -> DeviceClip:
        if not isinstance(item, slice) or item.step not in (None, 1):
            raise TypeError("a device clip is sliced along frames only")
        start, stop, _ = item.indices(len(self))
        return DeviceClip(self.ptr, self.frame_shape, self.start + start, self.start + stop)

    def upload(self, device: Any) -> DeviceArray:
        # a fresh array, not a reused one: frame 0 of a stream is returned as its uploaded batch, and must
        # outlive the next upload
        out = device.empty((len(self), *self.frame_shape), np.uint8)
        nbytes = out.nbytes
        if nbytes:
            frame_bytes = int(np.prod(self.frame_shape))
            rt = device.runtime
            kk.check(kk.cu.cuMemcpyDtoDAsync(kk.device_pointer(out.buffer, rt.ordinal),
                                             self.ptr + self.start * frame_bytes, nbytes, rt.stream))
        return out


class DeviceFused(KernelFused):
    """The shared fused tier with device clips in and device batches out (the render's bytes stay on the
    device; the caller copies each batch out before the next is rendered)."""

    def upload_frames(self, frames: Any) -> Any:
        if isinstance(frames, DeviceClip):
            return frames.upload(self.rt)
        return super().upload_frames(frames)

    #: the output stays on the device: no host array to write into
    renders_into_host = False

    def download(self, frames: Any) -> Any:
        return frames

    def _finish(self, out: DeviceArray, into: np.ndarray | None = None) -> Any:
        return out


def _empty(library: str, frames: Any, shape: tuple[int, ...]) -> Any:
    if library == "cupy":
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(frames.device.id):
            return cupy.empty(shape, dtype=cupy.uint8)
    torch = sys.modules["torch"]
    return torch.empty(shape, dtype=torch.uint8, device=frames.device)


def _stream(library: str, frames: Any) -> Any:
    """The caller's current stream on the clip's device, as a CUstream."""
    if library == "cupy":
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(frames.device.id):
            ptr = cupy.cuda.get_current_stream().ptr
    else:
        ptr = sys.modules["torch"].cuda.current_stream(frames.device).cuda_stream
    return kk.cu.CUstream(int(ptr))


def _contiguous(library: str, frames: Any) -> bool:
    if library == "cupy":
        return bool(frames.flags.c_contiguous)
    return bool(frames.is_contiguous())


def magnify_array(frames: Any, *, fs: float, pipeline: str, compat: str | None = None, **params: Any) -> Any:
    """Magnify a clip held in CUDA device memory; the result is an array of the same library on the same
    device, computed on the caller's current stream with no copy through the host.

    Parameters
    ----------
    frames : cupy.ndarray or torch.Tensor, uint8, shape (T, H, W, 3), C-contiguous, on CUDA device 0
        RGB frames.
    fs, pipeline, compat, **params
        As :func:`vidmag.magnify`.

    Returns
    -------
    cupy.ndarray or torch.Tensor, uint8, shape (T', H, W, 3)
        T' = T under the default semantics; T - 10 under ``compat="mit"`` (T - 11 for laplacian_ideal).

    Raises
    ------
    TypeError
        ``frames`` is neither a cupy array nor a torch CUDA tensor.
    ValueError
        Not uint8 (T, H, W, 3) C-contiguous, empty, on another device, or bad parameters.
    vidmag.backend.BackendUnavailableError
        The cuda backend cannot run here (with the reason).

    See Also
    --------
    vidmag.magnify : routes cupy arrays here under ``backend="auto"`` or ``"cuda"``.

    Examples
    --------
    >>> from vidmag.backend.cuda.arrays import library_of
    >>> import numpy as np
    >>> library_of(np.zeros((2, 8, 8, 3), np.uint8)) is None   # host arrays go through vidmag.magnify
    True
    """
    from vidmag._reference.pipelines import MIT_UNREAD_TAIL
    from vidmag.backend import registry
    from vidmag.backend.generic import PIPELINES
    from vidmag.backend.stages import FusedStages
    from vidmag.params import make_plan

    library = library_of(frames)
    if library is None:
        raise TypeError(f"frames must be a cupy array or a torch CUDA tensor, got {type(frames).__name__}")
    shape = tuple(int(s) for s in frames.shape)
    if len(shape) != 4 or shape[-1] != 3 or str(frames.dtype).rsplit(".", 1)[-1] != "uint8":
        raise ValueError(f"frames must be uint8 (T, H, W, 3), got {frames.dtype} {shape}")
    if not _contiguous(library, frames):
        raise ValueError("frames must be C-contiguous (.contiguous() in torch, cupy.ascontiguousarray)")
    T = shape[0]
    if T == 0:
        raise ValueError("frames: the clip is empty (T = 0)")
    plan = make_plan(pipeline, fs=fs, compat=compat, params=params, frame_shape=shape[1:], n_frames=T)
    backend = registry.load("cuda")
    device = backend.operations.rt
    rt = device.runtime
    ptr = kk.device_pointer(frames, rt.ordinal)  # raises for a clip on another device
    kept = T - MIT_UNREAD_TAIL if plan.mit else T
    stages = FusedStages(DeviceFused(backend.operations, name="cuda"))
    size = stages.batch_frames(plan)
    clip = DeviceClip(ptr, shape[1:], 0, kept)

    def groups(skip: int) -> Iterator[DeviceClip]:
        return (clip[s : s + size] for s in range(skip, kept, size))

    out = _empty(library, frames, (max(kept, 1), *shape[1:]))
    out_ptr = kk.device_pointer(out, rt.ordinal)
    frame_bytes = int(np.prod(shape[1:]))
    written = 0
    with rt.session(_stream(library, frames)):
        try:
            for batch in PIPELINES[plan.pipeline](stages, plan, groups):
                n = batch.shape[0]
                if n:
                    kk.check(kk.cu.cuMemcpyDtoDAsync(out_ptr + written * frame_bytes,
                                                     kk.device_pointer(batch.buffer, rt.ordinal),
                                                     n * frame_bytes, rt.stream))
                written += n
        except BaseException:
            rt.synchronize()  # nothing of ours in flight on the caller's stream once we return
            raise
    return out[:written]
