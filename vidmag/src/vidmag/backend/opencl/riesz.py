"""The Riesz pipelines on the opencl backend: the steps of :mod:`vidmag._reference.riesz` as OpenCL kernels
(``kernels/riesz.cl``), float32, one frame at a time on the device.

Per frame: the luminance (one channel) and its Laplacian pyramid (the reference's reduce and expand as tap
tables, :mod:`vidmag.backend.spatial_taps`, one launch a step for both axes); per processed level one launch
for the Riesz transform, the step of the quaternionic phase, the temporal filter and the amplitude weights,
one for the row pass of the amplitude-weighted Gaussian blur and one for its column pass with the phase
shift; then the collapse and one launch for the output bytes (the input's I and Q, the MIT output handling).
The per-pixel kernels take 8 pixels a work item (float8), which PoCL turns into SIMD code. Every buffer is
allocated once per stream; a frame is one upload, about six launches per level and one download.

Checked against the reference within 1 grey level (``vidmag/tests/test_riesz_opencl.py``). Importing this
module imports pyopencl (the opencl backend's :func:`~vidmag.backend.opencl.create` imports it when it runs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyopencl as cl

from vidmag._reference.colour import RGB_TO_YIQ, YIQ_TO_RGB_EXACT, YIQ_TO_RGB_MIT
from vidmag._reference.riesz import gaussian_taps
from vidmag.backend import riesz_driver
from vidmag.backend.opencl.operations import sized_kernel
from vidmag.backend.riesz_driver import PIPELINES, IdealSteps, blur_taps, filter_coefficients
from vidmag.backend.spatial_taps import Taps
from vidmag.params import Plan

__all__ = ["PIPELINES", "IdealSteps", "OpenCLRiesz", "OpenCLRieszStream", "blur_taps", "filter_coefficients",
           "frames", "ideal_frames"]


class OpenCLRiesz(riesz_driver.RieszDriver):
    """The per-frame Riesz steps on one OpenCL device, for frames of one size, with their buffers (the
    launches of :class:`~vidmag.backend.riesz_driver.RieszDriver`'s steps on ``kernels/riesz.cl``).

    Parameters
    ----------
    ops : vidmag.backend.opencl.operations.OpenCLOperations
        The device's primitives (their runtime and colour matrices).
    plan : Plan
        A Riesz pipeline's plan.
    """

    # pyopencl passes scalars by their numpy type (int32 / float32 in riesz.cl)
    int_type = np.int32
    float_type = np.float32

    def __init__(self, ops: Any, plan: Plan) -> None:
        super().__init__(ops, plan)
        self._tables: dict[tuple, tuple[Any, Any, int]] = {}
        self._gaussians: dict[float, Any] = {}
        rt = self.rt
        self.fwd = rt.to_device(np.asarray(RGB_TO_YIQ / 255.0, dtype=np.float32).ravel())
        inverse = YIQ_TO_RGB_MIT if plan.mit else YIQ_TO_RGB_EXACT
        self.inv = rt.to_device(np.asarray(inverse, dtype=np.float32).ravel())

    # --- maps ---------------------------------------------------------------------------------------------
    def _table(self, taps: Taps) -> tuple[Any, Any, int]:
        """A tap table on the device, owned by this object (index int32, weight float32, taps per output)."""
        key = (taps.n_in, taps.index.tobytes(), taps.weight.tobytes())
        table = self._tables.get(key)
        if table is None:
            index, weight = taps.index.astype(np.int32), taps.weight.astype(np.float32)
            table = self._tables[key] = (self.rt.to_device(index), self.rt.to_device(weight), index.shape[1])
        return table

    def _step(self, name: str, src: Any, dst: Any, size: tuple[int, int], x: Taps, y: Taps,
              other: Any = None, mode: int | None = None) -> None:
        ix, wx, kx = self._table(x)
        iy, wy, ky = self._table(y)
        head = () if other is None else (other.data,)
        tail = () if mode is None else (np.int32(mode),)
        items = size[1]
        if name == "riesz_expand" and size[1] >= 8 and x.n_in >= 8:
            name, items = "riesz_expand8", -(-size[1] // 8)
        self.rt.launch("riesz", name, (items, size[0]), src.data, dst.data, *head, ix.data, wx.data,
                       np.int32(kx), iy.data, wy.data, np.int32(ky), np.int32(x.n_in), np.int32(size[1]),
                       *tail)

    def _gaussian(self, sigma: float) -> Any:
        """The Gaussian taps of ``sigma`` on the device (float32)."""
        if sigma not in self._gaussians:
            self._gaussians[sigma] = self.rt.to_device(gaussian_taps(sigma).astype(np.float32))
        return self._gaussians[sigma]

    # --- steps --------------------------------------------------------------------------------------------
    def _load(self, frame: np.ndarray) -> None:
        rt = self.rt
        cl.enqueue_copy(rt.queue, self.frame.data, np.ascontiguousarray(frame))  # blocking: reads the frame
        m = RGB_TO_YIQ[0] / 255.0
        rt.launch("riesz", "riesz_luma", (self.plan.height * self.plan.width,), self.frame.data,
                  self.image[0].data, *(np.float32(v) for v in m))

    def track_level(self, lv: int, args: list[Any]) -> None:
        h, w = self.sizes[lv]
        qb, qx, qy = self.quaternion[lv]
        pc, ps = self.phase[lv]
        launch = (self.band[lv].data, qb.data, qx.data, qy.data, pc.data, ps.data, self.amplitude[lv].data,
                  self.state[lv].data, self.weighted[lv].data, np.int32(w), np.int32(h), *args)
        body = w // 8 * 8  # 8 pixels a work item; the rest of each row one by one
        if body:
            self.rt.launch("riesz", "riesz_phase8", (w // 8, h), *launch)
        if body < w:
            self.rt.launch("riesz", "riesz_phase", (w - body, h), *launch, offset=(body, 0))

    def weigh(self, phase: list[tuple[Any, Any]], frame: int) -> None:
        args = self._filter_args(False)
        for lv in range(self.processed):
            h, w = self.sizes[lv]
            pc, ps = phase[lv]
            self.rt.launch("riesz", "riesz_filter", (h * w,), pc.data, ps.data, np.int64(frame * h * w),
                           self.state[lv].data, self.amplitude[lv].data, self.weighted[lv].data, *args)

    def shift_level(self, lv: int, sigma: float, alpha: Any) -> None:
        h, w = self.sizes[lv]
        qb, qx, qy = self.quaternion[lv]
        if sigma == 0:
            self.rt.launch("riesz", "riesz_shift", (h * w,), self.weighted[lv].data, qb.data, qx.data,
                           qy.data, self.band[lv].data, alpha)
            return
        idx, wt, k = self._table(blur_taps(w, sigma))
        if w >= 8:
            self.rt.launch("riesz", "riesz_blur_rows8", (-(-w // 8), h), self.weighted[lv].data,
                           self.blur_rows[lv].data, idx.data, wt.data, self._gaussian(sigma).data,
                           np.int32(k), np.int32(w))
        else:
            self.rt.launch("resample", sized_kernel("resample_rows_f32", k), (w, h),
                           self.weighted[lv].data, self.blur_rows[lv].data, idx.data, wt.data,
                           np.int32(k), np.int32(w), np.int32(w))
        idx, wt, k = self._table(blur_taps(h, sigma))
        name, items = ("riesz_blur_shift8", -(-w // 8)) if w >= 8 else ("riesz_blur_shift", w)
        self.rt.launch("riesz", name, (items, h), self.blur_rows[lv].data, idx.data, wt.data, np.int32(k),
                       qb.data, qx.data, qy.data, self.band[lv].data, np.int32(w), alpha)

    def _output(self) -> np.ndarray:
        n = self.plan.height * self.plan.width
        self.rt.launch("riesz", "riesz_render", (n,), self.frame.data, self.image[0].data, self.out.data,
                       self.fwd.data, self.inv.data)
        host = np.empty((self.plan.height, self.plan.width, 3), dtype=np.uint8)
        cl.enqueue_copy(self.rt.queue, host, self.out.data)  # blocking: waits for the frame's launches
        return host

    def keep(self, plane: Any) -> Any:
        return plane.copy().reshape(1, -1)


class OpenCLRieszStream(riesz_driver.RieszStream):
    """riesz_butterworth / riesz_iir frame by frame on the opencl backend: ``push(frame) -> frame`` (host
    uint8 (H, W, 3) in and out) and ``retune(plan)``; frame 0 comes out as its input bytes.

    Parameters
    ----------
    ops : vidmag.backend.opencl.operations.OpenCLOperations
    plan : Plan
        A riesz_butterworth or riesz_iir plan.
    """

    driver = OpenCLRiesz


def ideal_frames(ops: Any, plan: Plan, source: Callable[[], Iterator[np.ndarray]]) -> Iterator[np.ndarray]:
    """riesz_ideal on the opencl backend (:func:`vidmag.backend.riesz_driver.ideal_frames`)."""
    return riesz_driver.ideal_frames(OpenCLRiesz, ops, plan, source)


def frames(ops: Any, plan: Plan, source: Callable[[], Iterator[np.ndarray]]) -> Iterator[np.ndarray]:
    """A Riesz pipeline over a frame source on the opencl backend: host uint8 frames out."""
    return riesz_driver.frames(OpenCLRieszStream, ops, plan, source)
