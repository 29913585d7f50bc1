"""The Riesz pipelines on the shared kernel tier: the steps of :mod:`vidmag._reference.riesz` as the kernels
of :mod:`vidmag.backend.kernels.riesz_templates`, float32, one frame at a time on any
:class:`~vidmag.backend.kernels.device.KernelDevice` (vulkan, cuda, metal).

The host side of the opencl backend's :mod:`vidmag.backend.opencl.riesz`, step for step: per frame one upload,
the luminance and its Laplacian pyramid (tap tables of :mod:`vidmag.backend.spatial_taps`, one launch a step
for both axes); per processed level one launch for the Riesz transform, the phase step, the temporal filter
and the amplitude weights, one for the row pass of the amplitude-weighted blur (the shared ``rows_f32``) and
one for its column pass with the phase shift; the collapse, one launch for the output bytes and one download.
Every buffer is allocated once per stream. riesz_ideal keeps each level's accumulated phase on the device as
a :class:`~vidmag.backend.kernels.operations.Stack` and band-passes it with the primitives' projection.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from vidmag._reference.colour import RGB_TO_YIQ, YIQ_TO_RGB_EXACT, YIQ_TO_RGB_MIT
from vidmag.backend import riesz_driver
from vidmag.backend.kernels.device import DeviceArray, KernelDevice
from vidmag.backend.kernels.riesz_templates import program
from vidmag.backend.kernels.templates import cover
from vidmag.backend.riesz_driver import PIPELINES, blur_taps
from vidmag.backend.spatial_taps import Taps
from vidmag.params import Plan

__all__ = ["PIPELINES", "KernelRiesz", "KernelRieszStream", "frames", "phase_backend"]

# the Riesz kernels compiled on each device (the device's own cache holds the shared templates' only)
_compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _launch(rt: KernelDevice, name: str, total: int, *args: Any) -> None:
    """Riesz kernel ``name`` over ``total`` work items on ``rt``, as :meth:`KernelDevice.launch` launches the
    shared ones (arrays or buffers for pointers, numbers for scalars, without the trailing ``total``)."""
    kernels = _compiled.setdefault(rt, {})
    kernel = kernels.get(name)
    if kernel is None:
        kernel = kernels[name] = rt.runtime.kernel(program(name, rt.dialect), name)
    bound = [a.buffer if isinstance(a, DeviceArray) else a for a in args]
    rt._enqueue(kernel, cover(total), [*bound, int(total)])


class KernelRiesz(riesz_driver.RieszDriver):
    """The per-frame Riesz steps on one device of the shared kernel tier, for frames of one size, with their
    buffers (the launches of :class:`~vidmag.backend.riesz_driver.RieszDriver`'s steps, one pixel a work
    item).

    Parameters
    ----------
    ops : vidmag.backend.kernels.operations.KernelOperations
        The device's primitives (``ops.rt`` is the :class:`~vidmag.backend.kernels.device.KernelDevice`).
    plan : Plan
        A Riesz pipeline's plan.

    See Also
    --------
    KernelRieszStream : the live stream over it.
    vidmag.backend.opencl.riesz.OpenCLRiesz : the same steps in hand-written OpenCL C.

    Examples
    --------
    >>> from vidmag.backend.kernels.riesz import KernelRiesz
    >>> KernelRiesz.__name__
    'KernelRiesz'
    """

    # --- maps ---------------------------------------------------------------------------------------------
    def _step(self, name: str, src: DeviceArray, dst: DeviceArray, size: tuple[int, int], x: Taps, y: Taps,
              other: Any = None, mode: int | None = None) -> None:
        ix, wx = self.ops.taps(x)
        iy, wy = self.ops.taps(y)
        head = () if other is None else (other,)
        tail = () if mode is None else (mode,)
        _launch(self.rt, name, size[0] * size[1], src, dst, *head, ix, wx, x.index.shape[1], iy, wy,
                y.index.shape[1], x.n_in, size[1], *tail)

    # --- steps --------------------------------------------------------------------------------------------
    def _load(self, frame: np.ndarray) -> None:
        rt = self.rt
        rt.write(self.frame, np.ascontiguousarray(frame, dtype=np.uint8))  # copies the frame
        m = RGB_TO_YIQ[0] / 255.0
        _launch(rt, "riesz_luma", self.plan.height * self.plan.width, self.frame, self.image[0],
                *(float(v) for v in m))

    def track_level(self, lv: int, args: list[Any]) -> None:
        h, w = self.sizes[lv]
        qb, qx, qy = self.quaternion[lv]
        pc, ps = self.phase[lv]
        _launch(self.rt, "riesz_phase", h * w, self.band[lv], qb, qx, qy, pc, ps, self.amplitude[lv],
                self.state[lv], self.weighted[lv], w, h, *args)

    def weigh(self, phase: list[tuple[Any, Any]], frame: int) -> None:
        """The amplitude weights of the ideal band-pass's output ``phase`` (per level, a pair of
        (T, h * w) :class:`~vidmag.backend.kernels.operations.Stack`) at ``frame`` (riesz_ideal's second
        pass)."""
        weigh = int(self.plan.params["sigma"] != 0)
        for lv in range(self.processed):
            stack_c, stack_s = phase[lv]
            for (p0, piece_c), (_, piece_s) in zip(stack_c.pieces, stack_s.pieces):
                cols = piece_c.shape[1]
                _launch(self.rt, "riesz_weigh", cols, piece_c, piece_s, self.amplitude[lv], self.weighted[lv],
                        frame * cols, p0, weigh)

    def shift_level(self, lv: int, sigma: float, alpha: Any) -> None:
        rt = self.rt
        h, w = self.sizes[lv]
        qb, qx, qy = self.quaternion[lv]
        if sigma == 0:
            _launch(rt, "riesz_shift", h * w, self.weighted[lv], qb, qx, qy, self.band[lv], alpha)
            return
        rows = blur_taps(w, sigma)
        idx, wt = self.ops.taps(rows)
        rt.launch("rows_f32", h * w, self.weighted[lv], self.blur_rows[lv], rt.dummy(), idx, wt,
                  rows.index.shape[1], w, w, 0)
        cols = blur_taps(h, sigma)
        idx, wt = self.ops.taps(cols)
        _launch(rt, "riesz_blur_shift", h * w, self.blur_rows[lv], idx, wt, cols.index.shape[1], qb, qx,
                qy, self.band[lv], w, alpha)

    def _output(self) -> np.ndarray:
        pixels = self.plan.height * self.plan.width
        inverse = YIQ_TO_RGB_MIT if self.plan.mit else YIQ_TO_RGB_EXACT
        fwd = (np.asarray(RGB_TO_YIQ, dtype=np.float64) / 255.0).ravel()[3:]
        _launch(self.rt, "riesz_render", -(-pixels // 4), self.frame, self.image[0], self.out,
                *(float(np.float32(v)) for v in fwd),
                *(float(np.float32(v)) for v in np.asarray(inverse).ravel()), pixels)
        return self.rt.download(self.out)  # waits for the frame's launches

    def keep(self, plane: Any) -> Any:
        return self.ops.copy(plane).reshape(1, plane.size)


class KernelRieszStream(riesz_driver.RieszStream):
    """riesz_butterworth / riesz_iir frame by frame on the shared kernel tier: ``push(frame) -> frame`` (host
    uint8 (H, W, 3) in and out) and ``retune(plan)``; frame 0 comes out as its input bytes.

    Parameters
    ----------
    ops : vidmag.backend.kernels.operations.KernelOperations
        The device's primitives.
    plan : Plan
        A riesz_butterworth or riesz_iir plan.

    See Also
    --------
    vidmag.backend.phase.PhaseStream : the stream a backend hands out, over this.

    Examples
    --------
    >>> from vidmag.backend.kernels.riesz import KernelRieszStream
    >>> KernelRieszStream.__name__
    'KernelRieszStream'
    """

    driver = KernelRiesz


def frames(ops: Any, plan: Plan, source: Callable[[], Iterator[np.ndarray]]) -> Iterator[np.ndarray]:
    """A Riesz pipeline over a frame source on the shared kernel tier.

    Parameters
    ----------
    ops : vidmag.backend.kernels.operations.KernelOperations
        The device's primitives.
    plan, source
        As :func:`vidmag.backend.riesz_driver.frames` takes them.

    Returns
    -------
    iterator of numpy.ndarray
        Host uint8 (H, W, 3) frames.

    See Also
    --------
    phase_backend : a backend that routes the Riesz plans here.

    Examples
    --------
    >>> from vidmag.backend.kernels import riesz
    >>> riesz.PIPELINES
    ('riesz_ideal', 'riesz_butterworth', 'riesz_iir')
    """
    return riesz_driver.frames(KernelRieszStream, ops, plan, source)


def phase_backend(linear: Any) -> Any:
    """``linear`` (a backend of :func:`vidmag.backend.generic.bind` over
    :class:`~vidmag.backend.kernels.operations.KernelOperations`) that also runs the Riesz pipelines here.

    Parameters
    ----------
    linear : vidmag.backend.generic.Backend
        The backend of the linear pipelines.

    Returns
    -------
    vidmag.backend.phase.PhaseBackend
        The same backend (name, primitives, fused tier) with riesz_ideal, riesz_butterworth and riesz_iir,
        and riesz_ideal's steps for the bounded-memory route.

    See Also
    --------
    vidmag.backend.phase.PhaseBackend

    Examples
    --------
    >>> from vidmag.backend.kernels.riesz import phase_backend
    >>> phase_backend.__name__
    'phase_backend'
    """
    from vidmag.backend.phase import PhaseBackend

    ops = linear.operations
    return PhaseBackend(linear, pipelines=PIPELINES, frames=lambda plan, source: frames(ops, plan, source),
                        stream=lambda plan: KernelRieszStream(ops, plan),
                        steps=lambda plan: riesz_driver.IdealSteps(KernelRiesz, ops, plan),
                        bounded=("riesz_ideal",))
