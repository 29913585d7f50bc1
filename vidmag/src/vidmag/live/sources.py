"""Live frame sources: a camera, a stream URL, a video file or the synthetic scene, as iterators of frames.

:func:`open_source` reads a spec (``camera:0``, ``rtsp://...``, ``clip.mp4``, ``synthetic:bpm=72``) and
returns a :class:`Source`: an iterator of uint8 (H, W, 3) RGB frames with its frame rate, its frame size and
the count of frames it dropped.

Real time, and what it costs. A source either gives every frame in order (``realtime=False``: a consumer
slower than the source falls behind; a file or the synthetic scene then simply plays slower, a camera's
frames queue up and the delay grows) or keeps up with the clock (``realtime=True``), dropping the frames a
slow consumer has no time for. Dropped frames are counted in :attr:`Source.dropped`, never silent. How a
source keeps up depends on where its frames come from:

- Sources read on demand (files, http(s) URLs, the synthetic scene) are paced: frame ``k`` is given at
  ``k / fs`` seconds after the first, waiting when the consumer is early; a consumer a whole frame period
  or more late gets the frame now due, and the ones it skipped are dropped (decoded, never converted).
- Sources that push frames at their own rate (cameras, rtsp / rtmp / udp / srt streams) are read by a
  thread into a one-frame slot: the consumer takes the newest frame, and each frame replaced in the slot
  before it was taken is dropped. The delay stays one frame at most.

The default (``realtime=None``) is True for cameras and pushed streams (reading them late only adds delay)
and False for files, http(s) URLs and the synthetic scene (every frame, as fast as the consumer goes; the
``vidmag live`` command plays them in real time while it serves the viewer).
"""

from __future__ import annotations

import inspect
import math
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import av
import numpy as np

from vidmag import io
from vidmag.params import check_bool, check_integer

__all__ = ["PUSHED_SCHEMES", "URL_SCHEMES", "Source", "camera_input", "open_source", "parse_size"]

#: URL schemes whose servers push frames at their own rate (read by a thread when realtime).
PUSHED_SCHEMES = ("rtsp", "rtsps", "rtmp", "rtmps", "udp", "rtp", "srt", "tcp")
#: Every URL scheme :func:`open_source` takes (FFmpeg opens them).
URL_SCHEMES = (*PUSHED_SCHEMES, "http", "https")

#: Seconds FFmpeg waits to open a URL or a camera, and for each read, before it gives up.
OPEN_TIMEOUT_S = 10.0

#: The resize of decoded frames (``size=``): libswscale's area averaging, which does not alias when it
#: shrinks (a 1080p camera read at 640 x 360) and interpolates when it enlarges.
INTERPOLATION = "AREA"

_SYNTHETIC_KEYS = ("bpm", "noise", "motion", "size", "fs", "seed", "pulse_amplitude")


def parse_size(name: str, value: Any) -> tuple[int, int] | None:
    """A frame size as (W, H): from None, a (W, H) pair of integers or a ``"WxH"`` string.

    Raises
    ------
    TypeError, ValueError
        Anything else, or sides below 1 (the message names `name`).
    """
    if value is None:
        return None
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", value)
        if match is None:
            raise ValueError(f"{name} must be WxH in pixels, such as 640x480, got {value!r}")
        value = (int(match.group(1)), int(match.group(2)))
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{name} must be a (width, height) pair or 'WxH', got {value!r}")
    width, height = (check_integer(name, v) for v in value)
    if width < 1 or height < 1:
        raise ValueError(f"{name} must have both sides >= 1 pixel, got {width}x{height}")
    return width, height


class Source(Iterator[np.ndarray]):
    """Frames of a live source, in order: uint8 (H, W, 3) RGB arrays, each a new array.

    Made by :func:`open_source`. Iterate it; :meth:`close` it when done (or use it as a context manager).

    Attributes
    ----------
    spec : str
        What it was opened from.
    kind : str
        ``"camera"``, ``"url"``, ``"file"`` or ``"synthetic"``.
    fs : float
        Frame rate in Hz (the source's own: the camera's, the stream's, the file's, the scene's).
    size : tuple of int
        (W, H) of the frames it gives.
    realtime : bool
        Whether it keeps up with the clock, dropping frames a slow consumer has no time for.
    frames : int
        Frames given so far.
    dropped : int
        Frames dropped so far (only when `realtime`).
    truth : dict or None
        For the synthetic scene, what it shows: ``bpm`` and ``roi`` (x, y, w, h) of the pulsing face.

    Examples
    --------
    >>> with open_source("synthetic:size=64x48") as source:
    ...     frames = [next(source) for _ in range(3)]
    >>> frames[0].shape, source.size, source.frames, source.dropped
    ((48, 64, 3), (64, 48), 3, 0)
    """

    kind = "source"

    def __init__(self, spec: str, fs: float, size: tuple[int, int], realtime: bool) -> None:
        self.spec, self.fs, self.size, self.realtime = spec, float(fs), size, realtime
        self.frames = 0
        self.dropped = 0
        self.truth: dict[str, Any] | None = None
        self._closed = False
        self._start: float | None = None
        self._index = 0  # index in the source's own sequence of the next frame to read

    def __iter__(self) -> Source:
        return self

    def __next__(self) -> np.ndarray:
        if self._closed:
            raise StopIteration
        frame = self._next()
        self.frames += 1
        return frame

    def _next(self) -> np.ndarray:
        raise NotImplementedError

    def _pace(self) -> int:
        """For a paced source: wait until the next frame is due; return how many frames to skip first."""
        now = time.perf_counter()
        if self._start is None:
            self._start = now
        due = math.floor((now - self._start) * self.fs)
        if due > self._index:
            return due - self._index
        wait = self._start + self._index / self.fs - now
        if wait > 0:
            time.sleep(wait)
        return 0

    def close(self) -> None:
        """Stop reading and release the device, connection or file. Closing twice is fine."""
        self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        w, h = self.size
        return (f"<vidmag.live.Source {self.kind} {self.spec!r}, {w}x{h} at {self.fs:g} Hz, "
                f"{'realtime' if self.realtime else 'every frame'}, {self.frames} frames, "
                f"{self.dropped} dropped>")


# -- the synthetic scene --------------------------------------------------------------------------------


class _Synthetic(Source):
    kind = "synthetic"

    def __init__(self, spec: str, options: dict[str, Any], size: tuple[int, int] | None,
                 realtime: bool) -> None:
        from vidmag import synthetic

        defaults = inspect.signature(synthetic.scene).parameters
        if size is None:
            size = options.pop("size", None) or (defaults["width"].default, defaults["height"].default)
        elif "size" in options:
            raise ValueError(f"size: given twice, in {spec!r} and as size={size[0]}x{size[1]}; give one")
        self._scene = synthetic.scene(size[0], size[1], **options)
        fs = options.get("fs", defaults["fs"].default)
        super().__init__(spec, fs, size, realtime)
        self.truth = {"bpm": float(self._scene.bpm), "roi": tuple(self._scene.roi)}

    def _next(self) -> np.ndarray:
        if self.realtime:
            for _ in range(self._pace()):
                next(self._scene)  # the scene moves on whether or not its frames are looked at
                self._index += 1
                self.dropped += 1
        self._index += 1
        return next(self._scene)


def _synthetic_options(spec: str, text: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in _SYNTHETIC_KEYS:
            raise ValueError(
                f"source: {spec!r}: {item!r} is not KEY=VALUE with a key of {', '.join(_SYNTHETIC_KEYS)}"
            )
        if key in options:
            raise ValueError(f"source: {spec!r}: {key} is given twice")
        if key == "size":
            options[key] = parse_size("size", value)
        elif key == "seed":
            options[key] = check_integer("seed", _number(spec, key, value))
        else:
            options[key] = _number(spec, key, value)
    return options


def _number(spec: str, key: str, value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"source: {spec!r}: {key} must be a number, got {value!r}") from None


# -- decoded sources (FFmpeg through PyAV) -----------------------------------------------------------------


def _rate(stream: Any) -> float | None:
    for rate in (stream.average_rate, stream.guessed_rate, stream.base_rate):
        if rate is not None and rate > 0:
            return float(rate)
    return None


class _Decoded(Source):
    """A source FFmpeg decodes: a file, a URL or a camera. ``threaded``: read by a thread into a slot."""

    def __init__(self, spec: str, kind: str, container: Any, fs: float | None,
                 size: tuple[int, int] | None, realtime: bool, threaded: bool) -> None:
        self.kind = kind
        self._container = container
        try:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            fs = fs if fs is not None else _rate(stream)
            if fs is None:
                raise io.VideoFormatError(f"source: {spec!r} does not state a frame rate")
            native = (int(stream.codec_context.width), int(stream.codec_context.height))
            self._resize = None if size is None or size == native else size
            super().__init__(spec, fs, size or native, realtime)
            self._decoder = self._decode(stream)
        except BaseException:
            container.close()
            raise
        self._threaded = threaded
        self._slot: np.ndarray | None = None
        self._ended: BaseException | None = None  # StopIteration or the reader's error, once it stops
        self._ready = threading.Condition()
        self._thread: threading.Thread | None = None
        if threaded:
            self._thread = threading.Thread(target=self._read, name=f"vidmag source {spec}", daemon=True)
            self._thread.start()

    def _decode(self, stream: Any) -> Iterator[Any]:
        index = 0
        try:
            for frame in self._container.decode(stream):
                yield frame
                index += 1
        except av.error.FFmpegError as error:
            message = f"source: {self.spec!r}: reading failed after {index} frames: {error}"
            raise io.VideoFormatError(message) from None

    def _convert(self, frame: Any) -> np.ndarray:
        if self._resize is None:
            return frame.to_ndarray(format="rgb24")
        width, height = self._resize
        return frame.to_ndarray(format="rgb24", width=width, height=height, interpolation=INTERPOLATION)

    def _next(self) -> np.ndarray:
        if self._threaded:
            return self._take()
        if self.realtime:
            for _ in range(self._pace()):
                if next(self._decoder, None) is None:
                    raise StopIteration
                self._index += 1
                self.dropped += 1
        frame = next(self._decoder, None)
        if frame is None:
            raise StopIteration
        self._index += 1
        return self._convert(frame)

    # the reader thread of a pushed source
    def _read(self) -> None:
        ended: BaseException = StopIteration()
        try:
            for frame in self._decoder:
                if self._closed:
                    break
                image = self._convert(frame)
                with self._ready:
                    if self._slot is not None:
                        self.dropped += 1  # replaced before the consumer took it
                    self._slot = image
                    self._ready.notify()
        except BaseException as error:  # handed to the consumer, who raises it
            ended = error
        finally:
            self._container.close()
            with self._ready:
                self._ended = ended
                self._ready.notify()

    def _take(self) -> np.ndarray:
        with self._ready:
            while self._slot is None and self._ended is None:
                self._ready.wait(0.5)
            if self._slot is not None:
                image, self._slot = self._slot, None
                return image
            if isinstance(self._ended, StopIteration):
                raise StopIteration
            raise self._ended  # type: ignore[misc]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            # the reader stops at its next frame (a camera's next frame, or the read timeout of a stream)
            self._thread.join(timeout=OPEN_TIMEOUT_S)
        else:
            self._decoder.close()
            self._container.close()


def camera_input(index: int | str, platform: str | None = None) -> tuple[str, str, dict[str, str]]:
    """What FFmpeg opens for ``camera:INDEX``: (input name, input format, options), per platform.

    Parameters
    ----------
    index : int or str
        The camera's number (Linux, macOS), or on Windows its DirectShow name.
    platform : str, optional
        ``sys.platform`` (the default) or another, to see what would be opened there.

    Returns
    -------
    (str, str, dict)
        Linux: ``("/dev/video<N>", "v4l2", {})``; macOS: ``("<N>:none", "avfoundation",
        {"framerate": "30"})`` (video device N, no audio; AVFoundation refuses FFmpeg's default 29.97);
        Windows: ``("video=<NAME>", "dshow", {})``.

    Raises
    ------
    ValueError
        A number on Windows (DirectShow opens cameras by name), a name elsewhere, or another platform.
    """
    platform = sys.platform if platform is None else platform
    text = str(index).strip()
    number = text.isdigit()
    if platform.startswith("win"):
        if number or not text:
            raise ValueError(
                f"source: camera:{text}: DirectShow opens cameras by name, such as camera:Integrated Webcam; "
                "list them with: ffmpeg -list_devices true -f dshow -i dummy"
            )
        return f"video={text}", "dshow", {}
    if not number:
        raise ValueError(f"source: camera:{text}: give the camera's number, such as camera:0")
    if platform.startswith("linux"):
        return f"/dev/video{int(text)}", "v4l2", {}
    if platform == "darwin":
        return f"{int(text)}:none", "avfoundation", {"framerate": "30"}
    raise ValueError(f"source: cameras are read on Linux (v4l2), macOS (avfoundation) and Windows (dshow), "
                     f"not on {platform!r}")


def _open_camera(spec: str, index: str, size: tuple[int, int] | None, realtime: bool) -> Source:
    name, fmt, options = camera_input(index)
    try:
        container = av.open(name, format=fmt, options=options, timeout=OPEN_TIMEOUT_S)
    except av.error.FFmpegError as error:
        hint = {"v4l2": "the cameras here are /dev/video* (v4l2-ctl --list-devices lists them)",
                "avfoundation": "list them with: ffmpeg -f avfoundation -list_devices true -i ''",
                "dshow": "list them with: ffmpeg -list_devices true -f dshow -i dummy"}[fmt]
        raise FileNotFoundError(
            f"source: {spec}: cannot open camera {name!r} ({fmt}): {error.strerror or error}; {hint}"
        ) from None
    return _Decoded(spec, "camera", container, None, size, realtime, threaded=realtime)


def _open_url(spec: str, scheme: str, size: tuple[int, int] | None, realtime: bool | None) -> Source:
    pushed = scheme in PUSHED_SCHEMES
    realtime = pushed if realtime is None else realtime
    try:
        container = av.open(spec, timeout=OPEN_TIMEOUT_S)
    except av.error.FFmpegError as error:
        raise ConnectionError(f"source: cannot open {spec!r}: {error.strerror or error}") from None
    if not container.streams.video:
        container.close()
        raise io.VideoFormatError(f"source: {spec!r} has no video stream")
    return _Decoded(spec, "url", container, None, size, realtime, threaded=realtime and pushed)


def _open_file(spec: str, path: str, size: tuple[int, int] | None, realtime: bool) -> Source:
    if not os.path.exists(path):
        raise FileNotFoundError(f"source: no such file: {path!r} (nor camera:N, a URL or synthetic)")
    info = io.probe(path)  # a still image, no frames, no frame rate: said here
    container = av.open(path)
    return _Decoded(spec, "file", container, float(info.fps), size, realtime, threaded=False)


# -- the front ---------------------------------------------------------------------------------------------


def open_source(spec: str | os.PathLike, *, size: Any = None, realtime: bool | None = None) -> Source:
    """Open a live source of frames.

    Parameters
    ----------
    spec : str or os.PathLike
        - ``"camera:N"``: camera N through FFmpeg (v4l2 ``/dev/videoN`` on Linux, AVFoundation on macOS;
          on Windows DirectShow, which names cameras: ``"camera:Integrated Webcam"``), see
          :func:`camera_input`;
        - a URL of :data:`URL_SCHEMES` (``rtsp://``, ``rtmp://``, ``udp://``, ``http://``, ...), opened by
          FFmpeg (waiting at most :data:`OPEN_TIMEOUT_S` seconds);
        - ``"synthetic"`` or ``"synthetic:KEY=VALUE,..."`` with keys ``bpm``, ``noise``, ``motion``,
          ``size`` (WxH), ``fs``, ``seed``, ``pulse_amplitude``: the synthetic scene of
          :func:`vidmag.synthetic.scene` (a face pulsing at ``bpm``; endless), its defaults for the rest;
        - anything else: a video file.
    size : (int, int) or str, optional
        (W, H) or ``"WxH"``: the frames are resized to it (decoded sources: by libswscale when converting
        to RGB, :data:`INTERPOLATION`; the synthetic scene is made at that size). None: the source's size.
    realtime : bool, optional
        Keep up with the clock, dropping (and counting) frames a slow consumer has no time for, or give
        every frame. None: True for cameras and pushed streams (rtsp, rtmp, udp, ...), False for files,
        http(s) URLs and the synthetic scene. See the module's notes.

    Returns
    -------
    Source
        An iterator of uint8 (H, W, 3) frames with ``fs``, ``size``, ``dropped`` and ``close()``.

    Raises
    ------
    TypeError, ValueError
        A malformed spec, size or realtime (the message names it); a camera number on Windows.
    FileNotFoundError
        No such file, or no such camera (the message says where cameras are listed).
    ConnectionError
        A URL FFmpeg cannot open.
    vidmag.io.VideoFormatError
        Not a video (a still image, no video stream, no frame rate).

    Examples
    --------
    >>> with open_source("synthetic:bpm=90,size=320x240") as source:
    ...     frame = next(source)
    >>> frame.shape, source.fs, source.truth["bpm"]
    ((240, 320, 3), 30.0, 90.0)
    """
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str):
        raise TypeError(f"source must be a str (camera:N, a URL, synthetic or a file), got "
                        f"{type(spec).__name__} {spec!r}")
    size = parse_size("size", size)
    if realtime is not None:
        realtime = check_bool("realtime", realtime)
    text = spec.strip()
    if text == "synthetic" or text.startswith("synthetic:"):
        options = _synthetic_options(spec, text[len("synthetic:"):] if ":" in text else "")
        return _Synthetic(spec, options, size, bool(realtime))
    if text.startswith("camera:"):
        return _open_camera(text, text[len("camera:"):], size, True if realtime is None else realtime)
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", text)
    if match is not None:
        scheme = match.group(1).lower()
        if scheme not in URL_SCHEMES:
            raise ValueError(f"source: {spec!r}: the URL scheme {scheme!r} is not one of "
                             f"{', '.join(URL_SCHEMES)}")
        return _open_url(text, scheme, size, realtime)
    return _open_file(spec, spec, size, bool(realtime))
