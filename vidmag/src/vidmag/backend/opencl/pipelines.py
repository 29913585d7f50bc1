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
import pyopencl as cl
import pyopencl.array as cla

from vidmag._reference.colour import RGB_TO_YIQ, YIQ_TO_RGB_EXACT, YIQ_TO_RGB_MIT
from vidmag._reference.temporal import butterworth_lowpass
from vidmag.backend import spatial_taps
from vidmag.backend.generic import _kept_levels
from vidmag.backend.opencl.operations import OpenCLOperations, _dense, _sized
from vidmag.params import Plan

Source = Callable[[], Iterator[np.ndarray]]

#: Bytes of input frames one chunk holds (10 baby frames, 17 face frames). The device also holds that chunk's
#: float pyramid (about 8 times as much, in scratch arrays reused from chunk to chunk and shared between
#: stages where shapes allow). Measured with PoCL: `vidmag magnify --preset baby` peaks at 443 MB of resident
#: memory at this size (405 MB at 12 MiB, 384 MB at 8 MiB), and 16 MiB ran face and baby 5 to 15% faster
#: than 8 or 12 MiB (fewer launches per frame).
CHUNK_BYTES = 16 * 2**20


def _device_chunks(
    ops: OpenCLOperations, frames: Iterator[np.ndarray], size: int, shape: tuple[int, int]
) -> Iterator[cla.Array]:
    """Consecutive frames on the device, at most ``size`` per chunk.

    Frames that already lie one after another in host memory (the slices of a clip array that
    ``vidmag.magnify`` hands over) become a buffer over that memory (``USE_HOST_PTR``): no copy on a device
    that shares the host's memory, such as PoCL's. Other frames (decoded ones) are copied once each into a
    device array reused from chunk to chunk. A chunk is valid until the next one is requested (the fused
    pipelines enqueue all their work on it before that).
    """
    pending: list[np.ndarray] = []
    for frame in frames:
        pending.append(frame)
        if len(pending) == size:
            yield _to_device(ops, pending, size, shape)
            pending = []
    if pending:
        yield _to_device(ops, pending, size, shape)


def _to_device(ops: OpenCLOperations, frames: list, size: int, shape: tuple[int, int]) -> cla.Array:
    span = _contiguous_span(frames)
    if span is not None:
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR
        buffer = cl.Buffer(ops.rt.context, flags, hostbuf=span)  # pyopencl keeps span alive with it
        return cla.Array(ops.rt.queue, span.shape, np.uint8, data=buffer)
    target = ops.scratch("frames", (size, *shape, 3), np.uint8)
    frame_bytes = shape[0] * shape[1] * 3
    for i, frame in enumerate(frames):
        cl.enqueue_copy(ops.rt.queue, target.data, np.ascontiguousarray(frame), dst_offset=i * frame_bytes)
    return target if len(frames) == size else target[: len(frames)]


def _contiguous_span(frames: list) -> np.ndarray | None:
    """The frames as one (n, H, W, 3) view when each directly follows the one before in memory, else None."""
    first = frames[0]
    if not (first.flags.c_contiguous and first.flags.writeable):
        return None
    start = first.__array_interface__["data"][0]
    for i, frame in enumerate(frames[1:], start=1):
        address = frame.__array_interface__["data"][0]
        if not (frame.flags.c_contiguous and address == start + i * first.nbytes):
            return None
    strides = (first.nbytes, *first.strides)
    return np.lib.stride_tricks.as_strided(first, shape=(len(frames), *first.shape), strides=strides)


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
        # the kernel writes straight into a fresh host array (USE_HOST_PTR: on a device sharing the host's
        # memory, such as PoCL's, there is no copy back); the map below makes its contents valid on the host
        host = np.empty(frames.shape, np.uint8)
        flags = cl.mem_flags.WRITE_ONLY | cl.mem_flags.USE_HOST_PTR
        out = cl.Buffer(self.rt.context, flags, hostbuf=host)
        iy, wy = self.ops.taps(taps_y)
        k = taps_y.index.shape[1]
        # frames at least 8 pixels wide take the hand-vectorised kernel (8 pixels per work item), in its
        # cheaper form when C is diagonal and the signal is already RGB (E the identity)
        vector = W >= 8
        if not vector:
            name = "output_cols"
        elif _is_diagonal(c_mat) and np.array_equal(e_mat, np.eye(3)):
            name = "output_cols8_rgb"
        else:
            name = "output_cols8"
        self.rt.launch(
            "fused",
            _sized(name, k),
            (-(-W // 8) if vector else W, H, n),
            frames.data,
            signal.data,
            out,
            iy,
            wy,
            np.int32(k),
            np.int32(H),
            np.int32(W),
            np.int32(signal.shape[1]),
            *_scalars(c_mat, e_mat),
        )
        mapped, _ = cl.enqueue_map_buffer(
            self.rt.queue, out, cl.map_flags.READ, 0, host.shape, host.dtype, is_blocking=True
        )
        mapped.base.release()
        return host

    def render_2d(self, frames, signal, taps_y, taps_x, c_mat, e_mat, key: str = "render-wide") -> np.ndarray:
        """Bytes out of frames (n, H, W, 3) plus a signal (n, h, w, 3) resampled in both directions.

        Separably: along the width first, at the signal's height (a fraction of the output's pixels), then
        along the height in the output kernel.
        """
        wide = self.ops.map_rows(signal, taps_x, out_key=key)
        return self.render_cols(frames, wide, taps_y, c_mat, e_mat)


def _is_diagonal(m: np.ndarray) -> bool:
    # C under the exact inverse is the identity / 255 up to float64 rounding (off-diagonal terms ~1e-19)
    return bool(np.all(np.abs(m - np.diag(np.diag(m))) < 1e-12 * np.abs(np.diag(m)).max()))


def _scalars(*matrices: np.ndarray) -> list[np.float32]:
    return [np.float32(v) for m in matrices for v in np.asarray(m, dtype=np.float64).ravel()]


def gaussian_ideal(ops: OpenCLOperations, plan: Plan, source: Source) -> Iterator[np.ndarray]:
    """Gaussian down stack from the bytes, band-pass of the small stack, one fused output pass."""
    p, H, W = plan.params, plan.height, plan.width
    fused = _Fused(ops)
    size, shape = _chunk_frames(plan), (H, W)
    pieces = []
    down_h, down_w = spatial_taps.gaussian_down(H, p["level"]), spatial_taps.gaussian_down(W, p["level"])
    for frames in _device_chunks(ops, source(), size, shape):
        # the whole down stack as one composed map per axis (about 4 * 2^level taps): along the height first,
        # straight from the bytes with the vectorised kernel, which leaves an image 2^level times shorter for
        # the horizontal gather
        rows = ops.map_cols(frames, down_h, out_key="down-cols")
        pieces.append(ops.map_rows(rows, down_w))
    if not pieces:
        return
    small = ops.apply_matrix(ops.concat_frames(pieces), RGB_TO_YIQ / 255.0)
    alpha, ca = p["alpha"], p["chrom_attenuation"]
    signal = ops.bandpass(
        small, p["fl"], p["fh"], plan.fs, mit=plan.mit, gains=(alpha, alpha * ca, alpha * ca)
    )
    small_h, small_w = small.shape[1:3]
    taps_y, taps_x = spatial_taps.bicubic(small_h, H), spatial_taps.bicubic(small_w, W)
    c_mat, e_mat = _output_matrices(plan.mit, np.eye(3))
    # the signal's colour matrix applied to the small signal (linear, so it commutes with the resampling);
    # the output pass then adds an RGB signal
    signal, e_mat = ops.apply_matrix(signal, e_mat), np.eye(3)
    start = 0
    for frames in _device_chunks(ops, source(), size, shape):
        n = frames.shape[0]
        # the chunk's slice of the small signal, widened to full width here (a scratch array the size of a
        # chunk, not a full-width copy of the whole clip), then resampled along the height in the output pass
        part = _dense(ops.take_frames(signal, start, start + n))
        wide = ops.map_rows(part, taps_x, out_key="render-wide")
        yield from fused.render_cols(frames, wide, taps_y, c_mat, e_mat)
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

        # level 1 from the bytes, along the height first: the vectorised vertical pass reads the bytes and
        # the (slower) horizontal one runs on half the rows; the order of two linear maps changes nothing but
        # float32 rounding
        image = ops.map_cols(frames, reduce_h[0], out_key=key("rows0"))
        image = ops.map_rows(image, reduce_w[0], out_key=key("low1"))
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
            _scan(ops, band, states[level], n, c1, c2, gains[level])
        signal = filtered[top]
        # the collapse writes into the scratch arrays of bands() that have the same shapes and are dead by now
        # ("up{level}", "low{level}"), which bounds the memory a chunk holds
        for level in range(top - 1, 0, -1):
            up = ops.map_rows(signal, expand_w[level + 1], out_key=f"up{level}")
            if level in filtered:
                signal = ops.map_cols(
                    up, expand_h[level + 1], other=filtered[level], mode=1, out_key=f"low{level}"
                )
            else:
                signal = ops.map_cols(up, expand_h[level + 1], out_key=f"low{level}")
        # the widened signal has the shape of "rows0" (level 0 reduced along the height only), which is dead
        # by now: sharing the scratch array saves a full-width float buffer per chunk
        yield from fused.render_2d(frames, signal, expand_h[1], expand_w[1], c_mat, e_mat, key="rows0")


def _scan(
    ops: OpenCLOperations, band: cla.Array, state: tuple, n: int, c1: tuple, c2: tuple, gain: float
) -> None:
    """Run ``n`` frames of a band through the two low-passes of ``state``; the band becomes gain (lp1 - lp2).

    The hand-vectorised kernel takes 8 samples per work item; the scalar one, started at an offset, the rest.
    """
    s1, s2, xp = state
    p = s1.size
    coefficients = [np.float32(c) for c in (*c1, *c2)]
    args = (band.data, s1.data, s2.data, xp.data, np.int32(n), np.int64(p), *coefficients)
    g = np.float32(gain)
    if p // 8:
        ops.rt.launch("temporal", "first_order_scan8", (p // 8,), *args, g)
    if p % 8:
        tail = p - p % 8
        ops.rt.launch("temporal", "first_order_scan", (p % 8,), *args, g, g, g, offset=(tail,))


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
