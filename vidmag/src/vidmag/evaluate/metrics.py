"""The measures of the quality report: PSNR, SSIM (Wang et al. 2004) and the sub-pixel translation of a frame.

Every function takes luminance images in grey levels (0 to 255, float), shape (H, W).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import fft as sfft
from scipy import ndimage

#: Peak value of 8-bit images, the L of PSNR and SSIM.
PEAK = 255.0

#: SSIM constants of Wang et al. (2004): K1, K2, the Gaussian window's sigma and its size (11 x 11).
SSIM_K1, SSIM_K2, SSIM_SIGMA, SSIM_WINDOW = 0.01, 0.03, 1.5, 11

#: Luma weights of RGB (the Y row of the YIQ matrix the pipelines use).
LUMA = np.array([0.299, 0.587, 0.114])


def luminance(frames: np.ndarray) -> np.ndarray:
    """Luma Y of RGB frames (..., 3) as float64 grey levels (the Y of the pipelines' YIQ)."""
    return np.asarray(frames, dtype=np.float64) @ LUMA


def _pair(name: str, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"{name}: images must be two 2-D arrays of one shape, got {a.shape} and {b.shape}")
    return a, b


def psnr(image: np.ndarray, reference: np.ndarray) -> float:
    """Peak signal-to-noise ratio in dB, ``10 log10(255^2 / MSE)``; ``inf`` for identical images.

    Parameters
    ----------
    image, reference : ndarray, shape (H, W)
        Grey levels (0 to 255).

    Returns
    -------
    float
        dB; ``inf`` when the images are equal.

    Examples
    --------
    >>> import numpy as np
    >>> from vidmag.evaluate import psnr
    >>> reference = np.full((16, 16), 128.0)
    >>> round(psnr(reference + 1.0, reference), 2)  # an error of one grey level everywhere
    48.13
    >>> psnr(reference, reference)
    inf
    """
    image, reference = _pair("psnr", image, reference)
    mse = float(np.mean((image - reference) ** 2))
    return math.inf if mse == 0.0 else 10.0 * math.log10(PEAK**2 / mse)


def ssim(image: np.ndarray, reference: np.ndarray) -> float:
    """Structural similarity of Wang et al. (2004), mean over the image.

    Local means, variances and covariance are taken under an 11 x 11 Gaussian window of sigma 1.5 pixels,
    with ``C1 = (0.01 L)^2``, ``C2 = (0.03 L)^2``, L = 255, and averaged over the positions where the window
    lies wholly inside the image (the 5-pixel border is left out, as in the authors' code).

    Parameters
    ----------
    image, reference : ndarray, shape (H, W)
        Grey levels (0 to 255); both sides at least 11 pixels.

    Returns
    -------
    float
        1.0 for identical images, less otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from vidmag.evaluate import ssim
    >>> rng = np.random.default_rng(0)
    >>> reference = rng.uniform(0, 255, (32, 32))
    >>> ssim(reference, reference)
    1.0
    >>> 0 < ssim(reference + rng.normal(0, 20, (32, 32)), reference) < 1
    True
    """
    x, y = _pair("ssim", image, reference)
    if min(x.shape) < SSIM_WINDOW:
        raise ValueError(f"ssim: images must be at least {SSIM_WINDOW} pixels on each side, got {x.shape}")
    radius = SSIM_WINDOW // 2
    c1, c2 = (SSIM_K1 * PEAK) ** 2, (SSIM_K2 * PEAK) ** 2

    def blur(z: np.ndarray) -> np.ndarray:
        smooth = ndimage.gaussian_filter(z, SSIM_SIGMA, truncate=radius / SSIM_SIGMA, mode="constant")
        return smooth[radius:-radius, radius:-radius]  # the window wholly inside: no padding counts

    mx, my = blur(x), blur(y)
    sxx, syy, sxy = blur(x * x) - mx * mx, blur(y * y) - my * my, blur(x * y) - mx * my
    ratio = ((2 * mx * my + c1) * (2 * sxy + c2)) / ((mx * mx + my * my + c1) * (sxx + syy + c2))
    return float(np.mean(ratio))


def fourier_shift(image: np.ndarray, dx: float, dy: float) -> np.ndarray:
    """`image` translated by (dx, dy) pixels (content moves right and down), exactly for a periodic image.

    Multiplies the spectrum by ``exp(-2 pi i (kx dx / W + ky dy / H))``; exact when the image holds no energy
    at the Nyquist frequencies (the band-limited texture of the protocol holds none).
    """
    h, w = image.shape
    spectrum = np.fft.rfft2(image)
    ky = np.fft.fftfreq(h)[:, None]
    kx = np.fft.rfftfreq(w)[None, :]
    return np.fft.irfft2(spectrum * np.exp(-2j * np.pi * (kx * dx + ky * dy)), s=(h, w))


def measure_shift(image: np.ndarray, scene: np.ndarray, *, margin: int = 0, iterations: int = 6
                  ) -> tuple[float, float]:
    """Translation (dx, dy) in pixels of `image` relative to the periodic `scene`, to a fraction of a pixel.

    Two steps. Phase correlation gives the whole-pixel shift: the peak of the inverse FFT of the normalised
    cross-power spectrum ``F(image) conj(F(scene)) / |...|``, taken over the frequencies where the scene has
    energy (above 1e-3 of its largest). Least squares then refines it: Gauss-Newton on
    ``image ~ a * shift(scene, d) + b`` over the central region (`margin` pixels left out on each side, where
    a pipeline's border handling breaks the periodicity), with ``shift`` the exact Fourier shift and the
    gain `a` and offset `b` free, so a change of contrast does not bias the translation. On an exact
    translation of the scene it returns the translation to rounding error.

    Parameters
    ----------
    image, scene : ndarray, shape (H, W)
        Grey levels; `scene` periodic (the protocol's texture).
    margin : int
        Pixels left out on each side in the refinement.
    iterations : int
        Most Gauss-Newton steps (it stops earlier when a step moves less than 1e-5 pixel).

    Returns
    -------
    (dx, dy) : tuple of float
        Positive dx: `image` is `scene` moved right.

    Examples
    --------
    >>> from vidmag.evaluate import measure_shift
    >>> from vidmag.evaluate.metrics import fourier_shift
    >>> from vidmag.evaluate.synthetic import texture
    >>> scene = texture(32)
    >>> dx, dy = measure_shift(fourier_shift(scene, 0.25, -1.5), scene)
    >>> round(dx, 6), round(dy, 6)
    (0.25, -1.5)
    """
    image, scene = _pair("measure_shift", image, scene)
    h, w = scene.shape
    spectrum = sfft.rfft2(scene)
    cross = sfft.rfft2(image) * np.conj(spectrum)
    # Only the frequencies where the scene has energy: elsewhere the normalised cross-power is the phase of
    # the noise (and of 8-bit rounding), which would bury the peak.
    band = np.abs(spectrum) > 1e-3 * np.abs(spectrum).max()
    band[0, 0] = False
    correlation = sfft.irfft2(np.where(band, cross / np.maximum(np.abs(cross), 1e-300), 0), s=(h, w))
    py, px = np.unravel_index(int(np.argmax(correlation)), correlation.shape)
    dy = float(py - h if py > h // 2 else py)
    dx = float(px - w if px > w // 2 else px)
    window = (slice(None), slice(margin, h - margin), slice(margin, w - margin))
    target = image[window[1:]].ravel()
    ky, kx = np.fft.fftfreq(h)[:, None], np.fft.rfftfreq(w)[None, :]
    for _ in range(iterations):
        moved_spectrum = spectrum * np.exp(-2j * np.pi * (kx * dx + ky * dy))
        # the moved scene and its x and y derivatives, in one inverse transform
        planes = sfft.irfft2(np.stack([moved_spectrum, moved_spectrum * (2j * np.pi * kx),
                                       moved_spectrum * (2j * np.pi * ky)]), s=(h, w))[window]
        m, gx, gy = (plane.ravel() for plane in planes)
        basis = np.stack([m, np.ones_like(m)])
        a, b = np.linalg.solve(basis @ basis.T, basis @ target)
        # d/d(dx) of a * scene(x - dx) + b is minus a times the x derivative of the moved scene
        jacobian = np.stack([-a * gx, -a * gy, m, np.ones_like(m)])
        step = np.linalg.solve(jacobian @ jacobian.T, jacobian @ (target - (a * m + b)))
        dx, dy = dx + float(step[0]), dy + float(step[1])
        if abs(step[0]) < 1e-5 and abs(step[1]) < 1e-5:
            break
    return dx, dy
