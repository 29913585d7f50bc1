"""``compat="mit"`` against the MIT EVM code's own output, byte for byte.

The fixtures in ``data/mit_parity/`` were made by running the MIT code (v1.1, with matlabPyrTools' compiled
``corrDn`` / ``upConv``) unmodified in GNU Octave on small synthetic clips; ``scripts/dev/mit_parity.md`` says
how. Each ``clip_HxW.npz`` holds:

- ``input``: the clip, uint8 (T, H, W, 3); ``fs``: its frame rate;
- per pipeline, ``<pipeline>__params``: the keyword parameters (JSON) and ``<pipeline>__mit_minus_input``:
  the MIT output minus ``input[:T']``, int16 (T', H, W, 3) -- a lossless form of the uint8 output that
  compresses far better.

The sizes cover a side of 5 * 2^k (40: matlabPyrTools' upConv quirk at n = 5), odd sides (45, 37, 51) and an
odd FFT length (17 frames read); the parameters give gains of alpha, below alpha and negative (clip_37x51,
laplacian_butterworth), and enough amplification that the MIT colour handling (rounded inverse matrix,
division by the largest channel) matters. Switching off any one of those facts in the reference changes
hundreds to thousands of the stored values.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import vidmag

DATA = Path(__file__).parent / "data" / "mit_parity"
PIPELINES = ("gaussian_ideal", "laplacian_ideal", "laplacian_butterworth", "laplacian_iir")
CLIPS = ("clip_40x56", "clip_45x64", "clip_37x51")


def _load_case(clip: str, pipeline: str) -> tuple[np.ndarray, float, dict, np.ndarray]:
    with np.load(DATA / f"{clip}.npz", allow_pickle=False) as z:
        frames = z["input"]
        fs = float(z["fs"])
        params = json.loads(str(z[f"{pipeline}__params"]))
        delta = z[f"{pipeline}__mit_minus_input"]
    mit = delta + frames[: len(delta)].astype(np.int16)
    assert mit.min() >= 0 and mit.max() <= 255, "corrupt fixture: output outside 0..255"
    return frames, fs, params, mit.astype(np.uint8)


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("clip", CLIPS)
def test_mit_compat_output_equals_mit_code_output(clip: str, pipeline: str, require_backend) -> None:
    require_backend("cpu")
    frames, fs, params, mit = _load_case(clip, pipeline)
    # the MIT code must have changed a fair share of the values, or equality would prove little
    assert np.mean(mit != frames[: len(mit)]) > 0.02

    ours = vidmag.magnify(frames, fs=fs, pipeline=pipeline, compat="mit", backend="cpu", **params)

    assert ours.dtype == np.uint8
    assert ours.shape == mit.shape
    differ = ours != mit
    if differ.any():
        worst = np.abs(ours.astype(np.int16) - mit.astype(np.int16)).max()
        where = np.argwhere(differ)[0]
        pytest.fail(
            f"{clip} {pipeline} {params}: {int(differ.sum())} of {differ.size} values differ "
            f"({differ.mean():.3%}), max |difference| {int(worst)}, first at (t, y, x, c) = {tuple(where)}"
        )
