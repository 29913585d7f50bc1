"""The bounded-memory routes of :func:`vidmag.files.magnify_file` for the whole-clip pipelines.

An ideal band-pass needs each value's whole time series, so the in-memory run holds frames x (filtered
pixels) floats. When that would not fit the budget, one of two routes keeps it on disk instead, in a private
directory that the caller removes (on success, on error and on KeyboardInterrupt alike):

* laplacian_ideal (cpu backend): the amplified Laplacian bands of every frame go to one time-major float64
  file per level; each level's time series are band-passed in blocks of values read from and written back to
  that file; the output frames are collapsed from it batch by batch. The pyramid's reach covers the frame's
  short side (see :func:`vidmag.tiles.geometry`), so spatial tiles would not help it; per-value blocks need no
  halo at all, since the band-pass treats every value alone.
* gaussian_ideal: the clip is decoded once into a time-major uint8 file, run tile by tile
  (:mod:`vidmag.tiles`), and the tiles' cores are written into an output file the encoder reads frame by
  frame.

Both run the cpu backend's own stages and operations in the order of its in-memory pipeline, so the output
is the in-memory run's byte for byte (tested in test_memory_budget.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from vidmag import tiles
from vidmag._reference.pipelines import MIT_UNREAD_TAIL
from vidmag.params import Plan, check_frame_count

__all__ = ["ROUTES", "gaussian_tiled", "laplacian_on_disk"]

#: Complex values one band-pass block holds: a quarter of the cpu backend's piece (2**21), since the route is
#: there to save memory; each value's series is filtered alone, so the block's width does not change a bit.
_BLOCK_VALUES = 2**19

Source = Callable[[], Iterator[np.ndarray]]


class _Semantic:
    """The frames the semantics reads (the MIT code's unread tail dropped), counted and checked once."""

    def __init__(self, plan: Plan, source: Source, saturation: tiles.Saturation) -> None:
        self.plan, self.source, self.saturation = plan, source, saturation
        self.calls = 0
        self.count: int | None = None

    def __call__(self) -> Iterator[np.ndarray]:
        self.calls += 1
        first = self.calls == 1
        frames = self._checked(self.source(), first)  # counts every frame, as pipelines.run does
        if self.plan.mit and not self.plan.phase:
            frames = tiles._drop_last(frames, MIT_UNREAD_TAIL)
        return self._counted(frames) if first else frames

    def _counted(self, frames: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
        for frame in frames:
            self.saturation.count(frame, 0, output=False)
            yield frame

    def _checked(self, frames: Iterator[np.ndarray], first: bool) -> Iterator[np.ndarray]:
        shape = (self.plan.height, self.plan.width, 3)
        n = 0
        for n, frame in enumerate(frames, start=1):
            if frame.shape != shape:
                raise ValueError(f"frames: frame {n - 1} has shape {frame.shape}, not {shape} like frame 0")
            yield frame
        if first:
            check_frame_count(self.plan.pipeline, self.plan.compat, n)
            self.count = n
        elif n != self.count:
            raise RuntimeError(f"source gave {self.count} frames on its first pass and {n} on pass "
                               f"{self.calls}")


def _cpu_stages() -> Any:
    from vidmag.backend import select

    return select("cpu")[1].stages


def laplacian_on_disk(plan: Plan, source: Source, workdir: str,
                      progress: Callable[[int], None] | None = None) -> Iterator[np.ndarray]:
    """laplacian_ideal on the cpu backend with its band stacks in time-major files under `workdir`."""
    from vidmag.backend.generic import groups_of
    from vidmag.backend.stages import kept_levels

    stages, kept = _cpu_stages(), kept_levels(plan)
    saturation = tiles.Saturation()
    frames = _Semantic(plan, source, saturation)
    size = stages.batch_frames(plan)
    p = plan.params
    paths = {level: os.path.join(workdir, f"band{level}.f64") for level in kept}
    shapes = {level: (*plan.level_sizes[level], 3) for level in kept}
    handles = {level: open(paths[level], "wb") for level in kept}  # closed just below
    try:
        for group in groups_of(frames(), size):
            for level, band in stages.bands(stages.upload(group), plan, kept, scratch=False).items():
                np.ascontiguousarray(band, dtype=np.float64).tofile(handles[level])
    finally:
        for handle in handles.values():
            handle.close()
    T = (frames.count or 0) - (MIT_UNREAD_TAIL if plan.mit else 0)
    if T <= 0:
        return
    for level in kept:
        values = int(np.prod(shapes[level]))
        step = max(1, _BLOCK_VALUES // T)
        fd = os.open(paths[level], os.O_RDWR)
        try:
            for c0 in range(0, values, step):
                _filter_block(fd, T, values, c0, min(step, values - c0), stages.ops, p, plan)
        finally:
            os.close(fd)
    start, done = 0, 0
    for group in groups_of(frames(), size, 1 if plan.mit else 0):  # the MIT code's one-frame lag
        batch = stages.upload(group)
        n = batch.shape[0]
        bands = {level: _take(paths[level], shapes[level], start, n, plan.gains[level], stages)
                 for level in kept}
        signal = stages.collapse(bands, plan) if bands else None  # no amplified band: no signal
        out = stages.download(stages.render(batch, signal, plan, kind="expand", gain=1.0,
                                            chroma=p["chrom_attenuation"]))
        for frame in out:
            saturation.count(frame, 0, output=True)
            done += 1
            yield frame
            if progress is not None:
                progress(done)
        start += n
    saturation.warn(p["alpha"])


def _filter_block(fd: int, T: int, values: int, c0: int, width: int, ops: Any, p: dict, plan: Plan) -> None:
    """Band-pass the series of values ``c0 : c0 + width`` of a (T, values) float64 file, in place.

    Read and written row by row with pread / pwrite rather than through a memory map: a map's pages stay in
    the resident set while it is open (measured: 610 MB on baby.mp4 with a map per block, against a budget of
    500 MB), explicit reads hold only the block.
    """
    row = width * 8
    block = np.empty((T, width), dtype=np.float64)
    for t in range(T):
        block[t] = np.frombuffer(os.pread(fd, row, (t * values + c0) * 8), dtype=np.float64)
    filtered = np.ascontiguousarray(ops.ideal_bandpass(block, p["fl"], p["fh"], plan.fs, mit=plan.mit))
    for t in range(T):
        os.pwrite(fd, filtered[t].tobytes(), (t * values + c0) * 8)


def _take(path: str, shape: tuple[int, ...], start: int, n: int, gain: float, stages: Any) -> np.ndarray:
    values = int(np.prod(shape))
    frames = np.fromfile(path, dtype=np.float64, count=n * values, offset=start * values * 8)
    frames = frames.reshape(n, *shape)
    # as the stages' gained stack: scaled when taken, and not at all for a gain of 1
    return frames if gain == 1.0 else stages.ops.scale(frames, gain, gain)


def gaussian_tiled(plan: Plan, source: Source, workdir: str, tile: tuple[int, int], *, backend: str = "cpu",
                   progress: Callable[[int], None] | None = None) -> Iterator[np.ndarray]:
    """gaussian_ideal tile by tile, from a time-major copy of the clip under `workdir`."""
    H, W = plan.height, plan.width
    frame_bytes = H * W * 3
    clip_path, out_path = os.path.join(workdir, "clip.u8"), os.path.join(workdir, "out.u8")
    T = 0
    with open(clip_path, "wb") as handle:
        for T, frame in enumerate(source(), start=1):
            if frame.shape != (H, W, 3):
                raise ValueError(f"frames: frame {T - 1} has shape {frame.shape}, not {(H, W, 3)} like "
                                 "frame 0")
            handle.write(np.ascontiguousarray(frame, dtype=np.uint8).tobytes())
    check_frame_count(plan.pipeline, plan.compat, T)

    def read(rows: slice, cols: slice) -> Iterator[np.ndarray]:
        r0, r1 = rows.start, rows.stop
        for t in range(T):
            band = np.fromfile(clip_path, dtype=np.uint8, count=(r1 - r0) * W * 3,
                               offset=t * frame_bytes + r0 * W * 3)
            yield band.reshape(r1 - r0, W, 3)[:, cols]

    laid = tiles.plan_tiles(plan, tile=tile)
    from vidmag.params import output_frames

    n_out = output_frames(plan.pipeline, plan.compat, T)
    with open(out_path, "wb") as handle:
        handle.truncate(n_out * frame_bytes)
    fd = os.open(out_path, os.O_WRONLY)
    try:
        def write(t_tile: tiles.Tile, t: int, core: np.ndarray) -> None:
            core = np.ascontiguousarray(core)
            if t_tile.x0 == 0 and t_tile.x1 == W:  # whole rows: one write
                os.pwrite(fd, core.tobytes(), t * frame_bytes + t_tile.y0 * W * 3)
                return
            for i, row in enumerate(core):
                os.pwrite(fd, row.tobytes(), t * frame_bytes + ((t_tile.y0 + i) * W + t_tile.x0) * 3)

        saturation = tiles.Saturation()
        done = tiles.run_tiles(plan, laid, read, write, backend=backend, saturation=saturation)
    finally:
        os.close(fd)
    if done != n_out:
        raise RuntimeError(f"the tiles produced {done} frames, expected {n_out}")
    saturation.warn(plan.params["alpha"])
    for t in range(n_out):
        frame = np.fromfile(out_path, dtype=np.uint8, count=frame_bytes, offset=t * frame_bytes)
        yield frame.reshape(H, W, 3)
        if progress is not None:
            progress(t + 1)


#: The pipelines with a bounded-memory route, and the backends it runs on (None: every backend).
ROUTES: dict[str, tuple[str, ...] | None] = {"laplacian_ideal": ("cpu",), "gaussian_ideal": None}
