"""vidmag.live.open_source: the synthetic scene, a file, an http URL served by a server in the test, the
camera's FFmpeg input per platform and the error for a missing one, and dropped frames counted when a
real-time source outruns its consumer (never silent). No test looks at how long anything took."""

from __future__ import annotations

import functools
import http.server
import os
import sys
import threading
import time
from fractions import Fraction

import numpy as np
import pytest

from vidmag import io, synthetic
from vidmag.live import open_source
from vidmag.live.sources import _Decoded, camera_input, parse_size

FACE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "clips", "face.mp4")
N_FRAMES = 12


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory):
    """A directory holding clip.mp4 and clip.mkv: the same 12 frames of 64 x 48 at 30 frames/s (x264,
    lossless)."""
    directory = tmp_path_factory.mktemp("clips")
    frames = np.random.default_rng(1).integers(0, 256, (N_FRAMES, 48, 64, 3), dtype=np.uint8)
    for name, container in (("clip.mp4", "mp4"), ("clip.mkv", "matroska")):
        with io.VideoWriter(directory / name, width=64, height=48, fps=Fraction(30), quality=0,
                            container_format=container, encoder_preset="ultrafast") as writer:
            for frame in frames:
                writer.write(frame)
    return directory


@pytest.fixture(scope="module")
def clip_frames(clip_dir):
    return np.stack(list(io.read_frames(clip_dir / "clip.mp4")))


def test_the_synthetic_scene_with_its_options_and_truth():
    with open_source("synthetic:bpm=90,noise=1,size=96x64,fs=25,seed=3") as source:
        frames = [next(source) for _ in range(3)]
        assert (source.kind, source.fs, source.size, source.realtime) == ("synthetic", 25.0, (96, 64), False)
        assert source.truth["bpm"] == 90.0
        assert source.truth["roi"] == synthetic.face_roi(96, 64)
        assert source.frames == 3 and source.dropped == 0
    expected = synthetic.scene(96, 64, bpm=90, noise=1, fs=25, seed=3)
    for frame in frames:
        np.testing.assert_array_equal(frame, next(expected))
    assert frames[0].shape == (64, 96, 3) and frames[0].dtype == np.uint8
    with open_source("synthetic", size=(48, 32)) as source:
        assert next(source).shape == (32, 48, 3) and source.fs == 30.0 and source.truth["bpm"] == 72.0
    assert source.closed and next(source, None) is None


@pytest.mark.parametrize("spec, match", [
    ("synthetic:bpm=fast", "bpm must be a number, got 'fast'"),
    ("synthetic:colour=red", "'colour=red' is not KEY=VALUE with a key of bpm"),
    ("synthetic:bpm", "'bpm' is not KEY=VALUE"),
    ("synthetic:bpm=60,bpm=70", "bpm is given twice"),
    ("synthetic:size=big", "size must be WxH"),
    ("synthetic:bpm=1000", "bpm"),  # the scene's own range check
])
def test_malformed_synthetic_specs_are_refused(spec, match):
    with pytest.raises(ValueError, match=match):
        open_source(spec)
    with pytest.raises(ValueError, match="size: given twice"):
        open_source("synthetic:size=64x48", size=(64, 48))


def test_a_file_gives_every_frame_in_order_as_fast_as_asked(clip_dir, clip_frames):
    with open_source(clip_dir / "clip.mp4") as source:
        assert (source.kind, source.fs, source.size, source.realtime) == ("file", 30.0, (64, 48), False)
        frames = list(source)
    np.testing.assert_array_equal(np.stack(frames), clip_frames)
    assert source.frames == N_FRAMES and source.dropped == 0
    with open_source(str(clip_dir / "clip.mp4"), size="32x24") as source:
        assert source.size == (32, 24) and next(source).shape == (24, 32, 3)


@pytest.mark.skipif(not os.path.exists(FACE), reason="sample clip ../shared/data/clips/face.mp4 not present")
def test_a_sample_clip_resized_on_reading():
    with open_source(FACE, size=(132, 148)) as source:
        frames = [next(source) for _ in range(3)]
    assert source.fs == 30.0 and all(f.shape == (148, 132, 3) for f in frames)
    assert not np.array_equal(frames[0], frames[2])


def test_an_http_url_served_here(clip_dir, clip_frames):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # no request lines on stderr
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=clip_dir))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        # Matroska reads front to back; an mp4 whose index is at its end needs a server that answers byte
        # ranges, which http.server does not
        url = f"http://127.0.0.1:{server.server_address[1]}/clip.mkv"
        with open_source(url) as source:
            assert (source.kind, source.fs, source.size, source.realtime) == ("url", 30.0, (64, 48), False)
            frames = list(source)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    np.testing.assert_array_equal(np.stack(frames), clip_frames)


def test_a_paced_source_drops_what_a_slow_consumer_misses_and_counts_it():
    with open_source("synthetic:size=48x32", realtime=True) as source:
        next(source)
        time.sleep(0.25)  # more than seven frame periods at 30 Hz
        frame = next(source)
        assert source.dropped >= 1 and source.frames == 2
        read = source.frames + source.dropped  # the scene's frames gone by, given or dropped
    scene = synthetic.scene(48, 32)
    for _ in range(read - 1):
        next(scene)
    np.testing.assert_array_equal(frame, next(scene))  # the frame now due, not a stale one


def test_a_paced_file_accounts_for_every_frame(clip_dir, clip_frames):
    with open_source(clip_dir / "clip.mp4", realtime=True) as source:
        given = [next(source)]
        time.sleep(0.2)
        given += list(source)
    assert source.dropped >= 1 and source.frames + source.dropped == N_FRAMES
    np.testing.assert_array_equal(given[-1], clip_frames[-1])


def test_a_pushed_source_keeps_the_newest_frame_and_counts_the_replaced_ones(clip_dir, clip_frames):
    # what a camera or an rtsp stream does when realtime: a reader thread fills a one-frame slot (a file
    # stands in for the device here: its reader outruns a consumer that sleeps)
    import av

    source = _Decoded("clip.mp4", "file", av.open(str(clip_dir / "clip.mp4")), 30.0, None, True,
                      threaded=True)
    with source:
        given = [next(source)]
        time.sleep(0.2)
        given += list(source)
    assert source.frames + source.dropped == N_FRAMES and source.frames == len(given)
    np.testing.assert_array_equal(given[-1], clip_frames[-1])  # the last frame is never replaced


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the v4l2 error is Linux's")
def test_a_missing_camera_says_where_cameras_are():
    if os.path.exists("/dev/video7"):
        pytest.skip("this machine has a /dev/video7")
    with pytest.raises(FileNotFoundError, match=r"camera:7: cannot open camera '/dev/video7' \(v4l2\).*"
                                                r"/dev/video\* \(v4l2-ctl --list-devices"):
        open_source("camera:7")


def test_the_camera_input_per_platform():
    assert camera_input(0, "linux") == ("/dev/video0", "v4l2", {})
    assert camera_input("2", "darwin") == ("2:none", "avfoundation", {"framerate": "30"})
    assert camera_input("Integrated Webcam", "win32") == ("video=Integrated Webcam", "dshow", {})
    with pytest.raises(ValueError, match="DirectShow opens cameras by name"):
        camera_input(0, "win32")
    with pytest.raises(ValueError, match="give the camera's number"):
        camera_input("front", "linux")
    with pytest.raises(ValueError, match="not on 'sunos5'"):
        camera_input(0, "sunos5")


def test_bad_specs_and_options_are_refused():
    with pytest.raises(TypeError, match="source must be a str"):
        open_source(3)
    with pytest.raises(ValueError, match="URL scheme 'ftp' is not one of rtsp"):
        open_source("ftp://127.0.0.1/clip.mp4")
    with pytest.raises(FileNotFoundError, match=r"no such file: 'no-such-clip\.mp4'"):
        open_source("no-such-clip.mp4")
    with pytest.raises(TypeError, match="realtime must be True or False"):
        open_source("synthetic", realtime="yes")
    with pytest.raises(ConnectionError, match=r"cannot open 'rtsp://127\.0\.0\.1:9/"):
        open_source("rtsp://127.0.0.1:9/live")  # the discard port: nothing listens
    assert parse_size("size", "640x480") == (640, 480) and parse_size("size", None) is None
    bad_sizes = (("640", ValueError), ((640,), TypeError), ((0, 480), ValueError), ((6.5, 4), ValueError))
    for bad, error in bad_sizes:
        with pytest.raises(error, match="size"):
            parse_size("size", bad)
