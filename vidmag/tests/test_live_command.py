"""``vidmag live``: a recording of N frames, one-line usage errors naming the option (exit 2), a recording
that cannot be written refused before any work, nothing partial left on a failure, Ctrl-C finishing the
file, the pulse readout on the synthetic scene, and the viewer served by the command (when it exists)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

import pytest

import vidmag.live
from vidmag import io
from vidmag.cli import main
from vidmag.live import Magnifier

SMALL = "synthetic:size=96x64"
HAS_PULSE = importlib.util.find_spec("vidmag.pulse") is not None
HAS_VIEWER = importlib.util.find_spec("vidmag.live.viewer") is not None


def _frames_in(path) -> int:
    return sum(1 for _ in io.read_frames(path))


def test_a_recording_of_n_frames(tmp_path, capsys):
    out = tmp_path / "out.mp4"
    code = main(["live", SMALL, "--preset", "face", "--frames", "30", "--record", str(out),
                 "--backend", "cpu"])
    err = capsys.readouterr().err
    assert code == 0, err
    info = io.probe(out)
    assert (info.width, info.height, info.fps) == (96, 64, 30) and _frames_in(out) == 30
    assert os.listdir(tmp_path) == ["out.mp4"]  # no temporary left beside it
    line = err.strip().splitlines()[-1]
    assert line.startswith("vidmag live: synthetic:size=96x64: laplacian_butterworth on cpu, 96x64, "
                           "30 frames")
    assert line.endswith(f"-> {out} (30 frames)") and "dropped 0" in line


@pytest.mark.parametrize("argv, option", [
    (["--preset", "face", "--size", "10"], "--size"),
    (["--preset", "face", "--size", "0x10"], "--size"),
    (["--preset", "face", "--serve", "localhost"], "--serve"),
    (["--preset", "face", "--serve", "127.0.0.1:70000"], "--serve"),
    (["--preset", "face", "--frames", "0"], "--frames"),
    (["--preset", "face", "--seconds", "-1"], "--seconds"),
    (["--preset", "face", "--record", "out.avi"], "--record"),
    (["--preset", "face", "--frames", "x"], "--frames"),
    (["--alpha", "10"], "--preset NAME or --pipeline NAME"),
    (["--preset", "face", "--alpha", "-1"], "alpha must be >= 0"),
    (["--preset", "guitar_e"], "'guitar_e' (laplacian_ideal) has no streaming form"),
    (["--pipeline", "gaussian_ideal", "--alpha", "1", "--level", "2", "--fl", "1", "--fh", "2",
      "--chrom-attenuation", "1"], "gaussian_ideal cannot stream"),
    (["--preset", "face", "--backend", "cuda"], "cuda"),
] + ([(["--preset", "face", "--pulse", "1,2,3"], "--pulse"),
      (["--preset", "face", "--pulse", "90,0,10,10"], "--pulse: the rectangle 90,0,10,10 reaches outside")]
     if HAS_PULSE else []))
def test_bad_options_are_one_line_naming_the_option(argv, option, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["live", SMALL, *argv])
    err = capsys.readouterr().err
    assert code == (1 if option == "cuda" else 2), err
    assert len(err.strip().splitlines()) == 1 and option in err, err
    assert os.listdir(tmp_path) == []


def test_a_recording_into_a_missing_directory_fails_before_any_work(tmp_path, capsys, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("the source was opened")

    monkeypatch.setattr(vidmag.live, "open_source", never)
    code = main(["live", SMALL, "--preset", "face", "--record", str(tmp_path / "nowhere" / "out.mp4")])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert re.search(r"--record: directory '.*nowhere' does not exist", err), err
    assert os.listdir(tmp_path) == []


def test_a_failure_part_way_leaves_no_partial_file(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out.mp4"
    out.write_bytes(b"an older recording")
    push = Magnifier.push

    def failing(self, frame):
        if self.stats.frames == 5:
            raise RuntimeError("the device went away")
        return push(self, frame)

    monkeypatch.setattr(Magnifier, "push", failing)
    code = main(["live", SMALL, "--preset", "face", "--record", str(out), "--backend", "cpu"])
    assert code == 1 and "the device went away" in capsys.readouterr().err
    assert os.listdir(tmp_path) == ["out.mp4"] and out.read_bytes() == b"an older recording"


def test_ctrl_c_finishes_the_recording(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out.mp4"
    push = Magnifier.push

    def interrupted(self, frame):
        if self.stats.frames == 12:
            raise KeyboardInterrupt
        return push(self, frame)

    monkeypatch.setattr(Magnifier, "push", interrupted)
    code = main(["live", SMALL, "--preset", "baby", "--record", str(out), "--backend", "cpu"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "stopped by Ctrl-C" in err and f"-> {out} (12 frames)" in err
    assert _frames_in(out) == 12 and os.listdir(tmp_path) == ["out.mp4"]


def test_seconds_stop_the_run_by_itself(capsys):
    code = main(["live", SMALL, "--preset", "wrist", "--seconds", "0.3", "--realtime", "--backend", "cpu"])
    assert code == 0
    assert re.search(r"laplacian_iir on cpu, 96x64, \d+ frames", capsys.readouterr().err)


@pytest.mark.skipif(not HAS_PULSE, reason="vidmag.pulse is not in this build")
def test_the_pulse_readout_finds_the_synthetic_rate(capsys):
    code = main(["live", "synthetic:size=64x48,bpm=90", "--preset", "face", "--frames", "270", "--pulse",
                 "auto", "--backend", "cpu"])
    err = capsys.readouterr().err
    assert code == 0, err
    bpm = float(re.search(r", ([\d.]+) bpm \(", err).group(1))
    assert abs(bpm - 90) < 3, err


@pytest.mark.skipif(not HAS_PULSE, reason="vidmag.pulse is not in this build")
def test_dropped_frames_do_not_change_the_rate_read(capsys, monkeypatch):
    # a source that drops every other frame of the scene (as a real-time one does for a slow magnifier):
    # the meter is given the frames in their places, so it still reads 90 bpm, not 180
    open_source = vidmag.live.open_source

    class EveryOther:
        def __init__(self, *args, **kwargs):
            self.inner = open_source(*args, **kwargs)
            self.fs, self.size, self.spec, self.truth = (self.inner.fs, self.inner.size, self.inner.spec,
                                                         self.inner.truth)
            self.dropped = 0

        def __iter__(self):
            return self

        def __next__(self):
            next(self.inner)
            self.dropped += 1
            return next(self.inner)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.inner.close()

    monkeypatch.setattr(vidmag.live, "open_source", EveryOther)
    code = main(["live", "synthetic:size=64x48,bpm=90", "--preset", "face", "--frames", "135", "--pulse",
                 "auto", "--backend", "cpu"])
    err = capsys.readouterr().err
    assert code == 0 and "dropped 135" in err, err
    bpm = float(re.search(r", ([\d.]+) bpm \(", err).group(1))
    assert abs(bpm - 90) < 3, err


@pytest.mark.skipif(not HAS_VIEWER, reason="vidmag.live.viewer is not in this build")
def test_the_served_viewer_reports_the_run_and_takes_parameter_changes(tmp_path):
    command = [sys.executable, "-m", "vidmag.cli", "live", "synthetic:size=64x48", "--preset", "face",
               "--backend", "cpu", "--serve", "127.0.0.1:0", "--seconds", "30"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        line = process.stderr.readline()
        url = re.search(r"viewer at (http://127\.0\.0\.1:\d+/)", line)
        assert url is not None, line + process.stderr.read()

        def status() -> dict:
            with urllib.request.urlopen(url.group(1) + "api/status", timeout=10) as response:
                return json.load(response)

        first = status()
        assert first["params"]["alpha"] == pytest.approx(vidmag.live.LIVE_PRESETS["face"][1]["alpha"])
        request = urllib.request.Request(url.group(1) + "api/params", data=json.dumps({"alpha": 7}).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        urllib.request.urlopen(request, timeout=10).close()
        for _ in range(100):  # the command applies the change at its next frame
            now = status()
            if now["params"]["alpha"] == 7.0:
                break
            time.sleep(0.1)
        assert now["params"]["alpha"] == 7.0 and now["frames"] > 0 and now["signal_fs"] == 30.0
        if HAS_PULSE:  # on by default when serving: the region's signal is there for the plot
            assert len(now["signal"]) > 0
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()


@pytest.mark.parametrize("spelling", ["same", "dotdot", "symlink", "hardlink"])
def test_a_recording_over_its_own_source_file_is_refused(tmp_path, capsys, monkeypatch, spelling):
    # issue 19 item 1: vidmag live X --record X used to replace X with its own magnified frames
    src = tmp_path / "in" / "clip.mp4"
    src.parent.mkdir()
    with io.VideoWriter(str(src), width=96, height=64, fps=30) as writer:
        for _, frame in zip(range(6), vidmag.live.open_source(SMALL)):
            writer.write(frame)
    (tmp_path / "in" / "link.mp4").symlink_to(src)
    os.link(src, tmp_path / "in" / "hard.mp4")
    record = {"same": src, "dotdot": tmp_path / "in" / ".." / "in" / "clip.mp4",
              "symlink": tmp_path / "in" / "link.mp4", "hardlink": tmp_path / "in" / "hard.mp4"}[spelling]
    original, before = src.read_bytes(), sorted(os.listdir(tmp_path / "in"))
    code = main(["live", str(src), "--preset", "face", "--frames", "3", "--backend", "cpu", "-q",
                 "--record", str(record)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--record" in err and "is the source" in err, err
    assert src.read_bytes() == original and sorted(os.listdir(tmp_path / "in")) == before
