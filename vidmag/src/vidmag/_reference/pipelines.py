"""The four pipelines on a whole clip held in memory: the plainest statement of what vidmag computes.

Written straight from SPEC-vidmag.md with no attention to memory (it keeps float64 copies of the whole clip),
this is a test oracle: the library runs the same maths through ``vidmag.backend`` in bounded memory, and the
tests require both to give the same bytes. Parameters are assumed valid (``vidmag.params`` checks them).
"""

from __future__ import annotations

import numpy as np

from vidmag._reference.colour import rgb_to_yiq, yiq_to_rgb_uint8
from vidmag._reference.gains import level_gains
from vidmag._reference.pyramid import build_laplacian, collapse_laplacian, gaussian_down, pyramid_levels
from vidmag._reference.resize import resize_bicubic
from vidmag._reference.temporal import butterworth_lowpass, butterworth_step, ideal_bandpass, iir_step

#: Frames the MIT code leaves unread at the end of a clip.
MIT_UNREAD_TAIL = 10


def _frames_read(frames: np.ndarray, mit: bool) -> np.ndarray:
    return frames[: len(frames) - MIT_UNREAD_TAIL] if mit else frames


def _chroma(x: np.ndarray, factor: float) -> np.ndarray:
    x = x.copy()
    x[..., 1:] = x[..., 1:] * factor
    return x


def gaussian_ideal(frames, *, fs, alpha, level, fl, fh, chrom_attenuation, mit=False) -> np.ndarray:
    """``amplify_spatial_Gdown_temporal_ideal``: (T, H, W, 3) uint8 -> (T or T - 10, H, W, 3) uint8."""
    frames = _frames_read(frames, mit)
    H, W = frames.shape[1:3]
    yiq = rgb_to_yiq(frames)
    down = gaussian_down(yiq, level)
    filtered = ideal_bandpass(down, fl, fh, fs, mit=mit) * alpha
    filtered = _chroma(filtered, chrom_attenuation)
    return yiq_to_rgb_uint8(resize_bicubic(filtered, (H, W)) + yiq, mit=mit)


def _amplified_bands(bands: list[np.ndarray], gains: list[float]) -> list[np.ndarray]:
    return [band * gain for band, gain in zip(bands, gains)]


def laplacian_ideal(frames, *, fs, alpha, lambda_c, fl, fh, chrom_attenuation, mit=False) -> np.ndarray:
    """``amplify_spatial_lpyr_temporal_ideal``: T frames out (T - 11 under ``mit``, lagging one frame)."""
    frames = _frames_read(frames, mit)
    H, W = frames.shape[1:3]
    levels = pyramid_levels(H, W)
    yiq = rgb_to_yiq(frames)
    bands = [ideal_bandpass(b, fl, fh, fs, mit=mit) for b in build_laplacian(yiq, levels)]
    signal = collapse_laplacian(_amplified_bands(bands, level_gains(H, W, levels, alpha, lambda_c)))
    signal = _chroma(signal, chrom_attenuation)
    if mit:  # output j is input frame j + 1 plus the band-passed value of frame j
        return yiq_to_rgb_uint8(yiq[1:] + signal[:-1], mit=True)
    return yiq_to_rgb_uint8(yiq + signal, mit=False)


def _streaming(frames, step, *, alpha, lambda_c, chrom_attenuation, mit):
    H, W = frames.shape[1:3]
    levels = pyramid_levels(H, W)
    gains = level_gains(H, W, levels, alpha, lambda_c)
    out = np.empty_like(frames)
    out[0] = frames[0]  # every state starts at frame 0, so frame 0 is written as its input bytes
    state = None
    for i, frame in enumerate(frames):
        yiq = rgb_to_yiq(frame)
        pyr = build_laplacian(yiq, levels)
        if state is None:
            state = [(b, b, b) for b in pyr]  # (low-pass 1, low-pass 2, previous input)
            continue
        filtered = []
        for j, (band, (lp1, lp2, prev)) in enumerate(zip(pyr, state)):
            lp1, lp2 = step(lp1, band, prev, 1), step(lp2, band, prev, 2)
            state[j] = (lp1, lp2, band)
            filtered.append(lp1 - lp2)
        signal = _chroma(collapse_laplacian(_amplified_bands(filtered, gains)), chrom_attenuation)
        out[i] = yiq_to_rgb_uint8(yiq + signal, mit=mit)
    return out


def laplacian_butterworth(frames, *, fs, alpha, lambda_c, fl, fh, chrom_attenuation, mit=False) -> np.ndarray:
    """``amplify_spatial_lpyr_temporal_butter``: LP(fh) - LP(fl), streamed.

    T frames out (T - 10 under ``mit``).
    """
    high, low = butterworth_lowpass(fh, fs, mit=mit), butterworth_lowpass(fl, fs, mit=mit)

    def step(y, x, prev, which):
        return butterworth_step(y, x, prev, high if which == 1 else low)

    return _streaming(_frames_read(frames, mit), step, alpha=alpha, lambda_c=lambda_c,
                      chrom_attenuation=chrom_attenuation, mit=mit)


def laplacian_iir(frames, *, fs, alpha, lambda_c, r1, r2, chrom_attenuation, mit=False) -> np.ndarray:
    """``amplify_spatial_lpyr_temporal_iir``: difference of the r1 and r2 low-passes.

    T frames out (T - 10 under ``mit``).
    """

    def step(y, x, prev, which):
        return iir_step(y, x, r1 if which == 1 else r2)

    return _streaming(_frames_read(frames, mit), step, alpha=alpha, lambda_c=lambda_c,
                      chrom_attenuation=chrom_attenuation, mit=mit)


#: The four reference pipelines by vidmag name.
PIPELINES = {
    "gaussian_ideal": gaussian_ideal,
    "laplacian_ideal": laplacian_ideal,
    "laplacian_butterworth": laplacian_butterworth,
    "laplacian_iir": laplacian_iir,
}
