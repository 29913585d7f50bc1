"""PRESETS: the paper's values kept literally, and the default-semantics values derived from them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import vidmag
from vidmag.params import check_parameters
from vidmag.presets import PRESETS, Preset, preset_params

NAMES = ["face", "face2_colour", "face2_motion", "baby", "wrist", "baby2", "guitar_e", "guitar_a", "subway",
         "shadow", "camera", "guitar_e_phase", "baby_phase"]


def test_names_and_type():
    assert list(PRESETS) == NAMES
    assert vidmag.PRESETS is PRESETS
    assert all(isinstance(p, Preset) for p in PRESETS.values())
    with pytest.raises(dataclasses.FrozenInstanceError):
        PRESETS["face"].fs = 60


def test_paper_values_are_literal():
    assert PRESETS["face"].paper == dict(alpha=50, level=4, fl=50 / 60, fh=1.0, chrom_attenuation=1)
    assert PRESETS["guitar_e"].fs == 600 and PRESETS["guitar_e"].paper["fl"] == 72
    assert PRESETS["camera"].paper == dict(alpha=150, lambda_c=20, fl=45, fh=100, chrom_attenuation=0)


def test_default_semantics_halves_ideal_alpha_and_butterworth_cutoffs():
    assert PRESETS["face"].params["alpha"] == 25 and PRESETS["baby2"].params["alpha"] == 75
    assert PRESETS["guitar_a"].params["alpha"] == 50
    assert (PRESETS["subway"].params["fl"], PRESETS["subway"].params["fh"]) == (1.8, 3.1)
    assert PRESETS["baby"].params == PRESETS["baby"].paper  # IIR: nothing to translate


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("compat", [None, "mit"])
def test_every_preset_validates(name, compat):
    pipeline, fs, params = preset_params(name, compat)
    assert pipeline == PRESETS[name].pipeline
    check_parameters(pipeline, fs, compat, params)


def test_butterworth_preset_gives_the_paper_filter_under_default_semantics():
    from vidmag._reference.temporal import butterworth_lowpass

    for name in ("face2_motion", "subway", "shadow", "camera"):
        p = PRESETS[name]
        for key in ("fl", "fh"):
            ours = butterworth_lowpass(p.params[key], p.fs, mit=False)
            paper = butterworth_lowpass(p.paper[key], p.fs, mit=True)
            np.testing.assert_allclose(ours, paper, rtol=1e-12)


def test_preset_params_rejects_unknowns():
    with pytest.raises(ValueError, match="preset"):
        preset_params("moon")
    with pytest.raises(ValueError, match="compat"):
        preset_params("face", "octave")
