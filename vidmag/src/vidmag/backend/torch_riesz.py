"""The Riesz pipelines on the torch backend: the steps of :mod:`vidmag._reference.riesz`, in float32 tensors
on the backend's device.

The pyramid and the colour conversions are the torch backend's own primitives
(:class:`vidmag.backend.torch.TorchOperations`); the 3-tap Riesz transform, the quaternion phase difference,
the amplitude-weighted blur, the phase shift and the temporal filters are written here with the reference's
formulas and the same mirror borders. Checked against the reference within 1 grey level
(``vidmag/tests/test_phase_pipelines.py``). Importing this module imports no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from vidmag._reference.pyramid import pyramid_levels
from vidmag._reference.riesz import Quaternion, gaussian_taps, step_fade
from vidmag._reference.temporal import butterworth_lowpass
from vidmag.backend import spatial_taps
from vidmag.backend.host_heap import bounded_heap
from vidmag.params import Plan

#: The Riesz pipelines this module runs (steerable_ideal is backend/torch_steerable.py's).
PIPELINES = ("riesz_ideal", "riesz_butterworth", "riesz_iir")


class TorchRiesz:
    """The per-frame Riesz steps on one device, for frames of one size.

    Parameters
    ----------
    ops : vidmag.backend.torch.TorchOperations
    plan : Plan
        A Riesz pipeline's plan.
    """

    def __init__(self, ops: Any, plan: Plan) -> None:
        self.ops, self.torch, self.plan = ops, ops.torch, plan
        self.levels = pyramid_levels(plan.height, plan.width)
        self._index: dict[tuple, Any] = {}

    # --- spatial ----------------------------------------------------------------------------------------
    def _mirrored(self, n: int, radius: int) -> Any:
        """Indices of a length-n axis extended by ``radius`` samples each side (reflect1, repeated)."""
        key = (n, radius)
        if key not in self._index:
            index = [spatial_taps.reflect1(i, n) for i in range(-radius, n + radius)]
            self._index[key] = self.torch.as_tensor(index, dtype=self.torch.int64, device=self.ops.device)
        return self._index[key]

    def _correlate(self, x: Any, taps: np.ndarray, dim: int) -> Any:
        """Correlate along ``dim`` of (h, w) with odd ``taps`` centred on the middle one, mirror borders."""
        radius = len(taps) // 2
        n = x.shape[dim]
        padded = x.index_select(dim, self._mirrored(n, radius))
        out = None
        for t, weight in enumerate(taps):
            if weight == 0.0:
                continue
            term = padded.narrow(dim, t, n) * float(weight)
            out = term if out is None else out.add_(term)
        return out

    def analyse(self, luma: Any) -> tuple[list[tuple[Any, Any, Any]], Any]:
        """(band, R1, R2) of each processed level, finest first, and the residual, of a luminance (h, w)."""
        ops = self.ops
        image = luma[None, :, :, None]
        bands = []
        for _ in range(self.levels - 1):
            low = ops.pyramid_reduce(image)
            bands.append((image - ops.pyramid_expand(low, tuple(image.shape[1:3])))[0, :, :, 0])
            image = low
        taps = np.array([0.5, 0.0, -0.5])
        quaternions = [(b, self._correlate(b, taps, 1), self._correlate(b, taps, 0)) for b in bands]
        return quaternions, image[0, :, :, 0]

    def synthesise(self, bands: list[Any], residual: Any) -> Any:
        image = residual[None, :, :, None]
        for band in reversed(bands):
            image = self.ops.pyramid_expand(image, tuple(band.shape)) + band[None, :, :, None]
        return image[0, :, :, 0]

    def blur(self, x: Any, sigma: float) -> Any:
        taps = gaussian_taps(sigma)
        return self._correlate(self._correlate(x, taps, 1), taps, 0)

    # --- phase ------------------------------------------------------------------------------------------
    def _product(self, cur: tuple, prev: tuple) -> tuple[Any, Any, Any, Any, Any]:
        """(real, qx, qy, |vector|, |q|) of ``q = cur * conj(prev)``: the terms :meth:`phase_difference` and
        :meth:`amplitude` share, in one order so that both give the same bits."""
        torch = self.torch
        real = cur[0] * prev[0] + cur[1] * prev[1] + cur[2] * prev[2]
        qx = prev[0] * cur[1] - cur[0] * prev[1]
        qy = prev[0] * cur[2] - cur[0] * prev[2]
        vector = torch.sqrt(qx * qx + qy * qy)
        magnitude = torch.sqrt(real * real + vector * vector)
        return real, qx, qy, vector, magnitude

    def amplitude(self, cur: tuple, prev: tuple) -> Any:
        """``sqrt(|cur| |prev|)``: the third value of :meth:`phase_difference` alone (what the render needs),
        without the phase step's arctangent and fade and their temporaries."""
        return self.torch.sqrt(self._product(cur, prev)[4])

    def phase_difference(self, cur: tuple, prev: tuple) -> tuple[Any, Any, Any]:
        torch = self.torch
        real, qx, qy, vector, magnitude = self._product(cur, prev)
        difference = torch.atan2(vector, real)
        positive = vector > 0
        scale = torch.where(positive, difference / torch.where(positive, vector, torch.ones_like(vector)),
                            torch.zeros_like(vector))
        # the reference's fade of the step where it is undefined (riesz.step_fade), its formula in float32
        fade = step_fade(Quaternion(*cur), Quaternion(*prev), real, magnitude, where=torch.where)
        return qx * (scale * fade), qy * (scale * fade), torch.sqrt(magnitude)

    def shifted(self, q: tuple, amplitude: Any, pc: Any, ps: Any) -> Any:
        torch, p = self.torch, self.plan.params
        if p["sigma"] != 0:
            weight = amplitude + 1e-12
            norm = self.blur(weight, p["sigma"])
            pc, ps = self.blur(pc * weight, p["sigma"]) / norm, self.blur(ps * weight, p["sigma"]) / norm
        pc, ps = pc * p["alpha"], ps * p["alpha"]
        magnitude = torch.sqrt(pc * pc + ps * ps)
        positive = magnitude > 0
        sinc = torch.where(positive, torch.sin(magnitude) / torch.where(positive, magnitude,
                           torch.ones_like(magnitude)), torch.ones_like(magnitude))
        return torch.cos(magnitude) * q[0] - sinc * (pc * q[1] + ps * q[2])

    def render(self, yiq: Any, quaternions: list, residual: Any, filtered: list, amplitudes: list) -> Any:
        """The output frame (uint8 RGB): the shifted bands collapsed into ``yiq``'s luminance, written in
        place (every caller drops ``yiq`` after this: no copy of the frame's YIQ)."""
        bands = [self.shifted(q, a, pc, ps) for q, (pc, ps), a in zip(quaternions, filtered, amplitudes)]
        yiq[:, :, 0] = self.synthesise(bands, residual)
        del bands
        return self.ops.yiq_to_rgb_uint8(yiq, mit=self.plan.mit)

    def yiq(self, frame: np.ndarray) -> Any:
        return self.ops.rgb_to_yiq(self.ops.upload(frame))


class _Pair:
    """LP_high - LP_low of one signal, started at its first value (output 0 there)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.state: tuple | None = None
        self.retune(plan)

    def retune(self, plan: Plan) -> None:
        p = plan.params
        if plan.pipeline == "riesz_butterworth":
            self.high = butterworth_lowpass(p["fh"], plan.fs, mit=False)
            self.low = butterworth_lowpass(p["fl"], plan.fs, mit=False)
        else:
            self.r1, self.r2 = p["r1"], p["r2"]
        self.kind = plan.pipeline

    def step(self, x: Any) -> Any:
        if self.state is None:
            self.state = (x, x, x) if self.kind == "riesz_butterworth" else (x, x)
            return x.new_zeros(x.shape)
        if self.kind == "riesz_butterworth":
            high, low, prev = self.state
            h, lo = self.high, self.low
            high = (-h.a1 * high + h.b0 * x + h.b1 * prev) / h.a0
            low = (-lo.a1 * low + lo.b0 * x + lo.b1 * prev) / lo.a0
            self.state = (high, low, x)
        else:
            high, low = self.state
            high = (1.0 - self.r1) * high + self.r1 * x
            low = (1.0 - self.r2) * low + self.r2 * x
            self.state = (high, low)
        return high - low


class TorchRieszStream:
    """riesz_butterworth / riesz_iir frame by frame on the torch backend: ``push(frame) -> frame`` (host
    uint8 (H, W, 3) in and out); frame 0 comes out as its input bytes."""

    def __init__(self, ops: Any, plan: Plan) -> None:
        self.riesz = TorchRiesz(ops, plan)
        self.plan = plan
        self.previous: list | None = None
        self.phase: list | None = None
        self.filters: list | None = None

    def retune(self, plan: Plan) -> None:
        self.plan = self.riesz.plan = plan
        for pair in self.filters or []:
            for f in pair:
                f.retune(plan)

    def push(self, frame: np.ndarray) -> np.ndarray:
        with self.riesz.torch.no_grad():
            return self._push(frame)

    def _push(self, frame: np.ndarray) -> np.ndarray:
        r = self.riesz
        yiq = r.yiq(frame)
        quaternions, residual = r.analyse(yiq[:, :, 0])
        if self.previous is None:
            self.previous = quaternions
            self.phase = [(q[0].new_zeros(q[0].shape), q[0].new_zeros(q[0].shape)) for q in quaternions]
            self.filters = [(_Pair(self.plan), _Pair(self.plan)) for _ in quaternions]
            for (fc, fsn), (pc, ps) in zip(self.filters, self.phase):
                fc.step(pc), fsn.step(ps)
            return np.array(frame, dtype=np.uint8)
        steps = [r.phase_difference(q, p) for q, p in zip(quaternions, self.previous)]
        self.phase = [(c + dc, s + ds) for (c, s), (dc, ds, _) in zip(self.phase, steps)]
        self.previous = quaternions
        filtered = [(fc.step(pc), fsn.step(ps)) for (fc, fsn), (pc, ps) in zip(self.filters, self.phase)]
        amplitudes = [a for _, _, a in steps]
        del steps
        out = r.render(yiq, quaternions, residual, filtered, amplitudes)
        return r.ops.download(out)


def _accumulated(r: TorchRiesz, source: Callable[[], Iterator[np.ndarray]],
                 ) -> Iterator[list[tuple[Any, Any]]]:
    """Each frame's accumulated phase, per processed level its (cos, sin) parts (0 at the first frame):
    riesz_ideal's first pass."""
    previous, phase = None, None
    for frame in source():
        quaternions, _ = r.analyse(r.yiq(frame)[:, :, 0])  # the frame's YIQ goes once its luma is analysed
        if previous is None:
            phase = [(q[0].new_zeros(q[0].shape), q[0].new_zeros(q[0].shape)) for q in quaternions]
        else:
            # level by level: one level's step and its temporaries alive at a time, not every level's
            accumulated = []
            for (c, s), q, pq in zip(phase, quaternions, previous):
                dc, ds, _ = r.phase_difference(q, pq)
                accumulated.append((c + dc, s + ds))
                del dc, ds
            phase = accumulated
        previous = quaternions
        yield phase


def _ideal(ops: Any, plan: Plan, series: Any) -> Any:
    """The unit-gain ideal band-pass (fl <= |f| <= fh) along dim 0 of ``series`` (T, ...)."""
    torch, p = ops.torch, plan.params
    n = series.shape[0]
    freq = torch.arange(n // 2 + 1, dtype=torch.float64) / n * plan.fs
    mask = ((freq >= p["fl"]) & (freq <= p["fh"])).to(device=ops.device)
    spectrum = torch.fft.rfft(series, dim=0) * mask.reshape(-1, *(1,) * (series.dim() - 1))
    return torch.fft.irfft(spectrum, n=n, dim=0)


def _rendered(r: TorchRiesz, source: Callable[[], Iterator[np.ndarray]],
              at: Callable[[int], list[tuple[Any, Any]]]) -> Iterator[np.ndarray]:
    """riesz_ideal's second pass: each frame shifted by ``at(t)``, its filtered phase per level."""
    previous = None
    for t, frame in enumerate(source()):
        yiq = r.yiq(frame)
        quaternions, residual = r.analyse(yiq[:, :, 0])
        # only the amplitudes: the phase steps themselves come filtered from ``at``
        amplitudes = [r.amplitude(q, pq) for q, pq in zip(quaternions, previous or quaternions)]
        previous = quaternions
        yield r.ops.download(r.render(yiq, quaternions, residual, at(t), amplitudes))


def ideal_frames(ops: Any, plan: Plan, source: Callable[[], Iterator[np.ndarray]]) -> Iterator[np.ndarray]:
    """riesz_ideal on the torch backend: pass 1 keeps each level's accumulated phase on the device and
    band-passes it (unit-gain ideal filter, fl <= |f| <= fh); pass 2 re-reads the frames and shifts them."""
    torch = ops.torch
    r = TorchRiesz(ops, plan)
    with torch.no_grad():
        kept = None
        for phase in _accumulated(r, source):
            if kept is None:
                kept = [([], []) for _ in phase]
            for (cs, ss), (pc, ps) in zip(kept, phase):
                cs.append(pc)
                ss.append(ps)
        if kept is None:
            return
        filtered = [(_ideal(ops, plan, torch.stack(cs)), _ideal(ops, plan, torch.stack(ss)))
                    for cs, ss in kept]
        del kept
        yield from _rendered(r, source, lambda t: [(c[t], s[t]) for c, s in filtered])


class IdealSteps:
    """riesz_ideal's steps on the torch backend with the phase on the host: the bounded-memory route's side
    of the device (:func:`vidmag._out_of_core.phase_on_device` holds the files).

    The same tensor operations as :func:`ideal_frames`, in its order: ``phases`` gives each frame's
    accumulated phase (float32, downloaded), ``bandpass`` filters a (T, width) block of series with the same
    FFT along time (each series transformed alone), ``frames`` renders each frame with its row of the
    filtered phase uploaded. On the CPU both passes run under :func:`vidmag.backend.host_heap.bounded_heap`
    (the route is there to bound the process's memory).

    Parameters
    ----------
    ops : vidmag.backend.torch.TorchOperations
    plan : Plan
        A riesz_ideal plan.
    """

    def __init__(self, ops: Any, plan: Plan) -> None:
        self.ops, self.plan = ops, plan
        self.riesz = TorchRiesz(ops, plan)
        self.shapes: list[tuple[int, ...]] = []

    def phases(self, source: Callable[[], Iterator[np.ndarray]]) -> Iterator[list[tuple[np.ndarray, ...]]]:
        """Per frame, per processed level: the (cos, sin) parts of its accumulated phase, on the host."""
        download = self.ops.download
        with self.ops.torch.no_grad(), bounded_heap(self.ops.device.type == "cpu"):
            for phase in _accumulated(self.riesz, source):
                self.shapes = [tuple(pc.shape) for pc, _ in phase]
                yield [(download(pc), download(ps)) for pc, ps in phase]

    def bandpass(self, block: np.ndarray) -> np.ndarray:
        """The ideal band-pass of a (T, width) float32 block of series, on the device."""
        torch = self.ops.torch
        with torch.no_grad():
            series = torch.from_numpy(np.ascontiguousarray(block, dtype=np.float32)).to(self.ops.device)
            return self.ops.download(_ideal(self.ops, self.plan, series))

    def frames(self, source: Callable[[], Iterator[np.ndarray]],
               at: Callable[[int], list[np.ndarray]]) -> Iterator[np.ndarray]:
        """The rendered frames; ``at(t)`` gives frame t's filtered phase, per level its cos then sin values
        flat (as :meth:`phases` gave them)."""
        torch, device = self.ops.torch, self.ops.device

        def levels(t: int) -> list[tuple[Any, Any]]:
            pairs = []
            for values, shape in zip(at(t), self.shapes):
                both = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32)).to(device)
                pairs.append(tuple(both.reshape(2, *shape)))
            return pairs

        with torch.no_grad(), bounded_heap(device.type == "cpu"):
            yield from _rendered(self.riesz, source, levels)


def frames(ops: Any, plan: Plan, source: Callable[[], Iterator[np.ndarray]]) -> Iterator[np.ndarray]:
    """A Riesz pipeline over a frame source on the torch backend: host uint8 frames out."""
    if plan.pipeline == "riesz_ideal":
        return ideal_frames(ops, plan, source)
    stream = TorchRieszStream(ops, plan)
    return (stream.push(frame) for frame in source())

