"""The primitive operations: the contract a device implements to run all four pipelines.

A backend is an object with the methods of :class:`Operations`; ``vidmag.backend.generic.bind`` turns it into
a runnable backend. Every array argument and result is in the backend's own array type (``A`` below: a NumPy
array, a torch tensor, a pyopencl array, ...) and lives on its device; only :meth:`Operations.upload` and
:meth:`Operations.download` cross to and from the host.

Conventions every implementation follows:

- Frames come in **batches** with a leading frame axis: ``(n, h, w, 3)``, channels last (R, G, B or Y, I, Q).
  ``n`` is anything from 1 (a live frame) to the whole clip; a device should do the whole batch in one launch
  or a few, since that is where it gains over the reference.
- A method returns a new array and leaves its inputs alone, except where its docstring says otherwise
  (:meth:`Operations.concat_frames` consumes its list; :meth:`Operations.ideal_bandpass` may filter in place).
  Results of :meth:`Operations.take_frames` may be views: nothing ever writes into them.
- Arithmetic follows the NumPy reference (``vidmag._reference``) in the device's precision (float32 is
  fine: the conformance suite requires every output byte within 1 of the reference's). The reference
  function each primitive must agree with is named in its docstring.
- Scalars (gains, coefficients, band edges) arrive as Python floats; sizes as Python ints.
- ``mit`` flags select the MIT code's behaviour (``compat="mit"``); ``False`` is the default semantics.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

A = TypeVar("A")

#: Names of the primitives, the methods :func:`vidmag.backend.generic.bind` checks for.
PRIMITIVES = (
    "upload",
    "download",
    "rgb_to_yiq",
    "yiq_to_rgb_uint8",
    "pyramid_reduce",
    "pyramid_expand",
    "gaussian_reduce",
    "add",
    "subtract",
    "scale",
    "resize_bicubic",
    "concat_frames",
    "take_frames",
    "ideal_bandpass",
    "butterworth_step",
    "iir_step",
)


@runtime_checkable
class Operations(Protocol[A]):
    """The primitives. Attributes a backend may also set:

    ``batch_values`` (int): how many float values one batch of frames should hold (the generic pipelines
    size their batches from it; a GPU backend wants it large, the reference keeps it moderate).
    """

    # --- host <-> device --------------------------------------------------------------------------------
    def upload(self, frames: np.ndarray) -> A:
        """Copy host frames to the device, unchanged.

        frames: uint8 (n, H, W, 3) RGB. Returns the same bytes as a device array (uint8 (n, H, W, 3)).
        """

    def download(self, frames: A) -> np.ndarray:
        """Copy device frames to the host: uint8 (n, H, W, 3) -> numpy uint8 (n, H, W, 3)."""

    # --- colour -----------------------------------------------------------------------------------------
    def rgb_to_yiq(self, frames: A) -> A:
        """uint8 RGB (n, H, W, 3) -> float YIQ (n, H, W, 3): ``x / 255`` then the NTSC matrix.

        Reference: ``_reference.colour.rgb_to_yiq``.
        """

    def yiq_to_rgb_uint8(self, frames: A, *, mit: bool) -> A:
        """float YIQ (n, H, W, 3) -> uint8 RGB (n, H, W, 3) with the MIT output handling.

        The inverse matrix is the 5-decimal one when ``mit`` is true, the exact inverse otherwise; then
        negatives become 0, a pixel with a channel above 1 is divided by its largest channel, and
        ``x * 255`` is rounded half away from zero. Reference: ``_reference.colour.yiq_to_rgb_uint8``.
        """

    # --- space ------------------------------------------------------------------------------------------
    def pyramid_reduce(self, frames: A) -> A:
        """Laplacian blur + downsample: binom5 (sqrt(2) [1 4 6 4 1] / 16), reflect1 borders, keep even
        samples, horizontally then vertically. (n, h, w, 3) -> (n, ceil(h / 2), ceil(w / 2), 3).

        Reference: ``_reference.pyramid.laplacian_reduce``.
        """

    def pyramid_expand(self, frames: A, size: tuple[int, int]) -> A:
        """Laplacian upsample + blur to the explicit ``size`` = (h, w): zero-stuff, mirror about the first
        and last sample, binom5; vertically then horizontally; the last output of a side of exactly 5 drops
        a tap (``f0 y1 + f2 y2``). (n, ceil(h / 2), ceil(w / 2), 3) -> (n, h, w, 3).

        Reference: ``_reference.pyramid.laplacian_expand``.
        """

    def gaussian_reduce(self, frames: A) -> A:
        """One Gaussian blur + downsample: [1 4 6 4 1] / 16, reflect1, keep even samples, vertically then
        horizontally. (n, h, w, 3) -> (n, ceil(h / 2), ceil(w / 2), 3).

        Reference: ``_reference.pyramid.gaussian_reduce``.
        """

    def resize_bicubic(self, frames: A, size: tuple[int, int]) -> A:
        """Octave's bicubic ``imresize`` of each frame to ``size`` = (H, W): Keys a = -0.5, MATLAB pixel
        centres, half-sample mirror, rows first. (n, h, w, 3) -> (n, H, W, 3).

        Reference: ``_reference.resize.resize_bicubic``.
        """

    # --- arithmetic -------------------------------------------------------------------------------------
    def add(self, a: A, b: A) -> A:
        """``a + b``, same shapes."""

    def subtract(self, a: A, b: A) -> A:
        """``a - b``, same shapes."""

    def scale(self, frames: A, luma: float, chroma: float) -> A:
        """Multiply channel 0 (Y) by ``luma`` and channels 1, 2 (I, Q) by ``chroma``: the per-level gain
        (``luma = chroma = gain``) and the chrominance attenuation (``luma = 1``). Any (..., 3) float
        array."""

    # --- time -------------------------------------------------------------------------------------------
    def concat_frames(self, batches: list[A]) -> Any:
        """Join batches (n_i, h, w, 3) along the frame axis into one stack of T = sum n_i frames.

        The stack is whatever :meth:`take_frames` and :meth:`ideal_bandpass` accept: an array (T, h, w, 3),
        or the batches kept as they are. The caller hands the list over: the implementation may empty it
        as it goes, so that the peak memory is one stack, not two.
        """

    def take_frames(self, stack: Any, start: int, stop: int) -> A:
        """Frames ``start:stop`` of a stack, (stop - start, h, w, 3); a view is fine (it is only read)."""

    def ideal_bandpass(self, stack: Any, fl: float, fh: float, fs: float, *, mit: bool) -> Any:
        """Ideal band-pass along the frame axis of a whole stack (from :meth:`concat_frames`) sampled at
        ``fs`` Hz; returns the filtered stack.

        Default: keep fl <= |f| <= fh (unit gain). ``mit``: keep FFT bins 0 .. T - 1 with fl < k fs / T < fh,
        real part of the inverse (gain 0.5 below fs / 2). May filter in place and return ``stack``; should
        work in pieces (every pixel's series is independent) so that no whole-clip complex copy is made.
        Reference: ``_reference.temporal.ideal_bandpass``.
        """

    def butterworth_step(self, state: Any, frames: A, high: tuple, low: tuple) -> tuple[A, Any]:
        """Run the Butterworth band-pass (difference of two first-order low-passes) over ``frames``
        (n, h, w, 3), consecutive in time, one pyramid level.

        ``high`` and ``low`` are (b0, b1, a0, a1) of the two low-passes. Each low-pass updates, frame by
        frame, as ``y = (-a1 y + b0 x + b1 x_prev) / a0``. ``state`` is ``None`` before the first frame, in
        which case the first frame initialises both low-passes and ``x_prev`` to itself (its output is 0).
        Returns ``(lp_high - lp_low for each frame, new_state)``; the state is the backend's own object.
        Reference: ``_reference.temporal.butterworth_step``.
        """

    def iir_step(self, state: Any, frames: A, r1: float, r2: float) -> tuple[A, Any]:
        """Run the MIT IIR band-pass over ``frames`` (n, h, w, 3), one pyramid level, as
        :meth:`butterworth_step`: ``lp1 = (1 - r1) lp1 + r1 x``, ``lp2 = (1 - r2) lp2 + r2 x``, output
        ``lp1 - lp2``; ``state`` ``None`` starts both at the first frame. Returns ``(filtered, new_state)``.
        Reference: ``_reference.temporal.iir_step``.
        """
