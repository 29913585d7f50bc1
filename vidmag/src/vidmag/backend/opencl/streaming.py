"""The streaming pipelines on OpenCL with a few launches per batch: :class:`FusedFilterState`.

A live stream pushes one frame at a time, and a frame's work over the stages of
:class:`~vidmag.backend.stages.FusedStages` is some fifty launches (four per pyramid level down, two or three
per level for the scan, two per level for the collapse); on a processor each launch costs about a
millisecond whatever its size, which bounded a 720p stream near 14 frames/s. Here a batch of frames is:

- two launches for level 0 -> 1, from the bytes (the vectorised tap maps of ``resample.cl``, as before);
- one launch per level further down (``reduce2d`` of ``fused.cl``: both axes in one gather; two for the
  large levels, :data:`SPLIT_REDUCE_PIXELS`: the width, then the height vectorised), down to the
  small levels (at most :data:`TAIL_PIXELS` pixels each), which go down and back up in one launch of one
  work group (``tail_levels``, a barrier between levels);
- on the way up, one launch per level (``level_up``: the band, both low-passes, the gain and the collapse
  step in one pass, the state updated in place), two for the large levels (:data:`SPLIT_PIXELS`), where
  the arithmetic matters more than a launch (``widen2`` along the width at the coarse height, then
  ``level_up8`` on 8 values per work item);
- two launches for the output (widen the level-1 signal, then ``output_cols8``: expand along the height, add,
  colour back, MIT output handling, bytes).

That is 15 launches for a 720p frame (52 through the stages), with the frames read where they lie in host
memory and the output written straight into a host array where the device shares the host's memory (PoCL),
else one copy each way. The kernels, their arguments and the buffers are set up once per plan and batch size
and reused push after push, so a push is little more than the enqueues.

The whole-clip run of the streaming pipelines on this backend runs this state too (batch after batch), and
each frame is computed the same way whatever the batch, so a stream equals the whole-clip run bitwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyopencl as cl

from vidmag.backend import spatial_taps
from vidmag.backend.opencl.operations import sized_kernel
from vidmag.backend.stages import output_matrices
from vidmag.backend.stream import FilterState, first_frame
from vidmag.params import Plan

__all__ = ["FusedFilterState"]

#: Levels of at least this many pixels go up in two launches (``widen2``, then the vectorised ``level_up8``):
#: there the arithmetic outweighs a launch. Measured at 720p with PoCL on 2 cores: level 1 (640 x 360) took
#: 4.2 ms in one scalar launch.
SPLIT_PIXELS = 96 * 96

#: Levels of at least this many pixels are reduced in two launches (the width, then the height on 8 values
#: per work item) rather than in one scalar ``reduce2d``: 720p level 1 (640 x 360) took 0.9 ms in reduce2d.
SPLIT_REDUCE_PIXELS = 256 * 256

#: Levels of at most this many pixels go down and up together in one launch of one work group
#: (``tail_levels``): there a launch costs far more than the arithmetic.
TAIL_PIXELS = 64 * 64

#: Alignment of the states' sub-buffers in bytes (at least any device's CL_DEVICE_MEM_BASE_ADDR_ALIGN).
_ALIGN = 4096

#: mode bits of ``level_up`` (fused.cl)
_BAND, _COARSER, _START = 1, 2, 4


def _is_diagonal(m: np.ndarray) -> bool:
    return bool(np.all(np.abs(m - np.diag(np.diag(m))) < 1e-12 * np.abs(np.diag(m)).max()))


class _Launch:
    """One kernel with its arguments set once, and its work sizes: enqueued as is at every push."""

    __slots__ = ("global_size", "kernel", "local_size")

    def __init__(self, kernel: Any, global_size: tuple[int, ...], local_size: tuple[int, ...]) -> None:
        self.kernel, self.global_size, self.local_size = kernel, global_size, local_size


class FusedFilterState(FilterState):
    """The :class:`~vidmag.backend.stream.FilterState` of the streaming pipelines over per-level kernels.

    The same attributes and semantics as its base (``plan``, ``filter``, ``kept``, ``states``,
    ``consistent``; :meth:`vidmag.backend.stream.Stream.retune` changes them between pushes); ``states``
    maps each level to its three device buffers (the two low-passes and the previous band). With no kept
    level (every gain 0) there is no pyramid, and the base's stages do the colour round trip.

    Parameters
    ----------
    stages : FusedStages
        The backend's stages over :class:`~vidmag.backend.opencl.pipelines.OpenCLFused` (used when no level
        is kept).
    fused : OpenCLFused
    plan : Plan
    """

    def __init__(self, stages: Any, fused: Any, plan: Plan) -> None:
        super().__init__(stages, plan)
        self.fused = fused
        self.rt = fused.rt  # vidmag's Device: kernels by file and name, the runtime's queue and context
        self._capacity = 0  # frames the buffers hold
        self._buffers: dict[Any, Any] = {}
        self._tables: dict[Any, Any] = {}
        self._cache: dict[tuple, list[_Launch]] = {}  # (plan identity, frames, start?) -> the launches
        self._planned: Plan | None = None
        self._packed_states: Any = None

    # --- set-up ---------------------------------------------------------------------------------------
    def _buffer(self, key: Any, nbytes: int) -> Any:
        buffer = self._buffers.get(key)
        if buffer is None:
            buffer = self._buffers[key] = cl.Buffer(self.rt.context, cl.mem_flags.READ_WRITE,
                                                    size=max(int(nbytes), 4))
        return buffer

    def _table(self, host: np.ndarray, dtype) -> Any:
        host = np.ascontiguousarray(host, dtype=dtype)
        key = (host.dtype.str, host.shape, host.tobytes())
        buffer = self._tables.get(key)
        if buffer is None:
            flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
            buffer = self._tables[key] = cl.Buffer(self.rt.context, flags, hostbuf=host)
        return buffer

    def _taps(self, taps: spatial_taps.Taps) -> tuple[Any, Any, np.int32]:
        return (self._table(taps.index, np.int32), self._table(taps.weight, np.float32),
                np.int32(taps.index.shape[1]))

    def _launch(self, file: str, name: str, global_size: tuple[int, ...], *args: Any) -> _Launch:
        # a kernel object of its own (arguments are state of the object): two streams, or the backend's
        # other pipelines, never see each other's arguments
        shared = self.rt.kernel(file, name)
        config = self.rt.runtime.cover(shared, global_size)
        kernel = cl.Kernel(shared.handle.program, shared.handle.function_name)
        kernel.set_args(*args)
        return _Launch(kernel, tuple(config.global_size), tuple(config.local_size))

    def _start_states(self) -> dict[int, tuple]:
        """Every kept level's state (two low-passes and the previous band, (h, w, 3) each) in one buffer, at
        aligned offsets: the tail kernel reads them through one argument, the per-level kernels through
        sub-buffers. Values per level: (s1, s2, xp, offset in floats)."""
        sizes = self.plan.level_sizes
        offsets, total = {}, 0
        for level in self.kept:
            offsets[level] = total
            total += 3 * self._stride(sizes[level])
        packed = cl.Buffer(self.rt.context, cl.mem_flags.READ_WRITE, size=max(total * 4, 4))
        states: dict[int, tuple] = {}
        for level, offset in offsets.items():
            stride, nbytes = self._stride(sizes[level]), 3 * sizes[level][0] * sizes[level][1] * 4
            parts = tuple(packed.get_sub_region((offset + i * stride) * 4, nbytes) for i in range(3))
            states[level] = (*parts, offset)
        self._packed_states = packed
        return states

    @staticmethod
    def _stride(size: tuple[int, int]) -> int:
        """Floats from one of a level's three states to the next (its size, aligned)."""
        align = _ALIGN // 4
        return -(-3 * size[0] * size[1] // align) * align

    def _tail_start(self) -> int | None:
        """The first level of the tail kernel (``tail_levels``): the levels from it to the top kept one are
        all small, with the usual tap counts, and at least two; None when there is no such tail."""
        sizes, top = self.plan.level_sizes, max(self.kept)
        first = None
        for level in range(top, 0, -1):
            h, w = sizes[level]
            (hl, wl) = sizes[level + 1]
            if h * w > TAIL_PIXELS or spatial_taps.reduce(h, "laplacian").index.shape[1] != 5 \
                    or spatial_taps.reduce(w, "laplacian").index.shape[1] != 5 \
                    or spatial_taps.expand(hl, h).index.shape[1] != 3 \
                    or spatial_taps.expand(wl, w).index.shape[1] != 3:
                break
            first = level
        return first if first is not None and top - first >= 1 else None

    def _tail(self, first: int, n: int, start: bool, image: Any, signal: Any,
              coefficients: list) -> _Launch:
        """The launch of ``tail_levels`` over levels ``first`` .. top (see fused.cl for ``meta``)."""
        plan, sizes, top = self.plan, self.plan.level_sizes, max(self.kept)
        count = top - first + 1
        meta = np.zeros((count + 1, 12), np.int32)
        indices: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        used = 0

        def table(taps: spatial_taps.Taps) -> int:
            nonlocal used
            start_at = used
            indices.append(taps.index.ravel())
            weights.append(taps.weight.ravel())
            used += taps.index.size
            return start_at

        floats = 0
        for j in range(count + 1):
            level = first + j
            h, w = sizes[level]
            meta[j, 0:2] = h, w
            if j > 0:
                meta[j, 2] = floats  # its image, in the scratch
                floats += h * w * 3
                if j < count:
                    meta[j, 3] = floats  # its signal
                    floats += h * w * 3
            if j < count:
                (hl, wl) = sizes[level + 1]
                meta[j, 4] = self.states[level][3] if level in self.kept else 0
                meta[j, 5] = level in self.kept
                meta[j, 6] = table(spatial_taps.reduce(h, "laplacian"))
                meta[j, 7] = table(spatial_taps.reduce(w, "laplacian"))
                meta[j, 8] = table(spatial_taps.expand(hl, h))
                meta[j, 9] = table(spatial_taps.expand(wl, w))
                meta[j, 10] = level
                meta[j, 11] = self._stride((h, w))
        scratch = self._buffer(("tail", first), floats * 4)
        shared = self.rt.kernel("fused", "tail_levels")
        group = min(256, self.rt.runtime.group_limit(shared))
        kernel = cl.Kernel(shared.handle.program, shared.handle.function_name)
        kernel.set_args(image, signal, scratch, self._packed_states, self._table(meta, np.int32),
                        self._table(np.concatenate(indices), np.int32),
                        self._table(np.concatenate(weights), np.float32),
                        self._table(np.asarray(plan.gains, np.float64), np.float32), np.int32(n),
                        np.int32(count), np.int32(_START if start else 0), *coefficients)
        return _Launch(kernel, (group,), (group,))

    def _build(self, n: int, start: bool) -> list[_Launch]:
        """The launches of a batch of ``n`` frames (``start``: frame 0 alone, which starts the states)."""
        plan, kept = self.plan, self.kept
        sizes, top = plan.level_sizes, max(kept)
        H, W = plan.height, plan.width
        cap = self._capacity
        f32 = 4
        # the frames and the output are buffers over host memory, new at every push: their arguments are
        # set then (a placeholder until then)
        frames = result = self._buffer("placeholder", 4)
        level_bytes = {lv: cap * h * w * 3 * f32 for lv, (h, w) in enumerate(sizes)}
        h1, w1 = sizes[1]
        rows0 = self._buffer("rows0", cap * h1 * W * 3 * f32)  # level 0 reduced along the height; later
        # the widened level-1 signal (the same shape, dead by then)
        image = {lv: self._buffer(("image", lv), level_bytes[lv]) for lv in range(1, top + 2)}
        signal = {lv: self._buffer(("signal", lv), level_bytes[lv]) for lv in range(1, top + 1)}
        out: list[_Launch] = []

        # level 0 -> 1 from the bytes: along the height (16 bytes per work item), then the width
        taps = spatial_taps.reduce(H, "laplacian")
        w3 = W * 3
        per_item = 16 if w3 >= 16 else 8 if w3 >= 8 else 1
        base = {16: "cols16", 8: "cols8", 1: "resample_cols"}[per_item]
        iy, wy, ky = self._taps(taps)
        out.append(self._launch("resample", sized_kernel(f"{base}_u8", int(ky)), (-(-w3 // per_item), h1, n),
                                frames, rows0, rows0, iy, wy, ky, np.int32(H), np.int32(h1), np.int32(w3),
                                np.int32(0)))
        taps = spatial_taps.reduce(W, "laplacian")
        ix, wx, kx = self._taps(taps)
        out.append(self._launch("resample", sized_kernel("resample_rows_f32", int(kx)), (w1, n * h1),
                                rows0, image[1], ix, wx, kx, np.int32(W), np.int32(w1)))
        # further down: one launch per level, down to the tail's first level (or to the top)
        tail = self._tail_start()
        for level in range(1, top + 1 if tail is None else tail):
            (h, w), (ho, wo) = sizes[level], sizes[level + 1]
            iy, wy, ky = self._taps(spatial_taps.reduce(h, "laplacian"))
            ix, wx, kx = self._taps(spatial_taps.reduce(w, "laplacian"))
            if h * w >= SPLIT_REDUCE_PIXELS and wo * 3 >= 8:
                # a large level: along the width (one pixel per work item), then the height, 8 values per
                # work item (the vectorised kernel of resample.cl), as FusedStages.bands does
                rows = self._buffer(("rows", level), cap * h * wo * 3 * f32)
                out.append(self._launch("resample", sized_kernel("resample_rows_f32", int(kx)), (wo, n * h),
                                        image[level], rows, ix, wx, kx, np.int32(w), np.int32(wo)))
                out.append(self._launch("resample", sized_kernel("cols8_f32", int(ky)),
                                        (-(-wo * 3 // 8), ho, n), rows, image[level + 1], image[level + 1],
                                        iy, wy, ky, np.int32(h), np.int32(ho), np.int32(wo * 3), np.int32(0)))
                continue
            name = "reduce2d_k5" if ky == 5 and kx == 5 else "reduce2d"
            out.append(self._launch("fused", name, (wo, ho, n), image[level], image[level + 1],
                                    iy, wy, ky, ix, wx, kx, np.int32(h), np.int32(w), np.int32(ho),
                                    np.int32(wo)))
        # the way up: the tail in one launch, then one launch per level (two for the large ones)
        c1, c2 = self.filter.coefficients()
        coefficients = [np.float32(c) for c in (*c1, *c2)]
        if tail is not None:
            out.append(self._tail(tail, n, start, image[tail], signal[tail], coefficients))
        for level in range(top if tail is None else tail - 1, 0, -1):
            has_band = level in kept
            if start and not has_band:
                continue
            (h, w), (hl, wl) = sizes[level], sizes[level + 1]
            mode = (_BAND if has_band else 0) | (_COARSER if level < top and not start else 0)
            mode |= _START if start else 0
            if has_band:
                s1, s2, xp, _ = self.states[level]
            else:
                s1 = s2 = xp = signal[level]  # not read
            iy, wy, ky = self._taps(spatial_taps.expand(hl, h))
            ix, wx, kx = self._taps(spatial_taps.expand(wl, w))
            coarse = signal[level + 1] if level < top else signal[level]  # not read at the top
            tail = (*coefficients, np.float32(plan.gains[level]))
            if h * w < SPLIT_PIXELS or (w * 3) % 8:
                name = "level_up_k3" if ky == 3 and kx == 3 else "level_up"
                out.append(self._launch("fused", name, (w, h), image[level], image[level + 1], coarse,
                                        signal[level], s1, s2, xp, iy, wy, ky, ix, wx, kx, np.int32(n),
                                        np.int32(h), np.int32(w), np.int32(hl), np.int32(wl),
                                        np.int32(mode), *tail))
                continue
            # a large level: the width's expand at the coarse height first, then 8 values per work item
            wide_low = self._buffer(("wide-low", level), cap * hl * w * 3 * f32)
            wide_coarse = self._buffer(("wide-coarse", level), cap * hl * w * 3 * f32)
            out.append(self._launch("fused", "widen2_k3" if kx == 3 else "widen2", (w, hl, n),
                                    image[level + 1], coarse, wide_low, wide_coarse, ix, wx, kx,
                                    np.int32(wl), np.int32(w), np.int32(mode)))
            out.append(self._launch("fused", "level_up8_k3" if ky == 3 else "level_up8", (w * 3 // 8, h),
                                    image[level], wide_low, wide_coarse, signal[level], s1, s2, xp,
                                    iy, wy, ky, np.int32(n), np.int32(h), np.int32(w * 3), np.int32(hl),
                                    np.int32(mode), *tail))
        if start:
            return out
        # the output: the level-1 signal widened at its own height, then one pass per output pixel
        ix, wx, kx = self._taps(spatial_taps.expand(w1, W))
        out.append(self._launch("resample", sized_kernel("resample_rows_f32", int(kx)), (W, n * h1),
                                signal[1], rows0, ix, wx, kx, np.int32(w1), np.int32(W)))
        c_mat, e_mat = output_matrices(plan.mit, self.stages.space, 1.0, plan.params["chrom_attenuation"])
        iy, wy, ky = self._taps(spatial_taps.expand(h1, H))
        if W < 8:
            name, items = "output_cols", W
        else:
            rgb = _is_diagonal(c_mat) and np.array_equal(e_mat, np.eye(3))
            name, items = ("output_cols8_rgb" if rgb else "output_cols8"), -(-W // 8)
        scalars = [np.float32(v) for m in (c_mat, e_mat) for v in np.asarray(m, np.float64).ravel()]
        out.append(self._launch("fused", sized_kernel(name, int(ky)), (items, H, n), frames, rows0, result,
                                iy, wy, ky, np.int32(H), np.int32(W), np.int32(h1), *scalars))
        return out

    def _launches(self, n: int, start: bool) -> list[_Launch]:
        if self._planned is not self.plan:  # a new plan (Stream.retune): new coefficients and gains
            self._cache.clear()
            self._planned = self.plan
        if n > self._capacity:  # larger buffers: every launch refers to them
            self._capacity = n
            self._buffers.clear()
            self._cache.clear()
        key = (n, start)
        launches = self._cache.get(key)
        if launches is None:
            launches = self._cache[key] = self._build(n, start)
        return launches

    # --- a batch --------------------------------------------------------------------------------------
    def push(self, group: Sequence[np.ndarray] | Any) -> list[Any]:
        if not self.kept:  # no pyramid: the colour round trip of the base's stages
            return super().push(group)
        if not isinstance(group, (list, tuple)):
            self.fused.upload_frames(group)  # raises the backend's TypeError for a device array
        out: list[Any] = []
        if self.states is None:
            first = [np.ascontiguousarray(group[0], dtype=np.uint8)]
            self.consistent = False
            self.states = self._start_states()
            self._run(first, self._launches(1, True), download=False)
            out.append(first_frame(self.stages, group))  # frame 0: its input bytes
            self.consistent = True
            group = group[1:]
            if len(group) == 0:
                return out
        self.consistent = False
        result = self._run(group, self._launches(len(group), False), download=True)
        out.append(result)
        self.consistent = True
        return out

    def _run(self, group: Sequence[np.ndarray], launches: list[_Launch], *, download: bool) -> Any:
        """The frames on the device (no copy where the device shares the host's memory), the launches, and
        the output bytes (``download``) written into a host array: the frames' slots in the caller's
        output array when the run writes there (``stages.output_slot``), else a fresh one."""
        fused, queue = self.fused, self.rt.queue
        frames = fused.upload_frames(list(group)).data
        launches[0].kernel.set_arg(0, frames)
        if download:
            slot = self.stages.output_slot(len(group))
            host, out = fused.output_buffer((len(group), *group[0].shape), into=slot)
            launches[-1].kernel.set_arg(0, frames)
            launches[-1].kernel.set_arg(2, out)
        for launch in launches:
            cl.enqueue_nd_range_kernel(queue, launch.kernel, launch.global_size, launch.local_size)
        if not download:
            queue.finish()  # the frames' memory stays alive until the device is done with it
            return None
        return fused.finish_output(host, out)
