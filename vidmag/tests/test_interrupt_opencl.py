"""Ctrl-C during ``vidmag magnify --backend opencl``: the interrupt message and status, never a crash.

An interrupt between two launches once left kernels running while the buffers they wrote (host memory wrapped
as device buffers) were freed, and the process died with SIGSEGV after printing "interrupted" (1 run in 24).
Here real processes are interrupted at different moments after they start producing frames.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from fractions import Fraction

import av
import numpy as np
import pytest

#: (pipeline, its options): the two fused pipelines (streaming and two-pass) and a generic one
_RUNS = (
    ("laplacian_iir", ["--alpha", "10", "--lambda-c", "16", "--r1", "0.4", "--r2", "0.05"]),
    ("gaussian_ideal", ["--alpha", "50", "--level", "3", "--fl", "0.8", "--fh", "1.2"]),
    ("laplacian_butterworth", ["--alpha", "10", "--lambda-c", "16", "--fl", "0.5", "--fh", "2"]),
    ("laplacian_ideal", ["--alpha", "10", "--lambda-c", "16", "--fl", "0.5", "--fh", "2"]),
)
_RUNS = tuple((name, [*options, "--chrom-attenuation", "0.5"]) for name, options in _RUNS
)
#: seconds after the first frame is written at which each run is interrupted
_DELAYS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.45, 0.6)


def _write_clip(path, frames: int = 150, height: int = 240, width: int = 320) -> None:
    yy, xx = np.mgrid[0:height, 0:width]
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=Fraction(30))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"preset": "ultrafast"}
        for t in range(frames):
            base = 120 + 50 * np.sin((xx + 2 * np.sin(t / 5)) / 9) * np.cos(yy / 11)
            rgb = np.stack([base + 10 * np.sin(t / 3), base, base - 20], axis=-1)
            frame = av.VideoFrame.from_ndarray(np.clip(rgb, 0, 255).astype(np.uint8), format="rgb24")
            frame.pts = t
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def _interrupt_once(clip, out_dir, pipeline: str, options: list[str], delay: float) -> tuple[int, str, bool]:
    """Run the command, SIGINT it ``delay`` s after its output file appears; (status, stderr, interrupted)."""
    command = [sys.executable, "-m", "vidmag.cli", "magnify", str(clip), "-o", str(out_dir / "out.mp4"),
               "--pipeline", pipeline, *options, "--backend", "opencl", "--encoder-preset", "ultrafast", "-q"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        # the temporary output exists once the first magnified frame is computed and the writer is open
        while not os.listdir(out_dir) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        sent = process.poll() is None and bool(os.listdir(out_dir))
        if sent:
            time.sleep(delay)
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
            else:
                sent = False
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, err, sent


def test_ctrl_c_on_opencl_drains_the_queue_and_exits_cleanly(tmp_path, require_backend):
    require_backend("opencl")
    clip = tmp_path / "clip.mp4"
    _write_clip(clip)
    interrupted = 0
    for i, delay in enumerate(_DELAYS):
        pipeline, options = _RUNS[i % len(_RUNS)]
        out_dir = tmp_path / f"run{i}"
        out_dir.mkdir()
        status, err, sent = _interrupt_once(clip, out_dir, pipeline, options, delay)
        what = f"run {i} ({pipeline}, SIGINT {delay} s after the first frame)"
        left = sorted(os.listdir(out_dir))
        # the library's warnings (one line each, "vidmag: warning: ...") are part of a completed run's stderr
        problems = "\n".join(line for line in err.splitlines()
                              if line.strip() and not line.startswith("vidmag: warning: "))
        if status == -signal.SIGINT and left == ["out.mp4"] and not problems:
            # the signal came after the work and the file were complete, while the interpreter was already
            # shutting down (Python's handler is gone by then): a race of this test, not a crash
            continue
        # a negative status is death by a signal: SIGSEGV (-11), SIGABRT (-6), or SIGINT itself
        assert status >= 0, f"{what} died of signal {-status}:\n{err}"
        assert "Traceback" not in err and "Fatal Python error" not in err, f"{what}:\n{err}"
        if sent and status != 0:
            assert status == 130 and "interrupted" in err, f"{what}: status {status}\n{err}"
            assert left == [], f"{what} left {left}"
            interrupted += 1
        else:  # it finished before the signal could stop it: a complete file, nothing else
            assert status == 0, f"{what}: status {status}\n{err}"
            assert left == ["out.mp4"], f"{what} left {left}"
    if interrupted < len(_DELAYS) // 2:
        pytest.fail(f"only {interrupted} of {len(_DELAYS)} runs were still working when interrupted; "
                    "the clip is too short for this machine")
