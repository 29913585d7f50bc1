"""Quality reports of vidmag's pipelines.

:func:`synthetic_report` runs the synthetic protocol of Oh et al. (ECCV 2018, as re-released by Axial-mm):
a textured scene translated by sub-pixel motions, against the exact ground truth, with PSNR, SSIM and the
measured magnification per pipeline. :func:`clip_report` measures on a real clip what needs no ground truth
(noise amplification in static regions, temporal flicker, clipping). The measures themselves are in
:mod:`vidmag.evaluate.metrics`.
"""

from vidmag.evaluate.clip import ClipReport, clip_report
from vidmag.evaluate.metrics import measure_shift, psnr, ssim
from vidmag.evaluate.synthetic import ALPHAS, MOTIONS, NOISES, QUICK, Case, Report, synthetic_report

__all__ = [
    "ALPHAS",
    "MOTIONS",
    "NOISES",
    "QUICK",
    "Case",
    "ClipReport",
    "Report",
    "clip_report",
    "measure_shift",
    "psnr",
    "ssim",
    "synthetic_report",
]
