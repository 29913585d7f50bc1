"""steerable_ideal on the torch backend: the steps of :mod:`vidmag._reference.steerable` on tensors of the
backend's device, every frame of the clip at once.

The filters are the reference's own (:func:`vidmag._reference.steerable.filters`: the masks the MIT phase
code's ``getFilters`` builds on the centred spectrum, each cropped), sent to the device once per frame size;
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
        self.bank = steerable.filters(plan.height, plan.width, p["orientations"], p["bands_per_octave"])
        self.masks = [self.torch.as_tensor(band.filter, dtype=self.torch.float32, device=ops.device)
                      for band in self.bank]
        self._index: dict[tuple[int, int], Any] = {}

    def spectrum(self, luma: Any) -> Any:
        """The centred spectrum of a luminance image (h, w) or stack (n, h, w)."""
        fft = self.torch.fft
        return fft.fftshift(fft.fft2(luma), dim=(-2, -1))

    def coefficients(self, spec: Any, i: int) -> Any:
        """Band ``i`` of the bank (complex, on its crop's grid) of every spectrum of a (T, H, W) stack."""
        band, fft = self.bank[i], self.torch.fft
        return fft.ifft2(fft.ifftshift(self.masks[i] * spec[:, band.rows, band.cols], dim=(-2, -1)))

    def add_band(self, out: Any, coefficients: Any, i: int) -> None:
        band, fft = self.bank[i], self.torch.fft
        spectrum = fft.fftshift(fft.fft2(coefficients), dim=(-2, -1))
        out[:, band.rows, band.cols] += 2.0 * self.masks[i] * spectrum

    def add_residual(self, out: Any, spec: Any, i: int) -> None:
        band = self.bank[i]
        out[:, band.rows, band.cols] += self.masks[i] * self.masks[i] * spec[:, band.rows, band.cols]

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
    def magnified_luma(self, spec: Any) -> Any:
        """The magnified luminance (T, H, W) of a clip's centred spectra (T, H, W)."""
        torch, p = self.torch, self.plan.params
        out = torch.zeros_like(spec)
        for i in range(1, len(self.bank) - 1):
            coefficients = self.coefficients(spec, i)
            amplitude = coefficients.abs()
            reference = torch.angle(coefficients[0])
            delta = torch.remainder(math.pi + torch.angle(coefficients) - reference, 2 * math.pi) - math.pi
            phase = p["alpha"] * self.smoothed(self.bandpass(delta), amplitude)
            del delta
            if p["attenuate_other_freq"]:
                base = amplitude * torch.exp(1j * reference)
            else:
                base = coefficients
            self.add_band(out, torch.polar(torch.ones_like(phase), phase) * base, i)
        self.add_residual(out, spec, len(self.bank) - 1)
        if not self.plan.mit:
            self.add_residual(out, spec, 0)
        return torch.fft.ifft2(torch.fft.ifftshift(out, dim=(-2, -1))).real


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
