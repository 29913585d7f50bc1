"""Fused whole-clip pipelines of the ``opencl`` backend (they replace the generic ones for speed).

They compute what the generic pipelines compute, in fewer and larger launches, with two rewrites that are
exact in real arithmetic (so float32 results agree with the reference to its rounding):

- The spatial filters, the temporal filters and the gains are linear and treat the three channels alike, and
  the RGB -> YIQ matrix mixes channels only within a pixel, so the two commute: the pyramid (or the Gaussian
  down stack) is built straight from the frame's bytes, and the colour matrices are applied once to the
  small signal and once to the frame in the output kernel (``out = handle(C rgb + E signal)``).
- The last expand of the Laplacian collapse (or the bicubic resize of the Gaussian pipeline), the addition to
  the frame, the colour conversion, the MIT output handling and the rounding are one kernel.

The clip crosses to the device in chunks of frames; everything between upload and the output bytes stays on
the device.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pyopencl.array as cla

from vidmag._reference.colour import RGB_TO_YIQ, YIQ_TO_RGB_EXACT, YIQ_TO_RGB_MIT
from vidmag._reference.temporal import butterworth_lowpass
from vidmag.backend import spatial_taps
from vidmag.backend.generic import _kept_levels
from vidmag.backend.opencl.operations import OpenCLOperations, _dense, _sized
from vidmag.params import Plan

Source = Callable[[], Iterator[np.ndarray]]

#: Bytes of input frames one chunk holds (the device also holds that chunk's float pyramid, about 8 times as
#: much). 16 MiB measured faster than 4, 8 or 48 MiB on baby and face with PoCL, and bounds the memory held.
CHUNK_BYTES = 16 * 2**20


def _device_chunks(
    ops: OpenCLOperations, frames: Iterator[np.ndarray], size: int, shape: tuple[int, int]
) -> Iterator[cla.Array]:
    """Consecutive frames on the device, at most ``size`` per chunk.

    Frames are copied once, into a host staging array, then to a device array; both are reused from chunk to
    chunk (and call to call), so no fresh memory is touched per chunk. A chunk is valid until the next one is
    requested (the fused pipelines enqueue all their work on it before that).
    """
    staging = ops.host_scratch("frames", (size, *shape, 3), np.uint8)
    count = 0
    for frame in frames:
        staging[count] = frame
        count += 1
        if count == size:
            yield ops.upload_into("frames", staging)
            count = 0
    if count:
        yield ops.upload_into("frames", staging[:count])


def _chunk_frames(plan: Plan) -> int:
    return max(1, CHUNK_BYTES // (plan.height * plan.width * 3))


def _output_matrices(mit: bool, signal_to_yiq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C (bytes -> RGB in [0, 1] through YIQ and back) and E (signal -> RGB in [0, 1])."""
    inverse = YIQ_TO_RGB_MIT if mit else YIQ_TO_RGB_EXACT
    return inverse @ RGB_TO_YIQ / 255.0, inverse @ signal_to_yiq


class _Fused:
    """The launches the fused pipelines share."""

    def __init__(self, ops: OpenCLOperations) -> None:
        self.ops = ops
        self.rt = ops.rt

    def render_cols(self, frames, signal, taps_y, c_mat, e_mat) -> np.ndarray:
        """Bytes out of frames (n, H, W, 3) plus a signal (n, h, W, 3) resampled along the height."""
        n, H, W, _ = frames.shape
        out = self.ops.scratch("output", frames.shape, np.uint8)
        iy, wy = self.ops.taps(taps_y)
        self.rt.launch(
            "fused",
            _sized("output_cols", taps_y.index.shape[1]),
            (W, H, n),
            frames.data,
            signal.data,
            out.data,
            iy.data,
            wy.data,
            np.int32(taps_y.index.shape[1]),
            np.int32(H),
            np.int32(W),
            np.int32(signal.shape[1]),
            *_scalars(c_mat, e_mat),
        )
        return out.get()

    def render_2d(self, frames, signal, taps_y, taps_x, c_mat, e_mat) -> np.ndarray:
        """Bytes out of frames (n, H, W, 3) plus a signal (n, h, w, 3) resampled in both directions."""
        n, H, W, _ = frames.shape
        k = max(taps_y.index.shape[1], taps_x.index.shape[1])
        taps_y, taps_x = _widen(taps_y, k), _widen(taps_x, k)
        out = self.ops.scratch("output", frames.shape, np.uint8)
        iy, wy = self.ops.taps(taps_y)
        ix, wx = self.ops.taps(taps_x)
        self.rt.launch(
            "fused",
            _sized("output_2d", k),
            (W, H, n),
            frames.data,
            signal.data,
            out.data,
            iy.data,
            wy.data,
            ix.data,
            wx.data,
            np.int32(k),
            np.int32(H),
            np.int32(W),
            np.int32(signal.shape[1]),
            np.int32(signal.shape[2]),
            *_scalars(c_mat, e_mat),
        )
        return out.get()


def _scalars(*matrices: np.ndarray) -> list[np.float32]:
    return [np.float32(v) for m in matrices for v in np.asarray(m, dtype=np.float64).ravel()]


def _widen(taps: spatial_taps.Taps, k: int) -> spatial_taps.Taps:
    """The same map with ``k`` taps per output (extra taps: sample 0, weight 0)."""
    extra = k - taps.index.shape[1]
    if extra == 0:
        return taps
    pad = ((0, 0), (0, extra))
    return spatial_taps.Taps(np.pad(taps.index, pad), np.pad(taps.weight, pad), taps.n_in)


def gaussian_ideal(ops: OpenCLOperations, plan: Plan, source: Source) -> Iterator[np.ndarray]:
    """Gaussian down stack from the bytes, band-pass of the small stack, one fused output pass."""
    p, H, W = plan.params, plan.height, plan.width
    fused = _Fused(ops)
    size, shape = _chunk_frames(plan), (H, W)
    pieces = []
    for frames in _device_chunks(ops, source(), size, shape):
        # step by step with the 5-tap kernels (unrolled), which run faster than one pass of the composed
        # ~60-tap map; the first step reads the bytes
        image, h, w = frames, H, W
        for step in range(p["level"]):
            last = step == p["level"] - 1  # the last image is kept: a fresh array, not a scratch one
            image = ops.map_cols(image, spatial_taps.reduce(h, "gaussian"), out_key=f"down-cols{step}")
            image = ops.map_rows(
                image, spatial_taps.reduce(w, "gaussian"), out_key=None if last else f"down{step}"
            )
            h, w = (h + 1) // 2, (w + 1) // 2
        pieces.append(image)
    if not pieces:
        return
    small = ops.apply_matrix(ops.concat_frames(pieces), RGB_TO_YIQ / 255.0)
    alpha, ca = p["alpha"], p["chrom_attenuation"]
    signal = ops.bandpass(
        small, p["fl"], p["fh"], plan.fs, mit=plan.mit, gains=(alpha, alpha * ca, alpha * ca)
    )
    small_h, small_w = small.shape[1:3]
    signal = ops.map_rows(signal, spatial_taps.bicubic(small_w, W))
    c_mat, e_mat = _output_matrices(plan.mit, np.eye(3))
    taps_y = spatial_taps.bicubic(small_h, H)
    start = 0
    for frames in _device_chunks(ops, source(), size, shape):
        n = frames.shape[0]
        yield from fused.render_cols(
            frames, _dense(ops.take_frames(signal, start, start + n)), taps_y, c_mat, e_mat
        )
        start += n


def _streaming(
    ops: OpenCLOperations, plan: Plan, source: Source, c1: tuple, c2: tuple
) -> Iterator[np.ndarray]:
    """The Laplacian pyramid from the bytes, two first-order low-passes per kept level, fused output."""
    fused = _Fused(ops)
    sizes, gains = plan.level_sizes, plan.gains
    kept = _kept_levels(plan)
    frames_in = source()
    first = next(frames_in, None)
    if first is None:
        return
    yield np.array(
        first, dtype=np.uint8
    )  # every state starts at frame 0, so it is written as its input bytes
    if not kept:
        for frame in frames_in:
            yield fused.render_2d(
                ops.upload(frame[None]),
                ops.rt.empty((1, *sizes[1], 3)).fill(0),
                spatial_taps.expand(sizes[1][0], sizes[0][0]),
                spatial_taps.expand(sizes[1][1], sizes[0][1]),
                *_output_matrices(plan.mit, np.zeros((3, 3))),
            )[0]
        return
    top = max(kept)
    ca = plan.params["chrom_attenuation"]
    c_mat, e_mat = _output_matrices(plan.mit, np.diag([1.0, ca, ca]) @ RGB_TO_YIQ / 255.0)
    reduce_h = [spatial_taps.reduce(h, "laplacian") for h, _ in sizes]
    reduce_w = [spatial_taps.reduce(w, "laplacian") for _, w in sizes]
    expand_h = [None] + [spatial_taps.expand(sizes[i][0], sizes[i - 1][0]) for i in range(1, len(sizes))]
    expand_w = [None] + [spatial_taps.expand(sizes[i][1], sizes[i - 1][1]) for i in range(1, len(sizes))]

    def bands(frames, scratch: bool) -> dict:
        # With scratch=True every array is a scratch one, reused from chunk to chunk (no fresh memory to
        # touch); the filter states are made with scratch=False, since they must outlive the chunk.
        def key(name: str) -> str | None:
            return name if scratch else None

        image = ops.map_rows(frames, reduce_w[0], out_key=key("rows0"))
        image = ops.map_cols(image, reduce_h[0], out_key=key("low1"))  # level 1, from the bytes
        out = {}
        for level in range(1, top + 1):
            low = ops.map_rows(image, reduce_w[level], out_key=key(f"rows{level}"))
            low = ops.map_cols(low, reduce_h[level], out_key=key(f"low{level + 1}"))
            if level in kept:
                up = ops.map_rows(low, expand_w[level + 1], out_key=key(f"up{level}"))
                out[level] = ops.map_cols(
                    up, expand_h[level + 1], other=image, mode=2, out_key=key(f"band{level}")
                )
            image = low
        return out

    states = {}
    for level, band in bands(ops.upload(first[None]), scratch=False).items():
        flat = band.reshape(band.size)
        states[level] = (flat, flat.copy(), flat.copy())
    for frames in _device_chunks(ops, frames_in, _chunk_frames(plan), (plan.height, plan.width)):
        n = frames.shape[0]
        filtered = bands(frames, scratch=True)
        for level, band in filtered.items():
            s1, s2, xp = states[level]
            g = np.float32(gains[level])
            ops.rt.launch(
                "temporal",
                "first_order_scan",
                (s1.size,),
                band.data,
                s1.data,
                s2.data,
                xp.data,
                np.int32(n),
                np.int64(s1.size),
                *(np.float32(c) for c in c1),
                *(np.float32(c) for c in c2),
                g,
                g,
                g,
            )
        signal = filtered[top]
        for level in range(top - 1, 0, -1):
            up = ops.map_rows(signal, expand_w[level + 1], out_key=f"collapse-up{level}")
            if level in filtered:
                signal = ops.map_cols(
                    up, expand_h[level + 1], other=filtered[level], mode=1, out_key=f"collapse{level}"
                )
            else:
                signal = ops.map_cols(up, expand_h[level + 1], out_key=f"collapse{level}")
        yield from fused.render_2d(frames, signal, expand_h[1], expand_w[1], c_mat, e_mat)


def laplacian_iir(ops: OpenCLOperations, plan: Plan, source: Source) -> Iterator[np.ndarray]:
    """The MIT IIR band-pass, fused (see the module docstring)."""
    r1, r2 = plan.params["r1"], plan.params["r2"]
    return _streaming(ops, plan, source, (1.0 - r1, r1, 0.0), (1.0 - r2, r2, 0.0))


def laplacian_butterworth(ops: OpenCLOperations, plan: Plan, source: Source) -> Iterator[np.ndarray]:
    """The Butterworth band-pass LP(fh) - LP(fl), fused (see the module docstring)."""

    def coefficients(f):
        c = butterworth_lowpass(f, plan.fs, mit=plan.mit)
        return (-c.a1 / c.a0, c.b0 / c.a0, c.b1 / c.a0)

    return _streaming(ops, plan, source, coefficients(plan.params["fh"]), coefficients(plan.params["fl"]))


def fused_pipelines(ops: OpenCLOperations) -> dict[str, Callable]:
    """The overrides for :func:`vidmag.backend.generic.bind`: pipeline name -> ``(plan, source)`` callable."""
    return {
        "gaussian_ideal": lambda plan, source: gaussian_ideal(ops, plan, source),
        "laplacian_iir": lambda plan, source: laplacian_iir(ops, plan, source),
        "laplacian_butterworth": lambda plan, source: laplacian_butterworth(ops, plan, source),
    }
