"""scripts/dev/gallery.py: the gallery's and the parameter page's pictures, smoke-tested with ``--quick``.

The script runs in-process on a synthetic ``face.mp4`` (a clip of its own, so that the test needs no sample
clips), 24 frames of a 96 x 96 crop: every picture, the manifest (command, machine, date) and the committed
stills' size limit, in a few seconds.
"""

from __future__ import annotations

import importlib.util
import json
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from vidmag import io

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gallery():
    spec = importlib.util.spec_from_file_location("gallery", ROOT / "scripts" / "dev" / "gallery.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> Path:
    """A folder with a 30-frame 256 x 192 ``face.mp4``: texture and a 1 Hz colour pulse."""
    folder = tmp_path_factory.mktemp("clips")
    t = np.arange(30) / 30.0
    yy, xx = np.mgrid[0:192, 0:256]
    texture = 40 * np.sin(0.3 * xx) * np.cos(0.2 * yy)
    frames = 120 + texture[None, :, :, None] + 3 * np.sin(2 * np.pi * t)[:, None, None, None]
    frames = np.clip(np.round(np.broadcast_to(frames, (30, 192, 256, 3))), 0, 255).astype(np.uint8)
    with io.VideoWriter(folder / "face.mp4", width=256, height=192, fps=Fraction(30),
                        encoder_preset="ultrafast") as writer:
        for frame in frames:
            writer.write(frame)
    return folder


def test_quick_writes_every_picture_and_the_manifest(gallery, clips, tmp_path):
    out, stills = tmp_path / "out", tmp_path / "stills"
    stills.mkdir()
    assert gallery.main(["--quick", "--clips", str(clips), "--out", str(out), "--stills", str(stills)]) == 0
    manifest = json.loads((out / "gallery.json").read_text(encoding="utf-8"))
    assert manifest["command"].startswith("python scripts/dev/gallery.py --quick")
    assert manifest["machine"] and re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC$", manifest["date"])
    (item,) = manifest["items"]
    assert (item["clip"], item["preset"], item["frames"], item["size"]) == ("face.mp4", "face", 24, [96, 96])
    assert item["vidmag_command"] == (
        "vidmag magnify ../shared/data/clips/face.mp4 -o face-face.mp4 --preset face --side-by-side")
    files = item["files"]
    assert set(files) == {"before", "after", "side_by_side", "preview", "spectrum", "still", "still_spectrum"}
    for key, name in files.items():
        assert (stills if key.startswith("still") else out).joinpath(name).stat().st_size > 0
    assert max((stills / files[k]).stat().st_size for k in ("still", "still_spectrum")) <= gallery.STILL_LIMIT
    # the preview is an animation, the stills are the clip's size
    from PIL import Image

    with Image.open(out / files["preview"]) as preview:
        assert preview.is_animated
    with Image.open(out / files["before"]) as before:
        assert before.size == (96, 96)
    # the Markdown fragment links to the files written, and names the command
    fragment = (out / "gallery.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)]+)\)", fragment)
    assert links and all((out / link).is_file() for link in links)
    assert manifest["command"] in fragment
    # nothing half-written is left
    assert not [p.name for p in [*out.iterdir(), *stills.iterdir()] if p.name.endswith(".tmp")]


def test_quick_parameters_writes_a_sweep(gallery, clips, tmp_path):
    assert gallery.main(["--quick", "--parameters", "--clips", str(clips), "--out", str(tmp_path)]) == 0
    manifest = json.loads((tmp_path / "gallery.json").read_text(encoding="utf-8"))
    (item,) = manifest["items"]
    assert item["name"] == "alpha" and [v["alpha"] for v in item["values"]] == [5, 10, 20, 40]
    assert (tmp_path / item["files"]["picture"]).stat().st_size > 0


def test_out_under_docs_is_refused_before_anything_is_written(gallery, clips, tmp_path, capsys):
    target = ROOT / "docs" / "vidmag" / "gallery-build-test"
    with pytest.raises(SystemExit) as stop:
        gallery.main(["--quick", "--clips", str(clips), "--out", str(target)])
    assert stop.value.code == 2
    assert "under docs/" in capsys.readouterr().err
    assert not target.exists()


def test_bad_options_are_refused(gallery, clips, tmp_path, capsys):
    for argv, words in ((["--frames", "8"], "--frames must be >= 16"),
                        (["--only", "nope"], "unknown preset(s) nope"),
                        (["--clips", str(tmp_path / "missing")], "does not exist")):
        with pytest.raises(SystemExit):
            gallery.main(["--clips", str(clips), "--out", str(tmp_path / "out"), *argv])
        assert words in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_presets_are_matched_to_their_clips(gallery, clips, tmp_path):
    assert gallery.preset_clips(clips) == [("face.mp4", "face")]
    (tmp_path / "guitar.mp4").write_bytes(b"")
    (tmp_path / "baby.mp4").write_bytes(b"")
    assert gallery.preset_clips(tmp_path) == [("baby.mp4", "baby"), ("guitar.mp4", "guitar_e"),
                                              ("guitar.mp4", "guitar_a"), ("guitar.mp4", "guitar_e_phase"),
                                              ("baby.mp4", "baby_phase")]


def test_iir_band_is_the_half_power_band_of_the_filter(gallery):
    low, peak, high = gallery.iir_band(0.4, 0.05, 30.0)
    assert 0 < low < peak < high < 15
    gain = gallery.iir_response(0.4, 0.05, 30.0, np.array([0.0, low, peak, high]))
    assert gain[0] == pytest.approx(0.0, abs=1e-12)  # a difference of two unit-DC low-passes removes DC
    assert gain[1] == pytest.approx(gain[2] / np.sqrt(2), rel=1e-3)
    assert gain[3] == pytest.approx(gain[2] / np.sqrt(2), rel=1e-3)


def test_each_mode_has_its_own_default_folder(gallery, clips, tmp_path, monkeypatch):
    # a quick run must not replace the full gallery's manifest (nor the parameter pictures')
    monkeypatch.setattr(gallery, "OUT", tmp_path / "site-assets" / "gallery")
    full = tmp_path / "site-assets" / "gallery"
    full.mkdir(parents=True)
    (full / "gallery.json").write_text("{}", encoding="utf-8")
    assert gallery.main(["--quick", "--clips", str(clips)]) == 0
    assert (tmp_path / "site-assets" / "gallery-quick" / "gallery.json").is_file()
    assert (full / "gallery.json").read_text(encoding="utf-8") == "{}"
