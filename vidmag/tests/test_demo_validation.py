"""``vidmag demo`` and ``run_demo`` check every option before creating anything."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from vidmag import demo
from vidmag.cli import main


@pytest.mark.parametrize(
    ("seconds", "error"),
    [
        (-1.0, ValueError),
        (0.0, ValueError),
        (math.nan, ValueError),
        (math.inf, ValueError),
        (1e7, ValueError),  # 15.7 TiB of frames
        (0.1, ValueError),  # three frames: a "result" without meaning
        (demo.MIN_SECONDS - 0.01, ValueError),
        (demo.MAX_SECONDS + 0.01, ValueError),
        ("5", TypeError),
        (True, TypeError),
        (None, TypeError),
    ],
)
def test_bad_seconds_create_nothing(tmp_path, seconds, error):
    out = tmp_path / "out"
    with pytest.raises(error, match="seconds"):
        demo.run_demo(out, seconds=seconds, backend="cpu")
    assert not out.exists()


def test_the_range_is_stated():
    with pytest.raises(ValueError, match=r"from 2\.5 .* to 60"):
        demo.run_demo("never-created", seconds=0.1)
    assert not os.path.exists("never-created")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"backend": "gpu"}, ValueError, "backend"),
        ({"backend": 3}, TypeError, "backend"),
        ({"colour_alpha": -1.0}, ValueError, "colour_alpha"),
        ({"colour_alpha": math.nan}, ValueError, "colour_alpha"),
        ({"motion_alpha": "30"}, TypeError, "motion_alpha"),
    ],
)
def test_bad_options_create_nothing(tmp_path, kwargs, error, match):
    out = tmp_path / "out"
    with pytest.raises(error, match=match):
        demo.run_demo(out, **{"seconds": 3.0, "backend": "cpu", **kwargs})
    assert not out.exists()


def test_unwritable_places_create_nothing(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    with pytest.raises(NotADirectoryError, match="out_dir"):
        demo.run_demo(a_file, seconds=3.0, backend="cpu")
    with pytest.raises(NotADirectoryError, match="out_dir"):
        demo.run_demo(a_file / "sub" / "dir", seconds=3.0, backend="cpu")
    (tmp_path / "out" / "colour.mp4").mkdir(parents=True)
    with pytest.raises(IsADirectoryError, match=r"colour\.mp4"):
        demo.run_demo(tmp_path / "out", seconds=3.0, backend="cpu")
    assert sorted(os.listdir(tmp_path)) == ["a_file", "out"]
    assert os.listdir(tmp_path / "out") == ["colour.mp4"]
    with pytest.raises(TypeError, match="out_dir"):
        demo.run_demo(None, seconds=3.0, backend="cpu")


def test_numpy_numbers_are_numbers(tmp_path):
    clip = demo.synthesise(seconds=np.float32(1.0), fs=np.int64(30), height=np.int64(40), width=64)
    assert clip.frames.shape == (30, 40, 64, 3)
    with pytest.raises(TypeError, match="fs"):
        demo.synthesise(seconds=1.0, fs="30")
    with pytest.raises(ValueError, match="seconds"):
        demo.synthesise(seconds=-1.0)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        (["--seconds", "-1"], "seconds"),
        (["--seconds", "nan"], "seconds"),
        (["--seconds", "0"], "seconds"),
        (["--seconds", "1e7"], "seconds"),
        (["--seconds", "0.1"], "seconds"),
        (["--backend", "gpu"], "backend"),
    ],
)
def test_command_exits_2_with_one_line_and_no_directory(tmp_path, capsys, options, match):
    out = tmp_path / "demo"
    code = main(["demo", "-o", str(out), *options])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and match in lines[0] and "Traceback" not in err
    assert not out.exists()
