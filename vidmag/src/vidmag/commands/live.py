"""``vidmag live SOURCE``: magnify a camera, a stream, a file or the synthetic scene as it plays.

Each frame is magnified before the next is read (:class:`vidmag.live.Magnifier`); the command can record
the result (``--record``), serve it to a browser (``--serve``, the viewer of :mod:`vidmag.live.viewer`) and
read the pulse from a region (``--pulse``, :class:`vidmag.pulse.PulseMeter`), and reports frames/s,
latency, dropped frames and the heart rate on one line of stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import ipaddress
import math
import re
import sys
import time
from collections import deque
from fractions import Fraction
from typing import Any

from vidmag._cli_options import PIPELINE_OPTION_KEYS, UsageError, add_pipeline_options
from vidmag.params import STREAMING_PIPELINES

NAME = "live"

#: Seconds of the region's colour signal the viewer plots.
SIGNAL_SECONDS = 10.0
#: Seconds between two updates of the status line on a terminal.
STATUS_EVERY_S = 0.25
#: x264 preset of ``--record``: fast enough to leave the frame period to the magnifier.
RECORD_ENCODER_PRESET = "veryfast"

EXAMPLES = """\
SOURCE is camera:N (v4l2 /dev/videoN on Linux, AVFoundation on macOS; on Windows camera:NAME, a DirectShow
name), a URL (rtsp://, rtmp://, udp://, http://, ...), a video file, or synthetic[:KEY=VALUE,...] (a face
pulsing at a known rate: keys bpm, noise, motion, size, fs, seed, pulse_amplitude).

examples:
  vidmag live synthetic --preset face --serve 8000          # the pulse readout is on
  vidmag live camera:0 --preset face --size 640x480 --serve 127.0.0.1:8000
  vidmag live rtsp://192.168.1.20/stream --preset baby --record baby-live.mp4
  vidmag live face.mp4 --preset face --realtime --pulse 180,120,160,200 --frames 300
  vidmag live camera:0 --preset face --pulse face --serve 8000   # the forehead of the face found (face extra)
"""


def _pulse_available() -> bool:
    return importlib.util.find_spec("vidmag.pulse") is not None


def add_parser(commands: Any) -> None:
    """Add the ``live`` subcommand to `commands` (argparse's subparsers object)."""
    parser = commands.add_parser(
        NAME,
        help="magnify a camera, a stream or a file as it plays",
        description="Magnify a live source frame by frame (a streaming pipeline: "
        f"{', '.join(STREAMING_PIPELINES)}; the colour presets run in a streaming form), optionally "
        "recording the result, serving it to a browser and reading the pulse. Ctrl-C stops it (a recording "
        "is finished, not lost).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("source", metavar="SOURCE", help="camera:N, a URL, a video file or synthetic[:...]")
    add_pipeline_options(parser.add_argument_group("what to compute (fs defaults to the source's rate)"))
    how = parser.add_argument_group("how")
    how.add_argument("--backend", metavar="NAME", default="auto",
                     help="'auto' (default) or a name from 'vidmag backends'")
    how.add_argument("--size", metavar="WxH", help="resize the source's frames to W x H pixels")
    how.add_argument("--realtime", action=argparse.BooleanOptionalAction, default=None,
                     help="keep up with the clock, dropping (and counting) frames the magnifier has no time "
                     "for; default: on for cameras and streams, and for files and synthetic while serving")
    how.add_argument("--frames", type=int, metavar="N", help="stop after N frames")
    how.add_argument("--seconds", type=float, metavar="S", help="stop after S seconds")
    out = parser.add_argument_group("output")
    out.add_argument("--record", metavar="OUT",
                     help="record the magnified frames as H.264 (.mp4, .m4v, .mov, .mkv) at the source's "
                     "rate; written under a temporary name and renamed when the run ends")
    out.add_argument("--serve", metavar="[HOST:]PORT",
                     help="serve the viewer page on HOST:PORT (HOST defaults to 127.0.0.1: this machine "
                     "only)")
    if _pulse_available():
        out.add_argument("--pulse", metavar="x,y,w,h|auto|face|off",
                         help="read the heart rate from this rectangle of the frames (pixels, after --size); "
                         "'face': the forehead of the largest face, found and followed by OpenCV's Haar "
                         "cascade (the face extra: pip install -e \"./vidmag[face]\"); 'auto': the synthetic "
                         "scene's face, else the whole frame; default: auto with --serve, else off")
    out.add_argument("-q", "--quiet", action="store_true", help="no status line and no summary")


# -- options ----------------------------------------------------------------------------------------------


def _usage(message: str) -> UsageError:
    return UsageError(f"vidmag live: error: {message} (see vidmag live --help)")


def parse_serve(text: str) -> tuple[str, int]:
    """``--serve``'s (host, port): ``PORT``, ``:PORT``, ``HOST:PORT`` or ``[IPv6]:PORT``."""
    pattern = r"(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:\[\]]*)):(?P<port>\d+)|(?P<only>\d+)"
    match = re.fullmatch(pattern, text.strip())
    if match is None:
        raise _usage(f"--serve: expected [HOST:]PORT such as 8000 or 127.0.0.1:8000, got {text!r}")
    host = match.group("v6") or match.group("host") or "127.0.0.1"
    port = int(match.group("port") or match.group("only"))
    if not 0 <= port <= 65535:
        raise _usage(f"--serve: the port must be 0 to 65535, got {port}")
    return host, port


def parse_pulse(text: str) -> tuple[int, int, int, int] | str | None:
    """``--pulse``'s rectangle (x, y, w, h), ``"face"`` for ``face``, or None for ``auto``."""
    word = text.strip().lower()
    if word == "auto":
        return None
    if word == "face":
        return "face"
    parts = text.split(",")
    if len(parts) != 4 or not all(p.strip().isdigit() for p in parts):
        raise _usage(f"--pulse: expected x,y,w,h in pixels (four integers), auto, face or off, got {text!r}")
    x, y, w, h = (int(p) for p in parts)
    if w < 1 or h < 1:
        raise _usage(f"--pulse: the rectangle's width and height must be >= 1, got {w} x {h}")
    return x, y, w, h


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """Everything checked that can be checked before the source is opened."""
    from vidmag import io
    from vidmag.live.sources import parse_size

    if "preset" not in args and "pipeline" not in args:
        raise _usage("give --preset NAME or --pipeline NAME")
    options: dict[str, Any] = {"pipeline_options": {k: getattr(args, k) for k in PIPELINE_OPTION_KEYS
                                                    if k in args}}
    try:
        options["size"] = parse_size("size", args.size)
    except (TypeError, ValueError) as error:
        raise _usage(f"--size: {error}") from None
    if args.frames is not None and args.frames < 1:
        raise _usage(f"--frames: must be >= 1, got {args.frames}")
    if args.seconds is not None and not (math.isfinite(args.seconds) and args.seconds > 0):
        raise _usage(f"--seconds: must be > 0, got {args.seconds}")
    options["serve"] = None if args.serve is None else parse_serve(args.serve)
    pulse = getattr(args, "pulse", None)
    if pulse is None and args.serve is not None and _pulse_available():
        pulse = "auto"  # the viewer has a readout to show
    if pulse is not None and pulse.strip().lower() == "off":
        pulse = None
    options["pulse"] = pulse is not None
    options["roi"] = None if pulse is None else parse_pulse(pulse)
    if options["roi"] == "face":
        from vidmag.face import check_available

        check_available()  # a missing extra is said before the source is opened
    options["record"] = None
    if args.record is not None:
        try:
            options["record"] = io.check_destination(args.record, suffixes=tuple(io.CONTAINER_FOR_SUFFIX))
        except OSError as error:  # the same kind of error, naming the option instead of "dst"
            raise type(error)(f"--record: {str(error).removeprefix('dst: ')}") from None
        except ValueError as error:
            raise _usage(f"--record: {str(error).removeprefix('dst: ')}") from None
        try:  # a file source: the recording must not replace it (any spelling or link of it)
            io.check_not_source(args.source, options["record"])
        except ValueError:
            raise _usage(
                f"--record: {args.record!r} is the source file {args.source!r} (the same file, through "
                "another name or a link); recording there would replace the source: choose another file"
            ) from None
    return options


# -- the run ----------------------------------------------------------------------------------------------


class _Status:
    """The status line (a terminal's, redrawn in place) and the summary at the end."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.tty = not quiet and sys.stderr.isatty()
        self._last = -math.inf
        self._drawn = False

    @staticmethod
    def line(status: dict[str, Any]) -> str:
        text = (f"{status['frames']} frames, {status['fps']:.1f} fps, latency {status['latency_ms']:.1f} ms "
                f"(p99 {status['latency_p99_ms']:.1f}), dropped {status['dropped']}")
        if status.get("bpm") is not None:
            text += f", {status['bpm']:.1f} bpm ({status['quality_db']:.1f} dB)"
        roi = status.get("roi") or {}
        if roi.get("state") == "searching":
            text += ", no face found yet"
        elif roi.get("state") == "lost":
            text += f", face lost (last seen at {roi['last_seen']:.1f} s)"
        return text

    def update(self, status: dict[str, Any], now: float) -> None:
        if self.tty and now - self._last >= STATUS_EVERY_S:
            self._last = now
            sys.stderr.write(f"\r\x1b[Kvidmag live: {self.line(status)}")
            sys.stderr.flush()
            self._drawn = True

    def end(self, summary: str) -> None:
        if self._drawn:
            sys.stderr.write("\r\x1b[K")
        if not self.quiet:
            print(f"vidmag live: {summary}", file=sys.stderr)


def _resolve(pipeline_options: dict[str, Any], source_fs: float) -> dict[str, Any]:
    """The Magnifier's keywords from the pipeline options (``--fs`` wins over the source's rate)."""
    options = dict(pipeline_options)
    options.setdefault("fs", source_fs)
    return options


def _pulse_region(roi: tuple[int, int, int, int] | str | None, source: Any) -> Any:
    """The pulse meter's region: ``--pulse``'s rectangle, checked against the frames; ``"face"`` (the meter
    follows the face); for ``auto`` the synthetic scene's face, else None (the whole frame)."""
    width, height = source.size
    if roi == "face":
        return roi
    if roi is None:
        return None if source.truth is None else source.truth["roi"]
    x, y, w, h = roi
    if x + w > width or y + h > height:
        raise _usage(f"--pulse: the rectangle {x},{y},{w},{h} reaches outside the {width}x{height} frames "
                     "(x + w <= width, y + h <= height; after --size)")
    return roi


def run(args: argparse.Namespace) -> int:
    """Run ``vidmag live`` with parsed `args`; return the exit status."""
    options = _options(args)
    from vidmag import io
    from vidmag.live import Magnifier, open_source

    serve = options["serve"]
    realtime = args.realtime
    if realtime is None and serve is not None:
        realtime = True  # watched in a browser: a file or the scene plays at its own rate
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        source = stack.enter_context(open_source(args.source, size=options["size"], realtime=realtime))
        magnifier = stack.enter_context(Magnifier(backend=args.backend,
                                                  **_resolve(options["pipeline_options"], source.fs)))
        meter, roi_source = None, None
        if options["pulse"]:
            from vidmag.pulse import PulseMeter

            # a face's re-detections run beside the loop (no frame waits for one); the stack stops the thread
            meter = stack.enter_context(PulseMeter(source.fs, roi=_pulse_region(options["roi"], source),
                                                   method="pos", background_detection=True))
            if options["roi"] is None and source.truth is not None:
                roi_source = "synthetic scene"  # what auto chose, for the status and the viewer
        viewer = None
        if serve is not None:
            from vidmag.live.viewer import Viewer  # the server's libraries load only when asked for

            viewer = stack.enter_context(Viewer(*serve, params=magnifier.params))
            if not _loopback(serve[0]):
                print(f"vidmag: warning: the viewer at {viewer.url} is open to every machine that reaches "
                      f"{serve[0]}, with no authentication: anyone there sees the feed and sets the "
                      "parameters", file=sys.stderr)
            if not args.quiet:
                print(f"vidmag live: viewer at {viewer.url}", file=sys.stderr)
        writer = None
        if options["record"] is not None:
            tmp = stack.enter_context(io.atomic_output(args.record))
            suffix = options["record"].rsplit(".", 1)[-1].lower()
            writer = stack.enter_context(io.VideoWriter(
                tmp, width=source.size[0], height=source.size[1],
                fps=Fraction(source.fs).limit_denominator(1001), encoder_preset=RECORD_ENCODER_PRESET,
                container_format=io.CONTAINER_FOR_SUFFIX[f".{suffix}"]))
        status_line = _Status(args.quiet)
        status, interrupted = _loop(source, magnifier, meter, viewer, writer, status_line,
                                    frames=args.frames, seconds=args.seconds, roi_source=roi_source)
        frames_written = writer.frames_written if writer is not None else None
    width, height = source.size
    summary = (f"{source.spec}: {magnifier.pipeline} on {magnifier.backend}, {width}x{height}, "
               f"{status_line.line(status)}, {time.perf_counter() - started:.1f} s")
    if interrupted:
        summary += ", stopped by Ctrl-C"
    if frames_written is not None:
        summary += f" -> {options['record']} ({frames_written} frames)"
    status_line.end(summary)
    return 0


def _roi_status(meter: Any, roi_source: str | None) -> dict[str, Any] | None:
    """The region the pulse is read from, as the status and the viewer report it (None: no pulse meter)."""
    if meter is None:
        return None
    status = meter.roi_status()
    if roi_source is not None:
        status["source"] = roi_source
    return status


def _loop(source, magnifier, meter, viewer, writer, status_line, *, frames, seconds, roi_source=None):
    """Read, magnify, record, publish until the source ends, the limits are reached or Ctrl-C.

    `roi_source` names the region's origin in the status when the meter's own word for it ("rectangle")
    says less than the command knows ("synthetic scene")."""
    signal: deque[float] = deque(maxlen=max(1, round(SIGNAL_SECONDS * source.fs)))
    reading = None
    dropped_seen = 0
    status: dict[str, Any] = {"frames": 0, "fps": 0.0, "latency_ms": 0.0, "latency_p99_ms": 0.0,
                              "dropped": 0, "bpm": None, "quality_db": None}
    start = time.perf_counter()
    try:
        for frame in source:
            out = magnifier.push(frame)
            if writer is not None:
                writer.write(out)
            if meter is not None:
                # the meter's clock is its frame count: a frame the source dropped is held in its place (the
                # current one stands in for it), or the rate it reads would grow with the share dropped
                held = source.dropped - dropped_seen if meter.roi is not None else 0
                dropped_seen = source.dropped
                for _ in range(held + 1):
                    reading = meter.push(frame) or reading
                if meter.roi is not None:  # None while a face is searched for: no signal to plot yet
                    x, y, w, h = meter.roi  # the region the meter reads now (it follows a face)
                    signal.extend([float(frame[y : y + h, x : x + w, 1].mean())] * (held + 1))
            stats = magnifier.stats
            status = {**stats.as_dict(), "dropped": source.dropped,
                      "bpm": None if reading is None else float(reading.bpm),
                      "quality_db": None if reading is None else float(reading.quality_db),
                      "signal": list(signal) if viewer is not None else [], "signal_fs": source.fs,
                      "params": dict(magnifier.params), "roi": _roi_status(meter, roi_source)}
            now = time.perf_counter()
            if viewer is not None:
                viewer.publish(frame, out, status)
                changes = viewer.poll_changes()
                if changes:
                    try:
                        magnifier.set_params(**changes)
                    except (TypeError, ValueError) as error:
                        print(f"\nvidmag: warning: the viewer's change was refused: {error}", file=sys.stderr)
            status_line.update(status, now)
            if (frames is not None and stats.frames >= frames) or \
                    (seconds is not None and now - start >= seconds):
                break
    except KeyboardInterrupt:  # the user's stop button: what was recorded is kept
        return status, True
    return status, False
