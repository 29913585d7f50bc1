"""The paper's clips as presets: pipeline, sampling rate and parameters, under both semantics.

``Preset.paper`` holds the literal values of the MIT ``reproduceResults.m`` (what ``compat="mit"`` takes as
they are); ``Preset.params`` the values that give the paper's results under the default semantics: the ideal
filter there passes its band with gain 1 instead of 0.5, so alpha is halved, and Butterworth cut-offs are in
Hz instead of fractions of the Nyquist rate, so they are halved. The phase-based presets come from the MIT
phase code's ``reproduceResults.m`` (SIGGRAPH 2013), whose band-pass has gain 1 already: their values are the
same under both semantics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Preset:
    """One of the paper's runs.

    Attributes
    ----------
    name : str
    pipeline : str
    fs : float
        Capture rate in Hz (guitar: 600, not the container's rate).
    params : dict
        Parameters for the default semantics.
    paper : dict
        The paper's literal parameters (for ``compat="mit"``).
    note : str

    Examples
    --------
    >>> import vidmag
    >>> face = vidmag.PRESETS["face"]
    >>> face.pipeline, face.fs, face.params["alpha"], face.paper["alpha"]
    ('gaussian_ideal', 30, 25.0, 50)
    """

    name: str
    pipeline: str
    fs: float
    params: dict[str, Any]
    paper: dict[str, Any]
    note: str


def _default_params(pipeline: str, paper: dict[str, Any]) -> dict[str, Any]:
    params = dict(paper)
    if pipeline in ("gaussian_ideal", "laplacian_ideal"):
        params["alpha"] = paper["alpha"] / 2  # unit-gain pass band instead of the MIT filter's 0.5
    if pipeline == "laplacian_butterworth":
        params["fl"], params["fh"] = paper["fl"] / 2, paper["fh"] / 2  # Hz instead of f / fs of Nyquist
    return params


def _preset(name: str, pipeline: str, fs: float, note: str, **paper: Any) -> Preset:
    return Preset(name, pipeline, fs, _default_params(pipeline, paper), paper, note)


_ALL = [
    _preset("face", "gaussian_ideal", 30, "face.mp4: pulse colour (paper alpha 50).",
            alpha=50, level=4, fl=50 / 60, fh=60 / 60, chrom_attenuation=1),
    _preset("face2_colour", "gaussian_ideal", 30, "face2.mp4: pulse colour (paper alpha 50).",
            alpha=50, level=6, fl=50 / 60, fh=60 / 60, chrom_attenuation=1),
    _preset("face2_motion", "laplacian_butterworth", 30, "face2.mp4: head motion (paper cut-offs 0.5, 10).",
            alpha=20, lambda_c=80, fl=0.5, fh=10, chrom_attenuation=0),
    _preset("baby", "laplacian_iir", 30, "baby.mp4: breathing; the IIR filter reads no fs.",
            alpha=10, lambda_c=16, r1=0.4, r2=0.05, chrom_attenuation=0.1),
    _preset("wrist", "laplacian_iir", 30,
            "wrist.mp4: pulse motion; the paper's Butterworth alternative is alpha 30, lambda_c 16, "
            "fl 0.4, fh 3, fs 30, chrom_attenuation 0.1.",
            alpha=10, lambda_c=16, r1=0.4, r2=0.05, chrom_attenuation=0.1),
    _preset("baby2", "gaussian_ideal", 30, "baby2: pulse colour (paper alpha 150).",
            alpha=150, level=6, fl=140 / 60, fh=160 / 60, chrom_attenuation=1),
    _preset("guitar_e", "laplacian_ideal", 600, "guitar.mp4, E string (82 Hz); captured at 600 fps.",
            alpha=50, lambda_c=10, fl=72, fh=92, chrom_attenuation=0),
    _preset("guitar_a", "laplacian_ideal", 600, "guitar.mp4, A string (110 Hz); captured at 600 fps.",
            alpha=100, lambda_c=10, fl=100, fh=120, chrom_attenuation=0),
    _preset("subway", "laplacian_butterworth", 30, "subway: train vibration (paper cut-offs 3.6, 6.2).",
            alpha=60, lambda_c=90, fl=3.6, fh=6.2, chrom_attenuation=0.3),
    _preset("shadow", "laplacian_butterworth", 30, "shadow.mp4: shadow motion (paper cut-offs 0.5, 10).",
            alpha=5, lambda_c=48, fl=0.5, fh=10, chrom_attenuation=0),
    _preset("camera", "laplacian_butterworth", 300,
            "camera: shutter vibration at 300 fps (paper cut-offs 45, 100).",
            alpha=150, lambda_c=20, fl=45, fh=100, chrom_attenuation=0),
    # phase-based (the MIT phase code's reproduceResults.m; only the clips of shared/data/clips)
    _preset("guitar_e_phase", "steerable_ideal", 600,
            "guitar.mp4, E string (82 Hz), phase-based: half-octave pyramid, 8 orientations, sigma 2.",
            alpha=25, fl=72, fh=92, sigma=2, orientations=8, bands_per_octave=2, attenuate_other_freq=False),
    _preset("baby_phase", "riesz_iir", 30,
            "baby.mp4: breathing, phase-based; the MIT phase code runs differenceOfIIR (r 0.4 and 0.04) on a "
            "quarter-octave steerable pyramid with sigma 5, here the Riesz pyramid.",
            alpha=20, r1=0.4, r2=0.04, sigma=5),
]

#: Preset name -> :class:`Preset`.
PRESETS: dict[str, Preset] = {p.name: p for p in _ALL}


def preset_params(name: str, compat: str | None = None) -> tuple[str, float, dict[str, Any]]:
    """The (pipeline, fs, params) of preset ``name`` for a semantics.

    Parameters
    ----------
    name : str
        A key of :data:`PRESETS`.
    compat : None or "mit"
        ``None``: the parameters for the default semantics; ``"mit"``: the paper's literal values.
    """
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {', '.join(PRESETS)}; got {name!r}")
    if compat not in (None, "mit"):
        raise ValueError(f"compat must be None or 'mit', got {compat!r}")
    preset = PRESETS[name]
    return preset.pipeline, preset.fs, dict(preset.paper if compat == "mit" else preset.params)
