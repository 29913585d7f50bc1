"""io.first_frames: the one cut of a source to its first N frames (files, evaluate and suggest share it).

It closes the source it reads as soon as it stops: the limit reached, the source exhausted, or the consumer
dropping it early. The tests keep a reference to each source generator, so that nothing but that explicit
close (not the garbage collector) can run the generator's ``finally``.
"""

from __future__ import annotations

import inspect
from fractions import Fraction

import numpy as np
import pytest

from vidmag import io, suggest
from vidmag.evaluate import clip as evaluate_clip


class Recorder:
    """Source generators that record, in their ``finally``, that they were closed."""

    def __init__(self, n_frames: int = 40, shape: tuple[int, int, int] = (32, 48, 3)) -> None:
        self.n_frames = n_frames
        self.shape = shape
        self.opened: list = []  # held here, so the collector never closes them
        self.closed: list[int] = []

    def frames(self):
        index = len(self.opened)

        def gen():
            try:
                for i in range(self.n_frames):
                    yield np.full(self.shape, i % 256, dtype=np.uint8)
            finally:
                self.closed.append(index)

        generator = gen()
        self.opened.append(generator)
        return generator

    def frame_source(self, path):
        return self.frames


@pytest.fixture(scope="module")
def video(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("first_frames") / "clip.mp4")
    rng = np.random.default_rng(0)
    with io.VideoWriter(path, width=48, height=32, fps=Fraction(30)) as writer:
        for _ in range(20):
            writer.write(rng.integers(0, 256, (32, 48, 3), dtype=np.uint8))
    return path


def test_first_frames_stops_at_the_limit_and_closes_the_source():
    recorder = Recorder()
    frames = list(io.first_frames(recorder.frames(), 3))
    assert [int(f[0, 0, 0]) for f in frames] == [0, 1, 2]
    assert recorder.closed == [0]


def test_first_frames_closes_the_source_when_the_consumer_stops_early():
    recorder = Recorder()
    first = io.first_frames(recorder.frames(), 10)
    assert int(next(first)[0, 0, 0]) == 0
    assert recorder.closed == []
    first.close()
    assert recorder.closed == [0]


def test_first_frames_none_yields_all_and_closes_at_the_end():
    recorder = Recorder(n_frames=7)
    assert len(list(io.first_frames(recorder.frames(), None))) == 7
    assert recorder.closed == [0]


def test_first_frames_zero_and_plain_iterables():
    recorder = Recorder()
    assert list(io.first_frames(recorder.frames(), 0)) == []
    # never started, so its body (and its finally) never runs; closed all the same
    assert inspect.getgeneratorstate(recorder.opened[0]) == inspect.GEN_CLOSED
    assert list(io.first_frames([1, 2, 3], 2)) == [1, 2]  # no close to call: fine
    assert list(io.first_frames(iter([1, 2, 3]), 5)) == [1, 2, 3]


def test_first_frames_decodes_what_read_frames_decodes(video):
    whole = list(io.read_frames(video))
    first = list(io.first_frames(io.read_frames(video), 5))
    assert len(first) == 5
    assert all(np.array_equal(a, b) for a, b in zip(first, whole[:5]))


def _readers():
    # (name, how each reader gets its source of frames from a path and a limit)
    return [
        ("evaluate", lambda path, n: evaluate_clip._source(path, n)[0]),
        ("suggest", lambda path, n: suggest._load(path, n)[0]),
    ]


@pytest.mark.parametrize("name, load", _readers(), ids=[name for name, _ in _readers()])
def test_reader_closes_its_source_at_the_limit(monkeypatch, video, name, load):
    recorder = Recorder()
    monkeypatch.setattr(io, "frame_source", recorder.frame_source)
    source = load(video, 16)
    assert len(list(source())) == 16
    assert recorder.closed == [0], f"{name}: the source was left open after its first 16 frames"
    assert len(list(source())) == 16  # a second pass opens (and closes) a fresh one
    assert recorder.closed == [0, 1]


@pytest.mark.parametrize("name, load", _readers(), ids=[name for name, _ in _readers()])
def test_reader_closes_its_source_when_the_pass_stops_early(monkeypatch, video, name, load):
    recorder = Recorder()
    monkeypatch.setattr(io, "frame_source", recorder.frame_source)
    source = load(video, 16)
    frames = source()
    next(frames)
    assert recorder.closed == []
    del frames  # the consumer drops the pass after one frame
    assert recorder.closed == [0], f"{name}: the source was left open when the pass stopped early"


@pytest.mark.parametrize("name, load", _readers(), ids=[name for name, _ in _readers()])
def test_reader_cuts_the_real_clip_as_before(video, name, load):
    whole = list(io.read_frames(video))
    frames = list(load(video, 16)())
    assert len(frames) == 16
    assert all(np.array_equal(a, b) for a, b in zip(frames, whole[:16]))
    assert len(list(load(video, None)())) == len(whole)
