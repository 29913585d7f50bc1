"""The pulse read from a face found by a detector (roi="face", vidmag.face, the face extra).

OpenCV's Haar cascade on the paper's face clip: the face is found where it is, the region read lies on the
forehead's skin and does not jitter while the raw detections do, and the rate falls in the paper's band. The
synthetic scene's face is a smooth skin-coloured oval with no eyes or mouth: the cascade finds no face in it,
and what follows from that (an error offline, a meter that waits live) is checked. How the tracker follows a
face (the dead band, the smoothing, a jump, a loss) is checked with a detector that returns set boxes. The
missing extra's message, the command's ``--pulse face`` and the viewer's status of the region close it.

No skip for a missing OpenCV: ``make test`` installs the face extra, so its absence here is a failure.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

from vidmag import face, io, pulse, synthetic
from vidmag.cli import main
from vidmag.commands.live import parse_pulse

FACE_CLIP = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "clips", "face.mp4")
# The paper's heart rate for the subject of face.mp4 (Wu et al. 2012, figure 1).
PAPER_BAND = (50.0, 60.0)
FS = 30.0


def _opencv():
    try:
        import cv2
    except ImportError:
        pytest.fail(f"OpenCV is missing: the face extra is part of the test setup ({face.INSTALL_HINT})")
    return cv2


def _face_clip() -> str:
    if not os.path.exists(FACE_CLIP):
        pytest.skip(f"the paper's face clip is not here ({FACE_CLIP})")
    return FACE_CLIP


@pytest.fixture(scope="module")
def face_frames():
    return np.stack(list(io.read_frames(_face_clip())))


# ---------------------------------------------------------------------------------------------- face.mp4


def test_the_face_of_face_mp4_is_found_where_it_is(face_frames):
    _opencv()
    height, width = face_frames.shape[1:3]
    boxes = face.detect_faces(face_frames[0])
    assert len(boxes) == 1, boxes
    x, y, w, h = boxes[0]
    # the subject's face fills the middle of the picture: the box's centre in the central half, its width
    # half to nine tenths of the frame's
    assert width / 4 < x + w / 2 < 3 * width / 4 and height / 4 < y + h / 2 < 3 * height / 4, boxes
    assert 0.5 * width < w < 0.9 * width, boxes
    # the forehead patch lies inside the box, in its top quarter, on skin (red over green over blue)
    fx, fy, fw, fh = face.face_region(boxes[0], "forehead", face_frames.shape[1:])
    assert x <= fx and fx + fw <= x + w and y <= fy and fy + fh <= y + h / 4
    r, g, b = face_frames[0, fy:fy + fh, fx:fx + fw].reshape(-1, 3).mean(axis=0)
    assert r > g + 30 > b + 30, (r, g, b)


def test_roi_face_reads_face_mp4_in_the_papers_band_and_holds_still(face_frames):
    _opencv()
    results = {method: pulse.estimate(iter(face_frames), FS, roi="face", method=method)
               for method in pulse.METHODS}
    for method, result in results.items():
        print(f"face.mp4 roi='face' {result.roi} {method}: {result.bpm:.1f} bpm, {result.quality_db:.1f} dB")
        assert PAPER_BAND[0] <= result.bpm <= PAPER_BAND[1], (method, result.bpm)
        assert result.quality_db > 3.0
    result = results["pos"]
    assert result.roi_track.shape == (len(face_frames), 4)
    assert tuple(result.roi_track[0]) == result.roi
    # the cascade's boxes wander by a few pixels from one second to the next; the region does not follow
    raw = np.array([face.detect_faces(face_frames[k])[0] for k in range(0, len(face_frames), 30)])
    assert np.ptp(raw, axis=0).max() >= 4, raw
    assert np.ptp(result.roi_track, axis=0).max() <= face.DEAD_BAND * raw[0, 2], np.ptp(result.roi_track, 0)
    # the same frames read as an array, and through a tracker with other settings
    same = pulse.estimate(face_frames, FS, roi="face")
    np.testing.assert_allclose(same.trace, result.trace)
    cheeks = pulse.estimate(face_frames, FS, roi=face.FaceTracker("cheeks", redetect_s=2.0))
    assert cheeks.roi[1] > result.roi[1] + result.roi[3]  # below the forehead
    assert PAPER_BAND[0] <= cheeks.bpm <= PAPER_BAND[1]


def test_the_meter_follows_the_face_of_face_mp4(face_frames):
    _opencv()
    meter = pulse.PulseMeter(FS, roi="face", window_s=8.0)
    readings = [r for r in map(meter.push, face_frames) if r is not None]
    assert [round(r.time, 2) for r in readings] == [7.97, 8.97, 9.97]
    assert PAPER_BAND[0] <= readings[-1].bpm <= PAPER_BAND[1]
    status = meter.roi_status()
    assert status["source"] == "face" and status["region"] == "forehead" and status["state"] == "tracking"
    assert status["roi"] == list(meter.roi) and status["last_seen"] == pytest.approx(10.0)
    meter.reset()
    assert meter.roi is None and meter.roi_status()["state"] == "searching"


# ---------------------------------------------------------------------------------------------- synthetic


def test_the_synthetic_scenes_oval_is_no_face_to_the_cascade():
    _opencv()
    scene = synthetic.scene(320, 240, fs=FS, bpm=72.0, seconds=4.0, noise=2.0)
    frames = np.stack(list(scene))
    assert face.detect_faces(frames[0]) == []
    with pytest.raises(face.FaceNotFoundError, match="found no face in the first frame; give the region"):
        pulse.estimate(frames, FS, roi="face")
    # live, the meter waits for a face rather than reading anything else: no frame taken, no reading
    meter = pulse.PulseMeter(FS, roi="face", window_s=3.0)
    assert all(meter.push(frame) is None for frame in frames)
    assert meter.frames_seen == 0 and meter.frames_pushed == len(frames) and meter.roi is None
    status = meter.roi_status()
    assert status["state"] == "searching" and status["roi"] is None
    # it looked again every quarter of a second
    assert meter._tracker.detections == pytest.approx(4.0 / 0.25, abs=1)


class Boxes:
    """A stand-in detector: the boxes of each call in turn (the last list once they run out)."""

    def __init__(self, *answers):
        self.answers, self.calls = list(answers), 0

    def __call__(self, frame):
        self.calls += 1
        return self.answers[min(self.calls, len(self.answers)) - 1]


def test_the_meter_waits_for_the_face_then_reads_the_synthetic_rate():
    scene = synthetic.scene(160, 120, fs=FS, bpm=72.0, seconds=12.0, noise=2.0)
    x, y, w, h = scene.roi
    # a face box whose "face" region (the middle 60 % of its width) is the scene's oval
    box = (x - round(w / 0.6 * 0.2), y, round(w / 0.6), h)
    detector = Boxes(*[[]] * 4, [box])  # nothing for the first second
    meter = pulse.PulseMeter(FS, roi=face.FaceTracker("face", detector=detector), window_s=6.0)
    readings = [(k, r) for k, r in enumerate(map(meter.push, scene)) if r is not None]
    assert meter.roi == face.face_region(box, "face") and abs(meter.roi[2] - w) <= 1
    # the fifth look: retries every 0.25 s, each on the first frame due (frames 0, 8, 16, 24, 32 at 30 Hz)
    first_seen = 32
    assert detector.calls > 5
    assert readings[0][0] == first_seen + round(6.0 * FS) - 1
    assert readings[0][1].time == pytest.approx(readings[0][0] / FS)
    assert readings[-1][1].bpm == pytest.approx(72.0, abs=3.0)


# ---------------------------------------------------------------------------------------------- tracking


def _track(detector, times, **kwargs):
    tracker = face.FaceTracker(detector=detector, **kwargs)
    frame = np.zeros((200, 200, 3), np.uint8)
    return tracker, [tracker.update(frame, t) for t in times]


def test_the_tracker_ignores_jitter_smooths_drift_and_jumps_to_a_new_place():
    start, other = (50, 50, 100, 100), (0, 0, 20, 20)
    detector = Boxes([other, start], [(52, 48, 101, 99)], [(60, 50, 100, 100), (120, 120, 70, 70)],
                     [(150, 150, 40, 40)])
    tracker, rois = _track(detector, [0.0, 0.5, 1.0, 2.0, 3.0], smoothing=0.5)
    assert rois[0] == face.face_region(start, "forehead")  # the largest face of the first look
    assert detector.calls == 4  # none at 0.5 s: once a second
    assert rois[1] == rois[2] == rois[0]  # 2 pixels of jitter: below the dead band, the region holds
    # 10 pixels to the right: half the way (smoothing 0.5), the overlapping face kept, the larger other not
    assert tracker.face is not None and rois[3] == face.face_region((55, 50, 100, 100), "forehead")
    assert rois[4] == face.face_region((150, 150, 40, 40), "forehead")  # no overlap: taken at once
    assert tracker.state == "tracking" and tracker.last_seen == 3.0


def test_a_lost_face_keeps_its_region_and_is_looked_for_more_often():
    detector = Boxes([(50, 50, 100, 100)], [], [], [(50, 50, 100, 100)])
    tracker, rois = _track(detector, [0.0, 1.0, 1.1, 1.25, 1.3, 1.5], retry_s=0.25)
    assert tracker.state == "tracking" and detector.calls == 4  # at 0, 1.0, 1.25 and 1.5 s
    assert rois[1:] == [rois[0]] * 5  # lost at 1.0 s: the last region stays (never the whole frame)
    lost = face.FaceTracker(detector=Boxes([(50, 50, 100, 100)], []))
    lost.update(np.zeros((200, 200, 3), np.uint8), 0.0)
    lost.update(np.zeros((200, 200, 3), np.uint8), 1.0)
    assert lost.describe() == {"source": "face", "region": "forehead", "state": "lost",
                               "face": [50, 50, 100, 100], "last_seen": 0.0}


def test_regions_and_settings_are_checked():
    assert face.face_region((0, 0, 100, 100), "face") == (20, 0, 60, 100)
    assert face.face_region((90, 90, 100, 100), "cheeks", (120, 160)) == (105, 119, 55, 1)  # clipped
    with pytest.raises(ValueError, match="region must be one of 'forehead', 'cheeks', 'face'; got 'nose'"):
        face.face_region((0, 0, 10, 10), "nose")
    for kwargs, match in [({"redetect_s": 0}, "redetect_s must be > 0"), ({"retry_s": -1}, "retry_s must be"),
                          ({"smoothing": 1.0}, r"smoothing must be in \[0, 1\)"),
                          ({"min_size": 0}, r"min_size must be in \(0, 1\]"), ({"region": "eyes"}, "region")]:
        with pytest.raises(ValueError, match=match):
            face.FaceTracker(detector=Boxes([]), **kwargs)
    with pytest.raises(TypeError, match="detector must be a callable"):
        face.FaceTracker(detector="haar")
    with pytest.raises(ValueError, match="needs fs, the frame rate"):
        pulse.roi_means(np.zeros((2, 8, 8, 3), np.uint8), "face")
    bad = face.FaceTracker(detector=Boxes([(0, 0, 0, 5)]))
    with pytest.raises(ValueError, match="the detector returned a box of size 0 x 5"):
        bad.update(np.zeros((8, 8, 3), np.uint8), 0.0)


# ---------------------------------------------------------------------------------------------- no extra


HINT = 'pip install -e "./vidmag[face]"'


def test_without_opencv_every_entry_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cv2", None)  # import cv2 raises ImportError
    frames = np.zeros((100, 16, 16, 3), np.uint8)
    calls = [lambda: pulse.estimate(frames, FS, roi="face"), lambda: pulse.PulseMeter(FS, roi="face"),
             face.FaceTracker, face.check_available, lambda: face.detect_faces(frames[0])]
    for call in calls:
        with pytest.raises(ImportError, match="vidmag's optional 'face' extra") as error:
            call()
        assert HINT in str(error.value)
    # the command says so before it opens the source
    code = main(["live", "synthetic:size=64x48", "--preset", "face", "--pulse", "face", "--frames", "5"])
    err = capsys.readouterr().err
    assert code == 1 and HINT in err and "frames" not in err, err


def test_an_opencv_without_the_cascades_is_named(monkeypatch):
    class OpenCV5:
        __version__ = "5.0.0"

    monkeypatch.setitem(sys.modules, "cv2", OpenCV5())
    with pytest.raises(ImportError, match=r"OpenCV 5\.0\.0 does not have \(OpenCV 5 dropped them\)"):
        face.FaceTracker()


# ---------------------------------------------------------------------------------------------- command


def test_pulse_option_parses_face():
    assert parse_pulse("face") == parse_pulse(" Face ") == "face"
    assert parse_pulse("auto") is None and parse_pulse("1,2,3,4") == (1, 2, 3, 4)


def test_a_bad_pulse_option_lists_face(capsys):
    code = main(["live", "synthetic:size=64x48", "--preset", "face", "--pulse", "forehead", "--frames", "5"])
    assert code == 2
    assert "--pulse: expected x,y,w,h in pixels (four integers), auto, face or off" in capsys.readouterr().err


def test_live_synthetic_with_pulse_face_says_no_face_was_found(capsys):
    _opencv()
    code = main(["live", "synthetic:size=96x64", "--preset", "face", "--pulse", "face", "--frames", "45",
                 "--backend", "cpu"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "45 frames" in err and "no face found yet" in err and "bpm" not in err, err


def test_live_face_mp4_with_pulse_face_reads_the_papers_band(capsys):
    _opencv()
    code = main(["live", _face_clip(), "--preset", "wrist", "--size", "176x198", "--pulse", "face",
                 "--backend", "cpu"])
    err = capsys.readouterr().err
    assert code == 0, err
    bpm = float(re.search(r"301 frames, .*, ([\d.]+) bpm \(", err).group(1))
    print(f"vidmag live face.mp4 --size 176x198 --pulse face: {bpm:.1f} bpm")
    assert PAPER_BAND[0] <= bpm <= PAPER_BAND[1] and "face lost" not in err, err


def test_the_served_viewer_reports_the_face_region(tmp_path):
    _opencv()
    command = [sys.executable, "-m", "vidmag.cli", "live", _face_clip(), "--preset", "wrist", "--size",
               "176x198", "--pulse", "face", "--backend", "cpu", "--serve", "127.0.0.1:0", "--seconds", "30"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        line = process.stderr.readline()
        url = re.search(r"viewer at (http://127\.0\.0\.1:\d+/)", line)
        assert url is not None, line + process.stderr.read()
        deadline = time.monotonic() + 60
        while True:
            with urllib.request.urlopen(url.group(1) + "api/status", timeout=10) as response:
                roi = json.load(response)["roi"]
            if (roi or {}).get("state") == "tracking" or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert roi["source"] == "face" and roi["region"] == "forehead" and roi["state"] == "tracking", roi
        x, y, w, h = roi["roi"]
        fx, fy, fw, fh = roi["face"]
        # on the face, in the middle of the 176 x 198 frames
        assert 176 / 4 < fx + fw / 2 < 3 * 176 / 4 and 198 / 4 < fy + fh / 2 < 3 * 198 / 4, roi
        assert fx <= x and x + w <= fx + fw and fy <= y and y + h <= fy + fh / 4, roi
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()
