"""The stderr progress bar of ``magnify(progress=True)``."""

from __future__ import annotations

import io

import vidmag
from vidmag._progress import ProgressBar


def test_bar_draws_count_rate_and_ends_the_line():
    stream = io.StringIO()
    bar = ProgressBar(total=3, label="clip", stream=stream)
    for done in (1, 2, 3):
        bar(done)
    text = stream.getvalue()
    assert text.endswith("\n") and "3/3" in text and "frames/s" in text and text.startswith("\rclip [")
    bar(4)  # after the end: ignored
    assert stream.getvalue() == text


def test_bar_without_total():
    stream = io.StringIO()
    bar = ProgressBar(stream=stream)
    bar(5)
    bar.close()
    assert "5 frames" in stream.getvalue()


def test_magnify_progress_goes_to_stderr(clip, synthetic_params, capsys):
    vidmag.magnify(clip, fs=30, pipeline="laplacian_iir", backend="cpu", progress=True,
                   **synthetic_params["laplacian_iir"])
    err = capsys.readouterr().err
    assert "24/24" in err and "frames/s" in err
