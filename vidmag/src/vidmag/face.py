"""A face found and followed in a video, and the patch of skin on it the pulse is read from.

The detector is OpenCV's Viola-Jones cascade of Haar features (``haarcascade_frontalface_default.xml``),
which ships inside the ``opencv-python-headless`` wheel (``cv2.data.haarcascades``): nothing is downloaded
at run time. It is vidmag's optional ``face`` extra (``pip install -e "./vidmag[face]"`` from a checkout).
OpenCV 5 no longer has the cascades, hence ``opencv-python-headless<5``. Detectors with better recall
(OpenCV's YuNet, MediaPipe) need a model file fetched from the network; give one of them to
:class:`FaceTracker` as ``detector=`` if you have it.

Which patch (``region=``). rPPG reads skin only: eyes, brows, lips, hair and background carry no pulse and
move, so the whole box of a detector is a poor region. Verkruysse, Svaasand & Nelson (Opt. Express 16(26),
2008) found the forehead gave the strongest plethysmographic signal of the face, and Kwon, Kim, Lee & Park
("ROI analysis for remote photoplethysmography on facial video", IEEE EMBC 2015) ranked the forehead and the
cheeks above the whole face. The default is the forehead: it is flat, faces the camera, holds still while the
subject talks or smiles, and sits inside the box of a frontal-face detector. ``"cheeks"`` (both cheeks and the
nose, between the eyes and the mouth) is the choice when hair or a cap covers the forehead; ``"face"`` is the
central 60 % of the box's width over its full height, the region of Poh, McDuff & Picard (Opt. Express
18(10), 2010): more pixels (less sensor noise) but with the eyes and the mouth in it.

How it is followed (:class:`FaceTracker`). The largest face of the first frame is taken; the detector runs
again every ``redetect_s`` seconds (on a copy at most :data:`DETECT_WIDTH` pixels wide: a few tens of
milliseconds at 320 x 240 on one core). Between detections the region does not move at all. A new detection
that overlaps the box moves it only when it differs by more than :data:`DEAD_BAND` of the face's size (the
cascade's boxes jitter by a few pixels from frame to frame, and every move of the region puts a step into
the colour trace), and then only ``1 - smoothing`` of the way. A detection that does not overlap it
(intersection over union below :data:`JUMP_IOU`: the head moved fast, or the face was lost and is found
elsewhere) is taken at once. When the detector finds nothing, the last region is kept, the tracker's
``state`` says ``"lost"``, and the detector is tried again every ``retry_s`` seconds. Nothing here ever falls
back to the whole frame.

Off the frame loop (``update(..., background=True)``, what a live :class:`vidmag.pulse.PulseMeter` made with
``background_detection=True`` and ``vidmag live --pulse face`` use). The first detection runs on the frame it
is given, as always; every later one runs on one worker thread, on a copy of the frame that was due, while
the caller goes on with the next frames (OpenCV's ``detectMultiScale`` releases the GIL). Its boxes are taken,
with the same dead band and smoothing, on the first frame handed over after it finished; the time of the
frame it saw is its time (``last_seen``, and the next detection due ``redetect_s`` or ``retry_s`` after it).
One detection at most is in flight: a frame that falls due meanwhile waits for the next. An exception in the
worker is raised by the next :meth:`~FaceTracker.update` (or by :meth:`~FaceTracker.close`, which stops the
worker), never dropped. Which frame a result lands on depends on the thread's timing, so a clip read offline
(:func:`vidmag.pulse.estimate`) detects in line, and reads the same on every run.
"""

from __future__ import annotations

import concurrent.futures
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vidmag.params import check_number

__all__ = [
    "DEAD_BAND",
    "DETECT_WIDTH",
    "INSTALL_HINT",
    "JUMP_IOU",
    "REGIONS",
    "WORKER_NAME",
    "FaceNotFoundError",
    "FaceTracker",
    "check_available",
    "detect_faces",
    "face_region",
]

#: How to install the detector from a checkout of the project.
INSTALL_HINT = 'pip install -e "./vidmag[face]"'
#: The skin patches :func:`face_region` cuts from a face box, the default first.
REGIONS = ("forehead", "cheeks", "face")
#: Frames wider than this are shrunk (area averaging) before detection: faces a camera's user shows are
#: large, and the cascade's cost grows with the pixel count.
DETECT_WIDTH = 320
#: A re-detection that moves each side of the box by at most this share of the face's size is jitter: ignored.
DEAD_BAND = 0.05
#: A detection whose intersection over union with the tracked box is below this is a new place: jumped to.
JUMP_IOU = 0.3

# The patches as (left, top, width, height), fractions of the frontal-face box. The cascade's box spans
# from the middle of the forehead to the chin and from cheek to cheek; the brows sit at about 0.25 of its
# height, the eyes at 0.4, the mouth's top at 0.75.
_REGION_FRACTIONS = {
    "forehead": (0.30, 0.06, 0.40, 0.16),
    "cheeks": (0.15, 0.55, 0.70, 0.18),
    "face": (0.20, 0.00, 0.60, 1.00),
}
_CASCADE = "haarcascade_frontalface_default.xml"
# The cascade's own window is 24 x 24 pixels: no smaller face can be found.
_CASCADE_WINDOW = 24
_SCALE_FACTOR = 1.1
_MIN_NEIGHBOURS = 5
# A CascadeClassifier is not safe to share between threads; each thread loads its own (about 30 ms).
_local = threading.local()
#: The name of the worker thread of a tracker's background detections.
WORKER_NAME = "vidmag-face-detect"

Box = tuple[int, int, int, int]


class FaceNotFoundError(ValueError):
    """The detector found no face where one was needed (the first frame of a clip).

    A ValueError: the region asked for does not exist in the frames given.

    Examples
    --------
    >>> from vidmag import face, pulse, synthetic
    >>> scene = synthetic.scene(160, 120, seconds=4.0)  # a skin-coloured oval: no face to the cascade
    >>> try:
    ...     pulse.estimate(scene, scene.fs, roi="face")
    ... except face.FaceNotFoundError as error:
    ...     print(str(error)[:60])
    roi='face': the face detector (OpenCV's frontal-face Haar ca
    """


def _cv2() -> Any:
    """OpenCV with its Haar cascades, or an ImportError that says how to install them."""
    try:
        import cv2
    except ImportError as error:
        raise ImportError(
            f"roi='face' needs OpenCV's face detector, vidmag's optional 'face' extra: {INSTALL_HINT} "
            "(from a checkout; or pip install 'opencv-python-headless<5')"
        ) from error
    if not hasattr(cv2, "CascadeClassifier"):
        raise ImportError(
            f"roi='face' needs OpenCV's Haar cascades, which OpenCV {getattr(cv2, '__version__', '?')} does "
            f"not have (OpenCV 5 dropped them): {INSTALL_HINT}, which pins opencv-python-headless<5"
        )
    return cv2


def check_available() -> None:
    """Raise the ImportError of a missing detector now, before any frame is read.

    Raises
    ------
    ImportError
        OpenCV is not installed, or is a version without the Haar cascades; the message names the ``face``
        extra and the command that installs it.

    See Also
    --------
    detect_faces : what needs it.

    Examples
    --------
    >>> from vidmag import face
    >>> face.check_available()  # silent when the face extra is installed
    """
    _cv2()


def _classifier(cv2: Any) -> Any:
    classifier = getattr(_local, "classifier", None)
    if classifier is None:
        classifier = cv2.CascadeClassifier(cv2.data.haarcascades + _CASCADE)
        if classifier.empty():
            raise ImportError(f"OpenCV could not load its face cascade {cv2.data.haarcascades + _CASCADE}")
        _local.classifier = classifier
    return classifier


def _grey(frame: np.ndarray, cv2: Any) -> np.ndarray:
    if frame.dtype == np.uint8:
        return cv2.cvtColor(np.ascontiguousarray(frame), cv2.COLOR_RGB2GRAY)
    # Floats of any scale (as the pulse functions take them): the histogram is equalised next, so only the
    # order of the grey levels matters.
    grey = frame.astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    low, high = float(grey.min()), float(grey.max())
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return np.zeros(grey.shape, np.uint8)
    return np.round((grey - low) * (255.0 / (high - low))).astype(np.uint8)


def _check_frame(frame: Any) -> np.ndarray:
    frame = np.asarray(frame)
    if frame.ndim != 3 or frame.shape[2] != 3:
        raise ValueError(f"frame must be an RGB frame of shape (H, W, 3), got shape {frame.shape}")
    if not (np.issubdtype(frame.dtype, np.integer) or np.issubdtype(frame.dtype, np.floating)):
        raise TypeError(f"frame must hold integers or floats, got dtype {frame.dtype}")
    if frame.dtype != np.uint8 and np.issubdtype(frame.dtype, np.integer):
        frame = frame.astype(np.float64)
    return frame


def _check_min_size(min_size: Any) -> float:
    min_size = check_number("min_size", min_size)
    if not 0 < min_size <= 1:
        raise ValueError(f"min_size must be in (0, 1], a share of the frame's shorter side, got {min_size:g}")
    return min_size


def detect_faces(frame: np.ndarray, *, min_size: float = 0.1) -> list[Box]:
    """Faces in one frame, largest first, found by OpenCV's frontal-face Haar cascade.

    Parameters
    ----------
    frame : numpy.ndarray
        (H, W, 3) RGB, uint8 (or integers or floats of any scale: they are rescaled to grey levels).
    min_size : float
        Smallest face to report, as a share of the frame's shorter side, in (0, 1]; never below the
        cascade's 24-pixel window on the (possibly shrunk) copy it searches.

    Returns
    -------
    list of tuple of int
        ``(x, y, w, h)`` boxes in the frame's pixels, inside the frame, largest area first; empty when no
        face is found.

    Raises
    ------
    ImportError
        The ``face`` extra is missing (see :func:`check_available`).

    See Also
    --------
    FaceTracker : the largest face followed through a stream.
    face_region : the skin patch of a box.

    Examples
    --------
    >>> import numpy as np
    >>> from vidmag import face
    >>> face.detect_faces(np.full((120, 160, 3), 128, np.uint8))  # a grey frame: no face
    []
    """
    cv2 = _cv2()
    frame = _check_frame(frame)
    min_size = _check_min_size(min_size)
    height, width = frame.shape[:2]
    grey = _grey(frame, cv2)
    scale = max(1.0, width / DETECT_WIDTH)
    if scale > 1.0:
        small = (max(1, round(width / scale)), max(1, round(height / scale)))
        grey = cv2.resize(grey, small, interpolation=cv2.INTER_AREA)
    grey = cv2.equalizeHist(grey)
    side = max(_CASCADE_WINDOW, round(min_size * min(grey.shape)))
    if side > min(grey.shape):
        return []
    found = _classifier(cv2).detectMultiScale(grey, scaleFactor=_SCALE_FACTOR, minNeighbors=_MIN_NEIGHBOURS,
                                              minSize=(side, side))
    boxes = []
    for x, y, w, h in np.asarray(found, dtype=np.float64).reshape(-1, 4) * scale:
        left, top = max(0, round(x)), max(0, round(y))
        right, bottom = min(width, round(x + w)), min(height, round(y + h))
        if right > left and bottom > top:
            boxes.append((left, top, right - left, bottom - top))
    return sorted(boxes, key=lambda b: b[2] * b[3], reverse=True)


def _check_region(region: Any) -> str:
    if not isinstance(region, str) or region not in REGIONS:
        raise ValueError(f"region must be one of {', '.join(repr(r) for r in REGIONS)}; got {region!r}")
    return region


def face_region(
    face: Sequence[int], region: str = "forehead", frame_shape: Sequence[int] | None = None
) -> Box:
    """The skin patch of a face box the pulse is read from (see the module's description for why).

    Parameters
    ----------
    face : tuple of int
        The face's box ``(x, y, w, h)``, as :func:`detect_faces` gives it.
    region : {"forehead", "cheeks", "face"}
        ``"forehead"``: the middle 40 % of the box's width, from 6 % to 22 % of its height (above the brows).
        ``"cheeks"``: the middle 70 % of the width, from 55 % to 73 % of the height (below the eyes, above
        the mouth: both cheeks and the nose). ``"face"``: the middle 60 % of the width, the full height.
    frame_shape : tuple of int, optional
        The frame's ``(H, W, ...)``; the patch is clipped to it.

    Returns
    -------
    tuple of int
        ``(x, y, w, h)``, at least one pixel each way.

    See Also
    --------
    detect_faces, FaceTracker

    Examples
    --------
    >>> from vidmag import face
    >>> face.face_region((40, 82, 394, 394))
    (158, 106, 158, 63)
    >>> face.face_region((40, 82, 394, 394), "cheeks")
    (99, 299, 276, 71)
    """
    region = _check_region(region)
    x, y, w, h = (int(v) for v in face)
    fx, fy, fw, fh = _REGION_FRACTIONS[region]
    left, top = x + round(fx * w), y + round(fy * h)
    right, bottom = left + max(1, round(fw * w)), top + max(1, round(fh * h))
    if frame_shape is not None:
        height, width = int(frame_shape[0]), int(frame_shape[1])
        left, top = min(max(0, left), width - 1), min(max(0, top), height - 1)
        right, bottom = min(max(left + 1, right), width), min(max(top + 1, bottom), height)
    return left, top, right - left, bottom - top


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    left, top = max(a[0], b[0]), max(a[1], b[1])
    right, bottom = min(a[0] + a[2], b[0] + b[2]), min(a[1] + a[3], b[1] + b[3])
    inter = max(0.0, right - left) * max(0.0, bottom - top)
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


class FaceTracker:
    """The largest face of a stream, re-detected every few seconds, and the smoothed skin patch on it.

    Give it to :func:`vidmag.pulse.estimate` or :class:`vidmag.pulse.PulseMeter` as ``roi=`` (``roi="face"``
    is ``FaceTracker()``). How it follows the face, and which patch it reads, is in the module's description.

    Parameters
    ----------
    region : {"forehead", "cheeks", "face"}
        The patch of the face box (:func:`face_region`).
    redetect_s : float
        Seconds between detections while a face is tracked, > 0.
    retry_s : float
        Seconds between detections while no face is found (none yet, or lost), > 0.
    smoothing : float
        Share of the old box kept when a re-detection moves it (0: take each detection as it is; 0.9: move a
        tenth of the way), in [0, 1).
    min_size : float
        Smallest face, as a share of the frame's shorter side (:func:`detect_faces`).
    detector : callable, optional
        ``frame -> list of (x, y, w, h)``, largest first, in place of OpenCV's cascade (then OpenCV is not
        needed).

    Attributes
    ----------
    state : str
        ``"searching"`` (no face found yet), ``"tracking"`` (found at the last detection) or ``"lost"`` (not
        found at the last detection: the last patch is kept).
    face : tuple of int or None
        The smoothed face box.
    roi : tuple of int or None
        The patch read, ``(x, y, w, h)``; None until a face is found.
    last_seen : float or None
        Time of the last detection that found a face, s.
    detections : int
        How many detections were taken (a background one counts once its result is taken).
    pending : bool
        Whether a background detection is in flight (see :meth:`update`).

    Raises
    ------
    ImportError
        Without `detector`, when the ``face`` extra is missing (naming it and how to install it).

    See Also
    --------
    detect_faces, face_region

    Examples
    --------
    With a stand-in detector that always sees one face (OpenCV's cascade finds the face of the paper's
    ``face.mp4`` at about that box):

    >>> import numpy as np
    >>> from vidmag import face
    >>> tracker = face.FaceTracker(detector=lambda frame: [(40, 82, 394, 394)])
    >>> tracker.update(np.zeros((592, 528, 3), np.uint8), 0.0)
    (158, 106, 158, 63)
    >>> tracker.state, tracker.face, tracker.detections
    ('tracking', (40, 82, 394, 394), 1)

    The real detector, on a clip (``vidmag.io.read_frames``):

    >>> tracker = face.FaceTracker(region="cheeks", redetect_s=2.0)
    >>> for k, frame in enumerate(io.read_frames("face.mp4")):  # doctest: +SKIP
    ...     roi = tracker.update(frame, k / 30.0)
    """

    def __init__(
        self,
        region: str = "forehead",
        *,
        redetect_s: float = 1.0,
        retry_s: float = 0.25,
        smoothing: float = 0.5,
        min_size: float = 0.1,
        detector: Callable[[np.ndarray], Sequence[Sequence[int]]] | None = None,
    ) -> None:
        self.region = _check_region(region)
        self.redetect_s = check_number("redetect_s", redetect_s)
        if self.redetect_s <= 0:
            raise ValueError(f"redetect_s must be > 0 s, got {self.redetect_s:g}")
        self.retry_s = check_number("retry_s", retry_s)
        if self.retry_s <= 0:
            raise ValueError(f"retry_s must be > 0 s, got {self.retry_s:g}")
        self.smoothing = check_number("smoothing", smoothing)
        if not 0 <= self.smoothing < 1:
            raise ValueError(f"smoothing must be in [0, 1), got {self.smoothing:g}")
        self.min_size = _check_min_size(min_size)
        if detector is not None and not callable(detector):
            raise TypeError(f"detector must be a callable frame -> list of (x, y, w, h), got {detector!r}")
        if detector is None:
            _cv2()  # a missing extra is reported now, not at the first frame
        self._detector = detector
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        #: the background detection in flight: (future of its boxes, the time of its frame)
        self._job: tuple[concurrent.futures.Future[list[Box]], float] | None = None
        self.reset()

    def reset(self) -> None:
        """Forget the face: the next :meth:`update` detects afresh.

        A background detection still in flight is waited for and its result dropped (an exception it raised
        is raised here, after the tracker is reset); the worker thread stays for the next one.
        """
        job, self._job = getattr(self, "_job", None), None
        self._box: np.ndarray | None = None
        self._next = -math.inf
        self.face: Box | None = None
        self.roi: Box | None = None
        self.state = "searching"
        self.last_seen: float | None = None
        self.detections = 0
        if job is not None:
            job[0].result()  # the boxes are of the stream forgotten; an error is not

    @property
    def pending(self) -> bool:
        """Whether a background detection is in flight (submitted, its result not yet taken)."""
        return self._job is not None

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the background detection in flight (if any) has finished, or `timeout` s have passed.

        Its result is still taken by the next :meth:`update`; this only waits (tests and shutdowns use it).

        Parameters
        ----------
        timeout : float, optional
            Seconds to wait at most; None: as long as it takes.

        Returns
        -------
        bool
            True when no detection is running any more.
        """
        if self._job is None:
            return True
        done, _ = concurrent.futures.wait([self._job[0]], timeout=timeout)
        return bool(done)

    def close(self) -> None:
        """Stop the worker thread of background detections (waiting for the one in flight to end).

        An exception the last detection raised, not yet raised by :meth:`update`, is raised here. The tracker
        stays usable: a later background :meth:`update` starts a new worker. Closing twice is harmless.
        """
        job, self._job = self._job, None
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
        if job is not None and not job[0].cancelled():
            error = job[0].exception()
            if error is not None:
                raise error

    def _detect(self, frame: np.ndarray) -> list[Box]:
        if self._detector is None:
            return detect_faces(frame, min_size=self.min_size)
        found = self._detector(frame)
        boxes = []
        for box in found:
            x, y, w, h = (int(v) for v in box)
            if w < 1 or h < 1:
                raise ValueError(f"the detector returned a box of size {w} x {h}; boxes need w, h >= 1")
            boxes.append((x, y, w, h))
        return boxes

    def _take(self, boxes: list[Box]) -> None:
        candidates = [np.asarray(b, dtype=np.float64) for b in boxes]
        if self._box is None:
            self._box = max(candidates, key=lambda b: b[2] * b[3])
            return
        overlaps = [_iou(self._box, b) for b in candidates]
        best = int(np.argmax(overlaps))
        if overlaps[best] < JUMP_IOU:
            # Not the face tracked: it moved too far between detections, or another face is all there is.
            self._box = max(candidates, key=lambda b: b[2] * b[3])
            return
        change = candidates[best] - self._box
        size = max(self._box[2], self._box[3])
        if np.max(np.abs(change)) > DEAD_BAND * size:
            self._box = self._box + (1.0 - self.smoothing) * change

    def update(self, frame: np.ndarray, time_s: float, *, background: bool = False) -> Box | None:
        """Take one frame at `time_s`; detect when due; return the patch to read (None while none is found).

        Parameters
        ----------
        frame : numpy.ndarray
            (H, W, 3) RGB.
        time_s : float
            The frame's time, s (``k / fs`` for frame k); a detection runs when `redetect_s` (tracking) or
            `retry_s` (searching, lost) have passed since the last.
        background : bool
            False: a detection due runs now, on this frame, before the call returns. True: after the first
            detection, a detection due runs on a copy of this frame in the tracker's worker thread and the
            call returns at once; its boxes are taken by the first call after it finished (the module's
            description). A call with False while one is in flight waits for it and takes it first.

        Returns
        -------
        tuple of int or None
            :attr:`roi`.

        Raises
        ------
        Exception
            Whatever the detector raised in the background detection taken now.
        """
        frame = _check_frame(frame)
        if self._job is not None:
            future, seen = self._job
            if not background or future.done():
                self._job = None
                self._take_result(future.result(), seen, frame.shape)  # raises what the detector raised
        if time_s >= self._next and self._job is None:
            if background and self.detections > 0:
                if self._executor is None:
                    self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=WORKER_NAME)
                self._job = (self._executor.submit(self._detect, np.array(frame, copy=True)), float(time_s))
            else:
                self._take_result(self._detect(frame), float(time_s), frame.shape)
        return self.roi

    def _take_result(self, boxes: list[Box], time_s: float, shape: tuple[int, ...]) -> None:
        """The detection of the frame at `time_s` (of `shape`) taken: the box moved, the state and region."""
        self.detections += 1
        if boxes:
            self._take(boxes)
            self.state, self.last_seen = "tracking", time_s
            self._next = time_s + self.redetect_s
        else:
            self.state = "searching" if self._box is None else "lost"
            self._next = time_s + self.retry_s
        if self._box is not None:
            x, y, w, h = self._box
            left, top = max(0, round(x)), max(0, round(y))
            face = (left, top, max(1, min(shape[1], round(x + w)) - left),
                    max(1, min(shape[0], round(y + h)) - top))
            self.face = face
            self.roi = face_region(face, self.region, shape)

    def describe(self) -> dict[str, Any]:
        """What the tracker reports to a status display: ``source`` ("face"), ``region``, ``state``,
        ``face`` and ``last_seen``.

        Returns
        -------
        dict
            JSON-ready values (lists for boxes, None for what is unknown).

        Examples
        --------
        >>> from vidmag import face
        >>> face.FaceTracker(detector=lambda frame: []).describe()
        {'source': 'face', 'region': 'forehead', 'state': 'searching', 'face': None, 'last_seen': None}
        """
        return {"source": "face", "region": self.region, "state": self.state,
                "face": None if self.face is None else list(self.face), "last_seen": self.last_seen}
