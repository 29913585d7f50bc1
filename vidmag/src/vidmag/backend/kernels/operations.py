"""The primitives of :class:`vidmag.backend.operations.Operations` over the kernels written once
(:mod:`vidmag.backend.kernels.templates`), on any device layer of :mod:`vidmag.backend.kernels.device`.

Every primitive is one to three launches over the whole batch of frames it is given. The spatial filters are
one gather kernel per axis driven by the tap tables of :mod:`vidmag.backend.spatial_taps`, as in the OpenCL
backend, so the border rules live in one place, on the host, in float64.

Stacks of frames (what :meth:`KernelOperations.concat_frames` makes, for the ideal band-pass) are
:class:`Stack` objects: the frames' values cut into pieces of whole time series (a range of pixel values over
every frame), each piece a buffer under the device's largest buffer (``max_bytes``: Vulkan's
``maxStorageBufferRange``, 128 MiB on lavapipe; 2 GiB elsewhere). Every series is filtered on its own, so the
band-pass runs piece by piece and a clip's stack may be far larger than one buffer can be.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vidmag._reference.colour import RGB_TO_YIQ, YIQ_TO_RGB_EXACT, YIQ_TO_RGB_MIT
from vidmag.backend import spatial_taps
from vidmag.backend.bandpass_basis import bandpass_basis
from vidmag.backend.kernels.device import DeviceArray, KernelDevice
from vidmag.backend.kernels.templates import MAX_GROUPS, ROWS_PER_ITEM
from vidmag.backend.spatial_taps import Taps

__all__ = ["KernelOperations", "Stack"]


def _floats(m: np.ndarray) -> list[float]:
    return [float(v) for v in np.asarray(m, dtype=np.float64).ravel()]


class Stack:
    """T frames of shape ``frame_shape`` held as pieces of whole time series.

    Attributes
    ----------
    frames : int
        T.
    frame_shape : tuple
        (h, w, 3).
    pieces : list of (int, DeviceArray)
        (first value, array (T, values)) of each piece, in order; the pieces' values cover a frame's values.
    """

    def __init__(self, frames: int, frame_shape: tuple[int, ...],
                 pieces: list[tuple[int, DeviceArray]]) -> None:
        self.frames, self.frame_shape, self.pieces = frames, tuple(frame_shape), pieces

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.frames, *self.frame_shape)

    def get(self) -> np.ndarray:
        """The whole stack on the host, (T, *frame_shape) float32."""
        values = int(np.prod(self.frame_shape))
        host = np.empty((self.frames, values), np.float32)
        for p0, piece in self.pieces:
            host[:, p0 : p0 + piece.shape[1]] = piece.get()
        return host.reshape(self.shape)


class KernelOperations:
    """The primitives on one device of :mod:`vidmag.backend.kernels.device` (float32 for everything but the
    bytes).

    Parameters
    ----------
    device : KernelDevice
        The device: vidmag's kernels, launches and arrays over a kernelkit runtime.
    """

    #: Float values per batch of frames of the generic pipelines: 16 Mi floats (64 MiB, half of lavapipe's
    #: largest storage buffer), 10 baby frames.
    batch_values = 2**24

    def __init__(self, device: KernelDevice) -> None:
        #: the device: vidmag's kernels, launches and arrays over a kernelkit runtime
        self.rt = device
        #: bytes of one piece of a :class:`Stack` at most (None: the device's largest storage buffer)
        self.stack_bytes: int | None = None

    def synchronize(self) -> None:
        """Wait until every launch recorded so far has finished (the pipelines call it when they end early,
        before they let go of the buffers that work uses)."""
        self.rt.synchronize()

    # --- tables -----------------------------------------------------------------------------------------
    def taps(self, taps: Taps) -> tuple[Any, Any]:
        """A tap table on the device: (index int32, weight float32) buffers."""
        return self.rt.constant(taps.index, np.int32), self.rt.constant(taps.weight, np.float32)

    def _output(self, shape: tuple[int, ...], key: str | None) -> DeviceArray:
        return self.rt.empty(shape) if key is None else self.rt.scratch(key, shape)

    # --- one-axis maps ----------------------------------------------------------------------------------
    def map_rows(self, frames: DeviceArray, taps: Taps, *, other: DeviceArray | None = None, mode: int = 0,
                 out_key: str | None = None) -> DeviceArray:
        """Apply a tap table along the width: (n, h, w, 3) uint8 or float32 -> (n, h, taps.n_out, 3) float32.

        ``mode`` 1 returns ``other + map(frames)``, 2 ``other - map(frames)`` (``other`` has the output's
        shape), in the same launch; ``out_key`` writes the result into that scratch array.
        """
        n, h, w, _ = frames.shape
        if w != taps.n_in:
            raise ValueError(f"map of {taps.n_in} samples applied to width {w}")
        out = self._output((n, h, taps.n_out, 3), out_key)
        other = self._other(other, out, mode)
        idx, wt = self.taps(taps)
        kind = "u8" if frames.dtype == np.uint8 else "f32"
        blocks = -(-h // ROWS_PER_ITEM)
        if blocks <= MAX_GROUPS:  # the 3-D grid holds at most MAX_GROUPS blocks of rows
            self.rt.launch_grid(f"rows_grid_{kind}", taps.n_out, blocks, n, frames, out, other, idx, wt,
                                taps.index.shape[1], h, w, mode)
        else:
            self.rt.launch(f"rows_{kind}", n * h * taps.n_out, frames, out, other, idx, wt,
                           taps.index.shape[1], w, taps.n_out, mode)
        return out

    def map_cols(self, frames: DeviceArray, taps: Taps, *, other: DeviceArray | None = None, mode: int = 0,
                 out_key: str | None = None) -> DeviceArray:
        """Apply a tap table along the height: (n, h, w, 3) uint8 or float32 -> (n, taps.n_out, w, 3) float32;
        ``mode``, ``other`` and ``out_key`` as in :meth:`map_rows`."""
        n, h, w, _ = frames.shape
        if h != taps.n_in:
            raise ValueError(f"map of {taps.n_in} samples applied to height {h}")
        out = self._output((n, taps.n_out, w, 3), out_key)
        other = self._other(other, out, mode)
        idx, wt = self.taps(taps)
        k, w3 = taps.index.shape[1], w * 3
        kind = "u8" if frames.dtype == np.uint8 else "f32"
        lanes = 16 if kind == "u8" else 4  # values per item of the grid kernel: a uint4 of bytes, a float4
        if w3 % lanes == 0 and taps.n_out <= MAX_GROUPS:
            self.rt.launch_grid(f"cols_grid_{kind}", w3 // lanes, taps.n_out, n, frames, out, other, idx, wt,
                                k, h, taps.n_out, mode)
        else:  # rows that are not whole vectors (small pyramid levels, odd widths)
            self.rt.launch(f"cols_{kind}", n * taps.n_out * w3, frames, out, other, idx, wt, k, h, taps.n_out,
                           w3, mode)
        return out

    def _other(self, other: DeviceArray | None, out: DeviceArray, mode: int) -> Any:
        if mode == 0:
            return self.rt.dummy()
        if other is None or other.shape != out.shape:
            shape = None if other is None else other.shape
            raise ValueError(f"other has shape {shape}, expected {out.shape}")
        return other

    # --- host <-> device --------------------------------------------------------------------------------
    def upload(self, frames: np.ndarray) -> DeviceArray:
        return self.rt.to_device(np.asarray(frames, dtype=np.uint8))

    def download(self, frames: DeviceArray) -> np.ndarray:
        return frames if isinstance(frames, np.ndarray) else self.rt.download(frames)

    # --- colour -----------------------------------------------------------------------------------------
    def apply_matrix(self, frames: DeviceArray, matrix: np.ndarray) -> DeviceArray:
        """Each pixel times a 3 x 3 matrix; uint8 (taken as 0 .. 255) or float32 in, float32 out."""
        out = self.rt.empty(frames.shape)
        kind = "u8" if frames.dtype == np.uint8 else "f32"
        self.rt.launch(f"matrix_{kind}", frames.size // 3, frames, out, *_floats(matrix))
        return out

    def rgb_to_yiq(self, frames: DeviceArray) -> DeviceArray:
        return self.apply_matrix(frames, RGB_TO_YIQ / 255.0)

    def yiq_to_rgb_uint8(self, frames: DeviceArray, *, mit: bool) -> DeviceArray:
        out = self.rt.empty(frames.shape, np.uint8)
        pixels = frames.size // 3
        matrix = YIQ_TO_RGB_MIT if mit else YIQ_TO_RGB_EXACT
        self.rt.launch("to_bytes", -(-pixels // 4), frames, out, *_floats(matrix), pixels)
        return out

    # --- space ------------------------------------------------------------------------------------------
    # four look-alike separable maps, kept apart: each takes its two passes in the reference's order (rows
    # or columns first), which the float32 results depend on
    def pyramid_reduce(self, frames: DeviceArray) -> DeviceArray:
        h, w = frames.shape[1:3]
        rows = self.map_rows(frames, spatial_taps.reduce(w, "laplacian"))
        return self.map_cols(rows, spatial_taps.reduce(h, "laplacian"))

    def pyramid_expand(self, frames: DeviceArray, size: tuple[int, int]) -> DeviceArray:
        h, w = frames.shape[1:3]
        cols = self.map_cols(frames, spatial_taps.expand(h, size[0]))
        return self.map_rows(cols, spatial_taps.expand(w, size[1]))

    def gaussian_reduce(self, frames: DeviceArray) -> DeviceArray:
        h, w = frames.shape[1:3]
        cols = self.map_cols(frames, spatial_taps.reduce(h, "gaussian"))
        return self.map_rows(cols, spatial_taps.reduce(w, "gaussian"))

    def resize_bicubic(self, frames: DeviceArray, size: tuple[int, int]) -> DeviceArray:
        h, w = frames.shape[1:3]
        cols = self.map_cols(frames, spatial_taps.bicubic(h, size[0]))
        return self.map_rows(cols, spatial_taps.bicubic(w, size[1]))

    # --- arithmetic -------------------------------------------------------------------------------------
    def _axpby(self, a: DeviceArray, b: DeviceArray, alpha: float, beta: float) -> DeviceArray:
        if a.shape != b.shape:
            raise ValueError(f"shapes differ: {a.shape} and {b.shape}")
        out = self.rt.empty(a.shape)
        self.rt.launch("axpby", a.size, a, b, out, alpha, beta)
        return out

    def add(self, a: DeviceArray, b: DeviceArray) -> DeviceArray:
        return self._axpby(a, b, 1.0, 1.0)

    def subtract(self, a: DeviceArray, b: DeviceArray) -> DeviceArray:
        return self._axpby(a, b, 1.0, -1.0)

    def scale(self, frames: DeviceArray, luma: float, chroma: float) -> DeviceArray:
        out = self.rt.empty(frames.shape)
        self.rt.launch("level_gain", frames.size // 3, frames, out, luma, chroma)
        return out

    # --- time -------------------------------------------------------------------------------------------
    def copy(self, frames: DeviceArray) -> DeviceArray:
        out = self.rt.empty(frames.shape)
        self.rt.launch("copy2d", frames.size, frames, out, max(frames.size, 1), 0, 0, 0, 0)
        return out

    def concat_frames(self, batches: list[DeviceArray]) -> Stack:
        """The batches as a :class:`Stack` (consumes the list): pieces of at most ``max_bytes`` each."""
        frame_shape = batches[0].shape[1:]
        total = sum(b.shape[0] for b in batches)
        values = int(np.prod(frame_shape))
        # values per piece: whole series (every frame) of as many values as one buffer holds
        per_piece = max(1, (self.stack_bytes or self.rt.max_bytes) // (4 * max(total, 1)))
        count = max(1, -(-values // per_piece))
        per_piece = -(-values // count)
        pieces = [
            (p0, self.rt.empty((total, min(per_piece, values - p0)))) for p0 in range(0, values, per_piece)
        ]
        start = 0
        while batches:
            batch = batches.pop(0)
            n = batch.shape[0]
            for p0, piece in pieces:
                cols = piece.shape[1]
                self.rt.launch("copy2d", n * cols, batch, piece, cols, values, p0, cols, start * cols)
            start += n
        return Stack(total, frame_shape, pieces)

    def take_frames(self, stack: Stack | DeviceArray, start: int, stop: int) -> DeviceArray:
        """Frames ``start:stop`` of a stack (or of a batch), as a new array."""
        n = max(0, stop - start)
        if isinstance(stack, DeviceArray):
            values = stack.size // max(stack.shape[0], 1)
            out = self.rt.empty((n, *stack.shape[1:]))
            # one row of n * values contiguous values
            self.rt.launch("copy2d", n * values, stack, out, max(n * values, 1), 0, start * values, 0, 0)
            return out
        values = int(np.prod(stack.frame_shape))
        out = self.rt.empty((n, *stack.frame_shape))
        for p0, piece in stack.pieces:
            cols = piece.shape[1]
            self.rt.launch("copy2d", n * cols, piece, out, cols, cols, start * cols, values, p0)
        return out

    def bandpass(self, stack: Stack, fl: float, fh: float, fs: float, *, mit: bool,
                 gains: tuple[float, float, float] = (1.0, 1.0, 1.0)) -> Stack:
        """The ideal band-pass of a stack times a per-channel gain, into a new stack, piece by piece."""
        if isinstance(stack, DeviceArray):
            stack = self.concat_frames([stack])
        t = stack.frames
        basis = bandpass_basis(t, float(fl), float(fh), float(fs), bool(mit))
        m = basis.analysis.shape[1]
        synth = self.rt.constant(basis.synthesis, np.float32)
        analysis = self.rt.constant(basis.analysis, np.float32) if m else None
        pieces = []
        for p0, piece in stack.pieces:
            p = piece.shape[1]
            out = self.rt.empty(piece.shape)
            coef: Any = self.rt.dummy()
            if m:
                coef = self.rt.empty((m, p))
                self.rt.launch("project_coefficients", m * p, piece, analysis, coef, t, m, p)
            self.rt.launch("project_synthesis", t * p, piece, coef, synth, out, t, m, p, p0,
                           float(basis.identity), float(basis.keeps_dc), *(float(g) for g in gains))
            pieces.append((p0, out))
        return Stack(t, stack.frame_shape, pieces)

    def ideal_bandpass(self, stack: Stack, fl: float, fh: float, fs: float, *, mit: bool) -> Stack:
        return self.bandpass(stack, fl, fh, fs, mit=mit)

    def scan_into(self, state: tuple, x: DeviceArray, c1: tuple, c2: tuple, gain: float) -> DeviceArray:
        """Two first-order low-passes over the frames of ``x``, in place (``state`` is (lp1, lp2, x_prev))."""
        s1, s2, xp = state
        n, p = x.shape[0], s1.size
        if n and p % 4 == 0:  # four samples per item
            self.rt.launch("scan4", p // 4, x, s1, s2, xp, n, p // 4, *(float(c) for c in (*c1, *c2)),
                           float(gain))
        elif n:
            self.rt.launch("scan", p, x, s1, s2, xp, n, p, *(float(c) for c in (*c1, *c2)), float(gain))
        return x

    def start_state(self, first: DeviceArray) -> tuple[DeviceArray, DeviceArray, DeviceArray]:
        """The scan's state started at one frame: both low-passes and the previous input are the frame."""
        flat = first.reshape(first.size)
        return (self.copy(flat), self.copy(flat), self.copy(flat))

    def _first_order(self, state: Any, frames: DeviceArray, c1: tuple, c2: tuple) -> tuple[DeviceArray, Any]:
        x = self.copy(frames)
        if x.shape[0] == 0:
            return x, state
        if state is None:  # the first frame starts every state; its output is 0
            state = self.start_state(self.take_frames(x, 0, 1))
        return self.scan_into(state, x, c1, c2, 1.0), state

    def butterworth_step(self, state: Any, frames: DeviceArray, high: tuple,
                         low: tuple) -> tuple[DeviceArray, Any]:
        def coefficients(b0, b1, a0, a1):
            return (-a1 / a0, b0 / a0, b1 / a0)

        return self._first_order(state, frames, coefficients(*high), coefficients(*low))

    def iir_step(self, state: Any, frames: DeviceArray, r1: float, r2: float) -> tuple[DeviceArray, Any]:
        return self._first_order(state, frames, (1.0 - r1, r1, 0.0), (1.0 - r2, r2, 0.0))
