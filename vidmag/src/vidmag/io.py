"""Video decode and encode with PyAV, kept apart from the magnification maths.

Everything here streams: frames are decoded one at a time as uint8 RGB arrays and encoded one at a time,
so reading or writing a clip never holds more than a handful of frames (plus what FFmpeg itself buffers).

Decisions worth knowing:

- Decoding accepts whatever FFmpeg reads. Every pixel format (grayscale, 10-bit, 4:4:4, palette, ...) is
  converted to 8-bit ``rgb24`` by libswscale, as ``frame.to_ndarray(format="rgb24")`` does.
- Encoding writes H.264 (libx264, ``yuv420p``), which players everywhere accept. 4:2:0 chroma needs even
  sizes, so a frame with an odd height or width is padded by repeating its last row or column: a 65 x 49
  frame is written as 66 x 50. Nothing is cropped and the added row/column is a copy of its neighbour.
- The output frame rate is the source's, exactly (as a fraction, so 30000/1001 stays 30000/1001).
- The audio track, when there is one, is copied packet for packet if its codec fits the output container,
  and otherwise transcoded to AAC. It is cut where the video ends.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction

import av
import numpy as np

__all__ = [
    "CONTAINER_FOR_SUFFIX",
    "VideoFormatError",
    "VideoInfo",
    "VideoWriter",
    "as_path",
    "atomic_output",
    "check_destination",
    "check_not_source",
    "check_rereadable",
    "frame_source",
    "pad_to_even",
    "probe",
    "read_frames",
]

# Audio codecs each container takes as they are; anything else is re-encoded to AAC.
_COPYABLE_AUDIO = {
    "mp4": {"aac", "mp3", "alac", "ac3", "eac3"},
    "mov": {"aac", "mp3", "alac", "ac3", "eac3", "pcm_s16le", "pcm_s24le", "pcm_f32le"},
    "matroska": None,  # None: every codec
}
_AAC_RATES = {8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000}
# Output container format for each accepted destination suffix.
CONTAINER_FOR_SUFFIX = {".mp4": "mp4", ".m4v": "mp4", ".mov": "mov", ".mkv": "matroska"}


class VideoFormatError(ValueError):
    """The source cannot be read as video (not a video file, corrupt, no frames, a still image).

    Examples
    --------
    >>> from pathlib import Path
    >>> from vidmag import io
    >>> _ = Path("notes.mp4").write_text("not a video")
    >>> try:
    ...     io.probe("notes.mp4")
    ... except io.VideoFormatError:
    ...     print("not a video")
    not a video
    """


# FFmpeg's demuxers of single images: "image2" and the "<format>_pipe" family (png_pipe, jpeg_pipe, ...).
# They report FFmpeg's default 25 fps, which is no frame rate of anything.
_IMAGE_DEMUXERS = ("image2", "image2pipe")
# Codecs of still pictures; a stream of them is a video only when it holds more than one frame.
_IMAGE_CODECS = frozenset({
    "png", "apng", "mjpeg", "jpegls", "jpeg2000", "jpegxl", "bmp", "tiff", "webp", "gif", "ppm", "pgm",
    "pgmyuv", "pbm", "pam", "qoi", "targa", "sgi", "dds", "exr", "hdr", "pcx", "xbm", "xpm", "xwd", "sunrast",
})


def as_path(name: str, value: object) -> str:
    """`value` as a ``str`` path: a ``str``, ``bytes`` (decoded with :func:`os.fsdecode`) or ``os.PathLike``.

    Parameters
    ----------
    name : str
        The parameter's name, for the error message (``"src"``, ``"dst"``).
    value : object
        The path as given.

    Returns
    -------
    str

    Raises
    ------
    TypeError
        Anything else (None, a number, an open file, an array); the message names `name`.

    Examples
    --------
    >>> from pathlib import Path
    >>> from vidmag import io
    >>> io.as_path("src", Path("clips") / "face.mp4")
    'clips/face.mp4'
    >>> io.as_path("src", b"face.mp4")
    'face.mp4'
    """
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise TypeError(
            f"{name} must be a path (str, bytes or os.PathLike), got {type(value).__name__} {value!r}"
        )
    path = os.fsdecode(value)
    if not path:
        raise ValueError(f"{name} must be a path, got an empty string")
    if "\0" in path:
        raise ValueError(f"{name} must not contain a NUL character, got {path!r}")
    return path


def check_rereadable(path: str | bytes | os.PathLike, name: str = "src") -> str:
    """Check that `path` names a regular file, which can be opened and read more than once; return it.

    A pipe (``/dev/fd/N`` of a shell's process substitution ``<(...)``, a FIFO made by ``mkfifo``), a
    socket or a character device (a terminal, ``/dev/stdin``) gives its data once: opening it again gives
    what is left, or nothing. Everything that reads a source more than once (:func:`probe` followed by a
    read, the two passes of the ideal pipelines, ``side_by_side``, the audio track) refuses such a path up
    front, before opening it, instead of failing on data the first reading consumed.

    Parameters
    ----------
    path : str, bytes or os.PathLike
        The file.
    name : str
        The parameter's name, for the error messages.

    Returns
    -------
    str
        `path` as a ``str``.

    Raises
    ------
    FileNotFoundError, IsADirectoryError
        `path` does not exist or is a directory.
    ValueError
        `path` is a pipe, socket or device.

    Examples
    --------
    >>> from pathlib import Path
    >>> from vidmag import io
    >>> _ = Path("clip.mp4").write_bytes(b"")
    >>> io.check_rereadable("clip.mp4")
    'clip.mp4'
    """
    path = as_path(name, path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"{name}: no such file: {path!r}") from None
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"{name}: is a directory, not a video file: {path!r}")
    if not stat.S_ISREG(mode):
        kind = "a pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
        raise ValueError(
            f"{name}: {path!r} is {kind}, not a regular file: its data can be read only once, and vidmag "
            "reads a source more than once (a probe first, the ideal pipelines twice); save it to a file "
            "first"
        )
    return path


@dataclass(frozen=True)
class VideoInfo:
    """What :func:`probe` learns about a video file.

    Attributes
    ----------
    path : str
        The file.
    width, height : int
        Frame size in pixels.
    fps : fractions.Fraction
        The container's frame rate (frames per second).
    n_frames : int or None
        Frame count stored in the container, or None when the container does not say.
    pix_fmt : str
        The stream's pixel format before conversion to rgb24 (``"yuv420p"``, ``"gray"``, ...).
    codec : str
        The video codec's name.
    audio_codec : str or None
        The first audio stream's codec, or None when there is no audio.

    Examples
    --------
    >>> from fractions import Fraction
    >>> import numpy as np
    >>> from vidmag import io
    >>> with io.VideoWriter("clip.mp4", width=96, height=64, fps=Fraction(30)) as writer:
    ...     for frame in np.zeros((10, 64, 96, 3), dtype=np.uint8):
    ...         writer.write(frame)
    >>> info = io.probe("clip.mp4")
    >>> info.codec, info.pix_fmt, info.audio_codec
    ('h264', 'yuv420p', None)
    """

    path: str
    width: int
    height: int
    fps: Fraction
    n_frames: int | None
    pix_fmt: str
    codec: str
    audio_codec: str | None


def _open_input(path: str | bytes | os.PathLike) -> av.container.InputContainer:
    path = as_path("src", path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"src: no such file: {path!r}")
    if os.path.isdir(path):
        raise IsADirectoryError(f"src: is a directory, not a video file: {path!r}")
    try:
        container = av.open(path, mode="r")
    except (av.error.FFmpegError, UnicodeDecodeError) as exc:
        raise VideoFormatError(f"src: FFmpeg cannot read {path!r} as video: {exc}") from None
    if not container.streams.video:
        container.close()
        raise VideoFormatError(f"src: {path!r} has no video stream")
    return container


def _rate_of(stream: av.video.stream.VideoStream) -> Fraction | None:
    # average_rate is what the muxer recorded; guessed_rate is FFmpeg's fallback for odd containers.
    for rate in (stream.average_rate, stream.guessed_rate, stream.base_rate):
        if rate is not None and rate > 0:
            return Fraction(rate.numerator, rate.denominator)
    return None


def probe(path: str | bytes | os.PathLike) -> VideoInfo:
    """Open a video, check that its first frame decodes, and describe it.

    Parameters
    ----------
    path : str, bytes or os.PathLike
        A regular file FFmpeg reads that holds a video stream.

    Returns
    -------
    VideoInfo

    Raises
    ------
    FileNotFoundError
        `path` does not exist.
    ValueError
        `path` is a pipe or a device, whose data a probe would consume (see :func:`check_rereadable`).
    VideoFormatError
        `path` is not a readable video, has no video stream, no decodable frame, or no known frame rate, or
        it is a still image (a PNG, a JPEG: an image format, or a single frame of an image codec), which
        has no frame rate and nothing that changes over time.

    Examples
    --------
    >>> from fractions import Fraction
    >>> import numpy as np
    >>> from vidmag import io
    >>> with io.VideoWriter("clip.mp4", width=96, height=64, fps=Fraction(30)) as writer:
    ...     for frame in np.zeros((10, 64, 96, 3), dtype=np.uint8):
    ...         writer.write(frame)
    >>> io.probe("clip.mp4").n_frames
    10
    """
    path = check_rereadable(path)
    container = _open_input(path)
    try:
        stream = container.streams.video[0]
        frames = _decode(container, path)
        first = next(frames, None)
        if first is None:
            raise VideoFormatError(f"src: {path!r} has no video frames")
        codec = stream.codec_context.name
        demuxer = container.format.name
        image_demuxer = demuxer in _IMAGE_DEMUXERS or demuxer.endswith("_pipe")
        if image_demuxer or (codec in _IMAGE_CODECS and next(frames, None) is None):
            raise VideoFormatError(
                f"src: {path!r} is a still image ({codec}, read by FFmpeg's {demuxer!r}), not a video: it "
                "has no frame rate and nothing changes over time; give a video file"
            )
        fps = _rate_of(stream)
        if fps is None:
            raise VideoFormatError(f"src: {path!r} does not state a frame rate")
        audio = container.streams.audio
        return VideoInfo(
            path=path,
            width=int(first.width),
            height=int(first.height),
            fps=fps,
            n_frames=int(stream.frames) or None,
            pix_fmt=str(first.format.name),
            codec=codec,
            audio_codec=audio[0].codec_context.name if audio else None,
        )
    finally:
        container.close()


def _decode(container: av.container.InputContainer, path: str) -> Iterator[av.VideoFrame]:
    stream = container.streams.video[0]
    stream.thread_type = "AUTO"
    index = 0
    try:
        for frame in container.decode(stream):
            yield frame
            index += 1
    except av.error.FFmpegError as exc:
        raise VideoFormatError(f"src: {path!r}: decoding failed after {index} frames: {exc}") from None


def read_frames(path: str | bytes | os.PathLike) -> Iterator[np.ndarray]:
    """Decode a video's first video stream frame by frame.

    Parameters
    ----------
    path : str, bytes or os.PathLike
        Any file FFmpeg reads (a pipe too: it is read once).

    Yields
    ------
    numpy.ndarray
        uint8 (H, W, 3) RGB frames, in presentation order. Any pixel format is converted to rgb24.

    Examples
    --------
    >>> from fractions import Fraction
    >>> import numpy as np
    >>> from vidmag import io
    >>> with io.VideoWriter("clip.mp4", width=96, height=64, fps=Fraction(30)) as writer:
    ...     for frame in np.zeros((10, 64, 96, 3), dtype=np.uint8):
    ...         writer.write(frame)
    >>> frames = list(io.read_frames("clip.mp4"))
    >>> len(frames), frames[0].shape, frames[0].dtype
    (10, (64, 96, 3), dtype('uint8'))
    """
    path = as_path("src", path)
    container = _open_input(path)
    try:
        for frame in _decode(container, path):
            yield frame.to_ndarray(format="rgb24")
    finally:
        container.close()


def frame_source(path: str | bytes | os.PathLike) -> Callable[[], Iterator[np.ndarray]]:
    """A zero-argument callable returning a fresh frame iterator over `path` at each call.

    Multi-pass pipelines call it once per pass; each pass re-opens the file, so nothing is kept in memory
    between passes. A pipe or device cannot be re-opened for a second pass and is refused here (a
    ``ValueError``, see :func:`check_rereadable`).

    Parameters
    ----------
    path : str, bytes or os.PathLike
        A regular video file.

    Returns
    -------
    callable
        ``source() -> Iterator[numpy.ndarray]``: the frames of :func:`read_frames`, from the start each time.

    Examples
    --------
    >>> from fractions import Fraction
    >>> import numpy as np
    >>> from vidmag import io
    >>> with io.VideoWriter("clip.mp4", width=96, height=64, fps=Fraction(30)) as writer:
    ...     for frame in np.zeros((10, 64, 96, 3), dtype=np.uint8):
    ...         writer.write(frame)
    >>> source = io.frame_source("clip.mp4")
    >>> sum(1 for _ in source()), sum(1 for _ in source())   # each call reads the file again
    (10, 10)
    """
    path = check_rereadable(path)

    def source() -> Iterator[np.ndarray]:
        return read_frames(path)

    return source


def first_frames(frames: Iterable[np.ndarray], max_frames: int | None) -> Iterator[np.ndarray]:
    """The first `max_frames` of `frames` (None: all of them), closing `frames` when done with it.

    `frames` (a :func:`read_frames` generator, say) is closed, when it has a ``close``, as soon as this
    iterator stops: the limit reached, `frames` exhausted, or the consumer closing or dropping this iterator
    early. The decoder is closed then, not whenever the garbage collector finds it. Not in ``__all__``:
    the helper the readers of vidmag (files, evaluate, suggest) share to cut a source short.

    Parameters
    ----------
    frames : iterable of numpy.ndarray
        The frames, read lazily.
    max_frames : int or None
        At most this many frames are yielded (a whole number >= 0, checked by the caller); None: all.

    Yields
    ------
    numpy.ndarray
        The frames of `frames`, unchanged, in order.
    """
    frames = iter(frames)
    try:
        yield from itertools.islice(frames, max_frames)
    finally:
        close = getattr(frames, "close", None)
        if close is not None:
            close()


def pad_to_even(frame: np.ndarray) -> np.ndarray:
    """Pad an (H, W, 3) frame to even H and W by repeating its last row and/or column.

    Parameters
    ----------
    frame : numpy.ndarray, shape (H, W, 3)

    Returns
    -------
    numpy.ndarray, shape (H + H % 2, W + W % 2, 3)
        The frame itself when both sizes are already even.

    Examples
    --------
    >>> import numpy as np
    >>> from vidmag import io
    >>> io.pad_to_even(np.zeros((63, 95, 3), dtype=np.uint8)).shape
    (64, 96, 3)
    """
    height, width = frame.shape[:2]
    pad_h, pad_w = height % 2, width % 2
    if not (pad_h or pad_w):
        return frame
    return np.pad(frame, ((0, pad_h), (0, pad_w), (0, 0)), mode="edge")


class VideoWriter:
    """Encode uint8 RGB frames to H.264, optionally carrying over the audio of a source file.

    Parameters
    ----------
    path : str or os.PathLike
        File to write. It is created (or truncated) when the writer is constructed.
    width, height : int
        Size of the frames that will be given to :meth:`write`, in pixels. Odd sizes are padded to even
        (see the module's notes); :attr:`encoded_size` gives the size written.
    fps : fractions.Fraction
        Frame rate of the output, frames per second.
    quality : int
        x264 constant rate factor, 0 (lossless) to 51 (worst); 18 is visually lossless for most clips.
    container_format : str
        FFmpeg muxer name: ``"mp4"``, ``"mov"`` or ``"matroska"``.
    audio_from : str or os.PathLike or None
        A file whose first audio stream is copied into the output (or transcoded to AAC when its codec
        does not fit the container), cut where the video ends. None: no audio.
    encoder_preset : str
        x264 speed preset (``"ultrafast"`` ... ``"veryslow"``).

    Notes
    -----
    Use as a context manager; leaving the block normally finishes the file (flushes the encoders and
    writes the index). Leaving it with an exception closes the file without finishing it; the caller owns
    the removal of the partial file.

    Examples
    --------
    >>> from fractions import Fraction
    >>> import numpy as np
    >>> from vidmag import io
    >>> with io.VideoWriter("clip.mp4", width=96, height=64, fps=Fraction(30)) as writer:
    ...     for frame in np.zeros((10, 64, 96, 3), dtype=np.uint8):
    ...         writer.write(frame)
    >>> info = io.probe("clip.mp4")
    >>> info.width, info.height, info.fps, info.n_frames
    (96, 64, Fraction(30, 1), 10)
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        width: int,
        height: int,
        fps: Fraction,
        quality: int = 18,
        container_format: str = "mp4",
        audio_from: str | os.PathLike | None = None,
        encoder_preset: str = "medium",
    ) -> None:
        self.width, self.height = int(width), int(height)
        self.encoded_size = (self.width + self.width % 2, self.height + self.height % 2)
        self.fps = Fraction(fps)
        self.frames_written = 0
        self._container = av.open(os.fspath(path), mode="w", format=container_format)
        try:
            stream = self._container.add_stream("libx264", rate=self.fps)
            stream.width, stream.height = self.encoded_size
            stream.pix_fmt = "yuv420p"
            stream.time_base = 1 / self.fps
            stream.options = {"crf": str(int(quality)), "preset": encoder_preset}
            # Tag the colour conversion swscale uses (BT.601, limited range), so players invert it exactly.
            stream.codec_context.colorspace = av.video.reformatter.Colorspace.ITU601
            stream.codec_context.color_range = av.video.reformatter.ColorRange.MPEG
            self._video = stream
            self._audio: _AudioCarrier | None = None
            if audio_from is not None:
                self._audio = _AudioCarrier.open(audio_from, self._container, container_format)
        except BaseException:
            self._container.close()
            raise

    @property
    def has_audio(self) -> bool:
        """Whether an audio track is being carried into the output."""
        return self._audio is not None

    def write(self, frame: np.ndarray) -> None:
        """Encode one uint8 (height, width, 3) RGB frame."""
        if frame.shape != (self.height, self.width, 3) or frame.dtype != np.uint8:
            raise ValueError(
                f"frame: expected uint8 {(self.height, self.width, 3)}, got {frame.dtype} {frame.shape}"
            )
        if self._audio is not None:
            self._audio.mux_until(self.frames_written / self.fps)
        video_frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(pad_to_even(frame)), format="rgb24")
        video_frame.pts = self.frames_written
        for packet in self._video.encode(video_frame):
            self._container.mux(packet)
        self.frames_written += 1

    def finish(self) -> None:
        """Flush the encoders, cut the audio at the video's end and close the file."""
        try:
            for packet in self._video.encode():
                self._container.mux(packet)
            if self._audio is not None:
                self._audio.mux_until(self.frames_written / self.fps, final=True)
        finally:
            self._close()

    def _close(self) -> None:
        if self._audio is not None:
            self._audio.close()
        self._container.close()

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.finish()
        else:
            self._close()


class _AudioCarrier:
    """Moves a source's first audio stream into an output container, a piece at a time.

    Audio is read from its own demuxer so it can be interleaved with the video as the video is written,
    instead of being held in memory or appended at the end.
    """

    def __init__(self, source, in_stream, out_container, copy: bool, offset: float) -> None:
        self._source = source
        self._in = in_stream
        self._out_container = out_container
        self._copy = copy
        self._offset = offset  # seconds; the video's start time in the source, so audio keeps its sync
        if copy:
            self._out = out_container.add_stream_from_template(in_stream)
        else:
            rate = in_stream.codec_context.sample_rate
            if rate not in _AAC_RATES:
                rate = 48000
            self._out = out_container.add_stream("aac", rate=rate)
            self._out.layout = "stereo" if in_stream.codec_context.channels > 1 else "mono"
            self._resampler = av.AudioResampler(format="fltp", layout=self._out.layout, rate=rate)
            self._next_sample = 0
        self._packets = source.demux(in_stream)
        self._pending = None
        self._done = False

    @classmethod
    def open(cls, path, out_container, container_format: str) -> _AudioCarrier | None:
        source = av.open(os.fspath(path), mode="r")
        try:
            if not source.streams.audio:
                source.close()
                return None
            in_stream = source.streams.audio[0]
            video = source.streams.video[0] if source.streams.video else None
            offset = 0.0
            if video is not None and video.start_time is not None:
                offset = float(video.start_time * video.time_base)
            allowed = _COPYABLE_AUDIO.get(container_format, set())
            copy = allowed is None or in_stream.codec_context.name in allowed
            return cls(source, in_stream, out_container, copy, offset)
        except BaseException:
            source.close()
            raise

    def mux_until(self, seconds: Fraction, final: bool = False) -> None:
        """Mux source audio that starts before `seconds` of output time; with `final`, drop the rest."""
        limit = float(seconds)
        while not self._done:
            packet = self._peek()
            if packet is None:
                break
            start = float(packet.pts * packet.time_base) - self._offset
            if start >= limit:
                if final:
                    self._done = True
                break
            self._pending = None
            self._mux(packet)
        if final and not self._copy:
            for resampled in self._resampler.resample(None):  # samples the resampler still holds
                self._encode(resampled)
            for out_packet in self._out.encode(None):
                self._out_container.mux(out_packet)

    def _peek(self):
        if self._pending is None:
            for packet in self._packets:
                if packet.dts is None or packet.pts is None:  # the demuxer's final flush packet
                    continue
                self._pending = packet
                break
            else:
                self._done = True
        return self._pending

    def _mux(self, packet) -> None:
        shift = round(self._offset / packet.time_base)
        if self._copy:
            packet.pts -= shift
            packet.dts -= shift
            packet.stream = self._out
            self._out_container.mux(packet)
            return
        for frame in packet.decode():
            for resampled in self._resampler.resample(frame):
                self._encode(resampled)

    def _encode(self, frame) -> None:
        # Number the samples ourselves: transcoded audio starts at 0, as the video does (an audio track
        # that starts later than the video in the source is moved to the start; copied audio is not).
        frame.pts = self._next_sample
        frame.time_base = Fraction(1, frame.sample_rate)
        self._next_sample += frame.samples
        for out_packet in self._out.encode(frame):
            self._out_container.mux(out_packet)

    def close(self) -> None:
        self._source.close()


def check_destination(dst: str | bytes | os.PathLike, *, suffixes: tuple[str, ...] | None = None) -> str:
    """Check that `dst` can be written, without creating anything; return it as an absolute path.

    Parameters
    ----------
    dst : str, bytes or os.PathLike
        The file to be written. Its directory must exist and be writable; `dst` itself may exist (it is
        replaced) but must not be a directory.
    suffixes : tuple of str or None
        Allowed file name endings (lower case, with the dot), or None for any.

    Returns
    -------
    str
        `dst` as an absolute path.

    Raises
    ------
    TypeError
        `dst` is not a path.
    FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError, ValueError
        With a message naming `dst` and what is wrong.

    Examples
    --------
    >>> import os
    >>> from vidmag import io
    >>> io.check_destination("out.mp4", suffixes=(".mp4", ".mkv")) == os.path.abspath("out.mp4")
    True
    >>> try:
    ...     io.check_destination("no-such-folder/out.mp4")
    ... except FileNotFoundError:
    ...     print("refused")
    refused
    """
    given = as_path("dst", dst)
    path = os.path.abspath(given)
    directory = os.path.dirname(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"dst: {given!r} is a directory; give a file name")
    if suffixes is not None and os.path.splitext(path)[1].lower() not in suffixes:
        raise ValueError(f"dst: {given!r} must end in one of {', '.join(suffixes)}")
    if not os.path.exists(directory):
        raise FileNotFoundError(f"dst: directory {directory!r} does not exist")
    if not os.path.isdir(directory):
        raise NotADirectoryError(f"dst: {directory!r} is not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise PermissionError(f"dst: directory {directory!r} is not writable")
    return path


def check_not_source(src: str | bytes | os.PathLike, dst: str | bytes | os.PathLike) -> None:
    """Refuse a destination that is the source file itself, before anything is written.

    Writing the result over its own input would lose the input (and the ideal pipelines read it twice). The
    same file can hide behind another spelling (``./../dir/clip.mp4``), a symbolic link or a hard link, so
    an existing `dst` is compared with `src` by device and inode (``os.stat``, which follows links); a
    `dst` that does not exist yet is compared by its resolved path.

    Parameters
    ----------
    src : str, bytes or os.PathLike
        The input file.
    dst : str, bytes or os.PathLike
        The output file to be written.

    Raises
    ------
    ValueError
        `dst` is `src`; the message names the output (``dst``, ``-o``/``--output`` on the command line).

    Examples
    --------
    >>> from pathlib import Path
    >>> from vidmag import io
    >>> _ = Path("clip.mp4").write_bytes(b"")
    >>> io.check_not_source("clip.mp4", "out.mp4")   # a different file: nothing to say
    >>> try:
    ...     io.check_not_source("clip.mp4", "./clip.mp4")
    ... except ValueError:
    ...     print("refused: the output is the input")
    refused: the output is the input
    """
    src_path, dst_path = as_path("src", src), as_path("dst", dst)
    try:
        src_stat = os.stat(src_path)
    except OSError:
        return  # no source, no file to lose: reading it will say what is wrong
    try:
        dst_stat = os.stat(dst_path)
    except FileNotFoundError:
        same = os.path.realpath(dst_path) == os.path.realpath(src_path)
    else:
        same = (dst_stat.st_dev, dst_stat.st_ino) == (src_stat.st_dev, src_stat.st_ino)
    if same:
        raise ValueError(
            f"dst: the output (-o/--output) {dst_path!r} is the input file {src_path!r} (the same file, "
            "through another name or a link); writing it would replace the input: choose another output"
        )


@contextlib.contextmanager
def atomic_output(dst: str | os.PathLike) -> Iterator[str]:
    """Yield a temporary path next to `dst`; on success rename it to `dst`, on any failure remove it.

    The temporary file lives in `dst`'s directory (so the final ``os.replace`` is atomic), is hidden and
    ends in ``.tmp`` plus `dst`'s suffix. An exception of any kind, KeyboardInterrupt included, removes it
    and leaves an existing `dst` untouched.

    Parameters
    ----------
    dst : str or os.PathLike
        The file to write in the end.

    Yields
    ------
    str
        The temporary path to write to.

    Examples
    --------
    >>> from pathlib import Path
    >>> from vidmag import io
    >>> with io.atomic_output("result.txt") as tmp:
    ...     _ = Path(tmp).write_text("done")
    >>> Path("result.txt").read_text()
    'done'
    """
    given = as_path("dst", dst)
    path = os.path.abspath(given)
    directory, name = os.path.split(path)
    suffix = os.path.splitext(name)[1]
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=f".tmp{suffix}")
    except OSError as error:
        # The temporary's name means nothing to the caller, who gave `dst`: name that instead.
        raise _about_destination(error, given) from None
    os.close(fd)
    try:
        yield tmp
        try:
            # mkstemp makes the file private (0600); give the result the permissions a new file would get.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
            os.replace(tmp, path)
        except OSError as error:
            raise _about_destination(error, given) from None
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _about_destination(error: OSError, dst: str) -> OSError:
    """`error` (an OSError about the temporary file) as the same kind of error about `dst`."""
    message = f"dst: cannot write {dst!r}: {error.strerror or error}"
    if error.errno is None:
        return type(error)(message)
    return type(error)(error.errno, message)
