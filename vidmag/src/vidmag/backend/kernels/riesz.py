"""The Riesz pipelines on the shared kernel tier: the steps of :mod:`vidmag._reference.riesz` as the kernels
of :mod:`vidmag.backend.kernels.riesz_templates`, float32, one frame at a time on any
:class:`~vidmag.backend.kernels.device.KernelDevice` (vulkan, cuda, metal).

The host side of the opencl backend's :mod:`vidmag.backend.opencl.riesz`, step for step: per frame one upload,
the luminance and its Laplacian pyramid (tap tables of :mod:`vidmag.backend.spatial_taps`, one launch a step
for both axes); per processed level one launch for the Riesz transform, the phase step, the temporal filter
and the amplitude weights, one for the row pass of the amplitude-weighted blur (the shared ``rows_f32``) and
one for its column pass with the phase shift; the collapse, one launch for the output bytes and one download.
Every buffer is allocated once per stream. riesz_ideal keeps each level's accumulated phase on the device as
a :class:`~vidmag.backend.kernels.operations.Stack` and band-passes it with the primitives' projection.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from vidmag._reference.colour import RGB_TO_YIQ, YIQ_TO_RGB_EXACT, YIQ_TO_RGB_MIT
from vidmag._reference.pyramid import level_sizes, pyramid_levels
from vidmag._reference.riesz import gaussian_taps
from vidmag._reference.temporal import butterworth_lowpass
from vidmag.backend import spatial_taps
from vidmag.backend.kernels.device import DeviceArray, KernelDevice
from vidmag.backend.kernels.riesz_templates import program
from vidmag.backend.kernels.templates import cover
from vidmag.backend.spatial_taps import Taps
from vidmag.params import Plan

__all__ = ["PIPELINES", "KernelRiesz", "KernelRieszStream", "frames", "phase_backend"]

#: The Riesz pipelines this module runs.
PIPELINES = ("riesz_ideal", "riesz_butterworth", "riesz_iir")

#: ``kind`` of riesz_phase per pipeline: 0 no filter (the ideal band-pass runs over the clip).
_FILTER_KIND = {"riesz_ideal": 0, "riesz_butterworth": 1, "riesz_iir": 2}

# the Riesz kernels compiled on each device (the device's own cache holds the shared templates' only)
_compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _launch(rt: KernelDevice, name: str, total: int, *args: Any) -> None:
    """Riesz kernel ``name`` over ``total`` work items on ``rt``, as :meth:`KernelDevice.launch` launches the
    shared ones (arrays or buffers for pointers, numbers for scalars, without the trailing ``total``)."""
    kernels = _compiled.setdefault(rt, {})
    kernel = kernels.get(name)
    if kernel is None:
        kernel = kernels[name] = rt.runtime.kernel(program(name, rt.dialect), name)
    bound = [a.buffer if isinstance(a, DeviceArray) else a for a in args]
    rt._enqueue(kernel, cover(total), [*bound, int(total)])


def _coefficients(plan: Plan) -> tuple[float, ...]:
    # the coefficients of vidmag.backend.opencl.riesz.filter_coefficients (that module imports pyopencl)
    p = plan.params
    if plan.pipeline == "riesz_butterworth":
        high = butterworth_lowpass(p["fh"], plan.fs, mit=False)
        low = butterworth_lowpass(p["fl"], plan.fs, mit=False)
        return (high.b0, high.b1, high.a0, high.a1, low.b0, low.b1, low.a0, low.a1)
    if plan.pipeline == "riesz_iir":
        return (1.0 - p["r1"], p["r1"], 1.0, 0.0, 1.0 - p["r2"], p["r2"], 1.0, 0.0)
    return (0.0,) * 8


def _blur_taps(n: int, sigma: float) -> Taps:
    # vidmag.backend.opencl.riesz.blur_taps: the Gaussian with mirror (reflect1) borders, as correlate1d
    taps = gaussian_taps(sigma)
    radius = len(taps) // 2
    index = np.array([[spatial_taps.reflect1(i + t - radius, n) for t in range(len(taps))] for i in range(n)],
                     dtype=np.int32)
    return Taps(index, np.broadcast_to(taps, index.shape).copy(), n)


class KernelRiesz:
    """The per-frame Riesz steps on one device of the shared kernel tier, for frames of one size, with their
    buffers.

    Parameters
    ----------
    ops : vidmag.backend.kernels.operations.KernelOperations
        The device's primitives (``ops.rt`` is the :class:`~vidmag.backend.kernels.device.KernelDevice`).
    plan : Plan
        A Riesz pipeline's plan.

    See Also
    --------
    KernelRieszStream : the live stream over it.
    vidmag.backend.opencl.riesz.OpenCLRiesz : the same steps in hand-written OpenCL C.

    Examples
    --------
    >>> from vidmag.backend.kernels.riesz import KernelRiesz
    >>> KernelRiesz.__name__
    'KernelRiesz'
    """

    def __init__(self, ops: Any, plan: Plan) -> None:
        self.ops, self.rt = ops, ops.rt
        self.plan = plan
        self.kind = _FILTER_KIND[plan.pipeline]
        levels = pyramid_levels(plan.height, plan.width)
        self.sizes = level_sizes(plan.height, plan.width, levels)
        self.processed = levels - 1
        self._blurs: dict[tuple[int, float], Taps] = {}
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

    # --- maps ---------------------------------------------------------------------------------------------
    def _step(self, name: str, src: DeviceArray, dst: DeviceArray, size: tuple[int, int], x: Taps, y: Taps,
              other: Any = None, mode: int | None = None) -> None:
        """riesz_reduce, or riesz_expand (``other``, ``mode``), from ``src`` to ``dst`` (``size`` = (h, w) of
        the output)."""
        ix, wx = self.ops.taps(x)
        iy, wy = self.ops.taps(y)
        head = () if other is None else (other,)
        tail = () if mode is None else (mode,)
        _launch(self.rt, name, size[0] * size[1], src, dst, *head, ix, wx, x.index.shape[1], iy, wy,
                y.index.shape[1], x.n_in, size[1], *tail)

    def _expand(self, lv: int, dst: DeviceArray, other: DeviceArray, mode: int) -> None:
        """Level ``lv + 1``'s image expanded to level ``lv``: ``other`` plus it (mode 1) or minus it (2)."""
        (h, w), (h2, w2) = self.sizes[lv], self.sizes[lv + 1]
        self._step("riesz_expand", self.image[lv + 1], dst, (h, w), spatial_taps.expand(w2, w),
                   spatial_taps.expand(h2, h), other, mode)

    def _blur(self, n: int, sigma: float) -> Taps:
        key = (n, sigma)
        if key not in self._blurs:
            self._blurs[key] = _blur_taps(n, sigma)
        return self._blurs[key]

    # --- steps --------------------------------------------------------------------------------------------
    def analyse(self, frame: np.ndarray) -> None:
        """Upload ``frame`` (uint8 (H, W, 3)); its luminance's Laplacian pyramid into ``band`` and, for the
        residual, ``image[-1]``."""
        rt, sizes = self.rt, self.sizes
        rt.write(self.frame, np.ascontiguousarray(frame, dtype=np.uint8))
        m = RGB_TO_YIQ[0] / 255.0
        _launch(rt, "riesz_luma", self.plan.height * self.plan.width, self.frame, self.image[0],
                *(float(v) for v in m))
        for lv in range(self.processed):
            (h, w), (h2, w2) = sizes[lv], sizes[lv + 1]
            self._step("riesz_reduce", self.image[lv], self.image[lv + 1], (h2, w2),
                       spatial_taps.reduce(w, "laplacian"), spatial_taps.reduce(h, "laplacian"))
            self._expand(lv, self.band[lv], self.image[lv], 2)

    def _filter_args(self, first: bool) -> list[Any]:
        weigh = self.plan.params["sigma"] != 0
        return [self.kind, int(first), int(weigh), *(float(c) for c in _coefficients(self.plan))]

    def track(self, first: bool) -> None:
        """The Riesz transform of each band, the step of the accumulated phase (0 at the first frame) and,
        for riesz_butterworth and riesz_iir, the temporal filter and the amplitude weights."""
        args = self._filter_args(first)
        for lv in range(self.processed):
            h, w = self.sizes[lv]
            qb, qx, qy = self.quaternion[lv]
            pc, ps = self.phase[lv]
            _launch(self.rt, "riesz_phase", h * w, self.band[lv], qb, qx, qy, pc, ps, self.amplitude[lv],
                    self.state[lv], self.weighted[lv], w, h, *args)

    def weigh(self, phase: list[tuple[Any, Any]], frame: int) -> None:
        """The amplitude weights of the ideal band-pass's output ``phase`` (per level, a pair of
        (T, h * w) :class:`~vidmag.backend.kernels.operations.Stack`) at ``frame`` (riesz_ideal's second
        pass)."""
        weigh = int(self.plan.params["sigma"] != 0)
        for lv in range(self.processed):
            stack_c, stack_s = phase[lv]
            for (p0, piece_c), (_, piece_s) in zip(stack_c.pieces, stack_s.pieces):
                cols = piece_c.shape[1]
                _launch(self.rt, "riesz_weigh", cols, piece_c, piece_s, self.amplitude[lv], self.weighted[lv],
                        frame * cols, p0, weigh)

    def render(self) -> np.ndarray:
        """Shift each band's phase (after the amplitude-weighted blur), collapse, and the output bytes."""
        rt, p = self.rt, self.plan.params
        sigma, alpha = p["sigma"], float(p["alpha"])
        for lv in range(self.processed):
            h, w = self.sizes[lv]
            qb, qx, qy = self.quaternion[lv]
            if sigma == 0:
                _launch(rt, "riesz_shift", h * w, self.weighted[lv], qb, qx, qy, self.band[lv], alpha)
                continue
            rows = self._blur(w, sigma)
            idx, wt = self.ops.taps(rows)
            rt.launch("rows_f32", h * w, self.weighted[lv], self.blur_rows[lv], rt.dummy(), idx, wt,
                      rows.index.shape[1], w, w, 0)
            cols = self._blur(h, sigma)
            idx, wt = self.ops.taps(cols)
            _launch(rt, "riesz_blur_shift", h * w, self.blur_rows[lv], idx, wt, cols.index.shape[1], qb, qx,
                    qy, self.band[lv], w, alpha)
        for lv in reversed(range(self.processed)):
            self._expand(lv, self.image[lv], self.band[lv], 1)
        pixels = self.plan.height * self.plan.width
        inverse = YIQ_TO_RGB_MIT if self.plan.mit else YIQ_TO_RGB_EXACT
        fwd = (np.asarray(RGB_TO_YIQ, dtype=np.float64) / 255.0).ravel()[3:]
        _launch(rt, "riesz_render", -(-pixels // 4), self.frame, self.image[0], self.out,
                *(float(np.float32(v)) for v in fwd),
                *(float(np.float32(v)) for v in np.asarray(inverse).ravel()), pixels)
        return rt.download(self.out)  # waits for the frame's launches


class KernelRieszStream:
    """riesz_butterworth / riesz_iir frame by frame on the shared kernel tier: ``push(frame) -> frame`` (host
    uint8 (H, W, 3) in and out) and ``retune(plan)``; frame 0 comes out as its input bytes.

    Parameters
    ----------
    ops : vidmag.backend.kernels.operations.KernelOperations
        The device's primitives.
    plan : Plan
        A riesz_butterworth or riesz_iir plan.

    See Also
    --------
    vidmag.backend.phase.PhaseStream : the stream a backend hands out, over this.

    Examples
    --------
    >>> from vidmag.backend.kernels.riesz import KernelRieszStream
    >>> KernelRieszStream.__name__
    'KernelRieszStream'
    """

    def __init__(self, ops: Any, plan: Plan) -> None:
        self.riesz = KernelRiesz(ops, plan)
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
        if first:  # the write has copied the frame; the launches set up the state
            return np.array(frame, dtype=np.uint8)
        return r.render()


def _ideal_frames(ops: Any, plan: Plan, source: Callable[[], Iterator[np.ndarray]]) -> Iterator[np.ndarray]:
    """riesz_ideal: pass 1 keeps each level's accumulated phase on the device and band-passes it (the
    unit-gain ideal filter: the primitives' projection); pass 2 re-reads the frames and shifts them."""
    r = KernelRiesz(ops, plan)
    kept: list[tuple[list, list]] = [([], []) for _ in range(r.processed)]
    count = 0
    for frame in source():
        r.analyse(frame)
        r.track(count == 0)
        for (cs, ss), (pc, ps) in zip(kept, r.phase):
            cs.append(ops.copy(pc).reshape(1, pc.size))
            ss.append(ops.copy(ps).reshape(1, ps.size))
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
    """A Riesz pipeline over a frame source on the shared kernel tier.

    Parameters
    ----------
    ops : vidmag.backend.kernels.operations.KernelOperations
        The device's primitives.
    plan : Plan
        A Riesz pipeline's plan.
    source : callable
        ``source()`` iterates over the clip's uint8 (H, W, 3) frames (riesz_ideal calls it twice).

    Returns
    -------
    iterator of numpy.ndarray
        Host uint8 (H, W, 3) frames.

    See Also
    --------
    phase_backend : a backend that routes the Riesz plans here.

    Examples
    --------
    >>> from vidmag.backend.kernels import riesz
    >>> riesz.PIPELINES
    ('riesz_ideal', 'riesz_butterworth', 'riesz_iir')
    """
    if plan.pipeline == "riesz_ideal":
        return _ideal_frames(ops, plan, source)
    stream = KernelRieszStream(ops, plan)
    return (stream.push(frame) for frame in source())


def phase_backend(linear: Any) -> Any:
    """``linear`` (a backend of :func:`vidmag.backend.generic.bind` over
    :class:`~vidmag.backend.kernels.operations.KernelOperations`) that also runs the Riesz pipelines here.

    Parameters
    ----------
    linear : vidmag.backend.generic.Backend
        The backend of the linear pipelines.

    Returns
    -------
    vidmag.backend.phase.PhaseBackend
        The same backend (name, primitives, fused tier) with riesz_ideal, riesz_butterworth and riesz_iir.

    See Also
    --------
    vidmag.backend.phase.PhaseBackend

    Examples
    --------
    >>> from vidmag.backend.kernels.riesz import phase_backend
    >>> phase_backend.__name__
    'phase_backend'
    """
    from vidmag.backend.phase import PhaseBackend

    ops = linear.operations
    return PhaseBackend(linear, pipelines=PIPELINES, frames=lambda plan, source: frames(ops, plan, source),
                        stream=lambda plan: KernelRieszStream(ops, plan))
