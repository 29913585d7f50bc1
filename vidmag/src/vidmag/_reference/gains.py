"""Per-level gains of the three Laplacian pipelines (Figure 6 of the paper, as the MIT code computes it)."""

from __future__ import annotations

import math

#: The MIT code's exaggeration factor of the wavelength-dependent bound.
EXAGGERATION = 2.0


def level_gains(height: int, width: int, levels: int, alpha: float, lambda_c: float) -> list[float]:
    """Gain of each Laplacian band, finest first.

    ``delta = lambda_c / 8 / (1 + alpha)``; at the coarsest band ``lambda = sqrt(H^2 + W^2) / 3``, halved at
    each finer level; ``curr = 2 (lambda / delta / 8 - 1)``; the gain is ``alpha`` if ``curr > alpha`` else
    ``curr`` (possibly negative). The finest and the coarsest band get 0.

    Parameters
    ----------
    height, width : int
        Frame size in pixels.
    levels : int
        Number of pyramid levels (bands including the residual).
    alpha : float
        Amplification.
    lambda_c : float
        Cut-off wavelength in pixels.

    Returns
    -------
    list of float, length ``levels``
    """
    delta = lambda_c / 8.0 / (1.0 + alpha)
    lam = math.sqrt(height**2 + width**2) / 3.0
    gains = [0.0] * levels
    for level in range(levels - 1, -1, -1):  # coarsest to finest, as the MIT loop runs
        curr = (lam / delta / 8.0 - 1.0) * EXAGGERATION
        if level not in (0, levels - 1):
            gains[level] = alpha if curr > alpha else curr
        lam /= 2.0
    return gains
