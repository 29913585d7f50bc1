"""The presets on a live stream: the streaming ones as they are, the colour ones in a streaming form.

A live stream can only run the causal pipelines (laplacian_butterworth, laplacian_iir). The paper's colour
presets (``face``, ``face2_colour``, ``baby2``) use gaussian_ideal, whose band-pass needs the whole clip, so
on a stream each gets a laplacian_butterworth form derived from it by one rule (:func:`streaming_form`),
aiming at the same thing (the colour of a band of frequencies, chrominance as amplified as luminance):

- the band: two octaves, ``[f0 / 2, 2 f0]`` around the preset's geometric centre ``f0 = sqrt(fl fh)``. The
  Butterworth band-pass of vidmag is the difference of two first-order low-passes, whose peak gain
  ``(r - 1) / (r + 1)`` (``r = fh / fl``) is 0.09 over the paper's 50 to 60 bpm: so narrow a band would pass
  a tenth of the pulse and most of what lies beside it (first-order skirts fall slowly). Over two octaves
  the peak gain is 0.6; for ``face`` the band is 27 to 110 beats per minute.
- ``alpha``: the preset's divided by that peak gain, so that the band's centre is amplified as much as the
  ideal filter's pass band is.
- ``lambda_c = 2 ** (level + 2)`` pixels: the Laplacian bands get the full ``alpha`` from wavelengths of
  about ``2 ** (level + 1)`` pixels up, the scales the Gaussian level ``level`` keeps.
- ``chrom_attenuation``: the preset's.

The laplacian_ideal presets (``guitar_e``, ``guitar_a``) have no streaming form: their narrow bands at
600 frames/s are their point, which a first-order filter cannot keep. Under ``compat="mit"`` only the
streaming presets run (the MIT code has no streaming form of the others).
"""

from __future__ import annotations

import math
from typing import Any

from vidmag import presets as _presets
from vidmag.params import STREAMING_PIPELINES

__all__ = ["LIVE_PRESETS", "live_preset_params", "streaming_form"]

#: The band of a streaming form spans this ratio fh / fl (two octaves).
BAND_RATIO = 4.0


def streaming_form(pipeline: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The (pipeline, params) a preset runs on a stream (see the module's notes), or None if none.

    Parameters
    ----------
    pipeline : str
        The preset's pipeline.
    params : dict
        The preset's parameters under the default semantics.

    Returns
    -------
    tuple or None
        The streaming pipelines' presets as they are; gaussian_ideal presets in their laplacian_butterworth
        form; None for laplacian_ideal ones.
    """
    if pipeline in STREAMING_PIPELINES:
        return pipeline, dict(params)
    if pipeline != "gaussian_ideal":
        return None
    centre = math.sqrt(params["fl"] * params["fh"])
    peak = (BAND_RATIO - 1.0) / (BAND_RATIO + 1.0)  # the band-pass's gain at its geometric centre
    return "laplacian_butterworth", {
        "alpha": params["alpha"] / peak,
        "lambda_c": float(2 ** (params["level"] + 2)),
        "fl": centre / math.sqrt(BAND_RATIO),
        "fh": centre * math.sqrt(BAND_RATIO),
        "chrom_attenuation": params["chrom_attenuation"],
    }


def _table() -> dict[str, tuple[str, dict[str, Any]]]:
    out = {}
    for name, preset in _presets.PRESETS.items():
        form = streaming_form(preset.pipeline, preset.params)
        if form is not None:
            out[name] = form
    return out


#: Preset name -> (pipeline, params) on a live stream, for every preset that has a streaming form.
LIVE_PRESETS: dict[str, tuple[str, dict[str, Any]]] = _table()


def live_preset_params(name: str, compat: str | None = None) -> tuple[str, dict[str, Any]]:
    """The (pipeline, params) of preset `name` on a live stream.

    Parameters
    ----------
    name : str
        A key of ``vidmag.PRESETS``.
    compat : None or "mit"
        ``"mit"``: the paper's literal values, for the presets whose pipeline streams.

    Returns
    -------
    (str, dict)
        A streaming pipeline and its parameters (a fresh dict).

    Raises
    ------
    ValueError
        `name` is not a preset, or it has no streaming form (under `compat`); the message says which do.

    Examples
    --------
    >>> pipeline, params = live_preset_params("face")
    >>> pipeline, round(params["fl"], 3), round(params["fh"], 3)
    ('laplacian_butterworth', 0.456, 1.826)
    """
    if name not in _presets.PRESETS:
        raise ValueError(f"preset must be one of {', '.join(_presets.PRESETS)}; got {name!r}")
    preset = _presets.PRESETS[name]
    if compat == "mit":
        if preset.pipeline not in STREAMING_PIPELINES:
            streaming = [n for n, p in _presets.PRESETS.items() if p.pipeline in STREAMING_PIPELINES]
            raise ValueError(
                f"preset {name!r} ({preset.pipeline}) has no streaming form under compat='mit' (the MIT code "
                f"streams none of its ideal runs); presets that stream under it: {', '.join(streaming)}"
            )
        pipeline, _, params = _presets.preset_params(name, compat)
        return pipeline, params
    if compat is not None:
        raise ValueError(f"compat must be None or 'mit', got {compat!r}")
    if name not in LIVE_PRESETS:
        raise ValueError(
            f"preset {name!r} ({preset.pipeline}) has no streaming form: its narrow ideal band is its point, "
            f"which a causal filter cannot keep; presets that run live: {', '.join(LIVE_PRESETS)}"
        )
    pipeline, params = LIVE_PRESETS[name]
    return pipeline, dict(params)
