"""The ``vidmag`` command: help, version, listings, magnify and its summary line, exit codes, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from fractions import Fraction
from importlib.metadata import entry_points

import av
import numpy as np
import pytest

import vidmag
from vidmag import io
from vidmag.cli import main

IIR_OPTIONS = ["--pipeline", "laplacian_iir", "--alpha", "10", "--lambda-c", "16", "--r1", "0.4",
               "--r2", "0.05", "--chrom-attenuation", "0.1", "--backend", "cpu"]


@pytest.fixture
def clip(tmp_path):
    """24 frames of 64 x 48 at 25 fps."""
    path = tmp_path / "clip.mp4"
    yy, xx = np.mgrid[0:48, 0:64]
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=Fraction(25))
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for t in range(24):
            grey = (128 + 60 * np.sin((xx + 0.5 * np.sin(t / 2)) / 6) * np.cos(yy / 8)).astype(np.uint8)
            frame = av.VideoFrame.from_ndarray(np.repeat(grey[..., None], 3, axis=2), format="rgb24")
            frame.pts = t
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_console_script_is_declared():
    scripts = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    assert scripts.get("vidmag") == "vidmag.cli:main"


def test_help_lists_commands_and_examples(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for word in ("magnify", "presets", "backends", "demo", "examples:", "--preset face"):
        assert word in out
    with pytest.raises(SystemExit) as exit_info:
        main(["magnify", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for word in ("--alpha", "--lambda-c", "--chrom-attenuation", "--side-by-side", "--quality", "--compat",
                 "laplacian_iir", "examples:"):
        assert word in out


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"vidmag {vidmag.__version__}"


def test_no_command_prints_help_and_fails(capsys):
    code, out, _ = run(capsys)
    assert code == 2 and "usage:" in out


def test_presets_table(capsys):
    code, out, _ = run(capsys, "presets")
    assert code == 0
    for name, preset in vidmag.PRESETS.items():
        line = next(line for line in out.splitlines() if line.startswith(name + " "))
        assert preset.pipeline in line
    face = next(line for line in out.splitlines() if line.startswith("face "))
    assert "alpha=25" in face and "alpha=50" in face  # default semantics and the paper's value


def test_backends_table(capsys):
    code, out, _ = run(capsys, "backends")
    assert code == 0
    from vidmag.backend.registry import list_backends

    lines = out.splitlines()
    for info in list_backends():
        row = next(line for line in lines if line.startswith(info.name + " "))
        assert ("unavailable" in row) == (info.unavailable_reason is not None)
        assert info.runs_on in row
        if info.unavailable_reason is not None:
            assert f"{info.name}: {info.unavailable_reason}" in lines
    assert any(line.startswith("cpu ") and "available" in line for line in lines)


def test_magnify_prints_one_summary_line(tmp_path, clip, capsys):
    out_path = tmp_path / "out.mp4"
    code, out, err = run(capsys, "magnify", str(clip), "-o", str(out_path), *IIR_OPTIONS)
    assert code == 0, err
    assert err == ""  # no progress bar when stderr is not a terminal
    lines = out.strip().splitlines()
    assert len(lines) == 1
    for part in ("24 frames", "64x48", "backend cpu", "frames/s", str(out_path)):
        assert part in lines[0]
    info = io.probe(out_path)
    assert (info.n_frames, info.fps) == (24, Fraction(25))


def test_magnify_with_preset_and_options(tmp_path, clip, capsys):
    out_path = tmp_path / "out.mkv"
    code, out, err = run(capsys, "magnify", str(clip), "-o", str(out_path), "--preset", "baby",
                         "--alpha", "5", "--side-by-side", "--quality", "30", "--backend", "cpu",
                         "--compat", "mit", "-q")
    assert code == 0, err
    assert out == ""  # --quiet
    info = io.probe(out_path)
    assert (info.width, info.height) == (128, 48)
    assert len(list(io.read_frames(out_path))) == 14  # the MIT code's T - 10


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["magnify"], 2, "required"),
        (["magnify", "{clip}", "-o", "{out}"], 2, "--preset"),
        (["magnify", "{clip}", "-o", "{out}", "--preset", "nope", "--backend", "cpu"], 2, "preset"),
        (["magnify", "{clip}", "-o", "{out}", "--pipeline", "laplacian_iir", "--alpha", "3"], 2, "lambda_c"),
        (["magnify", "{clip}", "-o", "{out}", "--preset", "baby", "--alpha", "abc"], 2, "--alpha"),
        (["magnify", "{clip}", "-o", "{out}", "--preset", "baby", "--quality", "99"], 2, "quality"),
        (["magnify", "{clip}", "-o", "{out}", "--pipeline", "median"], 2, "--pipeline"),
        (["magnify", "{clip}", "-o", "{out}", "--preset", "baby", "--backend", "cuda"], 1, "cuda"),
        (["magnify", "{missing}", "-o", "{out}", "--preset", "baby"], 1, "no such file"),
        (["magnify", "{corrupt}", "-o", "{out}", "--preset", "baby"], 1, "cannot read"),
        (["magnify", "{clip}", "-o", "{nodir}", "--preset", "baby"], 1, "does not exist"),
        (["frobnicate"], 2, "invalid choice"),
        (["magnify", "{clip}", "-o", "{out}", "--preset", "baby", "--max-frames", "0"], 2, "max_frames"),
        (["magnify", "{missing}", "-o", "{out}", "--preset", "baby", "--max-frames", "-2"], 2, "max_frames"),
        (["magnify", "{clip}", "-o", "{out}", "--preset", "baby", "--max-frames", "2.5"], 2, "--max-frames"),
    ],
    ids=["no-args", "no-pipeline", "bad-preset", "missing-param", "not-a-number", "quality", "bad-pipeline",
         "unavailable-backend", "missing-input", "corrupt-input", "no-output-dir", "bad-command",
         "max-frames-zero", "max-frames-negative-before-the-input", "max-frames-not-an-integer"],
)
def test_errors_are_one_line_with_exit_code_and_no_file(tmp_path, clip, capsys, argv, code, message):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    corrupt = tmp_path / "corrupt.mp4"
    corrupt.write_bytes(b"\x00\x01garbage" * 300)
    values = {"clip": str(clip), "out": str(out_dir / "out.mp4"), "missing": str(tmp_path / "missing.mp4"),
              "corrupt": str(corrupt), "nodir": str(tmp_path / "nodir" / "out.mp4")}
    got, _, err = run(capsys, *(arg.format(**values) for arg in argv))
    assert got == code
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "error" in lines[0] and message in lines[0]
    assert "Traceback" not in err
    assert os.listdir(out_dir) == []


def test_magnify_max_frames(tmp_path, clip, capsys):
    out_path = tmp_path / "short.mp4"
    code, out, err = run(capsys, "magnify", str(clip), "-o", str(out_path), *IIR_OPTIONS, "--max-frames", "7",
                         "--side-by-side")
    assert code == 0, err
    assert "7 frames, 128x48" in out
    info = io.probe(out_path)
    assert (info.n_frames, info.width) == (7, 128)
    with pytest.raises(SystemExit):
        main(["magnify", "--help"])
    assert "--max-frames N" in capsys.readouterr().out


def test_demo_command(tmp_path, capsys):
    code, out, err = run(capsys, "demo", "-o", str(tmp_path / "demo"), "--seconds", "2.5", "--backend", "cpu")
    assert code == 0, err
    assert sorted(os.listdir(tmp_path / "demo")) == ["colour.mp4", "motion.mp4", "pulse.png"]
    assert "colour pulse: peak at 1.20 Hz" in out and "backend cpu" in out


def test_interrupt_exit_code_and_no_file(tmp_path, clip, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(io.VideoWriter, "write", interrupted)
    code, _, err = run(capsys, "magnify", str(clip), "-o", str(tmp_path / "out.mp4"), *IIR_OPTIONS)
    assert code == 130 and "interrupted" in err
    assert sorted(os.listdir(tmp_path)) == ["clip.mp4"]


def test_the_installed_command_runs(tmp_path, clip):
    # Through a real process: exit codes and streams as a shell sees them.
    command = [sys.executable, "-m", "vidmag.cli"]
    done = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("vidmag ")
    done = subprocess.run([*command, "magnify", str(clip), "-o", str(tmp_path / "o.mp4"), "--preset", "baby",
                           "--r1", "2"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "r1" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "o.mp4").exists()


def test_python_dash_m_vidmag_runs_the_command():
    # what the docs' "python -m vidmag ..." lines and their test use
    done = subprocess.run([sys.executable, "-m", "vidmag", "--version"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == f"vidmag {vidmag.__version__}"
