"""The live viewer: a small HTTP server that shows a magnifier's input and output side by side in a browser.

:class:`Viewer` serves one page (``/``), two MJPEG streams (``/stream/original.mjpg``,
``/stream/magnified.mjpg``), a JSON status (``/api/status``) and a parameter inbox (``/api/params``). It runs
its own asyncio loop (aiohttp, the ``live`` extra) in a background thread, so that the magnifier's loop only
ever calls :meth:`Viewer.publish`, which stores references and returns.

Why MJPEG (``multipart/x-mixed-replace``) and not a websocket: every browser shows such a stream in a plain
``<img>`` with no decoder of ours in JavaScript, a slow browser simply receives fewer frames (the server sends
the latest, never a backlog), and ``curl`` or a second program can read the same URL. A websocket would need
script on the page to turn binary messages into pictures, and gains nothing at these rates.

The page and its script and style sheet are package data (``static/``): nothing comes from a CDN, so the
viewer works on a machine without a network.

The region the pulse is read from (``status["roi"]``) is drawn as a frame on the original pane, green while
it is read, orange while the face it follows is lost, and named on the page (its source, the face patch,
the tracker's state): what the readout reads is always in sight.
"""

from __future__ import annotations

import asyncio
import importlib
import io
import json
import math
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from vidmag.params import check_number

__all__ = ["STATUS_FIELDS", "Viewer"]

#: The fields of ``/api/status``, in the order the page reads them (see :meth:`Viewer.publish`).
STATUS_FIELDS = (
    "frames", "fps", "latency_ms", "latency_p99_ms", "dropped", "bpm", "quality_db", "signal", "signal_fs",
    "params", "roi",
)

#: Parameters the page may always send; others only when the magnifier reports them in ``status["params"]``.
ALWAYS_ADJUSTABLE = ("alpha", "fl", "fh")

# Files of the page; read once at start. A path next to this module rather than importlib.resources:
# vidmag is installed as files (wheel or editable), and this works whether or not vidmag.live is a
# regular package yet.
_STATIC = Path(__file__).with_name("static")
_STATIC_TYPES = {"index.html": "text/html", "viewer.js": "text/javascript", "viewer.css": "text/css"}

_BOUNDARY = "vidmagframe"
# Frames wider than this are box-averaged down by an integer factor before JPEG encoding: the page shows
# two panes side by side, so more pixels would only cost encoding time on the magnifier's cores.
_MAX_STREAM_WIDTH = 960
_JPEG_QUALITY = 80
# The region's outline on the original pane: its colour while read, and while the face it follows is lost.
_ROI_COLOUR = np.array([40, 230, 60], np.uint8)
_ROI_LOST_COLOUR = np.array([255, 140, 0], np.uint8)
# How long aiohttp waits for handlers still running at shutdown; the stream handlers return as soon as
# close() is called, so this bounds only a client that has stopped reading.
_SHUTDOWN_TIMEOUT = 1.0


def _json_value(value: Any) -> Any:
    """`value` with numpy scalars and arrays as Python numbers and lists, NaN and infinities as ``None``.

    Strict JSON (which the browser's ``JSON.parse`` is) has no NaN; a bpm not yet known is ``null``.
    """
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, np.ndarray):
        return _json_value(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _check_frame(name: str, frame: Any) -> np.ndarray:
    if not isinstance(frame, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, got {type(frame).__name__}")
    if frame.dtype != np.uint8:
        raise TypeError(f"{name} must have dtype uint8, got {frame.dtype}")
    if frame.ndim != 3 or frame.shape[2] != 3 or frame.shape[0] < 1 or frame.shape[1] < 1:
        raise ValueError(f"{name} must have shape (H, W, 3), got {frame.shape}")
    return frame


def _stream_factor(width: int) -> int:
    """The integer factor a frame `width` pixels wide is shrunk by for the streams."""
    return -(-width // _MAX_STREAM_WIDTH)


def _roi_rect(roi: Any, shape: tuple[int, ...]) -> tuple[int, int, int, int] | None:
    """``status["roi"]``'s rectangle (x, y, w, h) if it lies in a frame of `shape`, else None."""
    rect = roi.get("roi") if isinstance(roi, dict) else None
    if not isinstance(rect, (list, tuple)) or len(rect) != 4:
        return None
    try:
        x, y, w, h = (int(v) for v in rect)
    except (TypeError, ValueError):
        return None
    if w < 1 or h < 1 or x < 0 or y < 0 or x + w > shape[1] or y + h > shape[0]:
        return None
    return x, y, w, h


def _draw_roi(frame: np.ndarray, roi: Any) -> None:
    """Outline the region of ``status["roi"]`` on `frame` in place (a copy of the caller's frame)."""
    rect = _roi_rect(roi, frame.shape)
    if rect is None:
        return
    x, y, w, h = rect
    # two pixels wide once the stream has shrunk the frame
    t = min(2 * _stream_factor(frame.shape[1]), w, h)
    colour = _ROI_LOST_COLOUR if roi.get("state") == "lost" else _ROI_COLOUR
    frame[y : y + t, x : x + w] = colour
    frame[y + h - t : y + h, x : x + w] = colour
    frame[y : y + h, x : x + t] = colour
    frame[y : y + h, x + w - t : x + w] = colour


def _check_live_extra() -> None:
    """The server's libraries, imported here so that a missing one is named with its remedy (in the server
    thread it would be a bare "No module named 'aiohttp'")."""
    for module, name in (("aiohttp", "aiohttp"), ("PIL", "Pillow")):
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ImportError(
                f"the live viewer needs {name}, in vidmag's 'live' extra: pip install -e \"./vidmag[live]\" "
                f"from a checkout (or pip install {name})"
            ) from error


def _encode_jpeg(frame: np.ndarray) -> bytes:
    from PIL import Image

    image = Image.fromarray(np.ascontiguousarray(frame), "RGB")
    factor = _stream_factor(frame.shape[1])
    if factor > 1:
        image = image.reduce(factor)
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=_JPEG_QUALITY)
    return out.getvalue()


class Viewer:
    """A browser viewer of a live magnifier, served over HTTP from a background thread.

    Parameters
    ----------
    host : str, default "127.0.0.1"
        Address to bind. The default accepts connections from this machine only. Any other address (for
        example ``"0.0.0.0"``) lets every machine that can reach it watch the camera and change the
        parameters: the viewer has no authentication. The viewer prints nothing about it; the command
        that starts it warns.
    port : int, default 8000
        TCP port, 0 to 65535; 0 picks a free port (read it from :attr:`url` after :meth:`start`).
    params : dict, optional
        The magnifier's parameters before its first frame (name -> value), shown by the page until
        :meth:`publish` reports them. Their names, with alpha, fl and fh, are those the page may send.
    stream_fps : float, default 20.0
        Most frames per second encoded for the streams (0.5 to 60). Publishing faster costs nothing more:
        the frames in between are never encoded.

    Notes
    -----
    Endpoints: ``/`` (the page), ``/stream/original.mjpg`` and ``/stream/magnified.mjpg`` (MJPEG, the latest
    frame pair, at most `stream_fps` per second), ``/api/status`` (GET, JSON: the fields of
    :data:`STATUS_FIELDS` as last published) and ``/api/params`` (POST a JSON object of name -> number;
    queued for :meth:`poll_changes`; 400 with a message for anything else).

    JPEG encoding happens in the server's thread, and only while a browser holds a stream open. Pillow
    releases the GIL while it encodes, so the magnifier's thread keeps running.

    Examples
    --------
    >>> with Viewer(port=0) as viewer:                      # doctest: +SKIP
    ...     print("open", viewer.url)
    ...     for frame in source:
    ...         out = magnifier.push(frame)
    ...         viewer.publish(frame, out, status)
    ...         magnifier.update(**viewer.poll_changes())
    """

    def __init__(
        self, host: str = "127.0.0.1", port: int = 8000, *, params: dict[str, Any] | None = None,
        stream_fps: float = 20.0,
    ) -> None:
        if not isinstance(host, str) or not host:
            raise TypeError(f"host must be a non-empty str, got {host!r}")
        if isinstance(port, bool) or not isinstance(port, (int, np.integer)):
            raise TypeError(f"port must be an int, got {type(port).__name__} {port!r}")
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be in 0..65535, got {port}")
        if params is not None and not isinstance(params, dict):
            raise TypeError(f"params must be a dict or None, got {type(params).__name__}")
        stream_fps = check_number("stream_fps", stream_fps)
        if not 0.5 <= stream_fps <= 60.0:
            raise ValueError(f"stream_fps must be in 0.5..60 frames per second, got {stream_fps}")
        self.host = host
        self._requested_port = int(port)
        self._port: int | None = None
        self._addresses: list[tuple[str, int]] = []
        self._interval = 1.0 / stream_fps

        self._lock = threading.Lock()
        # Written by publish (any thread), read by the server thread; all under _lock.
        self._frames: tuple[np.ndarray, np.ndarray] | None = None
        self._frame_seq = 0
        self._last_kept = -math.inf
        self._status: dict[str, Any] = {"params": dict(params or {})}
        self._changes: dict[str, float] = {}

        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._closed = False
        # Server-thread state (touched only from the loop).
        self._jpeg: dict[str, bytes] = {}
        self._jpeg_seq = 0
        self._encoded_seq = 0
        self._new_jpeg: asyncio.Condition | None = None
        self._watchers = 0

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> Viewer:
        """Start serving in a background thread; return once the socket is bound.

        Raises
        ------
        OSError
            The address cannot be bound (port in use, address not on this machine).
        RuntimeError
            The viewer was started or closed before.
        ImportError
            aiohttp or Pillow, the ``live`` extra, is not installed; the message names it and the extra.
        """
        if self._thread is not None or self._closed:
            raise RuntimeError("a Viewer can be started once; make a new one")
        _check_live_extra()
        self._thread = threading.Thread(target=self._run, name="vidmag-viewer", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            self._closed = True
            raise self._error
        return self

    @property
    def port(self) -> int:
        """The bound TCP port (the one picked when `port` was 0)."""
        if self._port is None:
            raise RuntimeError("the viewer is not serving; call start() first")
        return self._port

    @property
    def addresses(self) -> list[tuple[str, int]]:
        """The bound sockets' ``(address, port)``: one per address `host` resolves to."""
        if not self._addresses:
            raise RuntimeError("the viewer is not serving; call start() first")
        return list(self._addresses)

    @property
    def url(self) -> str:
        """``http://host:port/``, the address of the page."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def close(self) -> None:
        """Stop the server and join its thread; open streams are ended. Calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        if self._thread is None:
            return
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:  # the loop has already ended (it failed)
                pass
        self._thread.join()

    def __enter__(self) -> Viewer:
        if self._thread is None:
            self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---------------------------------------------------------------- the magnifier's side

    def publish(self, original: np.ndarray, magnified: np.ndarray, status: dict[str, Any]) -> None:
        """Offer the latest frame pair and status; returns at once.

        Parameters
        ----------
        original, magnified : ndarray, uint8, shape (H, W, 3)
            The input frame and the magnified frame (they may differ in size). The viewer keeps at most one
            pair, copied at most `stream_fps` times per second, so the caller may reuse its buffers.
        status : dict
            ``frames`` (int), ``fps``, ``latency_ms``, ``latency_p99_ms`` (float), ``dropped`` (int),
            ``bpm`` (float, NaN or None while unknown), ``quality_db`` (float), ``signal`` (list of floats,
            the region's colour signal over the last seconds, oldest first; may be empty), ``signal_fs``
            (its sample rate in Hz), ``params`` (dict of the current parameters) and ``roi`` (the region
            the pulse is read from, :meth:`vidmag.pulse.PulseMeter.roi_status`: a dict whose ``roi`` is
            ``[x, y, w, h]`` in the original's pixels, outlined on the original pane, with ``source`` and,
            for a face, ``region`` and ``state``; or None). Missing fields are reported as ``null``; other
            fields are passed through to ``/api/status``.

        Raises
        ------
        TypeError, ValueError
            A frame that is not a uint8 (H, W, 3) array, or `status` not a dict.
        """
        _check_frame("original", original)
        _check_frame("magnified", magnified)
        if not isinstance(status, dict):
            raise TypeError(f"status must be a dict, got {type(status).__name__}")
        now = time.monotonic()
        with self._lock:
            self._status = dict(status)
            # Copy only as often as frames are encoded: a copy per pushed frame would cost the magnifier
            # time for pictures nobody sees.
            if now - self._last_kept >= self._interval or self._frames is None:
                shown = original.copy()
                _draw_roi(shown, status.get("roi"))
                self._frames = (shown, magnified.copy())
                self._frame_seq += 1
                self._last_kept = now

    def poll_changes(self) -> dict[str, float]:
        """Parameter changes submitted by the page since the last call (name -> number; later wins).

        The numbers are finite; whether they are in range for the pipeline is for the caller to check.
        """
        with self._lock:
            changes, self._changes = self._changes, {}
        return changes

    # ---------------------------------------------------------------- the server thread

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as error:  # reported by start(); nothing else would see it
            if not self._ready.is_set():
                self._error = error
        finally:
            self._ready.set()
            loop.close()

    async def _serve(self) -> None:
        from aiohttp import web

        self._stop = asyncio.Event()
        self._new_jpeg = asyncio.Condition()
        pages = {name: (_STATIC / name).read_bytes() for name in _STATIC_TYPES}

        app = web.Application()
        app.router.add_get("/", self._page_handler(pages, "index.html"))
        for name in ("viewer.js", "viewer.css"):
            app.router.add_get(f"/static/{name}", self._page_handler(pages, name))
        app.router.add_get("/stream/{which}.mjpg", self._stream)
        app.router.add_get("/api/status", self._status_json)
        app.router.add_post("/api/params", self._post_params)

        runner = web.AppRunner(app, access_log=None, shutdown_timeout=_SHUTDOWN_TIMEOUT)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self._requested_port)
            await site.start()
            self._addresses = [(str(a[0]), int(a[1])) for a in runner.addresses]
            self._port = self._addresses[0][1]
            self._ready.set()
            encoder = asyncio.ensure_future(self._encode_loop())
            await self._stop.wait()
            encoder.cancel()
            await self._wake_streams()
        finally:
            await runner.cleanup()

    @staticmethod
    def _page_handler(pages: dict[str, bytes], name: str):
        from aiohttp import web

        async def handler(request):
            return web.Response(
                body=pages[name], content_type=_STATIC_TYPES[name], charset="utf-8",
                headers={"Cache-Control": "no-cache"},
            )

        return handler

    async def _wake_streams(self) -> None:
        assert self._new_jpeg is not None
        async with self._new_jpeg:
            self._new_jpeg.notify_all()

    async def _encode_loop(self) -> None:
        # Encode the latest pair at most once per interval, and only while someone watches.
        while True:
            await asyncio.sleep(self._interval)
            if self._watchers == 0:
                continue
            with self._lock:
                frames, seq = self._frames, self._frame_seq
            if frames is None or seq == self._encoded_seq:
                continue
            self._jpeg = {"original": _encode_jpeg(frames[0]), "magnified": _encode_jpeg(frames[1])}
            self._encoded_seq = seq
            self._jpeg_seq += 1
            await self._wake_streams()

    async def _stream(self, request):
        from aiohttp import web

        which = request.match_info["which"]
        if which not in ("original", "magnified"):
            raise web.HTTPNotFound(text=f"no stream {which!r}; the streams are original and magnified")
        assert self._stop is not None and self._new_jpeg is not None
        response = web.StreamResponse(headers={
            "Content-Type": f"multipart/x-mixed-replace; boundary={_BOUNDARY}",
            "Cache-Control": "no-cache, no-store",
        })
        await response.prepare(request)
        self._watchers += 1
        sent = 0
        try:
            while not self._stop.is_set():
                async with self._new_jpeg:
                    await self._new_jpeg.wait_for(lambda s=sent: self._stop.is_set() or self._jpeg_seq != s)
                if self._stop.is_set():
                    break
                sent, jpeg = self._jpeg_seq, self._jpeg[which]
                # Content-Length in each part lets the browser show a frame as soon as it has arrived,
                # rather than when the next boundary does.
                head = (
                    f"--{_BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(jpeg)}\r\n\r\n"
                ).encode("ascii")
                await response.write(head + jpeg + b"\r\n")
        except ConnectionError:
            pass  # the browser went away
        finally:
            self._watchers -= 1
        if not self._stop.is_set():
            return response
        try:
            await response.write_eof()
        except (ConnectionError, RuntimeError):
            pass
        return response

    async def _status_json(self, request):
        from aiohttp import web

        with self._lock:
            status = dict(self._status)
        body = {field: status.get(field) for field in STATUS_FIELDS}
        body.update({k: v for k, v in status.items() if k not in body})
        if body["signal"] is None:
            body["signal"] = []
        if body["params"] is None:
            body["params"] = {}
        return web.Response(
            text=json.dumps(_json_value(body), allow_nan=False), content_type="application/json",
            headers={"Cache-Control": "no-store"},
        )

    async def _post_params(self, request):
        from aiohttp import web

        def bad(message: str):
            return web.json_response({"error": message}, status=400)

        try:
            changes = json.loads(await request.text())
        except (UnicodeDecodeError, ValueError) as error:
            return bad(f"the body must be a JSON object of parameter -> number: {error}")
        if not isinstance(changes, dict) or not changes:
            return bad('the body must be a non-empty JSON object of parameter -> number, e.g. {"alpha": 30}')
        with self._lock:
            params = self._status.get("params") or {}
        allowed = set(ALWAYS_ADJUSTABLE) | {name for name, value in params.items() if _is_number(value)}
        checked: dict[str, float] = {}
        for name, value in changes.items():
            if name not in allowed:
                return bad(f"unknown parameter {name!r}; adjustable: {', '.join(sorted(allowed))}")
            try:
                checked[name] = check_number(name, value)
            except (TypeError, ValueError) as error:
                return bad(str(error))
        with self._lock:
            self._changes.update(checked)
        return web.json_response({"queued": checked})


def _is_number(value: Any) -> bool:
    try:
        check_number("value", value)
    except (TypeError, ValueError):
        return False
    return True
