"""The contract a device implements to run the four pipelines, in two tiers.

**Tier 1, the primitives** (:class:`Operations`, names in :data:`PRIMITIVES`): sixteen operations, each one
step of the reference's pipelines (colour conversion, one pyramid reduce or expand, a resize, arithmetic, the
temporal filters). A backend that has only these runs every pipeline: ``vidmag.backend.generic`` derives each
stage of the pipelines from them, in the reference's own order
(:class:`vidmag.backend.stages.PrimitiveStages`). The NumPy reference backend is such a backend.

**Tier 2, the fused tier** (:class:`FusedOperations`, names in :data:`FUSED`): five kernels and a few memory
operations, which the whole-clip and streaming pipelines are fast with. Every spatial filter of vidmag is a
separable sparse linear map, so one *tap map along an axis* (:meth:`FusedOperations.map_axis`, driven by the
tables of :mod:`vidmag.backend.spatial_taps`) runs all of them, straight from the frame bytes; then a *3 x 3
matrix apply*, the streaming filters as one *first-order recursive scan*, the ideal filter as a *band-pass
projection*, and a *render* that resamples the signal to full height, adds it to the frame, converts to RGB
with the MIT output handling and rounds, in one pass. A backend with the fused tier runs the same pipelines
through :class:`vidmag.backend.stages.FusedStages`: that handful of kernels is all a new device writes to be
fast. (It also writes the primitives, which may be plain: the conformance suite runs the pipelines through
them too, as ``generic.bind(primitives)``, and checks each against the NumPy one.)

The fused tier is derived from the primitives stage by stage, not operation by operation (a tap map along one
axis has no primitive): each stage of the pipelines (the Laplacian bands of a batch, the Gaussian down stack,
the band-pass, the scan, the collapse, the render) is written over each tier in :mod:`vidmag.backend.stages`,
and the two forms agree within the conformance rule (``vidmag/tests/test_contract_tiers.py``).

Conventions every implementation of either tier follows:

- Every array argument and result is in the backend's own array type (``A`` below: a NumPy array, a torch
  tensor, a pyopencl array, ...) and lives on its device; only the upload and download operations (and the
  fused render, which may write straight into host memory) cross to and from the host.
- Frames come in **batches** with a leading frame axis: ``(n, h, w, 3)``, channels last (R, G, B or Y, I, Q).
  ``n`` is anything from 1 (a live frame) to the whole clip; a device should do the whole batch in one launch
  or a few, since that is where it gains over the reference. Axis 1 is the height, axis 2 the width.
- A method returns a new array and leaves its inputs alone, except where its docstring says otherwise
  (:meth:`Operations.concat_frames` consumes its list; :meth:`Operations.ideal_bandpass` may filter in place;
  :meth:`FusedOperations.first_order_scan` may overwrite its input; a ``scratch`` result is reused).
  Results of ``take_frames`` may be views: nothing ever writes into them.
- Arithmetic follows the NumPy reference (``vidmag._reference``) in the device's precision (float32 is
  fine: the conformance suite requires every output byte within 1 of the reference's). The reference
  function each operation must agree with is named in its docstring.
- Scalars (gains, coefficients, band edges) arrive as Python floats; sizes as Python ints; tap tables as
  :class:`vidmag.backend.spatial_taps.Taps` and matrices as NumPy float64 arrays, both on the host (a device
  uploads them once and caches them: they repeat from batch to batch).
- ``mit`` flags select the MIT code's behaviour (``compat="mit"``); ``False`` is the default semantics.
- An implementation may also have ``synchronize()``, waiting for everything enqueued so far (a device with
  a queue); the pipelines and streams call it before they let go of buffers after an interruption.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from vidmag.backend.spatial_taps import Taps
    from vidmag.params import Plan

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

#: Names of the fused tier's operations, the methods ``bind(..., fused=...)`` checks for. The five kernels are
#: ``map_axis``, ``apply_matrix``, ``bandpass``, ``first_order_scan`` and ``render``; ``scan_state`` makes the
#: scan's state; the rest move frames and stacks.
FUSED = (
    "batch_frames",
    "upload_frames",
    "download",
    "map_axis",
    "apply_matrix",
    "concat_frames",
    "take_frames",
    "bandpass",
    "scan_state",
    "first_order_scan",
    "render",
)


@runtime_checkable
class Operations(Protocol[A]):
    """Tier 1, the primitives. Attributes a backend may also set:

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


@runtime_checkable
class FusedOperations(Protocol[A]):
    """Tier 2, the fused tier: what the pipelines run on where a device has it (see the module docstring).

    Signals (the Gaussian down stack, the Laplacian bands, their filtered values) are built straight from the
    frame bytes, so they are in *byte space*: RGB values 0 .. 255 of the pixels they are linear maps of. YIQ
    is ``RGB_TO_YIQ / 255`` times that; the render folds the colour matrices in (every step before it is
    linear and treats the three channels alike, so the colour conversion commutes with them).
    """

    # --- frames in and out ------------------------------------------------------------------------------
    def batch_frames(self, plan: Plan) -> int:
        """How many frames one batch of a whole-clip run holds (at least 1): the device's trade between
        launch count and memory. A stream uses it too unless the plan sets ``batch``."""

    def upload_frames(self, frames: Sequence[np.ndarray] | A) -> A:
        """Frames to the device as one uint8 batch (n, H, W, 3).

        ``frames``: a sequence of host uint8 (H, W, 3) RGB frames (often views that lie one after another in
        one clip array, which a device sharing the host's memory can wrap without a copy), or a uint8 batch
        already in the backend's array type (a torch tensor), returned as it is or moved to the backend's
        device. The batch is valid until the next call: the backend may reuse one buffer for every call, or
        wrap the host memory (valid as long as the frames are).
        """

    def download(self, frames: A) -> np.ndarray:
        """A uint8 batch to the host: uint8 (n, H, W, 3) -> numpy uint8 (n, H, W, 3) (as the primitive)."""

    # --- kernels ----------------------------------------------------------------------------------------
    def map_axis(
        self,
        frames: A,
        taps: Taps,
        axis: int,
        *,
        other: A | None = None,
        sign: int = 1,
        scratch: str | None = None,
    ) -> A:
        """A tap map along one axis: ``out[.., i, ..] = sum_t weight[i, t] * frames[.., index[i, t], ..]``.

        ``frames``: (n, h, w, 3), uint8 (taken as their values 0 .. 255, not divided by 255) or float;
        ``axis`` 1 maps the height (``h = taps.n_in`` -> ``taps.n_out``), 2 the width. Returns float
        (n, n_out, w, 3) or (n, h, n_out, 3). With ``other`` (the output's shape), returns ``other + out``
        (``sign`` 1) or ``other - out`` (``sign`` -1), in the same pass. The tables resolve every border rule
        (reflect1, the half-sample mirror, the dropped tap of a side of 5), so this one operation is the
        pyramid's reduce and expand, the Gaussian down stack (several steps composed into one table) and the
        bicubic resize. ``scratch``: a name under which the backend may keep the result's buffer and write
        into it again at the next call with that name (the caller is done with the previous result by then);
        ``None`` gives a fresh array. Reference: :func:`vidmag.backend.spatial_taps.to_dense` times the axis.
        """

    def apply_matrix(self, frames: A, matrix: np.ndarray) -> A:
        """Each pixel times a 3 x 3 matrix: ``out[..., r] = sum_k matrix[r, k] * frames[..., k]``; uint8
        (taken as 0 .. 255) or float (n, h, w, 3) in, float out."""

    def concat_frames(self, batches: list[A]) -> Any:
        """As the primitive: join float batches along the frame axis into a stack (consumes the list)."""

    def take_frames(self, stack: Any, start: int, stop: int) -> A:
        """As the primitive: frames ``start:stop`` of a stack (a view is fine)."""

    def bandpass(
        self, stack: Any, fl: float, fh: float, fs: float, *, mit: bool, gains: tuple[float, float, float]
    ) -> Any:
        """The ideal band-pass of :meth:`Operations.ideal_bandpass` along the frame axis of a stack (T, h, w,
        3), times ``gains[c]`` on channel c, into a new stack (the input is left alone).

        The filter is a linear map along time, so it can be two small products with the tables of
        :func:`vidmag.backend.bandpass_basis.bandpass_basis` (a projection onto the kept DFT bins, or the
        complement onto the dropped ones), no FFT needed. Reference: ``_reference.temporal.ideal_bandpass``.
        """

    def scan_state(self, first: A) -> Any:
        """The state of :meth:`first_order_scan` started at one frame: ``first`` (1, h, w, 3) float is both
        low-passes and the previous input. The backend may keep ``first`` itself (the caller gives it up)."""

    def first_order_scan(
        self, state: Any, frames: A, c1: tuple[float, ...], c2: tuple[float, ...], gain: float
    ) -> A:
        """Run frames (n, h, w, 3) float, consecutive in time, through two first-order low-passes.

        For each frame x, in order: ``lp1 = c1[0] lp1 + c1[1] x + c1[2] x_prev``, ``lp2`` likewise with
        ``c2``, ``x_prev = x``; the output frame is ``gain * (lp1 - lp2)``. ``state`` (from
        :meth:`scan_state`) is updated in place, so the next call continues where this one ended. May write
        the output over ``frames`` and return it. The MIT IIR low-pass is ``(1 - r, r, 0)``, the Butterworth
        one ``(-a1 / a0, b0 / a0, b1 / a0)``. Reference: ``_reference.temporal.iir_step`` and
        ``butterworth_step``.
        """

    def render(
        self, frames: A, signal: A | None, taps: Taps | None, c: np.ndarray, e: np.ndarray
    ) -> np.ndarray | A:
        """The output bytes: the signal resampled to full height, added, converted, handled and rounded.

        ``frames`` uint8 (n, H, W, 3); ``signal`` float (n, h, W, 3), already at full width, resampled along
        the height through ``taps`` (h -> H); ``None`` (with ``taps`` ``None``) for no signal. Per pixel:
        ``v = c @ rgb + e @ s`` (``rgb`` the frame's bytes 0 .. 255, ``s`` the resampled signal; ``c`` and
        ``e`` take them to RGB in [0, 1]), then the MIT output handling: negatives become 0, a pixel with a
        channel above 1 is divided by its largest channel, and ``255 v`` is rounded half away from zero.
        Returns uint8 (n, H, W, 3): on the host (a NumPy array) where the backend writes there directly,
        else in its array type (the caller downloads it). A tier that sets ``renders_into_host = True`` also
        takes ``into=``, a C-contiguous uint8 host array of the output's shape, writes the bytes there and
        returns it (``vidmag.magnify`` then hands it its slots of the returned array: see
        :class:`vidmag.backend.output.HostOutput`). Reference: ``_reference.colour.yiq_to_rgb_uint8``.
        """
