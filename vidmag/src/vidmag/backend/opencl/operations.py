"""The primitives of :class:`vidmag.backend.operations.Operations` as OpenCL kernels (float32, pyopencl
arrays).

Every primitive is one to three launches over the whole batch of frames it is given, so a batch of a whole
clip is a few large pieces of work, not one per frame. The spatial filters are one gather kernel per axis
driven by tap tables (:mod:`vidmag.backend.spatial_taps`), so the border rules live in one place, on the host,
in float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from kernelkit.opencl import OpenCLRuntime
from vidmag._reference.colour import RGB_TO_YIQ, YIQ_TO_RGB_EXACT, YIQ_TO_RGB_MIT
from vidmag.backend import spatial_taps
from vidmag.backend.bandpass_basis import bandpass_basis
from vidmag.backend.opencl.device import Device
from vidmag.backend.spatial_taps import Taps


def sized_kernel(name: str, k: int) -> str:
    """The kernel variant with the tap count fixed at compile time, where there is one."""
    fixed = {
        "resample_rows_f32": (3, 4, 5),
        "resample_rows_u8": (5,),
        "resample_cols_f32": (3, 4, 5),
        "resample_cols_u8": (5,),
        "output_cols": (4,),
        "cols8_f32": (3, 4, 5),
        "cols8_u8": (5,),
        "cols16_u8": (5,),
        "output_cols8": (3, 4),
        "output_cols8_rgb": (3, 4),
    }
    return f"{name}_k{k}" if k in fixed.get(name, ()) else name


def dense(a: cla.Array) -> cla.Array:
    # Kernels take whole buffers; a view that starts inside its buffer is copied out first.
    return a if a.offset == 0 and a.flags.c_contiguous else a.copy()


class OpenCLOperations:
    """The primitives on one OpenCL device (pyopencl arrays, float32 for everything but the bytes).

    Parameters
    ----------
    runtime : kernelkit.opencl.OpenCLRuntime or Device, optional
        The device; by default kernelkit's process-wide runtime on the device its probe chose.
    """

    #: Float values per batch of frames of the generic pipelines: 32 Mi floats (128 MiB), 20 baby frames.
    batch_values = 2**25

    def __init__(self, runtime: OpenCLRuntime | Device | None = None) -> None:
        #: the device: vidmag's kernels, launches and arrays over a kernelkit runtime
        self.rt = runtime if isinstance(runtime, Device) else Device(runtime)
        self._scratch: dict[str, cla.Array] = {}

    def synchronize(self) -> None:
        """Wait until every launch enqueued so far has finished.

        The pipelines call it (through :class:`vidmag.backend.generic.Backend`) when they end early, an
        interrupt included, before anything they enqueued work on is released: a kernel still running after
        its host memory was freed (the fused pipelines' zero-copy input and output buffers) would crash.
        """
        self.rt.synchronize()

    def scratch(self, key: str, shape: tuple[int, ...], dtype) -> cla.Array:
        """A device array kept between calls under ``key`` (reallocated when the shape changes).

        For the fused pipelines' staging buffers: reusing them avoids the cost of first touching fresh memory
        on every chunk. The in-order queue makes reuse safe: a write to it waits for the launches before it.
        """
        current = self._scratch.get(key)
        if current is None or current.shape != tuple(shape) or current.dtype != np.dtype(dtype):
            self._scratch.pop(key, None)
            current = self._scratch[key] = self.rt.empty(tuple(shape), dtype)
        return current

    # --- tables -----------------------------------------------------------------------------------------
    def taps(self, taps: Taps) -> tuple[Any, Any]:
        """A tap table on the device: (index int32, weight float32) buffers."""
        return self.rt.constant(taps.index, np.int32), self.rt.constant(taps.weight, np.float32)

    def matrix(self, m: np.ndarray) -> Any:
        return self.rt.constant(np.asarray(m, dtype=np.float64).ravel(), np.float32)

    # --- one-axis maps ------------------------------------------------------------------------------------
    def _output(self, shape: tuple[int, ...], key: str | None) -> cla.Array:
        return self.rt.empty(shape) if key is None else self.scratch(key, shape, np.float32)

    def map_rows(self, frames: cla.Array, taps: Taps, *, out_key: str | None = None) -> cla.Array:
        """Apply a tap table along the width: (n, h, w, 3) -> (n, h, taps.n_out, 3); uint8 or float32 in.

        ``out_key`` writes the result into that scratch array (see :meth:`scratch`) instead of a new one.
        """
        frames = dense(frames)
        n, h, w, _ = frames.shape
        if w != taps.n_in:
            raise ValueError(f"map of {taps.n_in} samples applied to width {w}")
        out = self._output((n, h, taps.n_out, 3), out_key)
        idx, wt = self.taps(taps)
        k = taps.index.shape[1]
        name = sized_kernel("resample_rows_u8" if frames.dtype == np.uint8 else "resample_rows_f32", k)
        if out.size:
            self.rt.launch(
                "resample",
                name,
                (taps.n_out, n * h),
                frames.data,
                out.data,
                idx,
                wt,
                np.int32(k),
                np.int32(w),
                np.int32(taps.n_out),
            )
        return out

    def map_cols(
        self,
        frames: cla.Array,
        taps: Taps,
        *,
        other: cla.Array | None = None,
        mode: int = 0,
        out_key: str | None = None,
    ) -> cla.Array:
        """Apply a tap table along the height: (n, h, w, 3) float32 or uint8 -> (n, taps.n_out, w, 3) float32.

        ``mode`` 1 returns ``other + map(frames)``, 2 returns ``other - map(frames)`` (``other`` has the
        output's shape), in the same launch. ``out_key`` as in :meth:`map_rows`.
        """
        frames = dense(frames)
        n, h, w, _ = frames.shape
        if h != taps.n_in:
            raise ValueError(f"map of {taps.n_in} samples applied to height {h}")
        out = self._output((n, taps.n_out, w, 3), out_key)
        if other is not None:
            other = dense(other)
            if other.shape != out.shape:
                raise ValueError(f"other has shape {other.shape}, expected {out.shape}")
        idx, wt = self.taps(taps)
        k = taps.index.shape[1]
        if out.size:
            # rows of at least 8 values take a hand-vectorised kernel (8 values per work item, or 16 for
            # bytes), narrower ones the scalar kernel
            kind = "u8" if frames.dtype == np.uint8 else "f32"
            per_item = 16 if kind == "u8" and w * 3 >= 16 else 8 if w * 3 >= 8 else 1
            base = {16: "cols16", 8: "cols8", 1: "resample_cols"}[per_item]
            self.rt.launch(
                "resample",
                sized_kernel(f"{base}_{kind}", k),
                (-(-w * 3 // per_item), taps.n_out, n),
                frames.data,
                out.data,
                (other if other is not None else out).data,
                idx,
                wt,
                np.int32(k),
                np.int32(h),
                np.int32(taps.n_out),
                np.int32(w * 3),
                np.int32(mode),
            )
        return out

    # --- host <-> device ----------------------------------------------------------------------------------
    def upload(self, frames: np.ndarray) -> cla.Array:
        return self.rt.to_device(np.asarray(frames, dtype=np.uint8))

    def download(self, frames: cla.Array) -> np.ndarray:
        return frames.get()

    # --- colour -------------------------------------------------------------------------------------------
    def _pixels(self, frames: cla.Array) -> int:
        return frames.size // 3

    def rgb_to_yiq(self, frames: cla.Array) -> cla.Array:
        return self.apply_matrix(frames, RGB_TO_YIQ / 255.0 if frames.dtype == np.uint8 else RGB_TO_YIQ)

    def apply_matrix(self, frames: cla.Array, m: np.ndarray) -> cla.Array:
        """Each pixel times a 3 x 3 matrix: (n, h, w, 3) float32 (or bytes) -> new float32 array."""
        frames = dense(frames)
        out = self.rt.empty(frames.shape)
        n = self._pixels(frames)
        name = "pixel_matrix_u8" if frames.dtype == np.uint8 else "pixel_matrix_f32"
        if n:
            self.rt.launch("colour", name, (n,), frames.data, out.data, self.matrix(m))
        return out

    def yiq_to_rgb_uint8(self, frames: cla.Array, *, mit: bool) -> cla.Array:
        frames = dense(frames)
        out = self.rt.empty(frames.shape, np.uint8)
        n = self._pixels(frames)
        m = YIQ_TO_RGB_MIT if mit else YIQ_TO_RGB_EXACT
        if n:
            self.rt.launch("colour", "yiq_to_rgb_u8", (n,), frames.data, out.data, self.matrix(m))
        return out

    # --- space --------------------------------------------------------------------------------------------
    def pyramid_reduce(self, frames: cla.Array) -> cla.Array:
        h, w = frames.shape[1:3]
        rows = self.map_rows(frames, spatial_taps.reduce(w, "laplacian"))
        return self.map_cols(rows, spatial_taps.reduce(h, "laplacian"))

    def pyramid_expand(self, frames: cla.Array, size: tuple[int, int]) -> cla.Array:
        h, w = size
        cols = self.map_cols(frames, spatial_taps.expand(frames.shape[1], h))
        return self.map_rows(cols, spatial_taps.expand(frames.shape[2], w))

    def gaussian_reduce(self, frames: cla.Array) -> cla.Array:
        h, w = frames.shape[1:3]
        cols = self.map_cols(frames, spatial_taps.reduce(h, "gaussian"))
        return self.map_rows(cols, spatial_taps.reduce(w, "gaussian"))

    def resize_bicubic(self, frames: cla.Array, size: tuple[int, int]) -> cla.Array:
        h, w = frames.shape[1:3]
        cols = self.map_cols(frames, spatial_taps.bicubic(h, size[0]))
        return self.map_rows(cols, spatial_taps.bicubic(w, size[1]))

    # --- arithmetic ---------------------------------------------------------------------------------------
    def _axpby(self, a: cla.Array, b: cla.Array, alpha: float, beta: float) -> cla.Array:
        a, b = dense(a), dense(b)
        if a.shape != b.shape:
            raise ValueError(f"shapes differ: {a.shape} and {b.shape}")
        out = self.rt.empty(a.shape)
        if a.size:
            self.rt.launch(
                "arith", "axpby", (a.size,), a.data, b.data, out.data, np.float32(alpha), np.float32(beta)
            )
        return out

    def add(self, a: cla.Array, b: cla.Array) -> cla.Array:
        return self._axpby(a, b, 1.0, 1.0)

    def subtract(self, a: cla.Array, b: cla.Array) -> cla.Array:
        return self._axpby(a, b, 1.0, -1.0)

    def scale(self, frames: cla.Array, luma: float, chroma: float) -> cla.Array:
        frames = dense(frames)
        out = self.rt.empty(frames.shape)
        n = self._pixels(frames)
        if n:
            self.rt.launch(
                "arith", "level_gain", (n,), frames.data, out.data, np.float32(luma), np.float32(chroma)
            )
        return out

    # --- time ---------------------------------------------------------------------------------------------
    def concat_frames(self, batches: list[cla.Array]) -> cla.Array:
        total = sum(b.shape[0] for b in batches)
        stack = self.rt.empty((total, *tuple(batches[0].shape[1:])), batches[0].dtype)
        start = 0
        while batches:
            batch = dense(batches.pop(0))
            count = batch.shape[0]
            if batch.size:
                cl.enqueue_copy(
                    self.rt.queue,
                    stack.data,
                    batch.data,
                    byte_count=batch.nbytes,
                    dst_offset=start * batch.nbytes // count,
                )
            start += count
        return stack

    def take_frames(self, stack: cla.Array, start: int, stop: int) -> cla.Array:
        return stack[start:stop]

    def bandpass(
        self,
        stack: cla.Array,
        fl: float,
        fh: float,
        fs: float,
        *,
        mit: bool,
        gains: tuple[float, float, float] = (1.0, 1.0, 1.0),
    ) -> cla.Array:
        """The ideal band-pass of a stack (T, ...) times a per-channel gain, into a new array."""
        stack = dense(stack)
        t = stack.shape[0]
        p = stack.size // max(t, 1)
        basis = bandpass_basis(t, float(fl), float(fh), float(fs), bool(mit))
        m = basis.analysis.shape[1]
        out = self.rt.empty(stack.shape)
        if stack.size == 0:
            return out
        synth = self.rt.constant(basis.synthesis, np.float32)
        if m:
            analysis = self.rt.constant(basis.analysis, np.float32)
            coef = self.rt.empty((m, p))
            self.rt.launch(
                "temporal",
                "project_coefficients",
                (p, m),
                stack.data,
                analysis,
                coef.data,
                np.int32(t),
                np.int32(m),
                np.int64(p),
            )
        else:
            coef = out  # unused: no kept frequency
        g = [np.float32(v) for v in gains]
        self.rt.launch(
            "temporal",
            "project_synthesis",
            (p, t),
            stack.data,
            coef.data,
            synth,
            out.data,
            np.int32(t),
            np.int32(m),
            np.int64(p),
            np.float32(basis.identity),
            np.float32(basis.keeps_dc),
            *g,
        )
        return out

    def ideal_bandpass(self, stack: cla.Array, fl: float, fh: float, fs: float, *, mit: bool) -> cla.Array:
        return self.bandpass(stack, fl, fh, fs, mit=mit)

    def _first_order(self, state: Any, frames: cla.Array, c1: tuple, c2: tuple) -> tuple[cla.Array, Any]:
        """Two first-order low-passes over the frames in one launch; ``state`` is (lp1, lp2, x_prev)."""
        x = dense(frames).copy()
        n = x.shape[0]
        p = x.size // max(n, 1)
        if n == 0:
            return x, state
        if state is None:  # the first frame starts every state; its output is 0
            first = x[0:1].copy().reshape(p)
            state = (first, first.copy(), first.copy())
        s1, s2, xp = state
        self.rt.launch(
            "temporal",
            "first_order_scan",
            (p,),
            x.data,
            s1.data,
            s2.data,
            xp.data,
            np.int32(n),
            np.int64(p),
            *(np.float32(c) for c in c1),
            *(np.float32(c) for c in c2),
            np.float32(1.0),
            np.float32(1.0),
            np.float32(1.0),
        )
        return x, state

    def butterworth_step(
        self, state: Any, frames: cla.Array, high: tuple, low: tuple
    ) -> tuple[cla.Array, Any]:
        def coefficients(b0, b1, a0, a1):
            return (-a1 / a0, b0 / a0, b1 / a0)

        return self._first_order(state, frames, coefficients(*high), coefficients(*low))

    def iir_step(self, state: Any, frames: cla.Array, r1: float, r2: float) -> tuple[cla.Array, Any]:
        return self._first_order(state, frames, (1.0 - r1, r1, 0.0), (1.0 - r2, r2, 0.0))
