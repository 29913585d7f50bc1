"""vidmag.live.viewer: the endpoints over HTTP, and the page in headless Chromium.

A thread publishes small synthetic frames (the built-in scene when vidmag.synthetic is there, moving stripes
otherwise) to a Viewer on a free port, as the live command's loop would.
"""

from __future__ import annotations

import importlib
import io
import json
import math
import os
import re
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vidmag.live.viewer import STATUS_FIELDS, Viewer  # imports no server library: aiohttp loads at start()


def _need(module: str, reason: str):
    """Import `module`; skip without it, except under CI (which installs it), where its absence fails."""
    if os.environ.get("CI"):
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=reason)


_need("aiohttp", "the live viewer needs the live extra (aiohttp)")

FS = 30.0
BPM = 72.0
WIDTH, HEIGHT = 160, 120
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
# Set to a path to also write the page's screenshot there (how docs/vidmag/img/live-viewer.png is made).
DOCS_SCREENSHOT_ENV = "VIDMAG_VIEWER_SCREENSHOT"
# Upper bound on waiting for something that should happen at once: reached only when it never happens.
PATIENCE = 20.0


def _frames():
    """Endless moving uint8 (HEIGHT, WIDTH, 3) frames and the region whose green mean is the 'signal'."""
    try:
        from vidmag.synthetic import face_roi, scene
    except ImportError:
        yy, xx = np.mgrid[0:HEIGHT, 0:WIDTH]
        roi = (WIDTH // 3, HEIGHT // 4, WIDTH // 3, HEIGHT // 2)

        def stripes():
            k = 0
            while True:
                t = k / FS
                frame = np.empty((HEIGHT, WIDTH, 3), np.uint8)
                frame[..., 0] = 128 + 80 * np.sin(0.2 * (xx - 40 * t))
                frame[..., 1] = 120 + 60 * np.cos(0.15 * (yy + 25 * t))
                frame[..., 2] = 100 + 3 * np.sin(2 * np.pi * BPM / 60 * t)
                yield frame
                k += 1

        return stripes(), roi
    # a pulse larger than a real one, so that the plot shows it
    frames = scene(WIDTH, HEIGHT, fs=FS, bpm=BPM, motion=1.0, noise=2.0, pulse_amplitude=6.0)
    return iter(frames), face_roi(WIDTH, HEIGHT)


class Feed:
    """Publishes frames to `viewer` from a thread at about FS frames per second until stopped."""

    def __init__(self, viewer: Viewer, params: dict):
        self.viewer, self.params = viewer, params
        self._stop = threading.Event()
        self.published = 0
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        frames, (x, y, w, h) = _frames()
        signal: deque[float] = deque(maxlen=int(8 * FS))
        try:
            for k, frame in enumerate(frames):
                if self._stop.is_set():
                    return
                t = k / FS
                signal.append(float(frame[y:y + h, x:x + w, 1].mean()))
                # A stand-in for magnification: the pulse's colour change made large enough to see.
                swing = 40.0 * math.sin(2 * math.pi * BPM / 60 * t)
                magnified = np.clip(frame.astype(np.int16) + np.array([0.4, 1.0, 0.7]) * swing, 0, 255)
                status = {
                    "frames": k + 1, "fps": FS, "latency_ms": 4.2, "latency_p99_ms": 6.8, "dropped": 0,
                    "bpm": BPM if k >= 10 else float("nan"), "quality_db": 7.5,
                    "signal": list(signal), "signal_fs": FS, "params": dict(self.params),
                    "roi": {"source": "rectangle", "roi": [x, y, w, h]},
                }
                self.viewer.publish(frame, magnified.astype(np.uint8), status)
                self.published = k + 1
                self._stop.wait(1.0 / FS)
        except BaseException as error:
            self.error = error

    def stop(self):
        self._stop.set()
        self._thread.join()
        if self.error is not None:
            raise self.error


# fl as the face preset derives it (not a short decimal), to check how the page shows it
PARAMS = {"alpha": 50.0, "fl": 0.45643546458763845, "fh": 2.0, "lambda_c": 16.0, "chrom_attenuation": 1.0}


@pytest.fixture
def served():
    """A started Viewer on a free port, fed by a Feed; both stopped afterwards."""
    viewer = Viewer(port=0)
    viewer.start()
    feed = Feed(viewer, PARAMS)
    try:
        _wait_for(lambda: feed.published >= 12 or feed.error, "frames to be published")
        yield viewer
    finally:
        viewer.close()
        feed.stop()


def _wait_for(condition, what: str):
    deadline = time.monotonic() + PATIENCE
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def _get_json(url: str):
    with urllib.request.urlopen(url, timeout=PATIENCE) as response:
        assert response.headers["Content-Type"].startswith("application/json")
        return json.loads(response.read())


def _post(url: str, body: bytes):
    """(status code, decoded JSON body) of a POST."""
    headers = {"Content-Type": "application/json"}
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=PATIENCE) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read())


def _read_part(stream) -> bytes:
    """The next JPEG of a multipart/x-mixed-replace stream."""
    line = stream.readline()
    while line in (b"\r\n", b"\n"):
        line = stream.readline()
    assert line.strip() == b"--vidmagframe", line
    headers = {}
    while (line := stream.readline()) not in (b"\r\n", b"\n", b""):
        key, _, value = line.decode("ascii").partition(":")
        headers[key.strip().lower()] = value.strip()
    assert headers["content-type"] == "image/jpeg"
    jpeg = stream.read(int(headers["content-length"]))
    assert stream.read(2) == b"\r\n"
    return jpeg


def _pixels(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.float64)


# ---------------------------------------------------------------------------------------------- HTTP


def test_default_binding_is_this_machine_only():
    assert Viewer().host == "127.0.0.1"
    with Viewer(port=0) as viewer:
        assert viewer.addresses and all(address == "127.0.0.1" for address, _ in viewer.addresses)
        assert viewer.url == f"http://127.0.0.1:{viewer.port}/"
        assert viewer.port > 0


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="port"):
        Viewer(port=70000)
    with pytest.raises(TypeError, match="port"):
        Viewer(port="8000")
    with pytest.raises(TypeError, match="host"):
        Viewer(host=None)
    with pytest.raises(ValueError, match="stream_fps"):
        Viewer(stream_fps=0)
    viewer = Viewer(port=0)
    frame = np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(TypeError, match="original"):
        viewer.publish(frame.astype(np.float32), frame, {})
    with pytest.raises(ValueError, match="magnified"):
        viewer.publish(frame, frame[..., :2], {})
    with pytest.raises(TypeError, match="status"):
        viewer.publish(frame, frame, None)
    with pytest.raises(RuntimeError, match="start"):
        viewer.url  # noqa: B018


def test_a_port_in_use_raises_from_start():
    with Viewer(port=0) as first:
        second = Viewer(port=first.port)
        with pytest.raises(OSError):
            second.start()
        second.close()


def test_the_page_and_its_files_are_served(served):
    with urllib.request.urlopen(served.url, timeout=PATIENCE) as response:
        assert response.headers["Content-Type"].startswith("text/html")
        page = response.read().decode()
    for needed in ('src="/stream/original.mjpg"', 'src="/stream/magnified.mjpg"', "/static/viewer.js",
                   "/static/viewer.css", 'id="bpm"', 'id="signal"'):
        assert needed in page
    for name, kind in (("viewer.js", "text/javascript"), ("viewer.css", "text/css")):
        with urllib.request.urlopen(served.url + "static/" + name, timeout=PATIENCE) as response:
            assert response.headers["Content-Type"].startswith(kind)
            assert len(response.read()) > 100
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(served.url + "stream/other.mjpg", timeout=PATIENCE)
    with missing.value:
        assert missing.value.code == 404


def test_status_reports_every_field(served):
    status = _get_json(served.url + "api/status")
    assert set(STATUS_FIELDS) <= set(status)
    assert status["frames"] >= 12
    assert status["fps"] == FS and status["signal_fs"] == FS
    assert status["latency_ms"] == 4.2 and status["latency_p99_ms"] == 6.8 and status["dropped"] == 0
    assert status["bpm"] == BPM and status["quality_db"] == 7.5
    assert status["params"] == PARAMS
    assert len(status["signal"]) >= 12 and all(isinstance(v, float) for v in status["signal"])
    assert status["roi"] == {"source": "rectangle", "roi": list(_frames()[1])}


def test_status_before_the_first_frame_is_null_and_nan_is_null():
    with Viewer(port=0, params={"alpha": 10}) as viewer:
        status = _get_json(viewer.url + "api/status")
        assert status["params"] == {"alpha": 10}
        assert status["signal"] == []
        nulls = ("frames", "fps", "bpm", "quality_db", "dropped", "roi")
        assert all(status[field] is None for field in nulls)
        frame = np.zeros((8, 8, 3), np.uint8)
        viewer.publish(frame, frame, {"bpm": float("nan"), "quality_db": np.float32(3.5),
                                      "signal": np.array([1.0, np.inf]), "frames": np.int64(3)})
        status = _get_json(viewer.url + "api/status")  # strict JSON: json.loads would accept NaN
        assert status["bpm"] is None and status["quality_db"] == 3.5 and status["frames"] == 3
        assert status["signal"] == [1.0, None]


def test_posted_parameters_reach_poll_changes(served):
    assert served.poll_changes() == {}
    assert _post(served.url + "api/params", b'{"alpha": 30}') == (200, {"queued": {"alpha": 30.0}})
    # a parameter the magnifier reports is adjustable too; later posts win
    assert _post(served.url + "api/params", b'{"lambda_c": 8, "alpha": 31.5}')[0] == 200
    assert served.poll_changes() == {"alpha": 31.5, "lambda_c": 8.0}
    assert served.poll_changes() == {}


@pytest.mark.parametrize("body, words", [
    (b'{"alpha": "30"}', "alpha must be a number"),
    (b'{"alpha": true}', "alpha must be a number"),
    (b'{"fl": NaN}', "fl must be a finite number"),
    (b'{"alpha": [30]}', "alpha must be a number"),
    (b"alpha=30", "JSON object"),
    (b"[30]", "JSON object"),
    (b"{}", "JSON object"),
    (b'{"gain": 3}', "unknown parameter 'gain'"),
    (b'{"alpha": 30, "fh": "high"}', "fh must be a number"),
])
def test_bad_parameters_are_400_and_queue_nothing(served, body, words):
    code, answer = _post(served.url + "api/params", body)
    assert code == 400
    assert words in answer["error"]
    assert served.poll_changes() == {}


def test_streams_show_moving_jpegs(served):
    for which in ("original", "magnified"):
        with urllib.request.urlopen(f"{served.url}stream/{which}.mjpg", timeout=PATIENCE) as stream:
            assert stream.headers["Content-Type"] == "multipart/x-mixed-replace; boundary=vidmagframe"
            first = _pixels(_read_part(stream))
            second = _pixels(_read_part(stream))
        assert first.shape == second.shape == (HEIGHT, WIDTH, 3)
        assert first.std() > 5 and second.std() > 5  # a picture, not a blank
        assert np.abs(first - second).mean() > 0.5  # and it moves
        x, y, w, h = _frames()[1]
        outline = np.concatenate([first[y, x:x + w], first[y + h - 1, x:x + w], first[y:y + h, x],
                                  first[y:y + h, x + w - 1]])
        # the region's outline, green, on the original only (JPEG halves the chroma: read the median)
        greenness = float(np.median(outline[:, 1] - outline[:, [0, 2]].max(axis=1)))
        print(f"{which}: the outline's median greenness {greenness:.1f}")
        assert greenness > 50 if which == "original" else greenness < 25, (which, greenness)


def test_the_outline_follows_the_roi_state_and_skips_what_is_not_a_region():
    from vidmag.live.viewer import _draw_roi

    frame = np.zeros((20, 30, 3), np.uint8)
    _draw_roi(frame, {"source": "face", "roi": [5, 4, 10, 8], "state": "lost"})
    assert tuple(frame[4, 5]) == (255, 140, 0) and tuple(frame[11, 14]) == (255, 140, 0)
    assert not frame[8, 9].any() and not frame[0, 0].any()  # inside and outside stay as they were
    for roi in (None, {"roi": None}, {"roi": [25, 0, 10, 10]}, {"roi": "1,2,3,4"}, [1, 2, 3, 4]):
        untouched = np.zeros((20, 30, 3), np.uint8)
        _draw_roi(untouched, roi)
        assert not untouched.any(), roi


def test_close_ends_open_streams():
    viewer = Viewer(port=0).start()
    feed = Feed(viewer, PARAMS)
    try:
        stream = urllib.request.urlopen(viewer.url + "stream/magnified.mjpg", timeout=PATIENCE)
        _read_part(stream)
        closer = threading.Thread(target=viewer.close)
        closer.start()
        closer.join(PATIENCE)
        assert not closer.is_alive(), "close() hung on an open stream"
        # the browser's side sees the stream end (after at most the part in flight)
        rest = stream.read()
        assert len(rest) < 1 << 20
        stream.close()
        viewer.close()  # a second close does nothing
        with pytest.raises(RuntimeError, match="once"):
            viewer.start()
    finally:
        viewer.close()
        feed.stop()


# ---------------------------------------------------------------------------------------------- Chromium


def _browser_context(playwright, profile: Path):
    if not Path(CHROMIUM).exists() and not os.environ.get("CI"):
        pytest.skip(f"{CHROMIUM} is not installed (Debian's chromium; CI installs it)")
    try:
        return playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1000, "height": 760},
        )
    except Exception as error:  # a browser that is there must start: say why it did not
        pytest.fail(f"headless Chromium ({CHROMIUM}) did not start: {error}")


def _collect(viewer: Viewer, changes: dict, name: str) -> bool:
    """Add what `viewer` has queued to `changes`; whether `name` has arrived."""
    changes.update(viewer.poll_changes())
    return name in changes


def _element_pixels(locator) -> np.ndarray:
    return _pixels(locator.screenshot(type="png"))


def test_the_page_in_headless_chromium(served, tmp_path):
    sync_api = _need("playwright.sync_api", "the browser test needs playwright (requirements-dev.txt)")
    with sync_api.sync_playwright() as playwright:
        context = _browser_context(playwright, tmp_path / "profile")
        try:
            page = context.new_page()
            page.goto(served.url)
            # both panes show pictures that move
            page.wait_for_function(
                "() => ['original', 'magnified'].every(id => document.getElementById(id).naturalWidth > 0)",
                timeout=PATIENCE * 1000,
            )
            for which in ("original", "magnified"):
                pane = page.locator(f"#{which}")
                first = _element_pixels(pane)
                page.wait_for_timeout(400)
                second = _element_pixels(pane)
                assert first.std() > 5, f"the {which} pane is blank"
                assert np.abs(first - second).mean() > 0.5, f"the {which} pane does not move"
            # the pulse readout shows a number, the counters and the signal plot are filled in
            page.wait_for_function(
                "() => /^[0-9]+$/.test(document.getElementById('bpm').textContent)", timeout=PATIENCE * 1000,
            )
            assert float(page.inner_text("#bpm")) == BPM
            assert re.fullmatch(r"[0-9.]+", page.inner_text("#quality"))
            assert int(page.inner_text("#frames")) >= 12
            x, y, w, h = _frames()[1]
            assert page.inner_text("#roi") == f"rectangle {w}×{h} at {x},{y}"
            assert page.evaluate(
                "() => { const c = document.getElementById('signal');"
                " const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
                " let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; }"
            ) > 100
            # the controls show the magnifier's parameters; moving a slider reaches poll_changes
            page.wait_for_function(
                "() => document.getElementById('alpha').value === '50'", timeout=PATIENCE * 1000
            )
            assert page.input_value("#fl-number") == "0.456435"
            served.poll_changes()
            page.focus("#alpha")
            page.keyboard.press("ArrowRight")
            changes: dict = {}
            _wait_for(lambda: _collect(served, changes, "alpha"), "the slider's post")
            assert changes == {"alpha": 51.0}
            # and a number box of another parameter the magnifier reports
            page.fill("#lambda_c-number", "12")
            page.press("#lambda_c-number", "Enter")
            _wait_for(lambda: _collect(served, changes, "lambda_c"), "the box's post")
            assert changes["lambda_c"] == 12.0
            page.evaluate("() => { document.activeElement.blur(); window.scrollTo(0, 0); }")
            shot = tmp_path / "live-viewer.png"
            page.screenshot(path=str(shot), full_page=True)
            with Image.open(shot) as image:
                assert image.width == 1000 and image.height >= 760
                if os.environ.get(DOCS_SCREENSHOT_ENV):
                    small = image.convert("RGB").resize((640, round(640 * image.height / image.width)),
                                                        Image.LANCZOS)
                    # a palette of 256 colours keeps the committed file small
                    small.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(
                        os.environ[DOCS_SCREENSHOT_ENV], optimize=True)
            # a box with nothing in it posts nothing and says why
            page.fill("#fh-number", "")
            page.press("#fh-number", "Enter")
            page.wait_for_function(
                "() => document.getElementById('params-message').textContent.includes('not a number')",
                timeout=PATIENCE * 1000,
            )
            # closing the viewer while the page holds both streams open returns
            closer = threading.Thread(target=served.close)
            closer.start()
            closer.join(PATIENCE)
            assert not closer.is_alive(), "close() hung while the browser held the streams"
            page.wait_for_function(
                "() => document.getElementById('connection').classList.contains('lost')",
                timeout=PATIENCE * 1000,
            )
            # a viewer started again on the same port is picked up by the open page
            with Viewer(port=served.port) as again:
                feed = Feed(again, {**PARAMS, "alpha": 20.0})
                try:
                    page.wait_for_function(
                        "() => document.getElementById('alpha').value === '20'", timeout=PATIENCE * 1000
                    )
                    pane = page.locator("#magnified")
                    first = _element_pixels(pane)
                    page.wait_for_timeout(400)
                    assert np.abs(first - _element_pixels(pane)).mean() > 0.5, "the streams did not reopen"
                finally:
                    feed.stop()
        finally:
            context.close()
