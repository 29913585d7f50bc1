"""The bounded-memory routes of :func:`vidmag.files.magnify_file` for the whole-clip pipelines.

An ideal band-pass needs each value's whole time series, so the in-memory run holds frames x (filtered
pixels) floats. When that would not fit the budget, one of these routes keeps it on disk instead, in a private
directory that the caller removes (on success, on error and on KeyboardInterrupt alike):

* laplacian_ideal (every backend): the amplified Laplacian bands of every frame go to one time-major file
  per level (float64 on the cpu backend, float32 on the others, as their stacks); each level's time series
  are band-passed in blocks of values read from and written back to that file; the output frames are
  collapsed from it batch by batch. The pyramid's reach covers the frame's short side (see
  :func:`vidmag.tiles.geometry`), so spatial tiles would not help it; per-value blocks need no halo at all,
  since the band-pass treats every value alone. On a float32 backend (:func:`laplacian_on_device`) every
  step is that backend's own stage: bands, band-pass and gain (on blocks uploaded as frames of 1 x n
  pixels), collapse and render.
* gaussian_ideal: the clip is decoded once into a time-major uint8 file, run tile by tile
  (:mod:`vidmag.tiles`), and the tiles' cores are written into an output file the encoder reads frame by
  frame.
* riesz_ideal and steerable_ideal: each level's (band's) phase series go to time-major files (float64 on
  the cpu backend, float32 on the others, as their in-memory runs hold them), are band-passed in blocks like
  laplacian_ideal's, and each frame is rendered from its re-read pixels and its row of the filtered phase
  (why not tiles: the comment above :func:`riesz_on_disk`). On a float32 backend
  (:func:`phase_on_device`) the three steps are the backend's own (riesz_ideal: opencl, vulkan, cuda, metal,
  torch; steerable_ideal: torch).

The cpu routes run the cpu backend's own stages and operations (the phase routes: the references'
functions) in the order of its in-memory pipeline, so the output is the in-memory run's byte for byte
(tested in test_memory_budget.py and test_phase_bounded_memory.py). The device route runs the backend's
stages on the same values; its band-pass is the backend's own projection along time, which sums each
value's series alone (per value on opencl, vulkan, cuda, metal; a matrix product on torch), so the output is
promised within 1 grey level of the backend's in-memory run (test_memory_budget_backends.py) and was equal
byte for byte in every case tried (opencl, torch, vulkan, and baby.mp4 on opencl). The phase device route
likewise: equal byte for byte on opencl and vulkan (asserted), within 1 on torch (asserted; riesz_ideal was
equal in every case tried, steerable_ideal 1 apart in places on baby.mp4: torch's batched FFTs of another
shape), in test_phase_bounded_memory_devices.py.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from vidmag import tiles
from vidmag._reference.pipelines import MIT_UNREAD_TAIL
from vidmag.params import PHASE_BACKENDS, Plan, check_frame_count

__all__ = ["ROUTES", "gaussian_tiled", "laplacian_on_device", "laplacian_on_disk", "phase_floor",
           "phase_on_device", "phase_route", "riesz_on_disk", "steerable_on_disk"]

#: Complex values one band-pass block holds: a quarter of the cpu backend's piece (2**21), since the route is
#: there to save memory; each value's series is filtered alone, so the block's width does not change a bit.
_BLOCK_VALUES = 2**19

#: Bytes of input frames one batch of the device route holds (at most the backend's own batch). Half the
#: opencl backend's 16 MiB: measured with PoCL on 60 frames of baby.mp4 (laplacian_ideal, guitar_e preset),
#: the route peaked at 533 MB with 10-frame batches (16 MiB), 390 MB with 5 (8 MiB) and 325 MB with 2, the
#: first two in the same time, the last 20% slower (the device keeps a batch's float pyramid in buffers).
_DEVICE_BATCH_BYTES = 8 * 2**20

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
    ops = stages.ops
    for level in kept:
        _bandpass_file(paths[level], T, int(np.prod(shapes[level])),
                       lambda block: ops.ideal_bandpass(block, p["fl"], p["fh"], plan.fs, mit=plan.mit))

    def signal(start: int, n: int) -> Any:
        bands = {level: _take(paths[level], shapes[level], start, n, plan.gains[level], stages)
                 for level in kept}
        return stages.collapse(bands, plan) if bands else None  # no amplified band: no signal

    yield from _emit(_magnified(stages, frames, size, plan, signal), saturation, p["alpha"], progress)


def _magnified(stages: Any, frames: Callable[[], Iterator[np.ndarray]], size: int, plan: Plan,
               signal: Callable[[int, int], Any]) -> Iterator[np.ndarray]:
    """laplacian_ideal's second pass: batches of ``size`` frames, each rendered with ``signal(start, n)``
    (the collapsed bands of frames ``start : start + n``, or None), downloaded."""
    from vidmag.backend.generic import groups_of

    start = 0
    for group in groups_of(frames(), size, 1 if plan.mit else 0):  # the MIT code's one-frame lag
        batch = stages.upload(group)
        n = batch.shape[0]
        yield from stages.download(stages.render(batch, signal(start, n), plan, kind="expand", gain=1.0,
                                                 chroma=plan.params["chrom_attenuation"]))
        start += n


def _take(path: str, shape: tuple[int, ...], start: int, n: int, gain: float, stages: Any) -> np.ndarray:
    values = int(np.prod(shape))
    frames = np.fromfile(path, dtype=np.float64, count=n * values, offset=start * values * 8)
    frames = frames.reshape(n, *shape)
    # as the stages' gained stack: scaled when taken, and not at all for a gain of 1
    return frames if gain == 1.0 else stages.ops.scale(frames, gain, gain)


def _transfers(stages: Any) -> tuple[Callable[[np.ndarray], Any], Callable[[Any], np.ndarray]]:
    """(put, get): float32 host values to the stages' device array type and back.

    The stages upload only uint8 frames, so floats go through the tier's own device: torch tensors, or the
    ``rt.to_device`` of the kernel devices (OpenCL, Vulkan, CUDA, Metal); ``get`` is the tier's download.
    """
    tier = getattr(stages, "fused", None) or stages.ops
    download = tier.ops.download if hasattr(tier, "ops") else tier.download
    torch = getattr(tier, "torch", None)
    if torch is not None:
        device = tier.ops.device if hasattr(tier, "ops") else tier.device

        def put(host: np.ndarray) -> Any:
            return torch.from_numpy(np.ascontiguousarray(host, dtype=np.float32)).to(device)
    elif hasattr(tier, "rt"):
        def put(host: np.ndarray) -> Any:
            return tier.rt.to_device(np.ascontiguousarray(host, dtype=np.float32))
    else:  # a host backend: its arrays are NumPy's
        def put(host: np.ndarray) -> Any:
            return np.ascontiguousarray(host, dtype=np.float32)

    def get(array: Any) -> np.ndarray:
        return np.ascontiguousarray(download(array), dtype=np.float32)

    return put, get


def _synchronizer(stages: Any) -> Callable[[], None] | None:
    for tier in (getattr(stages, "fused", None), getattr(stages, "ops", None)):
        synchronize = getattr(tier, "synchronize", None)
        if synchronize is not None:
            return synchronize
    return None


def laplacian_on_device(plan: Plan, source: Source, workdir: str, backend: str,
                        progress: Callable[[int], None] | None = None) -> Iterator[np.ndarray]:
    """laplacian_ideal on a float32 backend (opencl, torch, vulkan, cuda, metal) with its band stacks in
    time-major float32 files under `workdir`.

    Every step is the backend's own stage, as in :func:`vidmag.backend.generic.laplacian_ideal`: the bands of
    each batch are built on the device and downloaded into the files; each level's series are uploaded in
    blocks of about :data:`_BLOCK_VALUES` values, band-passed and gained by the stages' ``bandpass`` and
    ``take`` and written back; the output is collapsed and rendered on the device batch by batch from the
    filtered bands read back from the files.
    """
    from vidmag.backend import select

    stages = select(backend)[1].stages
    yield from _drained(_device_laplacian(plan, source, workdir, stages, progress), stages)


def _drained(frames: Iterator[np.ndarray], stages: Any) -> Iterator[np.ndarray]:
    """`frames` of a device route; an early end (error, KeyboardInterrupt, close) waits for the device's
    queue before the buffers go."""
    synchronize = _synchronizer(stages)
    try:
        # not `yield from`: an early end must drain the device's queue before the buffers go (as
        # vidmag.backend.generic's runs do)
        for frame in frames:  # noqa: UP028
            yield frame
    except BaseException:  # KeyboardInterrupt and GeneratorExit included
        if synchronize is not None:
            synchronize()
        raise
    finally:
        frames.close()


def _device_laplacian(plan: Plan, source: Source, workdir: str, stages: Any,
                      progress: Callable[[int], None] | None) -> Iterator[np.ndarray]:
    from vidmag.backend.generic import groups_of
    from vidmag.backend.stages import kept_levels

    kept, put, get = kept_levels(plan), *_transfers(stages)
    saturation = tiles.Saturation()
    frames = _Semantic(plan, source, saturation)
    # a batch of at most _DEVICE_BATCH_BYTES of input frames: each frame's stages are its own, so the
    # batch's size changes no value, only what the device's buffers of one batch hold
    size = max(1, min(stages.batch_frames(plan), _DEVICE_BATCH_BYTES // (plan.height * plan.width * 3)))
    p = plan.params
    paths = {level: os.path.join(workdir, f"band{level}.f32") for level in kept}
    shapes = {level: (*plan.level_sizes[level], 3) for level in kept}
    handles = {level: open(paths[level], "wb") for level in kept}  # closed just below
    T = 0
    try:
        for group in groups_of(frames(), size):
            T += len(group)
            for level, band in stages.bands(stages.upload(group), plan, kept, scratch=False).items():
                get(band).tofile(handles[level])
    finally:
        for handle in handles.values():
            handle.close()
    if T == 0:
        return
    for level in kept:

        def bandpass(block: np.ndarray, gain: float = plan.gains[level]) -> np.ndarray:
            width = block.shape[1]
            stack = stages.concat([put(block.reshape(T, 1, width // 3, 3))])
            filtered = stages.bandpass(stack, p["fl"], p["fh"], plan.fs, mit=plan.mit, gain=gain)
            return get(stages.take(filtered, 0, T)).reshape(T, width)

        # whole pixels per block (a block goes up as frames of 1 x n pixels); each value's series is filtered
        # alone by the projection along time, so the block's width does not change its numbers
        _bandpass_file(paths[level], T, int(np.prod(shapes[level])), bandpass, dtype=np.float32,
                       step=max(3, _BLOCK_VALUES // T // 3 * 3))

    def signal(start: int, n: int) -> Any:
        if not kept:  # no amplified band: no signal
            return None
        bands = {}
        for level in kept:
            values = int(np.prod(shapes[level]))
            host = np.fromfile(paths[level], dtype=np.float32, count=n * values, offset=start * values * 4)
            bands[level] = put(host.reshape(n, *shapes[level]))
        return stages.collapse(bands, plan)

    yield from _emit(_magnified(stages, frames, size, plan, signal), saturation, p["alpha"], progress)


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


# --- the phase-based ideal pipelines -----------------------------------------------------------------------
#
# Neither pyramid tiles exactly. The Riesz pipelines process every level of a Laplacian pyramid as deep as the
# frame allows (``pyramid_levels`` of the frame) but the residual: band k reaches ``8 * 2**k - 4`` pixels (see
# vidmag.tiles.geometry), plus ``2**k`` for its Riesz taps and ``ceil(2 sigma) * 2**k`` for the phase's blur,
# which for the deepest processed band exceeds the frame's short side, so a tile's halo would be the whole
# frame (and a tile of its own size would get another level count). The steerable pyramid's filters are
# masks on the whole frame's spectrum: as spatial kernels they wrap around the frame (circular convolution)
# and reach all of it, and a tile's spectrum has another frequency grid (other radii on the masks, other
# crops), so no halo makes a tile's run the frame's. Both therefore keep the per-coefficient phase series in
# time-major files, as laplacian_ideal keeps its bands: the band-pass filters each value's series alone, so
# blocks of values need no halo, and the per-frame steps re-run on the re-read frames in the reference's
# order.


def _bandpass_file(path: str, T: int, values: int, bandpass: Callable[[np.ndarray], np.ndarray],
                   dtype: Any = np.float64, step: int | None = None) -> None:
    """Band-pass in place the series of a (T, values) file of ``dtype``, in blocks of ``step`` values
    (:data:`_BLOCK_VALUES` in all by default): ``bandpass`` maps a (T, width) block to its filtered values.

    Read and written row by row with pread / pwrite rather than through a memory map: a map's pages stay in
    the resident set while it is open (measured: 610 MB on baby.mp4 with a map per block, against a budget of
    500 MB), explicit reads hold only the block.
    """
    size = np.dtype(dtype).itemsize
    step = max(1, _BLOCK_VALUES // T) if step is None else step
    fd = os.open(path, os.O_RDWR)
    try:
        for c0 in range(0, values, step):
            width = min(step, values - c0)
            block = np.empty((T, width), dtype=dtype)
            for t in range(T):
                block[t] = np.frombuffer(os.pread(fd, width * size, (t * values + c0) * size), dtype=dtype)
            filtered = np.ascontiguousarray(bandpass(block), dtype=dtype)
            for t in range(T):
                os.pwrite(fd, filtered[t].tobytes(), (t * values + c0) * size)
    finally:
        os.close(fd)


class _SeriesFiles:
    """One time-major file of ``dtype`` (float64, or a device's float32) per key under `workdir`: frame t's
    values appended in order, read back by frame."""

    def __init__(self, workdir: str, prefix: str, sizes: list[int], dtype: Any = np.float64) -> None:
        self.dtype = np.dtype(dtype)
        suffix = f"f{8 * self.dtype.itemsize}"
        self.paths = [os.path.join(workdir, f"{prefix}{i}.{suffix}") for i in range(len(sizes))]
        self.sizes = sizes
        self._handles = [open(path, "wb") for path in self.paths]  # closed by close()

    def append(self, i: int, *arrays: np.ndarray) -> None:
        for array in arrays:
            np.ascontiguousarray(array, dtype=self.dtype).tofile(self._handles[i])

    def close(self) -> None:
        for handle in self._handles:
            handle.close()
        self._handles = []

    def bandpass(self, T: int, bandpass: Callable[[np.ndarray], np.ndarray]) -> None:
        for path, size in zip(self.paths, self.sizes):
            _bandpass_file(path, T, size, bandpass, dtype=self.dtype)

    def frame(self, i: int, t: int) -> np.ndarray:
        size = self.sizes[i]
        return np.fromfile(self.paths[i], dtype=self.dtype, count=size, offset=t * size * self.dtype.itemsize)


def _written(workdir: str, rows: Iterator[list[tuple[np.ndarray, ...]]], dtype: Any) -> _SeriesFiles | None:
    """The phase files of a first pass: each of `rows` (a frame's arrays per file, in order) appended to
    ``phase{i}`` under `workdir`; None when there was no frame. Closed whatever happens."""
    files = None
    try:
        for row in rows:
            if files is None:
                files = _SeriesFiles(workdir, "phase", [sum(a.size for a in arrays) for arrays in row], dtype)
            for i, arrays in enumerate(row):
                files.append(i, *arrays)
    finally:
        if files is not None:
            files.close()
    return files


def _emit(frames: Iterator[np.ndarray], saturation: tiles.Saturation, alpha: float,
          progress: Callable[[int], None] | None) -> Iterator[np.ndarray]:
    done = 0
    for frame in frames:
        saturation.count(frame, 0, output=True)
        done += 1
        yield frame
        if progress is not None:
            progress(done)
    saturation.warn(alpha)


def riesz_on_disk(plan: Plan, source: Source, workdir: str,
                  progress: Callable[[int], None] | None = None) -> Iterator[np.ndarray]:
    """riesz_ideal on the cpu backend with each level's accumulated phase in a time-major file under
    `workdir`: the steps of :func:`vidmag._reference.riesz.riesz_ideal_frames`, in its order, so the output
    is the same byte for byte."""
    from vidmag._reference import riesz as ref
    from vidmag._reference.colour import rgb_to_yiq
    from vidmag._reference.pyramid import pyramid_levels
    from vidmag._reference.temporal import ideal_bandpass

    p = plan.params
    saturation = tiles.Saturation()
    frames = _Semantic(plan, source, saturation)
    levels = pyramid_levels(plan.height, plan.width)
    shapes: list[tuple[int, ...]] = []

    def phases() -> Iterator[list[tuple[np.ndarray, ...]]]:
        tracker = ref.PhaseTracker()  # dropped with this pass: pass 2 holds its own
        for frame in frames():
            quaternions, _ = ref.analyse(rgb_to_yiq(frame)[..., 0], levels)
            phase, _ = tracker.update(quaternions)
            shapes[:] = [pc.shape for pc, _ in phase]
            yield phase  # cos then sin: each value's series is filtered alone either way

    files = _written(workdir, phases(), np.float64)
    T = frames.count or 0
    if files is None or T == 0:
        return
    files.bandpass(T, lambda x: ideal_bandpass(x, p["fl"], p["fh"], plan.fs, mit=False))

    def magnified() -> Iterator[np.ndarray]:
        tracker = ref.PhaseTracker()  # the amplitudes again (they need the previous frame)
        for t, frame in enumerate(frames()):
            yiq = rgb_to_yiq(frame)
            quaternions, residual = ref.analyse(yiq[..., 0], levels)
            _, amplitudes = tracker.update(quaternions)
            at_t = [tuple(files.frame(i, t).reshape(2, *shape)) for i, shape in enumerate(shapes)]
            luma = ref._magnified_luma(quaternions, residual, at_t, amplitudes, p["alpha"], p["sigma"])
            yield ref._render(yiq, luma, plan.mit)

    yield from _emit(magnified(), saturation, p["alpha"], progress)


def steerable_on_disk(plan: Plan, source: Source, workdir: str,
                      progress: Callable[[int], None] | None = None) -> Iterator[np.ndarray]:
    """steerable_ideal on the cpu backend with each band's phase (relative to frame 0) in a time-major file
    under `workdir`: the steps of :func:`vidmag._reference.steerable.steerable_magnify`, each frame's in the
    reference's order, so the output is the same byte for byte. Each frame's spectrum and bands are computed
    on both passes (the reference keeps them for the clip)."""
    from vidmag._reference import steerable as ref
    from vidmag._reference.colour import rgb_to_yiq, yiq_to_rgb_uint8
    from vidmag._reference.riesz import amplitude_weighted_blur
    from vidmag._reference.temporal import ideal_bandpass

    p = plan.params
    saturation = tiles.Saturation()
    frames = _Semantic(plan, source, saturation)
    bank = ref.filters(plan.height, plan.width, p["orientations"], p["bands_per_octave"])
    bands = bank[1:-1]
    files = _SeriesFiles(workdir, "band", [band.filter.size for band in bands])
    reference: list[np.ndarray] = []
    try:
        for frame in frames():
            spec = ref.spectrum(rgb_to_yiq(frame)[..., 0])
            for i, band in enumerate(bands):
                angle = np.angle(ref.build_band(spec, band))
                if len(reference) < len(bands):
                    reference.append(angle)
                files.append(i, np.mod(math.pi + angle - reference[i], 2 * math.pi) - math.pi)
    finally:
        files.close()
    T = frames.count or 0
    if T == 0:
        return
    if plan.mit:
        files.bandpass(T, lambda x: ref.fir_window_bandpass(x, p["fl"], p["fh"], plan.fs))
    else:
        files.bandpass(T, lambda x: ideal_bandpass(x, p["fl"], p["fh"], plan.fs, mit=False))

    def magnified() -> Iterator[np.ndarray]:
        for t, frame in enumerate(frames()):
            yiq = rgb_to_yiq(frame)
            spec = ref.spectrum(yiq[..., 0])
            out = np.zeros((plan.height, plan.width), dtype=np.complex128)
            for i, band in enumerate(bands):
                coefficients = ref.build_band(spec, band)
                amplitude = np.abs(coefficients)
                delta = files.frame(i, t).reshape(band.filter.shape)
                phase = p["alpha"] * amplitude_weighted_blur(delta, amplitude, p["sigma"], mode="wrap")
                base = amplitude * np.exp(1j * reference[i]) if p["attenuate_other_freq"] else coefficients
                ref.add_band(out, np.exp(1j * phase) * base, band)
            ref.add_residual(out, spec, bank[-1])
            if not plan.mit:
                ref.add_residual(out, spec, bank[0])
            yiq[..., 0] = ref.collapse(out)
            yield yiq_to_rgb_uint8(yiq, mit=plan.mit)

    yield from _emit(magnified(), saturation, p["alpha"], progress)


def phase_on_device(plan: Plan, source: Source, workdir: str, backend: str,
                    progress: Callable[[int], None] | None = None) -> Iterator[np.ndarray]:
    """riesz_ideal (opencl, vulkan, cuda, metal, torch) or steerable_ideal (torch) on a float32 backend with
    the phase series in time-major float32 files under `workdir`.

    The backend's own steps (:meth:`vidmag.backend.phase.PhaseBackend.phase_steps`, those of its in-memory
    run, in its order): the first pass downloads each frame's phase (Riesz: each level's accumulated
    quaternionic phase, cos then sin; steerable: each band's phase relative to frame 0, whose phase stays on
    the device) into the files; each file's series are uploaded in blocks of about :data:`_BLOCK_VALUES`
    values and band-passed by the backend's temporal filter; the second pass re-reads the frames and renders
    each on the device with its row of the filtered phase uploaded.
    """
    from vidmag.backend import select

    chosen = select(backend)[1]
    yield from _drained(_device_phase(plan, source, workdir, chosen.phase_steps(plan), progress),
                        chosen.stages)


def _device_phase(plan: Plan, source: Source, workdir: str, steps: Any,
                  progress: Callable[[int], None] | None) -> Iterator[np.ndarray]:
    saturation = tiles.Saturation()
    frames = _Semantic(plan, source, saturation)
    files = _written(workdir, steps.phases(frames), np.float32)
    T = frames.count or 0
    if files is None or T == 0:
        return
    files.bandpass(T, steps.bandpass)
    written = files  # pass 2 reads frame t's row of every file

    def row(t: int) -> list[np.ndarray]:
        return [written.frame(i, t) for i in range(len(written.sizes))]

    yield from _emit(steps.frames(frames, row), saturation, plan.params["alpha"], progress)


#: Bytes per pixel of a frame that the phase routes hold whatever the clip's length (measured on baby.mp4
#: crops, docs/vidmag/memory.md): the frame's YIQ, its pyramid (and the previous frame's, for the Riesz
#: phase difference), one frame of the filtered phase and the shift's temporaries.
_PHASE_FRAME_BYTES = {"riesz_ideal": 200, "steerable_ideal": 160}


def phase_floor(plan: Plan, n_frames: int) -> int:
    """The least memory, in bytes, the phase route of `plan` (riesz_ideal, steerable_ideal) can run in on
    `n_frames` frames: the fixed overhead (:data:`vidmag.tiles.OVERHEAD_BYTES`), one frame's work, and one
    band-pass block of at most :data:`_BLOCK_VALUES` values (the block, its spectrum, the result and a
    copy); steerable_ideal also keeps the filters and frame 0's phase of every band (for the relative phase
    and ``attenuate_other_freq``)."""
    pixels = plan.height * plan.width
    held, widest = 0, 2 * pixels  # a Riesz file holds two values per coefficient of a level
    if plan.pipeline == "steerable_ideal":
        from vidmag._reference.steerable import filter_bank

        p = plan.params
        # not the memoised filters(): only their sizes are needed here, and a device backend (torch) keeps
        # its own float32 copy, so the float64 bank would stay in the cache for nothing
        bank = filter_bank(plan.height, plan.width, p["orientations"], p["bands_per_octave"])
        held = 2 * 8 * sum(band.filter.size for band in bank)
        widest = max(band.filter.size for band in bank[1:-1])
    block = 4 * 8 * n_frames * min(max(1, _BLOCK_VALUES // max(n_frames, 1)), widest)
    return tiles.OVERHEAD_BYTES + _PHASE_FRAME_BYTES[plan.pipeline] * pixels + held + block


def phase_route(plan: Plan, n_frames: int, budget: int, backend: str = "cpu",
                ) -> Callable[[Source, str, Callable[[int], None] | None], Iterator[np.ndarray]]:
    """The bounded route of riesz_ideal or steerable_ideal on `backend` on `n_frames` frames for `budget`
    bytes: a callable ``(source, workdir, progress) -> frames`` named ``"phase on disk"``
    (:func:`riesz_on_disk` / :func:`steerable_on_disk` on cpu, :func:`phase_on_device` on the others).

    Raises
    ------
    ValueError
        `budget` is below :func:`phase_floor`: even one frame's work does not fit (the message names memory
        and the least budget that does).
    """
    need = phase_floor(plan, n_frames)
    if budget < need:
        raise ValueError(
            f"memory: a budget of {budget} bytes is too small for {plan.pipeline} on {plan.height} x "
            f"{plan.width} frames even out of core (one frame's work, a band-pass block and the fixed "
            f"overhead need about {need} bytes); give memory={math.ceil(need / 2**20)}MiB or more")
    run = riesz_on_disk if plan.pipeline == "riesz_ideal" else steerable_on_disk

    def route(source: Source, workdir: str, progress: Callable[[int], None] | None = None,
              ) -> Iterator[np.ndarray]:
        if backend != "cpu":  # float32 on the backend's device, its own steps: never the cpu reference
            return phase_on_device(plan, source, workdir, backend, progress)
        return run(plan, source, workdir, progress)

    route.name = "phase on disk"  # type: ignore[attr-defined]
    return route


#: The pipelines with a bounded-memory route, and the backends it runs on (None: every backend). The phase
#: pipelines' route runs on every backend that runs them (vidmag.params.PHASE_BACKENDS): the cpu reference's
#: float64 steps, or the device's own (PhaseBackend.phase_steps).
ROUTES: dict[str, tuple[str, ...] | None] = {"laplacian_ideal": None, "gaussian_ideal": None,
                                              "riesz_ideal": PHASE_BACKENDS["riesz_ideal"],
                                              "steerable_ideal": PHASE_BACKENDS["steerable_ideal"]}
