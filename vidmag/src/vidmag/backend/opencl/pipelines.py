"""The ``opencl`` backend's fused tier (:class:`vidmag.backend.operations.FusedOperations`): what the
pipelines of :mod:`vidmag.backend.generic` run on here.

The tier's kernels are the tap maps, the matrix apply and the band-pass projection of
:class:`~vidmag.backend.opencl.operations.OpenCLOperations` (which the primitives use too), the two-low-pass
scan (``first_order_scan8``, hand-vectorised, with a scalar tail) and the output kernel, which resamples the
signal along the height, adds it to the frame, converts to RGB, applies the MIT output handling and rounds in
one pass per pixel. Frames reach the device without a copy where they lie one after another in host memory,
and the output kernel writes straight into a host array.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from vidmag.backend.opencl.operations import OpenCLOperations, dense, sized_kernel
from vidmag.backend.output import checked_into
from vidmag.backend.spatial_taps import Taps
from vidmag.backend.stages import contiguous_span
from vidmag.params import Plan

#: Bytes of input frames one batch holds on a GPU (10 baby frames, 17 face frames). The device also holds that
#: batch's float pyramid (about 8 times as much, in scratch arrays reused from batch to batch and shared
#: between stages where shapes allow). 16 MiB ran face and baby 5 to 15% faster than 8 or 12 MiB (fewer
#: launches per frame).
CHUNK_BYTES = 16 * 2**20

#: The same on a CPU device (PoCL): there the device's buffers are the process's own memory, so the batch's
#: pyramid counts in its resident set. Measured 2026-12-03 with PoCL 3.0 on a 2-core Zen 3, laplacian_iir on
#: 150 baby frames already decoded: the run's peak over the frames 217 MB at 16 MiB, 141 MB at 8, 81 MB at 4,
#: for 0.93 / 0.99 / 1.00 s (the H.264 encoder of a file run is 4 times slower than either, so the file run
#: does not notice). `vidmag magnify --preset baby` is held to 500 MB, and the 136 MB decide it.
CHUNK_BYTES_CPU = 4 * 2**20

#: The same on a CPU device for gaussian_ideal, whose batch holds far less than a Laplacian one: its two float
#: images (the down stack after its vertical pass, the widened signal) are 2^level times shorter than the
#: frames, about half the frames' bytes at the face preset's level 4, where the Laplacian pipelines hold
#: about 8 times the frames' bytes. Larger batches mean fewer launches, each of which costs PoCL a fixed
#: overhead: measured 2026-12-06 on the 2-core Zen 4 (PoCL 3.1), the face preset on 301 decoded face.mp4
#: frames took 0.42 s of processor time at 4 MiB, 0.36 at 16, 0.35 at 32 (best of 8 runs, machine shared).
CHUNK_BYTES_CPU_GAUSSIAN = 16 * 2**20


def _is_diagonal(m: np.ndarray) -> bool:
    # C under the exact inverse is the identity / 255 up to float64 rounding (off-diagonal terms ~1e-19)
    return bool(np.all(np.abs(m - np.diag(np.diag(m))) < 1e-12 * np.abs(np.diag(m)).max()))


def _scalars(*matrices: np.ndarray) -> list[np.float32]:
    return [np.float32(v) for m in matrices for v in np.asarray(m, dtype=np.float64).ravel()]


class OpenCLFused:
    """The fused tier on one OpenCL device, over the device's primitives object (its kernels and buffers).

    Parameters
    ----------
    ops : OpenCLOperations
    """

    #: :meth:`render` takes ``into``, a host array to write the output bytes into (see
    #: :class:`vidmag.backend.output.HostOutput`)
    renders_into_host = True

    def __init__(self, ops: OpenCLOperations) -> None:
        self.ops = ops
        self.rt = ops.rt
        self._capacity = 0  # frames the reused upload buffer holds
        # Buffers over the caller's frames (USE_HOST_PTR), with those frames, until the queue has finished
        # with them: the caller may drop its frames (decoded ones: the next group replaces them) while
        # kernels enqueued on them still read them, and neither pyopencl nor the driver keeps the host
        # memory alive. Released once the queue has been waited for (finish_output, synchronize).
        self._in_flight: list[tuple[Any, list[np.ndarray]]] = []

    def synchronize(self) -> None:
        """Wait for every launch so far (see :meth:`OpenCLOperations.synchronize`), then let go of the
        caller's frames that launches read."""
        self.ops.synchronize()
        self._in_flight.clear()

    # --- frames in and out ------------------------------------------------------------------------------
    def batch_frames(self, plan: Plan) -> int:
        if not self.rt.runtime.on_cpu:
            chunk = CHUNK_BYTES
        else:  # read at every call: tests set smaller batches here
            chunk = CHUNK_BYTES_CPU_GAUSSIAN if plan.pipeline == "gaussian_ideal" else CHUNK_BYTES_CPU
        return max(1, chunk // (plan.height * plan.width * 3))

    def upload_frames(self, frames: Sequence[np.ndarray]) -> cla.Array:
        """Host frames on the device. Frames that lie one after another in memory (the slices of a clip array
        that ``vidmag.magnify`` hands over, or a batch pushed to a stream) become a buffer over that memory
        (``USE_HOST_PTR``): no copy on a device that shares the host's memory, such as PoCL's; those frames
        are kept alive until the queue has been waited for. Others (decoded frames) are copied into one
        device buffer reused from call to call."""
        if isinstance(frames, np.ndarray):
            frames = list(frames) if frames.ndim == 4 else [frames]
        if not isinstance(frames, (list, tuple)):
            raise TypeError(
                f"the opencl backend takes host frames (NumPy uint8), got {type(frames).__name__}"
            )
        span = contiguous_span(frames)
        if span is not None:
            flags = cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR
            buffer = cl.Buffer(self.rt.context, flags, hostbuf=span)
            # every frame of the span stays alive until the queue is done with it (span's own base is the
            # first frame alone)
            self._in_flight.append((buffer, list(frames)))
            return cla.Array(self.rt.queue, span.shape, np.uint8, data=buffer)
        # one buffer, grown to the largest batch so far (a stream's pushes vary in size)
        self._capacity = max(self._capacity, len(frames))
        target = self.ops.scratch("frames", (self._capacity, *frames[0].shape), np.uint8)
        frame_bytes = frames[0].nbytes
        for i, frame in enumerate(frames):
            cl.enqueue_copy(
                self.rt.queue, target.data, np.ascontiguousarray(frame), dst_offset=i * frame_bytes
            )
        return target if len(frames) == self._capacity else target[: len(frames)]

    def download(self, frames: Any) -> np.ndarray:
        return frames if isinstance(frames, np.ndarray) else self.ops.download(frames)

    # --- kernels ----------------------------------------------------------------------------------------
    def map_axis(
        self,
        frames: cla.Array,
        taps: Taps,
        axis: int,
        *,
        other: cla.Array | None = None,
        sign: int = 1,
        scratch: str | None = None,
    ) -> cla.Array:
        if axis == 1:  # the vertical kernel adds or subtracts `other` in the same pass
            mode = 0 if other is None else (1 if sign > 0 else 2)
            return self.ops.map_cols(frames, taps, other=other, mode=mode, out_key=scratch)
        if axis != 2:
            raise ValueError(f"axis must be 1 (height) or 2 (width), got {axis!r}")
        out = self.ops.map_rows(frames, taps, out_key=scratch if other is None else None)
        if other is None:
            return out
        return self.ops.add(other, out) if sign > 0 else self.ops.subtract(other, out)

    def apply_matrix(self, frames: cla.Array, matrix: np.ndarray) -> cla.Array:
        return self.ops.apply_matrix(frames, matrix)

    def concat_frames(self, batches: list[cla.Array]) -> cla.Array:
        return self.ops.concat_frames(batches)

    def take_frames(self, stack: cla.Array, start: int, stop: int) -> cla.Array:
        return self.ops.take_frames(stack, start, stop)

    def bandpass(
        self, stack: cla.Array, fl: float, fh: float, fs: float, *, mit: bool, gains: tuple
    ) -> cla.Array:
        return self.ops.bandpass(stack, fl, fh, fs, mit=mit, gains=gains)

    def scan_state(self, first: cla.Array) -> tuple[cla.Array, cla.Array, cla.Array]:
        flat = dense(first).reshape(first.size)
        return (flat, flat.copy(), flat.copy())

    def first_order_scan(
        self, state: tuple, frames: cla.Array, c1: tuple, c2: tuple, gain: float
    ) -> cla.Array:
        """The scan in place over ``frames``: the hand-vectorised kernel takes 8 samples per work item, the
        scalar one, started at an offset, the rest."""
        x = dense(frames)
        s1, s2, xp = state
        n, p = x.shape[0], s1.size
        if n == 0:
            return x
        coefficients = [np.float32(c) for c in (*c1, *c2)]
        args = (x.data, s1.data, s2.data, xp.data, np.int32(n), np.int64(p), *coefficients)
        g = np.float32(gain)
        if p // 8:
            self.rt.launch("temporal", "first_order_scan8", (p // 8,), *args, g)
        if p % 8:
            tail = p - p % 8
            self.rt.launch("temporal", "first_order_scan", (p % 8,), *args, g, g, g, offset=(tail,))
        return x

    def render(
        self,
        frames: cla.Array,
        signal: cla.Array | None,
        taps: Taps | None,
        c: np.ndarray,
        e: np.ndarray,
        *,
        into: np.ndarray | None = None,
    ) -> np.ndarray:
        """The contract's render; ``into``: a C-contiguous uint8 host array of the output's shape to write
        the bytes into (returned), instead of a fresh one."""
        frames = dense(frames)
        n, H, W, _ = frames.shape
        if signal is None:  # no signal: a zero row resampled to every row, with E = 0
            signal = self.ops.scratch("render-zeros", (n, 1, W, 3), np.float32).fill(0)
            taps = Taps(np.zeros((H, 1), np.int32), np.zeros((H, 1)), 1)
        signal = dense(signal)
        # the kernel writes straight into a host array, the caller's or a fresh one (USE_HOST_PTR: on a
        # device sharing the host's memory, such as PoCL's, there is no copy back); the map below makes its
        # contents valid on the host
        host, out = self.output_buffer(frames.shape, into=into)
        iy, wy = self.ops.taps(taps)
        k = taps.index.shape[1]
        # frames at least 8 pixels wide take the hand-vectorised kernel (8 pixels per work item), in its
        # cheaper form when C is diagonal and the signal is already RGB (E the identity)
        vector = W >= 8
        if not vector:
            name = "output_cols"
        elif _is_diagonal(c) and np.array_equal(e, np.eye(3)):
            name = "output_cols8_rgb"
        else:
            name = "output_cols8"
        if host.size:
            self.rt.launch(
                "fused",
                sized_kernel(name, k),
                (-(-W // 8) if vector else W, H, n),
                frames.data,
                signal.data,
                out,
                iy,
                wy,
                np.int32(k),
                np.int32(H),
                np.int32(W),
                np.int32(signal.shape[1]),
                *_scalars(c, e),
            )
        return self.finish_output(host, out)

    def output_buffer(
        self, shape: tuple[int, ...], *, into: np.ndarray | None = None
    ) -> tuple[np.ndarray, Any]:
        """A host uint8 array of ``shape`` (``into``, or a fresh one) and a device buffer over it
        (``USE_HOST_PTR``: on a device that shares the host's memory, such as PoCL's, kernels write straight
        into the array).

        The array must outlive every kernel enqueued on the buffer; :meth:`finish_output` waits for them.

        Raises
        ------
        ValueError
            ``into`` is not a C-contiguous uint8 array of ``shape``.
        """
        host = np.empty(shape, np.uint8) if into is None else checked_into(into, shape)
        flags = cl.mem_flags.WRITE_ONLY | cl.mem_flags.USE_HOST_PTR
        return host, cl.Buffer(self.rt.context, flags, hostbuf=host)

    def finish_output(self, host: np.ndarray, out: Any) -> np.ndarray:
        """Wait for the kernels writing ``out`` (from :meth:`output_buffer`) and make ``host`` valid."""
        mapped, _ = cl.enqueue_map_buffer(
            self.rt.queue, out, cl.map_flags.READ, 0, host.shape, host.dtype, is_blocking=True
        )
        mapped.base.release()
        # the in-order queue has finished every launch before the map: frames read so far can go
        self._in_flight.clear()
        return host
