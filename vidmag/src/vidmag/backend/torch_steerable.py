"""steerable_ideal on the torch backend: the steps of :mod:`vidmag._reference.steerable` on tensors of the
backend's device, every frame of the clip at once.

The filters are the reference's own (:func:`vidmag._reference.steerable.filter_bank`: the masks the MIT
phase code's ``getFilters`` builds on the centred spectrum, each cropped), sent to the device once per frame
size in float32 (the float64 bank is not kept);
the spectra, the bands and their phase are complex64 / float32 like the rest of the backend. Per band: the
coefficients of every frame (one batched inverse FFT of the band's crop), their phase relative to frame 0
wrapped to [-pi, pi), the temporal filter along the frames (the unit-gain ideal band-pass, or the MIT
``FIRWindowBP`` under ``compat="mit"``), the amplitude-weighted blur with circular borders, the shift by
``exp(i alpha dphi)`` (of frame 0's phase with ``attenuate_other_freq``), and the band's contribution added
back into the spectrum. The colour conversions are the torch backend's primitives.

The clip is read twice: the first pass keeps each frame's luminance spectrum on the device, the second
re-reads the frames for their chrominance as the output is rendered. Checked against the reference within 1
grey level (``vidmag/tests/test_steerable_torch.py``). Importing this module imports no torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from vidmag._reference import steerable
from vidmag._reference.riesz import gaussian_taps
from vidmag.backend.host_heap import bounded_heap
from vidmag.params import Plan

#: The pipelines this module runs.
PIPELINES = ("steerable_ideal",)

Source = Callable[[], Iterator[np.ndarray]]


class TorchSteerable:
    """The pyramid's filters on one device and the per-band steps, for frames of one size.

    Parameters
    ----------
    ops : vidmag.backend.torch.TorchOperations
    plan : Plan
        A steerable_ideal plan.
    """

    def __init__(self, ops: Any, plan: Plan) -> None:
        self.ops, self.torch, self.plan = ops, ops.torch, plan
        p = plan.params
        # built here, not taken from the reference's memoised filters(): only the crops and a float32 copy
        # of each filter are kept, and the float64 bank (26 MB at 960 x 544) goes when this is built
        bank = steerable.filter_bank(plan.height, plan.width, p["orientations"], p["bands_per_octave"])
        self.crops = [(band.rows, band.cols) for band in bank]
        self.masks = [self.torch.as_tensor(band.filter, dtype=self.torch.float32, device=ops.device)
                      for band in bank]
        self._index: dict[tuple[int, int], Any] = {}

    def spectrum(self, luma: Any) -> Any:
        """The centred spectrum of a luminance image (h, w) or stack (n, h, w)."""
        fft = self.torch.fft
        return fft.fftshift(fft.fft2(luma), dim=(-2, -1))

    def coefficients(self, spec: Any, i: int) -> Any:
        """Band ``i`` of the bank (complex, on its crop's grid) of every spectrum of a (T, H, W) stack."""
        (rows, cols), fft = self.crops[i], self.torch.fft
        return fft.ifft2(fft.ifftshift(self.masks[i] * spec[:, rows, cols], dim=(-2, -1)))

    def add_band(self, out: Any, coefficients: Any, i: int) -> None:
        (rows, cols), fft = self.crops[i], self.torch.fft
        spectrum = fft.fftshift(fft.fft2(coefficients), dim=(-2, -1))
        out[:, rows, cols] += 2.0 * self.masks[i] * spectrum

    def add_residual(self, out: Any, spec: Any, i: int) -> None:
        rows, cols = self.crops[i]
        out[:, rows, cols] += self.masks[i] * self.masks[i] * spec[:, rows, cols]

    # --- time -------------------------------------------------------------------------------------------
    def bandpass(self, delta: Any) -> Any:
        """The temporal filter of the phase along dim 0 of (T, h, w): the unit-gain ideal band-pass
        (fl <= |f| <= fh), or ``FIRWindowBP`` under ``compat="mit"``."""
        torch, plan, p = self.torch, self.plan, self.plan.params
        n = delta.shape[0]
        if plan.mit:
            from scipy.signal import firwin

            taps = firwin(n + 1, [p["fl"] / (plan.fs / 2.0), p["fh"] / (plan.fs / 2.0)], pass_zero=False,
                          window="hamming")[:n]
            transfer = torch.as_tensor(np.fft.fft(np.fft.ifftshift(taps)), dtype=torch.complex64,
                                       device=delta.device)
            return torch.fft.ifft(torch.fft.fft(delta, dim=0) * transfer.reshape(-1, 1, 1), dim=0).real
        freq = np.arange(n // 2 + 1) / n * plan.fs
        keep = torch.as_tensor((freq >= p["fl"]) & (freq <= p["fh"]), dtype=torch.float32,
                               device=delta.device)
        return torch.fft.irfft(torch.fft.rfft(delta, dim=0) * keep.reshape(-1, 1, 1), n=n, dim=0)

    # --- space ------------------------------------------------------------------------------------------
    def _wrapped(self, n: int, radius: int) -> Any:
        """Indices of a length-n axis extended by ``radius`` samples each side, periodically (scipy's
        ``mode="wrap"``, the circular borders of the spectrum's grid)."""
        key = (n, radius)
        if key not in self._index:
            index = [(i - radius) % n for i in range(n + 2 * radius)]
            self._index[key] = self.torch.as_tensor(index, dtype=self.torch.int64, device=self.ops.device)
        return self._index[key]

    def _correlate(self, x: Any, taps: np.ndarray, dim: int) -> Any:
        radius, n = len(taps) // 2, x.shape[dim]
        padded = x.index_select(dim, self._wrapped(n, radius))
        out = padded.narrow(dim, 0, n) * float(taps[0])
        for t in range(1, len(taps)):
            out = out.add_(padded.narrow(dim, t, n) * float(taps[t]))
        return out

    def smoothed(self, delta: Any, amplitude: Any) -> Any:
        """``blur(delta * A) / blur(A)`` over the last two dims, circular borders; sigma 0: ``delta``."""
        sigma = self.plan.params["sigma"]
        if sigma == 0:
            return delta
        taps = gaussian_taps(sigma)

        def blur(x: Any) -> Any:
            return self._correlate(self._correlate(x, taps, -1), taps, -2)

        weight = amplitude + 1e-12
        return blur(delta * weight) / blur(weight)

    # --- the clip ---------------------------------------------------------------------------------------
    def relative_phase(self, coefficients: Any, reference: Any) -> Any:
        """The phase of ``coefficients`` relative to ``reference`` (frame 0's), wrapped to [-pi, pi)."""
        # in place on one temporary: the same operations, in the same order, as
        # remainder(pi + angle - reference, 2 pi) - pi
        # in place on one temporary: the same operations, in the same order, as
        # remainder(pi + angle - reference, 2 pi) - pi
        phase = self.torch.angle(coefficients).add_(math.pi).sub_(reference)
        return phase.remainder_(2 * math.pi).sub_(math.pi)

    def add_shifted(self, out: Any, coefficients: Any, filtered: Any, reference: Any, i: int) -> None:
        """Band ``i``'s coefficients shifted by ``alpha`` times their band-passed phase ``filtered``
        (amplitude-weighted blur first), added into ``out``."""
        torch, p = self.torch, self.plan.params
        amplitude = coefficients.abs()
        phase = p["alpha"] * self.smoothed(filtered, amplitude)
        base = amplitude * torch.exp(1j * reference) if p["attenuate_other_freq"] else coefficients
        self.add_band(out, torch.polar(torch.ones_like(phase), phase) * base, i)

    def collapsed(self, out: Any, spec: Any) -> Any:
        """The luminance of the magnified bands ``out`` with the residuals of ``spec`` added."""
        self.add_residual(out, spec, len(self.crops) - 1)
        if not self.plan.mit:
            self.add_residual(out, spec, 0)
        return self.torch.fft.ifft2(self.torch.fft.ifftshift(out, dim=(-2, -1))).real

    def magnified_luma(self, spec: Any) -> Any:
        """The magnified luminance (T, H, W) of a clip's centred spectra (T, H, W)."""
        out = self.torch.zeros_like(spec)
        for i in range(1, len(self.crops) - 1):
            coefficients = self.coefficients(spec, i)
            reference = self.torch.angle(coefficients[0])
            filtered = self.bandpass(self.relative_phase(coefficients, reference))
            self.add_shifted(out, coefficients, filtered, reference, i)
        return self.collapsed(out, spec)


class IdealSteps:
    """steerable_ideal's steps on the torch backend with the phase on the host: the bounded-memory route's
    side of the device (:func:`vidmag._out_of_core.phase_on_device` holds the files).

    The operations of :meth:`TorchSteerable.magnified_luma` frame by frame: ``phases`` gives each band's
    phase relative to frame 0 (float32, downloaded; frame 0's phase of every band stays on the device),
    ``bandpass`` is the same temporal filter on a (T, width) block of series, ``frames`` renders each frame
    from its spectrum, recomputed, and its row of the filtered phase uploaded. On the CPU both passes run
    under :func:`vidmag.backend.host_heap.bounded_heap` (the route is there to bound the process's memory).

    Parameters
    ----------
    ops : vidmag.backend.torch.TorchOperations
    plan : Plan
        A steerable_ideal plan.
    """

    def __init__(self, ops: Any, plan: Plan) -> None:
        self.ops, self.plan = ops, plan
        self.steerable = TorchSteerable(ops, plan)
        self.reference: list[Any] = []

    def _spectrum(self, frame: np.ndarray) -> tuple[Any, Any]:
        """The frame's YIQ and its luminance's centred spectrum as a one-frame stack (1, H, W)."""
        yiq = self.ops.rgb_to_yiq(self.ops.upload(frame))
        return yiq, self.steerable.spectrum(yiq[:, :, 0][None])

    def phases(self, source: Source) -> Iterator[list[tuple[np.ndarray, ...]]]:
        """Per frame, per band: its phase relative to frame 0's, on the host."""
        s, download = self.steerable, self.ops.download
        with self.ops.torch.no_grad(), bounded_heap(self.ops.device.type == "cpu"):
            for frame in source():
                spec = self._spectrum(frame)[1]
                row = []
                for i in range(1, len(s.crops) - 1):
                    coefficients = s.coefficients(spec, i)
                    if len(self.reference) < len(s.crops) - 2:
                        self.reference.append(self.ops.torch.angle(coefficients[0]))
                    row.append((download(s.relative_phase(coefficients, self.reference[i - 1])[0]),))
                yield row

    def bandpass(self, block: np.ndarray) -> np.ndarray:
        """The temporal filter of a (T, width) float32 block of series, on the device."""
        torch = self.ops.torch
        with torch.no_grad():
            series = torch.from_numpy(np.ascontiguousarray(block, dtype=np.float32)).to(self.ops.device)
            return self.ops.download(self.steerable.bandpass(series[:, None, :])[:, 0, :])

    def frames(self, source: Source, at: Callable[[int], list[np.ndarray]]) -> Iterator[np.ndarray]:
        """The rendered frames; ``at(t)`` gives frame t's filtered phase per band, flat."""
        s, ops, torch = self.steerable, self.ops, self.ops.torch
        with torch.no_grad(), bounded_heap(ops.device.type == "cpu"):
            for t, frame in enumerate(source()):
                yiq, spec = self._spectrum(frame)
                out = torch.zeros_like(spec)
                for i, values in enumerate(at(t), start=1):
                    coefficients = s.coefficients(spec, i)
                    filtered = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32))
                    filtered = filtered.to(ops.device).reshape(coefficients.shape)
                    s.add_shifted(out, coefficients, filtered, self.reference[i - 1], i)
                yiq[:, :, 0] = s.collapsed(out, spec)[0]
                yield ops.download(ops.yiq_to_rgb_uint8(yiq, mit=self.plan.mit))


def frames(ops: Any, plan: Plan, source: Source) -> Iterator[np.ndarray]:
    """steerable_ideal over a frame source on the torch backend: host uint8 (H, W, 3) frames out.

    Pass 1 keeps each frame's luminance spectrum on the device; pass 2 re-reads the frames and renders each
    with its magnified luminance and its own chrominance.
    """
    torch = ops.torch
    s = TorchSteerable(ops, plan)
    with torch.no_grad():
        spectra = [s.spectrum(ops.rgb_to_yiq(ops.upload(frame))[:, :, 0]) for frame in source()]
        if not spectra:
            return
        luma = s.magnified_luma(torch.stack(spectra))
        del spectra
        for t, frame in enumerate(source()):
            yiq = ops.rgb_to_yiq(ops.upload(frame))
            yiq[:, :, 0] = luma[t]
            yield ops.download(ops.yiq_to_rgb_uint8(yiq, mit=plan.mit))
