"""The device-independent host side of the Riesz pipelines (the steps of :mod:`vidmag._reference.riesz`, one
frame at a time): the buffers of a frame size, the order of the steps (analyse, track, weigh, render), the
live stream's push / retune and riesz_ideal's two passes, the filters' coefficients and the blur's tap tables.

Each device module (:mod:`vidmag.backend.opencl.riesz`, :mod:`vidmag.backend.kernels.riesz`) subclasses
:class:`RieszDriver` with only what differs: how a frame is uploaded and downloaded, how a kernel is launched
(the opencl backend's hand-written kernels take 8 pixels a work item, the shared kernel tier's one), and how
the phase, the weights and the shift are launched per level. This module imports no device library.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

import numpy as np

from vidmag._reference.pyramid import level_sizes, pyramid_levels
from vidmag._reference.riesz import gaussian_taps
from vidmag._reference.temporal import butterworth_lowpass
from vidmag.backend import spatial_taps
from vidmag.backend.spatial_taps import Taps
from vidmag.params import Plan

__all__ = ["FILTER_KIND", "PIPELINES", "IdealSteps", "RieszDriver", "RieszStream", "blur_taps",
           "filter_coefficients", "frames", "ideal_frames"]

#: The Riesz pipelines the drivers run.
PIPELINES = ("riesz_ideal", "riesz_butterworth", "riesz_iir")

#: ``kind`` of the phase / filter kernels per pipeline: 0 no filter (the ideal band-pass runs over the clip).
FILTER_KIND = {"riesz_ideal": 0, "riesz_butterworth": 1, "riesz_iir": 2}


@lru_cache(maxsize=64)
def blur_taps(n: int, sigma: float) -> Taps:
    """The reference's Gaussian blur along an axis of ``n`` samples as a tap table.

    Parameters
    ----------
    n : int
        The axis' length.
    sigma : float
        The Gaussian's standard deviation (the Riesz pipelines' ``sigma``).

    Returns
    -------
    Taps
        The taps of :func:`vidmag._reference.riesz.gaussian_taps` with mirror (``reflect1``) borders,
        repeated reflections for a kernel longer than the axis, as :func:`scipy.ndimage.correlate1d`
        extends it.

    See Also
    --------
    vidmag.backend.spatial_taps.Taps

    Examples
    --------
    >>> from vidmag.backend.riesz_driver import blur_taps
    >>> blur_taps(5, 1.0).n_in
    5
    """
    taps = gaussian_taps(sigma)
    radius = len(taps) // 2
    index = np.array([[spatial_taps.reflect1(i + t - radius, n) for t in range(len(taps))] for i in range(n)],
                     dtype=np.int32)
    return Taps(index, np.broadcast_to(taps, index.shape).copy(), n)


def filter_coefficients(plan: Plan) -> tuple[float, ...]:
    """The temporal filter's coefficients (hb0, hb1, ha0, ha1, lb0, lb1, la0, la1) for ``plan``.

    Parameters
    ----------
    plan : Plan
        A Riesz pipeline's plan.

    Returns
    -------
    tuple of float
        The Butterworth pair's (b0, b1, a0, a1) of LP(fh) and LP(fl) (default semantics, as the reference),
        or the IIR's (1 - r1, r1, 1, 0, 1 - r2, r2, 1, 0); zeros for riesz_ideal.

    See Also
    --------
    vidmag._reference.temporal.butterworth_lowpass

    Examples
    --------
    >>> from vidmag.backend.riesz_driver import filter_coefficients
    >>> filter_coefficients.__name__
    'filter_coefficients'
    """
    p = plan.params
    if plan.pipeline == "riesz_butterworth":
        high = butterworth_lowpass(p["fh"], plan.fs, mit=False)
        low = butterworth_lowpass(p["fl"], plan.fs, mit=False)
        return (high.b0, high.b1, high.a0, high.a1, low.b0, low.b1, low.a0, low.a1)
    if plan.pipeline == "riesz_iir":
        return (1.0 - p["r1"], p["r1"], 1.0, 0.0, 1.0 - p["r2"], p["r2"], 1.0, 0.0)
    return (0.0,) * 8


class RieszDriver:
    """The per-frame Riesz steps for frames of one size, with their buffers; a device subclasses it.

    The hooks a device gives: ``_load`` (upload a frame, its luminance into ``image[0]``), ``_step`` (one
    reduce or expand launch), ``track_level``, ``weigh``, ``shift_level``, ``_output`` (the output bytes, on
    the host) and ``keep`` (a copy of a phase plane as a (1, h * w) array).

    Parameters
    ----------
    ops : object
        The device's primitives (``ops.rt`` is its runtime, with ``empty(shape[, dtype])``).
    plan : Plan
        A Riesz pipeline's plan.

    See Also
    --------
    RieszStream : the live stream over a driver.
    ideal_frames : riesz_ideal's two passes over a driver.

    Examples
    --------
    >>> from vidmag.backend.riesz_driver import RieszDriver
    >>> RieszDriver.__name__
    'RieszDriver'
    """

    #: The scalar types of the launches' integer and float arguments (the opencl backend's need numpy's).
    int_type: Callable[[Any], Any] = int
    float_type: Callable[[Any], Any] = float

    def __init__(self, ops: Any, plan: Plan) -> None:
        self.ops, self.rt = ops, ops.rt
        self.plan = plan
        self.kind = FILTER_KIND[plan.pipeline]
        levels = pyramid_levels(plan.height, plan.width)
        self.sizes = level_sizes(plan.height, plan.width, levels)
        self.processed = levels - 1
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

    # --- device hooks ---------------------------------------------------------------------------------------
    def _load(self, frame: np.ndarray) -> None:
        """Upload ``frame`` into ``self.frame`` and write its luminance into ``image[0]``."""
        raise NotImplementedError

    def _step(self, name: str, src: Any, dst: Any, size: tuple[int, int], x: Taps, y: Taps,
              other: Any = None, mode: int | None = None) -> None:
        """riesz_reduce, or riesz_expand (``other``, ``mode``), from ``src`` to ``dst`` (``size`` = (h, w) of
        the output)."""
        raise NotImplementedError

    def track_level(self, lv: int, args: list[Any]) -> None:
        """Level ``lv``'s Riesz transform, phase step, temporal filter and weights (``args``:
        :meth:`_filter_args`)."""
        raise NotImplementedError

    def weigh(self, phase: list[tuple[Any, Any]], frame: int) -> None:
        """The amplitude weights of the ideal band-pass's output ``phase`` (per level, a pair of (T, h * w)
        stacks) at ``frame`` (riesz_ideal's second pass)."""
        raise NotImplementedError

    def shift_level(self, lv: int, sigma: float, alpha: Any) -> None:
        """Level ``lv``'s phase shift by ``alpha`` (after the amplitude-weighted blur of ``sigma``, unless
        it is 0)."""
        raise NotImplementedError

    def _output(self) -> np.ndarray:
        """The output bytes from ``image[0]`` and the input's I and Q, downloaded (waits for the frame)."""
        raise NotImplementedError

    def keep(self, plane: Any) -> Any:
        """A copy of the phase plane ``plane`` as a (1, h * w) array (riesz_ideal's first pass)."""
        raise NotImplementedError

    # --- steps ----------------------------------------------------------------------------------------------
    def _expand(self, lv: int, dst: Any, other: Any, mode: int) -> None:
        """Level ``lv + 1``'s image expanded to level ``lv``: ``other`` plus it (mode 1) or minus it (2)."""
        (h, w), (h2, w2) = self.sizes[lv], self.sizes[lv + 1]
        self._step("riesz_expand", self.image[lv + 1], dst, (h, w), spatial_taps.expand(w2, w),
                   spatial_taps.expand(h2, h), other, mode)

    def analyse(self, frame: np.ndarray) -> None:
        """Upload ``frame`` (uint8 (H, W, 3)); its luminance's Laplacian pyramid into ``band`` and, for the
        residual, ``image[-1]``."""
        self._load(frame)
        sizes = self.sizes
        for lv in range(self.processed):
            (h, w), (h2, w2) = sizes[lv], sizes[lv + 1]
            self._step("riesz_reduce", self.image[lv], self.image[lv + 1], (h2, w2),
                       spatial_taps.reduce(w, "laplacian"), spatial_taps.reduce(h, "laplacian"))
            self._expand(lv, self.band[lv], self.image[lv], 2)

    def _filter_args(self, first: bool) -> list[Any]:
        weigh = self.plan.params["sigma"] != 0
        i, f = self.int_type, self.float_type
        return [i(self.kind), i(first), i(weigh), *(f(c) for c in filter_coefficients(self.plan))]

    def track(self, first: bool) -> None:
        """The Riesz transform of each band, the step of the accumulated phase (0 at the first frame) and,
        for riesz_butterworth and riesz_iir, the temporal filter and the amplitude weights."""
        args = self._filter_args(first)
        for lv in range(self.processed):
            self.track_level(lv, args)

    def render(self) -> np.ndarray:
        """Shift each band's phase (after the amplitude-weighted blur), collapse, and the output bytes."""
        p = self.plan.params
        sigma, alpha = p["sigma"], self.float_type(p["alpha"])
        for lv in range(self.processed):
            self.shift_level(lv, sigma, alpha)
        for lv in reversed(range(self.processed)):
            self._expand(lv, self.image[lv], self.band[lv], 1)
        return self._output()


class RieszStream:
    """riesz_butterworth / riesz_iir frame by frame: ``push(frame) -> frame`` (host uint8 (H, W, 3) in and
    out) and ``retune(plan)``; frame 0 comes out as its input bytes. A device names its driver in ``driver``.

    Parameters
    ----------
    ops : object
        The device's primitives.
    plan : Plan
        A riesz_butterworth or riesz_iir plan.

    See Also
    --------
    RieszDriver : the steps it runs.
    vidmag.backend.phase.PhaseStream : the stream a backend hands out, over this.

    Examples
    --------
    >>> from vidmag.backend.riesz_driver import RieszStream
    >>> RieszStream.__name__
    'RieszStream'
    """

    #: The device's :class:`RieszDriver` subclass.
    driver: type[RieszDriver] = RieszDriver

    def __init__(self, ops: Any, plan: Plan) -> None:
        self.riesz = self.driver(ops, plan)
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
        if first:  # the upload has copied the frame; the launches set up the state
            return np.array(frame, dtype=np.uint8)
        return r.render()


def _tracked(r: RieszDriver, source: Callable[[], Iterator[np.ndarray]]) -> Iterator[int]:
    """Each frame's index once it is analysed and tracked on ``r`` (its accumulated phase in ``r.phase``,
    its amplitudes in ``r.amplitude``): the per-frame steps both passes of riesz_ideal begin with."""
    for t, frame in enumerate(source()):
        r.analyse(frame)
        r.track(t == 0)  # on the second pass: the amplitudes again (they need the previous frame)
        yield t


def ideal_frames(driver: type[RieszDriver], ops: Any, plan: Plan,
                 source: Callable[[], Iterator[np.ndarray]]) -> Iterator[np.ndarray]:
    """riesz_ideal on a device, through its driver.

    Pass 1 keeps each level's accumulated phase on the device and band-passes it (the unit-gain ideal
    filter, fl <= |f| <= fh: the primitives' band-pass projection); pass 2 re-reads the frames and shifts
    them.

    Parameters
    ----------
    driver : type
        The device's :class:`RieszDriver` subclass (made when the first frame is asked for).
    ops : object
        The device's primitives (with ``concat_frames`` and ``bandpass``).
    plan : Plan
        A riesz_ideal plan.
    source : callable
        ``source()`` iterates over the clip's uint8 (H, W, 3) frames (called twice).

    Yields
    ------
    numpy.ndarray
        Host uint8 (H, W, 3) frames.

    See Also
    --------
    frames : a Riesz pipeline over a frame source.
    IdealSteps : the same steps with the phase in host files (the bounded-memory route).

    Examples
    --------
    >>> from vidmag.backend.riesz_driver import ideal_frames
    >>> ideal_frames.__name__
    'ideal_frames'
    """
    r = driver(ops, plan)
    kept: list[tuple[list, list]] = [([], []) for _ in range(r.processed)]
    count = 0
    for _ in _tracked(r, source):
        for (cs, ss), (pc, ps) in zip(kept, r.phase):
            cs.append(r.keep(pc))
            ss.append(r.keep(ps))
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
    for t in _tracked(r, source):
        r.weigh(filtered, t)
        yield r.render()


class IdealSteps:
    """riesz_ideal's steps on a device with the phase on the host: the bounded-memory route's side of the
    device (:func:`vidmag._out_of_core.phase_on_device` holds the files).

    The same launches as :func:`ideal_frames`, in its order: ``phases`` gives each frame's accumulated phase
    as the device holds it (float32), ``bandpass`` filters a block of series by the primitives' projection
    along time (each value's series summed alone, so a block's width changes no value), and ``frames``
    renders each frame with its row of the filtered phase uploaded.

    Parameters
    ----------
    driver : type
        The device's :class:`RieszDriver` subclass.
    ops : object
        The device's primitives (``rt.to_device``, ``download``, ``concat_frames``, ``bandpass``).
    plan : Plan
        A riesz_ideal plan.

    See Also
    --------
    ideal_frames : the same run with the phase on the device.

    Examples
    --------
    >>> from vidmag.backend.riesz_driver import IdealSteps
    >>> IdealSteps.__name__
    'IdealSteps'
    """

    def __init__(self, driver: type[RieszDriver], ops: Any, plan: Plan) -> None:
        self.driver, self.ops, self.plan = driver, ops, plan
        levels = pyramid_levels(plan.height, plan.width)
        self.shapes = level_sizes(plan.height, plan.width, levels)[: levels - 1]  # the processed levels

    def phases(self, source: Callable[[], Iterator[np.ndarray]]) -> Iterator[list[tuple[np.ndarray, ...]]]:
        """Per frame, per processed level: the (cos, sin) parts of its accumulated phase, on the host."""
        r = self.driver(self.ops, self.plan)
        download = self.ops.download
        for _ in _tracked(r, source):
            yield [(download(pc), download(ps)) for pc, ps in r.phase]

    def bandpass(self, block: np.ndarray) -> np.ndarray:
        """The unit-gain ideal band-pass of a (T, width) float32 block of series, on the device."""
        p, ops = self.plan.params, self.ops
        stack = ops.concat_frames([ops.rt.to_device(np.ascontiguousarray(block, dtype=np.float32))])
        return ops.bandpass(stack, p["fl"], p["fh"], self.plan.fs, mit=False).get()

    def frames(self, source: Callable[[], Iterator[np.ndarray]],
               at: Callable[[int], list[np.ndarray]]) -> Iterator[np.ndarray]:
        """The rendered frames; ``at(t)`` gives frame t's filtered phase, per level its cos then sin values
        flat (as :meth:`phases` gave them)."""
        r, ops = self.driver(self.ops, self.plan), self.ops

        def row(values: np.ndarray) -> Any:  # one frame's series as a one-frame stack
            return ops.concat_frames([ops.rt.to_device(values.reshape(1, -1))])

        for t in _tracked(r, source):
            filtered = []
            for values, (h, w) in zip(at(t), self.shapes):
                filtered.append((row(values[: h * w]), row(values[h * w:])))
            r.weigh(filtered, 0)
            yield r.render()


def frames(stream: type[RieszStream], ops: Any, plan: Plan,
           source: Callable[[], Iterator[np.ndarray]]) -> Iterator[np.ndarray]:
    """A Riesz pipeline over a frame source on a device.

    Parameters
    ----------
    stream : type
        The device's :class:`RieszStream` subclass (its ``driver`` runs riesz_ideal).
    ops : object
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
    ideal_frames : riesz_ideal's two passes.

    Examples
    --------
    >>> from vidmag.backend.riesz_driver import PIPELINES
    >>> PIPELINES
    ('riesz_ideal', 'riesz_butterworth', 'riesz_iir')
    """
    if plan.pipeline == "riesz_ideal":
        return ideal_frames(stream.driver, ops, plan, source)
    s = stream(ops, plan)
    return (s.push(frame) for frame in source())
