"""The fused tier (:class:`vidmag.backend.operations.FusedOperations`) over the kernels written once: what the
pipelines of :mod:`vidmag.backend.generic` run on for every device layer of :mod:`vidmag.backend.kernels`.

The tier's kernels are the tap maps, the matrix apply and the band-pass projection of
:class:`~vidmag.backend.kernels.operations.KernelOperations` (which the primitives use too), the two-low-pass
scan, and the render kernel, which resamples the signal along the height, adds it to the frame, converts to
RGB, applies the MIT output handling and rounds in one pass per pixel. Where the device records launches into
batches (Vulkan, Metal), a batch of frames is one submission, sent when the render's bytes are read back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vidmag.backend.kernels.device import DeviceArray
from vidmag.backend.kernels.operations import KernelOperations, Stack, _floats
from vidmag.backend.kernels.templates import MAX_GROUPS
from vidmag.backend.output import checked_into
from vidmag.backend.spatial_taps import Taps
from vidmag.backend.stages import contiguous_span
from vidmag.params import Plan

__all__ = ["CHUNK_BYTES", "KernelFused"]

#: Bytes of input frames one batch holds (as the opencl backend's: 10 baby frames, 17 face frames). The
#: batch's largest float buffer (level 0 reduced along the height) is twice that, well under lavapipe's
#: 128 MiB storage buffers.
CHUNK_BYTES = 16 * 2**20


class KernelFused:
    """The fused tier on one device, over the device's primitives object (its kernels and buffers).

    Parameters
    ----------
    ops : KernelOperations
    name : str, optional
        The backend's name, for error messages.
    """

    #: the backend's name, for error messages
    name = "kernel"
    #: :meth:`render` takes ``into``, a host array the output bytes are read back into (a slot of the
    #: caller's output, :class:`~vidmag.backend.output.HostOutput`): no batch array for ``vidmag.magnify``
    #: to copy from
    renders_into_host = True

    def __init__(self, ops: KernelOperations, name: str | None = None) -> None:
        if name is not None:
            self.name = name
        self.ops = ops
        self.rt = ops.rt
        self._capacity = 0  # frames the reused upload buffer holds

    def chunk_bytes(self) -> int:
        """Bytes of input frames one batch holds (:data:`CHUNK_BYTES`; a device module may read its own)."""
        return CHUNK_BYTES

    def synchronize(self) -> None:
        """Wait for every launch so far (see :meth:`KernelOperations.synchronize`)."""
        self.ops.synchronize()

    # --- frames in and out ------------------------------------------------------------------------------
    def batch_frames(self, plan: Plan) -> int:
        """Frames per batch: :meth:`chunk_bytes` of input, and a batch's largest float buffer (level 0
        reduced along the height: 6 bytes per pixel) within one buffer of the device.

        Raises
        ------
        ValueError
            One frame's buffers exceed the device's largest buffer (``max_bytes``: Vulkan's
            maxStorageBufferRange).
        """
        pixels = plan.height * plan.width
        widest = 4 * 3 * (-(-plan.height // 2)) * plan.width
        if widest > self.rt.max_bytes:
            raise ValueError(
                f"frames of {plan.height} x {plan.width} need float buffers of {widest} bytes, more than one "
                f"buffer of {self.rt.device_name} holds ({self.rt.max_bytes} bytes, {self.rt.limit}): use "
                "backend='opencl', 'torch' or 'cpu', or smaller frames"
            )
        return max(1, min(self.chunk_bytes() // (3 * pixels), self.rt.max_bytes // widest))

    def upload_frames(self, frames: Sequence[np.ndarray] | np.ndarray) -> DeviceArray:
        """Host frames into one device buffer, reused from call to call (grown to the largest batch)."""
        if isinstance(frames, np.ndarray):
            frames = list(frames) if frames.ndim == 4 else [frames]
        if not isinstance(frames, (list, tuple)):
            kind = type(frames).__name__
            raise TypeError(f"the {self.name} backend takes host frames (NumPy uint8), got {kind}")
        span = contiguous_span(frames)
        host = span if span is not None else np.stack([np.asarray(f, dtype=np.uint8) for f in frames])
        self._capacity = max(self._capacity, len(frames))
        target = self.rt.scratch("frames", (self._capacity, *host.shape[1:]), np.uint8)
        self.rt.write(target, np.ascontiguousarray(host, dtype=np.uint8))
        if len(frames) == self._capacity:
            return target
        return self.rt.array_type(self.rt, (len(frames), *host.shape[1:]), np.uint8, target.buffer)

    def download(self, frames: Any) -> np.ndarray:
        return frames if isinstance(frames, np.ndarray) else self.ops.download(frames)

    # --- kernels ----------------------------------------------------------------------------------------
    def map_axis(self, frames: DeviceArray, taps: Taps, axis: int, *, other: DeviceArray | None = None,
                 sign: int = 1, scratch: str | None = None) -> DeviceArray:
        mode = 0 if other is None else (1 if sign > 0 else 2)
        if axis == 1:
            return self.ops.map_cols(frames, taps, other=other, mode=mode, out_key=scratch)
        if axis == 2:
            return self.ops.map_rows(frames, taps, other=other, mode=mode, out_key=scratch)
        raise ValueError(f"axis must be 1 (height) or 2 (width), got {axis!r}")

    def apply_matrix(self, frames: DeviceArray, matrix: np.ndarray) -> DeviceArray:
        return self.ops.apply_matrix(frames, matrix)

    def concat_frames(self, batches: list[DeviceArray]) -> Stack:
        return self.ops.concat_frames(batches)

    def take_frames(self, stack: Stack, start: int, stop: int) -> DeviceArray:
        return self.ops.take_frames(stack, start, stop)

    def bandpass(self, stack: Stack, fl: float, fh: float, fs: float, *, mit: bool, gains: tuple) -> Stack:
        return self.ops.bandpass(stack, fl, fh, fs, mit=mit, gains=gains)

    def scan_state(self, first: DeviceArray) -> tuple[DeviceArray, DeviceArray, DeviceArray]:
        return self.ops.start_state(first)

    def first_order_scan(self, state: tuple, frames: DeviceArray, c1: tuple, c2: tuple,
                         gain: float) -> DeviceArray:
        """The scan in place over ``frames``."""
        return self.ops.scan_into(state, frames, c1, c2, gain)

    def render(self, frames: DeviceArray, signal: DeviceArray | None, taps: Taps | None, c: np.ndarray,
               e: np.ndarray, *, into: np.ndarray | None = None) -> np.ndarray:
        n, H, W, _ = frames.shape
        out = self.rt.scratch("render-out", frames.shape, np.uint8)
        if signal is None:  # no taps: the kernel adds nothing (E is 0 too)
            k, h, signal_buf, iy, wy = 0, 1, self.rt.dummy(), self.rt.dummy(), self.rt.dummy()
        else:
            iy, wy = self.ops.taps(taps)
            k, h, signal_buf = taps.index.shape[1], signal.shape[1], signal
            if signal.shape != (n, taps.n_in, W, 3):
                raise ValueError(f"signal has shape {signal.shape}, expected {(n, taps.n_in, W, 3)}")
        if W % 4 == 0 and H <= MAX_GROUPS:  # rows of whole words: four pixels (three words) per item
            self.rt.launch_grid("render_grid", W // 4, H, n, frames, signal_buf, out, iy, wy, k, H, W, h,
                                *_floats(c), *_floats(e))
        else:
            pixels = n * H * W
            self.rt.launch("render", -(-pixels // 4), frames, signal_buf, out, iy, wy, k, H, W, h, pixels,
                           *_floats(c), *_floats(e))
        return self._finish(out, into)

    def _finish(self, out: DeviceArray, into: np.ndarray | None = None) -> Any:
        """The render's bytes as the pipelines return them: on the host here, in ``into`` when given (a tier
        whose callers hold device arrays returns ``out`` itself, copied out before the next batch reuses
        it)."""
        if into is None:
            return self.rt.download(out)
        return self.rt.download(out, out=checked_into(into, out.shape))
