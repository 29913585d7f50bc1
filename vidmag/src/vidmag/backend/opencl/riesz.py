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
from functools import lru_cache
from typing import Any

import numpy as np
import pyopencl as cl

from vidmag._reference.colour import RGB_TO_YIQ, YIQ_TO_RGB_EXACT, YIQ_TO_RGB_MIT
from vidmag._reference.pyramid import level_sizes, pyramid_levels
from vidmag._reference.riesz import gaussian_taps
from vidmag._reference.temporal import butterworth_lowpass
from vidmag.backend import spatial_taps
from vidmag.backend.opencl.operations import sized_kernel
from vidmag.backend.spatial_taps import Taps
from vidmag.params import Plan

#: The Riesz pipelines this module runs.
PIPELINES = ("riesz_ideal", "riesz_butterworth", "riesz_iir")

#: ``kind`` of riesz.cl's riesz_filter per pipeline: 0 no filter (the ideal band-pass runs over the clip).
_FILTER_KIND = {"riesz_ideal": 0, "riesz_butterworth": 1, "riesz_iir": 2}


@lru_cache(maxsize=64)
def blur_taps(n: int, sigma: float) -> Taps:
    """The reference's Gaussian blur along an axis of ``n`` samples as a tap table: the taps of
    :func:`vidmag._reference.riesz.gaussian_taps` with mirror (``reflect1``) borders, repeated reflections
    for a kernel longer than the axis, as :func:`scipy.ndimage.correlate1d` extends it."""
    taps = gaussian_taps(sigma)
    radius = len(taps) // 2
    index = np.array([[spatial_taps.reflect1(i + t - radius, n) for t in range(len(taps))] for i in range(n)],
                     dtype=np.int32)
    return Taps(index, np.broadcast_to(taps, index.shape).copy(), n)


def filter_coefficients(plan: Plan) -> tuple[float, ...]:
    """riesz_filter's (hb0, hb1, ha0, ha1, lb0, lb1, la0, la1) for ``plan``: the Butterworth pair's
    (b0, b1, a0, a1) of LP(fh) and LP(fl) (default semantics, as the reference), or the IIR's
    (1 - r1, r1, 1, 0, 1 - r2, r2, 1, 0); zeros for riesz_ideal."""
    p = plan.params
    if plan.pipeline == "riesz_butterworth":
        high = butterworth_lowpass(p["fh"], plan.fs, mit=False)
        low = butterworth_lowpass(p["fl"], plan.fs, mit=False)
        return (high.b0, high.b1, high.a0, high.a1, low.b0, low.b1, low.a0, low.a1)
    if plan.pipeline == "riesz_iir":
        return (1.0 - p["r1"], p["r1"], 1.0, 0.0, 1.0 - p["r2"], p["r2"], 1.0, 0.0)
    return (0.0,) * 8


class OpenCLRiesz:
    """The per-frame Riesz steps on one OpenCL device, for frames of one size, with their buffers.

    Parameters
    ----------
    ops : vidmag.backend.opencl.operations.OpenCLOperations
        The device's primitives (their runtime and colour matrices).
    plan : Plan
        A Riesz pipeline's plan.
    """

    def __init__(self, ops: Any, plan: Plan) -> None:
        self.ops, self.rt = ops, ops.rt
        self.plan = plan
        self.kind = _FILTER_KIND[plan.pipeline]
        levels = pyramid_levels(plan.height, plan.width)
        self.sizes = level_sizes(plan.height, plan.width, levels)
        self.processed = levels - 1
        self._tables: dict[tuple, tuple[Any, Any, int]] = {}
        self._gaussians: dict[float, Any] = {}
        rt, sizes = self.rt, self.sizes
        self.frame = rt.empty((plan.height, plan.width, 3), np.uint8)
        self.out = rt.empty((plan.height, plan.width, 3), np.uint8)
        self.image = [rt.empty(s) for s in sizes]  # the low-pass images; the collapse overwrites them
        level = sizes[: self.processed]
        self.band = [rt.empty(s) for s in level]
        self.quaternion = [tuple(rt.empty(s) for _ in range(3)) for s in level]
        self.phase = [(rt.empty(s), rt.empty(s)) for s in level]
        self.amplitude = [rt.empty(s) for s in level]
        self.state = [rt.empty((6, *s)) for s in level]  # planes: high, low, previous of each component
        self.weighted = [rt.empty((1, *s, 3)) for s in level]
        self.blur_rows = [rt.empty((1, *s, 3)) for s in level]
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
        """riesz_reduce, or riesz_expand (``other``, ``mode``), from ``src`` to ``dst`` (``size`` = (h, w) of
        the output)."""
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

    def _expand(self, lv: int, dst: Any, other: Any, mode: int) -> None:
        """Level ``lv + 1``'s image expanded to level ``lv``: ``other`` plus it (mode 1) or minus it (2)."""
        (h, w), (h2, w2) = self.sizes[lv], self.sizes[lv + 1]
        self._step("riesz_expand", self.image[lv + 1], dst, (h, w), spatial_taps.expand(w2, w),
                   spatial_taps.expand(h2, h), other, mode)

    def _gaussian(self, sigma: float) -> Any:
        """The Gaussian taps of ``sigma`` on the device (float32)."""
        if sigma not in self._gaussians:
            self._gaussians[sigma] = self.rt.to_device(gaussian_taps(sigma).astype(np.float32))
        return self._gaussians[sigma]

    # --- steps --------------------------------------------------------------------------------------------
    def analyse(self, frame: np.ndarray) -> None:
        """Upload ``frame`` (uint8 (H, W, 3)); its luminance's Laplacian pyramid into ``band`` and, for the
        residual, ``image[-1]``."""
        rt, sizes = self.rt, self.sizes
        cl.enqueue_copy(rt.queue, self.frame.data, np.ascontiguousarray(frame))
        m = RGB_TO_YIQ[0] / 255.0
        rt.launch("riesz", "riesz_luma", (self.plan.height * self.plan.width,), self.frame.data,
                  self.image[0].data, *(np.float32(v) for v in m))
        for lv in range(self.processed):
            (h, w), (h2, w2) = sizes[lv], sizes[lv + 1]
            self._step("riesz_reduce", self.image[lv], self.image[lv + 1], (h2, w2),
                       spatial_taps.reduce(w, "laplacian"), spatial_taps.reduce(h, "laplacian"))
            self._expand(lv, self.band[lv], self.image[lv], 2)

    def track(self, first: bool) -> None:
        """The Riesz transform of each band, the step of the accumulated phase (0 at the first frame) and,
        for riesz_butterworth and riesz_iir, the temporal filter and the amplitude weights."""
        coefficients = self._filter_args(first)
        for lv in range(self.processed):
            h, w = self.sizes[lv]
            qb, qx, qy = self.quaternion[lv]
            pc, ps = self.phase[lv]
            args = (self.band[lv].data, qb.data, qx.data, qy.data, pc.data, ps.data, self.amplitude[lv].data,
                    self.state[lv].data, self.weighted[lv].data, np.int32(w), np.int32(h), *coefficients)
            body = w // 8 * 8  # 8 pixels a work item; the rest of each row one by one
            if body:
                self.rt.launch("riesz", "riesz_phase8", (w // 8, h), *args)
            if body < w:
                self.rt.launch("riesz", "riesz_phase", (w - body, h), *args, offset=(body, 0))

    def _filter_args(self, first: bool) -> list[Any]:
        weigh = self.plan.params["sigma"] != 0
        return [np.int32(self.kind), np.int32(first), np.int32(weigh),
                *(np.float32(c) for c in filter_coefficients(self.plan))]

    def weigh(self, phase: list[tuple[Any, Any]], frame: int) -> None:
        """The amplitude weights of the ideal band-pass's output ``phase`` (per level, (T, h * w) stacks) at
        ``frame`` (riesz_ideal's second pass)."""
        args = self._filter_args(False)
        for lv in range(self.processed):
            h, w = self.sizes[lv]
            pc, ps = phase[lv]
            self.rt.launch("riesz", "riesz_filter", (h * w,), pc.data, ps.data, np.int64(frame * h * w),
                           self.state[lv].data, self.amplitude[lv].data, self.weighted[lv].data, *args)

    def render(self) -> np.ndarray:
        """Shift each band's phase (after the amplitude-weighted blur), collapse, and the output bytes."""
        p = self.plan.params
        sigma, alpha = p["sigma"], np.float32(p["alpha"])
        for lv in range(self.processed):
            h, w = self.sizes[lv]
            qb, qx, qy = self.quaternion[lv]
            if sigma == 0:
                self.rt.launch("riesz", "riesz_shift", (h * w,), self.weighted[lv].data, qb.data, qx.data,
                               qy.data, self.band[lv].data, alpha)
                continue
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
        for lv in reversed(range(self.processed)):
            self._expand(lv, self.image[lv], self.band[lv], 1)
        n = self.plan.height * self.plan.width
        self.rt.launch("riesz", "riesz_render", (n,), self.frame.data, self.image[0].data, self.out.data,
                       self.fwd.data, self.inv.data)
        host = np.empty((self.plan.height, self.plan.width, 3), dtype=np.uint8)
        cl.enqueue_copy(self.rt.queue, host, self.out.data)  # blocking: waits for the frame's launches
        return host


class OpenCLRieszStream:
    """riesz_butterworth / riesz_iir frame by frame on the opencl backend: ``push(frame) -> frame`` (host
    uint8 (H, W, 3) in and out) and ``retune(plan)``; frame 0 comes out as its input bytes.

    Parameters
    ----------
    ops : vidmag.backend.opencl.operations.OpenCLOperations
    plan : Plan
        A riesz_butterworth or riesz_iir plan.
    """

    def __init__(self, ops: Any, plan: Plan) -> None:
        self.riesz = OpenCLRiesz(ops, plan)
        self.started = False

    @property
    def plan(self) -> Plan:
        return self.riesz.plan

    def retune(self, plan: Plan) -> None:
        """New parameters between two frames: alpha and sigma act after the filters; a new band re-designs
        them, and they go on from the state the old ones left (as the reference's stream)."""
        self.riesz.plan = plan

    def push(self, frame: np.ndarray) -> np.ndarray:
        r = self.riesz
        r.analyse(frame)
        first = not self.started
        r.track(first)
        self.started = True
        if first:  # the upload (a blocking copy) has read the frame; its launches set up the state
            return np.array(frame, dtype=np.uint8)
        return r.render()


def ideal_frames(ops: Any, plan: Plan, source: Callable[[], Iterator[np.ndarray]]) -> Iterator[np.ndarray]:
    """riesz_ideal on the opencl backend: pass 1 keeps each level's accumulated phase on the device and
    band-passes it (the unit-gain ideal filter, fl <= |f| <= fh: the primitives' band-pass projection);
    pass 2 re-reads the frames and shifts them."""
    r = OpenCLRiesz(ops, plan)
    kept: list[tuple[list, list]] = [([], []) for _ in range(r.processed)]
    count = 0
    for frame in source():
        r.analyse(frame)
        r.track(count == 0)
        for (cs, ss), (pc, ps) in zip(kept, r.phase):
            cs.append(pc.copy().reshape(1, -1))
            ss.append(ps.copy().reshape(1, -1))
        count += 1
    if count == 0:
        return
    p = plan.params
    filtered = []
    for cs, ss in kept:
        pair = []
        for series in (cs, ss):
            stack = ops.concat_frames(series)  # empties the list as it goes
            pair.append(ops.bandpass(stack, p["fl"], p["fh"], plan.fs, mit=False))
            del stack
        filtered.append(tuple(pair))
    del kept
    for t, frame in enumerate(source()):
        r.analyse(frame)
        r.track(t == 0)  # the amplitudes again (they need the previous frame)
        r.weigh(filtered, t)
        yield r.render()


def frames(ops: Any, plan: Plan, source: Callable[[], Iterator[np.ndarray]]) -> Iterator[np.ndarray]:
    """A Riesz pipeline over a frame source on the opencl backend: host uint8 frames out."""
    if plan.pipeline == "riesz_ideal":
        return ideal_frames(ops, plan, source)
    stream = OpenCLRieszStream(ops, plan)
    return (stream.push(frame) for frame in source())
