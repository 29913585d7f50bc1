"""A face's re-detections off the frame loop (FaceTracker.update(background=True), PulseMeter's
background_detection, what ``vidmag live --pulse face`` runs): issue 16.

A detector stand-in that blocks until the test releases it shows that push returns while a detection is in
flight and that the new box is taken once it finished; the worker thread ends on close; an exception in it
reaches the caller (on the next push, or at close). No wall-clock bound: the stand-in waits on an event,
and a push that waited for it would leave it timed out, which the tests check. On face.mp4 the background
meter reads what the inline one reads (the region holds still through the clip, whichever frames the
detector searches). No skip for a missing OpenCV: ``make test`` installs the face extra.
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from vidmag import face, io, pulse
from vidmag.cli import main

FACE_CLIP = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "clips", "face.mp4")
# The paper's heart rate for the subject of face.mp4 (Wu et al. 2012, figure 1).
PAPER_BAND = (50.0, 60.0)
FS = 30.0

# How long a blocked stand-in waits for the test to release it: only reached when a push waits for it.
BLOCK_S = 30.0
A, B = (50, 50, 100, 100), (120, 120, 60, 60)  # B does not overlap A: taken at once when detected


class Gated:
    """Boxes A on the first call; on the second, signal `started`, wait for `release`, then B (or raise
    `error`); B at once after that. Records the frame's first pixel each call saw."""

    def __init__(self, error: Exception | None = None):
        self.calls, self.seen = 0, []
        self.started, self.release, self.returned = threading.Event(), threading.Event(), threading.Event()
        self.timed_out, self.error = False, error

    def __call__(self, frame):
        self.calls += 1
        self.seen.append(int(frame[0, 0, 0]))
        if self.calls == 1:
            return [A]
        if self.calls == 2:
            self.started.set()
            self.timed_out = not self.release.wait(BLOCK_S)
            self.returned.set()
            if self.error is not None:
                raise self.error
        return [B]


def _opencv():
    try:
        import cv2  # noqa: F401
    except ImportError:
        pytest.fail(f"OpenCV is missing: the face extra is part of the test setup ({face.INSTALL_HINT})")


def _face_clip() -> str:
    if not os.path.exists(FACE_CLIP):
        pytest.skip(f"the paper's face clip is not here ({FACE_CLIP})")
    return FACE_CLIP


def _frame(k: int) -> np.ndarray:
    return np.full((200, 200, 3), k % 256, np.uint8)


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(face.WORKER_NAME)]


def _meter(detector, **kwargs) -> pulse.PulseMeter:
    return pulse.PulseMeter(FS, roi=face.FaceTracker("face", detector=detector), window_s=3.0,
                            background_detection=True, **kwargs)


def _push_to_second_detection(meter, gate) -> None:
    """Frames 1..30 after frame 0 (the first detection, in line): the second submitted at 1 s (frame 30)."""
    for k in range(1, 30):
        meter.push(_frame(k))
    assert gate.calls == 1 and not meter._tracker.pending  # once a second: none due yet
    frame = _frame(30)
    meter.push(frame)
    frame[:] = 255  # the caller's frame changes after push: the worker searches its own copy
    assert gate.started.wait(BLOCK_S)


def test_push_does_not_wait_for_a_detection_in_flight_and_takes_its_box_when_done():
    gate = Gated()
    meter = _meter(gate)
    first = meter.push(_frame(0))
    assert first is None and meter.roi == face.face_region(A, "face", (200, 200, 3)) and gate.calls == 1
    _push_to_second_detection(meter, gate)
    tracker = meter._tracker
    # two more seconds of frames while the detector is blocked: each push returns, the region holds
    for k in range(31, 91):
        meter.push(_frame(k))
        assert meter.roi == face.face_region(A, "face", (200, 200, 3))
    assert tracker.pending and not gate.returned.is_set() and gate.calls == 2  # one detection in flight
    assert tracker.detections == 1 and tracker.last_seen == 0.0 and meter.frames_seen == 91
    gate.release.set()
    assert tracker.wait(BLOCK_S) and not gate.timed_out
    meter.push(_frame(91))  # the first push after it finished takes it
    assert meter.roi == face.face_region(B, "face", (200, 200, 3)) and tracker.face == B
    assert tracker.detections == 2 and tracker.state == "tracking"
    assert tracker.last_seen == pytest.approx(1.0)  # the time of the frame it searched
    assert gate.seen[:2] == [0, 30]  # frame 30 as pushed, not as changed after
    # the next was due 1 s after the frame it saw (2 s): submitted on that same push
    assert tracker.pending and tracker.wait(BLOCK_S)
    meter.close()
    assert gate.calls == 3 and not tracker.pending


def test_the_worker_stops_on_close_and_with_ends_it():
    gate = Gated()
    gate.release.set()
    with _meter(gate) as meter:
        for k in range(100):
            meter.push(_frame(k))
        workers = [t for t in _workers() if t.is_alive()]
        assert workers and meter._tracker.wait(BLOCK_S)
    assert not any(t.is_alive() for t in workers)
    meter.close()  # twice: harmless
    # a closed meter's tracker starts a new worker when it detects in the background again
    meter.reset()
    for k in range(61):
        meter.push(_frame(k))
    again = [t for t in _workers() if t.is_alive() and t not in workers]
    assert again
    meter.close()
    assert not any(t.is_alive() for t in again)


def test_close_waits_for_the_detection_in_flight():
    gate = Gated()
    meter = _meter(gate)
    meter.push(_frame(0))
    _push_to_second_detection(meter, gate)
    workers = [t for t in _workers() if t.is_alive()]
    releaser = threading.Timer(0.05, gate.release.set)
    releaser.start()
    meter.close()  # returns once the detector did: no thread left running it
    releaser.join()
    assert gate.returned.is_set() and not gate.timed_out
    assert not any(t.is_alive() for t in workers)


def test_a_worker_exception_is_raised_by_the_next_push():
    gate = Gated(error=RuntimeError("the detector broke"))
    meter = _meter(gate)
    meter.push(_frame(0))
    _push_to_second_detection(meter, gate)
    gate.release.set()
    assert meter._tracker.wait(BLOCK_S)
    with pytest.raises(RuntimeError, match="the detector broke"):
        meter.push(_frame(31))
    # raised once; the tracker detects again (at once: it was due) and goes on
    meter.push(_frame(32))
    assert meter._tracker.wait(BLOCK_S)
    meter.push(_frame(33))
    assert meter.roi == face.face_region(B, "face", (200, 200, 3))
    meter.close()


def test_a_bad_box_from_the_worker_is_raised_too():
    answers = iter([[A], [(0, 0, 0, 10)]])
    meter = _meter(lambda frame: next(answers, [A]))
    for k in range(31):
        meter.push(_frame(k))
    assert meter._tracker.wait(BLOCK_S)
    with pytest.raises(ValueError, match="box of size 0 x 10"):
        meter.push(_frame(31))
    meter.close()


def test_a_worker_exception_not_yet_raised_is_raised_by_close():
    gate = Gated(error=RuntimeError("the detector broke"))
    meter = _meter(gate)
    meter.push(_frame(0))
    _push_to_second_detection(meter, gate)
    gate.release.set()
    workers = [t for t in _workers() if t.is_alive()]
    with pytest.raises(RuntimeError, match="the detector broke"):
        meter.close()
    assert not any(t.is_alive() for t in workers)
    meter.close()  # raised once
    # and leaving a with block
    gate = Gated(error=RuntimeError("broke in the block"))
    with pytest.raises(RuntimeError, match="broke in the block"):
        with _meter(gate) as meter:
            meter.push(_frame(0))
            _push_to_second_detection(meter, gate)
            gate.release.set()


def test_reset_drops_a_detection_in_flight_and_an_inline_update_takes_it():
    gate = Gated()
    meter = _meter(gate)
    meter.push(_frame(0))
    _push_to_second_detection(meter, gate)
    gate.release.set()
    meter.reset()  # the result of the stream forgotten is not applied
    assert meter.roi is None and not meter._tracker.pending and meter._tracker.detections == 0
    meter.close()
    # update(background=False) with one in flight waits for it and takes it first
    gate = Gated()
    tracker = face.FaceTracker(detector=gate)
    tracker.update(_frame(0), 0.0, background=True)
    tracker.update(_frame(30), 1.0, background=True)
    assert gate.started.wait(BLOCK_S) and tracker.pending
    gate.release.set()
    assert tracker.update(_frame(31), 1.03) == face.face_region(B, "forehead", (200, 200, 3))
    assert tracker.detections == 2 and not tracker.pending and tracker.last_seen == 1.0
    tracker.close()


def test_the_setting_is_checked():
    with pytest.raises(TypeError, match="background_detection must be True or False"):
        pulse.PulseMeter(FS, roi="face", background_detection="yes")
    pulse.PulseMeter(FS, roi=(0, 0, 4, 4), background_detection=True).close()  # no face: nothing to stop


# ---------------------------------------------------------------------------------------------- face.mp4


def test_on_face_mp4_the_background_meter_reads_what_the_inline_one_reads():
    _opencv()
    frames = list(io.read_frames(_face_clip()))
    inline = pulse.PulseMeter(FS, roi="face", window_s=8.0)
    expected = [(r.time, r.bpm) for r in map(inline.push, frames) if r is not None]
    with pulse.PulseMeter(FS, roi="face", window_s=8.0, background_detection=True) as meter:
        readings = [(r.time, r.bpm) for r in map(meter.push, frames) if r is not None]
        # the region holds still through the clip (the dead band), so when each detection lands does not
        # change what is read
        assert meter.roi == inline.roi and meter._tracker.face == inline._tracker.face
    assert readings == expected and PAPER_BAND[0] <= readings[-1][1] <= PAPER_BAND[1]


def test_live_pulse_face_leaves_no_worker_behind(capsys):
    _opencv()
    before = {t for t in _workers() if t.is_alive()}
    code = main(["live", _face_clip(), "--preset", "wrist", "--size", "176x198", "--pulse", "face",
                 "--backend", "cpu", "--frames", "75"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "75 frames" in err and "face lost" not in err and "no face" not in err, err
    assert not [t for t in _workers() if t.is_alive() and t not in before]
