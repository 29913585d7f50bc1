"""Spatial tiles of a clip: run a pipeline tile by tile and get the whole-clip output, byte for byte.

After the colour conversion every pixel's time series is independent; the only spatial coupling of the linear
pipelines is their pyramid (5-tap blur-and-halve down, upsample-and-blur up, a bicubic enlargement in the
Gaussian one). A tile is therefore run on its *region*: its core plus a halo as wide as the pyramid's reach,
clipped to the frame, so that the halo's pixels are the real neighbours and only the real image border is
mirrored, as in the whole-clip run. Only the core of each tile's output is kept.

Three things make the tile's run the whole clip's, not just a similar one:

* the tile origins are multiples of ``2**steps`` (``steps`` = the blur-and-halve steps the pipeline runs),
  so the decimation grid of every level is the whole clip's;
* the tile's plan keeps the whole clip's level count and per-level gains (which depend on the frame's
  diagonal, not on the tile's);
* an axis along which a tile's run cannot be made the whole clip's is not split (its tiles span it): see
  :func:`plan_tiles` for when that happens.

:func:`plan_tiles` lays the tiles out, :func:`magnify_tiled` runs them; :func:`working_set` and
:func:`choose_tile` size tiles for a memory budget (what :func:`vidmag.files.magnify_file` does with
``memory=``).
"""

from __future__ import annotations

import math
import re
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from vidmag._reference.pipelines import MIT_UNREAD_TAIL
from vidmag._reference.pyramid import level_sizes
from vidmag.params import Plan, check_integer, make_plan, output_frames

__all__ = [
    "Tile",
    "TileGeometry",
    "choose_tile",
    "default_memory_budget",
    "geometry",
    "magnify_tiled",
    "parse_size",
    "plan_tiles",
    "working_set",
]

#: The pipelines whose temporal filter needs each pixel's whole series at once: their memory grows with the
#: clip's length times the frame's size, which tiles bound.
WHOLE_CLIP_PIPELINES = ("gaussian_ideal", "laplacian_ideal", "riesz_ideal", "steerable_ideal")

#: The pipelines that tiles split (the others run as one tile covering the frame: see :func:`geometry`).
TILED_PIPELINES = ("gaussian_ideal", "laplacian_ideal", "laplacian_butterworth", "laplacian_iir")


@dataclass(frozen=True)
class Tile:
    """One tile: the output rows and columns it writes (its core) and the input ones it reads (its region).

    Attributes
    ----------
    y0, y1, x0, x1 : int
        The core: rows ``y0:y1``, columns ``x0:x1`` of the frame.
    ry0, ry1, rx0, rx1 : int
        The region, core plus halo clipped to the frame: rows ``ry0:ry1``, columns ``rx0:rx1``.
    """

    y0: int
    y1: int
    x0: int
    x1: int
    ry0: int
    ry1: int
    rx0: int
    rx1: int

    @property
    def core(self) -> tuple[slice, slice]:
        """(rows, columns) of the frame this tile writes."""
        return slice(self.y0, self.y1), slice(self.x0, self.x1)

    @property
    def region(self) -> tuple[slice, slice]:
        """(rows, columns) of the frame this tile reads."""
        return slice(self.ry0, self.ry1), slice(self.rx0, self.rx1)

    @property
    def inner(self) -> tuple[slice, slice]:
        """(rows, columns) of the core within the region's output."""
        return (slice(self.y0 - self.ry0, self.y1 - self.ry0), slice(self.x0 - self.rx0, self.x1 - self.rx0))

    @property
    def region_shape(self) -> tuple[int, int]:
        """(height, width) of the region."""
        return self.ry1 - self.ry0, self.rx1 - self.rx0


@dataclass(frozen=True)
class TileGeometry:
    """What a pipeline's spatial filters need of a tiling.

    Attributes
    ----------
    align : int
        Tile origins are multiples of it (``2**steps``).
    halo : int
        Pixels of real neighbours each side of a core (a multiple of `align`, at least `reach`).
    reach : int
        How far, in full-resolution pixels, an output pixel's value reaches into the input (the formula is in
        :func:`geometry`).
    split_rows, split_cols : bool
        Whether the rows (the columns) may be split at all; when not, every tile spans the frame that way.
    steps : int
        Blur-and-halve steps of the pipeline's pyramid.
    why : str
        Why an axis is not split ("" when both are).
    """

    align: int
    halo: int
    reach: int
    split_rows: bool
    split_cols: bool
    steps: int
    why: str = ""


def _kept_levels(plan: Plan) -> list[int]:
    return [level for level, gain in enumerate(plan.gains) if gain != 0.0]


def geometry(plan: Plan) -> TileGeometry:
    """The alignment, halo and splittable axes of `plan`'s pipeline on its frame size.

    The reach (one side, in full-resolution pixels), derived from the 5-tap kernels (2 taps each side):

    * a blur-and-halve step from level j to j + 1 reads 2 samples of level j each side: ``2 * 2**j`` pixels;
      the upsample-and-blur from level j + 1 to level j reads coarse samples within 2 level-j samples:
      ``2 * 2**j`` pixels too.
    * Laplacian pipelines: band k is ``G_k - expand(G_{k+1})``. ``G_k`` reaches ``2 (2**k - 1)`` pixels into
      the input, ``expand(reduce(G_k))`` another ``4 * 2**k``, and the collapse back to level 0 another
      ``2 (2**k - 1)``: ``8 * 2**k - 4`` in all. The residual level is never amplified (gain 0), so only the
      amplified bands count and the deepest amplified one, ``top``, sets ``reach = 2**(top + 3) - 4``;
      the pyramid then runs ``top + 1`` blur-and-halve steps, so ``align = 2**(top + 1)``.
    * gaussian_ideal at ``level`` L (``s = 2**L``): the down stack reaches ``2 (s - 1)``; the bicubic
      enlargement by exactly s reads the coarse samples c with ``|c s - x| <= 2.5 s`` of output pixel x; so
      ``reach = 4.5 s - 2`` and ``align = s``.

    ``halo`` is the reach rounded up to a multiple of ``align`` (so that region origins stay aligned too).

    An axis is not split (``split_rows`` / ``split_cols`` False) when a tile's run could not equal the whole
    clip's there:

    * gaussian_ideal, a side not a multiple of ``2**level``: the enlargement's scale (side over the down
      stack's side) is then not ``2**level`` and differs between the tile and the frame;
    * Laplacian pipelines, a side whose level size is 5 at a level the pipeline expands to: matlabPyrTools'
      upConv drops a tap at that size, which a tile of another size would not (the tiles ending at the far
      border are widened instead when only theirs would be 5: see :func:`plan_tiles`);
    * the phase-based pipelines (riesz_*, steerable_ideal): their references derive the pyramid's depth from
      the frame they are given, the Riesz ones blur the phase with a Gaussian of `sigma` per level and the
      steerable one works in the frequency domain of the whole frame; they run as a single tile.
    """
    if plan.pipeline not in TILED_PIPELINES:
        return TileGeometry(1, 0, 0, False, False, 0,
                            f"{plan.pipeline} is not tile-separable (phase-based: whole-frame pyramid depth, "
                            "phase smoothing, frequency-domain filters); it runs as one tile")
    H, W = plan.height, plan.width
    if plan.pipeline == "gaussian_ideal":
        steps = plan.params["level"]
        s = 2**steps
        reach = math.ceil(4.5 * s - 2)
        rows, cols = H % s == 0, W % s == 0
        why = "" if rows and cols else f"a side not a multiple of 2**level = {s} is not split"
        return TileGeometry(s, _round_up(reach, s), reach, rows, cols, steps, why)
    kept = _kept_levels(plan)
    if not kept:  # no band is amplified: the output is the input's colour round trip, pixel by pixel
        return TileGeometry(1, 0, 0, True, True, 0)
    top = max(kept)
    steps = top + 1
    align = 2**steps
    reach = 2 ** (top + 3) - 4
    sizes = plan.level_sizes[: top + 1]
    rows = all(h != 5 for h, _ in sizes)
    cols = all(w != 5 for _, w in sizes)
    why = "" if rows and cols else "a side with a 5-sample pyramid level (upConv's dropped tap) is not split"
    return TileGeometry(align, _round_up(reach, align), reach, rows, cols, steps, why)


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def _axis_tiles(n: int, size: int, geo: TileGeometry, split: bool) -> list[tuple[int, int, int, int]]:
    """(core start, core stop, region start, region stop) along one axis of `n` samples."""
    if not split or size >= n:
        return [(0, n, 0, n)]
    out = []
    for start in range(0, n, size):
        stop = min(start + size, n)
        r0, r1 = max(0, start - geo.halo), min(n, stop + geo.halo)
        if r1 == n and geo.steps and geo.align > 1:
            # the tile ends at the real border: its level sizes are the frame's minus r0 / 2**k, and where one
            # of them is 5 but the frame's is not, upConv's dropped tap would change the last sample; widen
            r0 = _widen_for_upconv(n, r0, geo)
        out.append((start, stop, r0, r1))
    return out


def _widen_for_upconv(n: int, r0: int, geo: TileGeometry) -> int:
    whole = [s for s in _sizes(n, geo.steps)]
    while r0 > 0 and any((t == 5) != (w == 5) for t, w in zip(_sizes(n - r0, geo.steps), whole)):
        r0 -= geo.align
    return max(r0, 0)


def _sizes(n: int, steps: int) -> list[int]:
    return [h for h, _ in level_sizes(n, n, steps)]


def plan_tiles(plan: Plan | tuple, *, tile: tuple[int, int] | int) -> list[Tile]:
    """Lay tiles of (about) `tile` pixels over the frame of `plan`.

    Parameters
    ----------
    plan : vidmag.params.Plan or tuple
        The whole clip's plan (``vidmag.params.make_plan``), or ``(pipeline, height, width, params)`` with
        ``params`` holding ``fs`` (Hz), optionally ``compat``, and the pipeline's parameters.
    tile : (int, int) or int
        Core height and width in pixels (an int: square). Rounded up to a multiple of the alignment
        (:func:`geometry`); the last tile of a row or column is what is left.

    Returns
    -------
    list of Tile
        Row by row; the cores cover the frame exactly once.

    Raises
    ------
    TypeError, ValueError
        A bad plan tuple (as :func:`vidmag.params.make_plan`) or a tile size that is not positive integers.
    """
    plan = _as_plan(plan)
    th, tw = _check_tile(tile)
    geo = geometry(plan)
    th, tw = _round_up(th, geo.align), _round_up(tw, geo.align)
    rows = _axis_tiles(plan.height, th, geo, geo.split_rows)
    cols = _axis_tiles(plan.width, tw, geo, geo.split_cols)
    return [Tile(y0, y1, x0, x1, ry0, ry1, rx0, rx1)
            for y0, y1, ry0, ry1 in rows for x0, x1, rx0, rx1 in cols]


def _as_plan(plan: Plan | tuple) -> Plan:
    if isinstance(plan, Plan):
        return plan
    if not isinstance(plan, tuple) or len(plan) != 4:
        raise TypeError(f"plan must be a vidmag.params.Plan or (pipeline, height, width, params), "
                        f"got {plan!r}")
    pipeline, height, width, params = plan
    params = dict(params)
    if "fs" not in params:
        raise TypeError("plan: the params of a (pipeline, height, width, params) tuple must hold fs")
    fs, compat = params.pop("fs"), params.pop("compat", None)
    shape = (check_integer("height", height), check_integer("width", width), 3)
    return make_plan(pipeline, fs=fs, compat=compat, params=params, frame_shape=shape)


def _check_tile(tile: Any) -> tuple[int, int]:
    sizes = (tile, tile) if not isinstance(tile, (tuple, list)) else tuple(tile)
    if len(sizes) != 2:
        raise ValueError(f"tile must be an int or (height, width), got {tile!r}")
    th, tw = (check_integer("tile", s) for s in sizes)
    if th < 1 or tw < 1:
        raise ValueError(f"tile must be positive pixel sizes, got {tile!r}")
    return th, tw


@dataclass(frozen=True)
class _TilePlan(Plan):
    """A region's plan: its own frame size, the whole clip's level count and per-level gains."""

    whole_levels: int = 0
    whole_gains: tuple[float, ...] = ()

    @property
    def levels(self) -> int:  # type: ignore[override]
        return self.whole_levels

    @property
    def gains(self) -> list[float]:  # type: ignore[override]
        return list(self.whole_gains)


def _tile_plan(plan: Plan, tile: Tile) -> Plan:
    h, w = tile.region_shape
    if (h, w) == (plan.height, plan.width):
        return plan
    gains = tuple(plan.gains) if "lambda_c" in plan.params else ()
    return _TilePlan(plan.pipeline, plan.fs, plan.compat, plan.params, h, w, plan.n_frames, plan.batch,
                     whole_levels=plan.levels, whole_gains=gains)


#: A region reader: ``read(rows, cols)`` returns a fresh iterator of the clip's frames cut to the region.
Reader = Callable[[slice, slice], Iterator[np.ndarray]]


def _reader(source: Any) -> tuple[Reader, tuple[int, int, int] | None, int | None]:
    """(reader, frame shape or None, frame count or None) of an array (T, H, W, 3) or a frame source."""
    if callable(source):
        return (lambda rows, cols: (np.asarray(f)[rows, cols] for f in source())), None, None
    clip = source
    if getattr(clip, "ndim", None) != 4 or clip.shape[-1] != 3 or getattr(clip, "dtype", None) != np.uint8:
        raise ValueError("frames: an array source must be uint8 of shape (T, H, W, 3), got "
                         f"{getattr(clip, 'dtype', type(clip).__name__)} {getattr(clip, 'shape', '')}")
    def read(rows: slice, cols: slice) -> Iterator[np.ndarray]:
        return (clip[t, rows, cols] for t in range(len(clip)))

    return read, tuple(clip.shape[1:]), len(clip)


def run_tiles(
    plan: Plan,
    tiles: list[Tile],
    read: Reader,
    write: Callable[[Tile, int, np.ndarray], None],
    *,
    backend: str = "auto",
    on_tile: Callable[[int], None] | None = None,
    saturation: Saturation | None = None,
) -> int:
    """Run `plan` on each tile's region from `read` and hand each output frame's core to `write`.

    ``write(tile, t, core)`` gets output frame t of the tile (uint8 (h, w, 3), the core only). Returns the
    number of output frames per tile. A SaturationWarning is not given here (a tile's share is not the
    clip's): `saturation`, when given, gathers the clip's counts for :meth:`Saturation.warn`.
    """
    from vidmag import pipelines

    # the phase pipelines' backend rule lives in vidmag.pipelines (named select_backend there from 2026-12)
    select = getattr(pipelines, "select_backend", None) or pipelines._select
    _, chosen = select(backend, plan.pipeline)
    unread = plan.mit and not plan.phase
    expected = None
    for index, tile in enumerate(tiles):
        tile_plan = _tile_plan(plan, tile)
        rows, cols = tile.region

        inner, calls = tile.inner, [0]

        def source(rows=rows, cols=cols, tile=tile, inner=inner, calls=calls) -> Iterator[np.ndarray]:
            calls[0] += 1
            frames = read(rows, cols)
            frames = _drop_last(frames, MIT_UNREAD_TAIL) if unread else frames
            if saturation is None or calls[0] > 1:
                return frames
            return _counted(frames, tile, inner, saturation)

        count = 0
        for count, frame in enumerate(chosen.run(tile_plan, source), start=1):
            core = frame[inner]
            if saturation is not None:
                saturation.count(core, tile.y0, output=True)
            write(tile, count - 1, core)
        if expected is None:
            expected = count
        elif count != expected:
            raise RuntimeError(f"tile {index} gave {count} frames, the first one {expected}")
        if on_tile is not None:
            on_tile(index + 1)
    return expected or 0


def _counted(frames: Iterator[np.ndarray], tile: Tile, inner: tuple[slice, slice],
             saturation: Saturation) -> Iterator[np.ndarray]:
    for frame in frames:
        saturation.count(frame[inner], tile.y0, output=False)
        yield frame


def _drop_last(frames: Iterator[np.ndarray], count: int) -> Iterator[np.ndarray]:
    """All but the last `count` frames (the MIT code's unread tail), as ``vidmag.pipelines.run`` drops it."""
    ahead: deque[np.ndarray] = deque()
    for frame in frames:
        ahead.append(frame)
        if len(ahead) > count:
            yield ahead.popleft()


def magnify_tiled(
    frames: Any,
    *,
    fs: float,
    pipeline: str,
    tile: tuple[int, int] | int,
    backend: str = "auto",
    compat: str | None = None,
    out: np.ndarray | None = None,
    **params: Any,
) -> np.ndarray:
    """Magnify a clip tile by tile; the result equals :func:`vidmag.magnify`'s byte for byte.

    Parameters
    ----------
    frames : ndarray (T, H, W, 3) uint8, or callable
        The clip: an array (a ``numpy.memmap`` too: only each region's pixels are read), or a frame source
        ``frames()`` returning a fresh iterator of uint8 (H, W, 3) frames per call (each tile reads it once or
        twice: the ideal pipelines read twice).
    fs, pipeline, backend, compat, **params
        As :func:`vidmag.magnify`.
    tile : (int, int) or int
        Core size of the tiles in pixels (see :func:`plan_tiles`).
    out : ndarray, optional
        Where to write the output, uint8 (T', H, W, 3) (T' as :func:`vidmag.magnify`); None: a new array.

    Returns
    -------
    ndarray, uint8, shape (T', H, W, 3)
        `out` when given.

    Raises
    ------
    TypeError, ValueError, BackendUnavailableError
        As :func:`vidmag.magnify`, and a bad `tile` or `out`.

    Warns
    -----
    SaturationWarning
        As :func:`vidmag.magnify`, counted over the whole clip.

    Notes
    -----
    Byte for byte equal to the whole-clip run on the cpu backend (tested for every linear pipeline); on a
    float32 backend each tile runs the same kernels on the same neighbourhoods, but a backend may order its
    float sums by buffer size, which the tests do not assume. The phase-based pipelines run as one tile.
    Backends: all (``vidmag.backend``).
    """
    read, shape, T = _reader(frames)
    if shape is None:
        first = next(iter(frames()), None)
        if first is None:
            raise ValueError("frames: the source gave no frames (empty clip)")
        shape = tuple(np.asarray(first).shape)
        T = sum(1 for _ in frames())
    plan = make_plan(pipeline, fs=fs, compat=compat, params=params, frame_shape=shape, n_frames=T)
    tiles = plan_tiles(plan, tile=tile)
    n_out = output_frames(plan.pipeline, plan.compat, T)
    if out is None:
        out = np.empty((n_out, *shape), dtype=np.uint8)
    elif getattr(out, "shape", None) != (n_out, *shape) or getattr(out, "dtype", None) != np.uint8:
        raise ValueError(f"out must be uint8 of shape {(n_out, *shape)}, got "
                         f"{getattr(out, 'dtype', type(out).__name__)} {getattr(out, 'shape', '')}")
    counts = Saturation()

    def write(tile: Tile, t: int, core: np.ndarray) -> None:
        out[t, tile.y0:tile.y1, tile.x0:tile.x1] = core

    done = run_tiles(plan, tiles, read, write, backend=backend, saturation=counts)
    if done != n_out:
        raise RuntimeError(f"backend produced {done} frames, expected {n_out}")
    counts.warn(plan.params["alpha"])
    return out


class Saturation:
    """The clip's counts of bytes at 0 or 255 on the rows ``vidmag.pipelines`` counts, gathered tile by tile.

    The whole-clip run counts every 16th row of the input frames it reads (first pass) and of the output
    frames; here each tile counts those rows of its core, so that the sums are the clip's.
    """

    def __init__(self) -> None:
        self.values = [0, 0, 0, 0]  # input clipped, input bytes, output clipped, output bytes

    def count(self, core: np.ndarray, y0: int, *, output: bool) -> None:
        """Count the counted rows of a core (one frame or many) whose first row is frame row `y0`."""
        from vidmag.pipelines import _ROW_STEP

        rows = core[..., (-y0) % _ROW_STEP::_ROW_STEP, :, :]
        at = 2 if output else 0
        self.values[at] += int(np.count_nonzero(rows - np.uint8(1) >= 254))
        self.values[at + 1] += rows.size

    def warn(self, alpha: float) -> None:
        """Give the SaturationWarning the whole-clip run would."""
        from vidmag.pipelines import _warn_if_saturated

        _warn_if_saturated(alpha, *self.values)


def parse_size(value: Any, name: str = "memory") -> int:
    """A memory size in bytes: an int, or a string such as ``"2GB"``, ``"500MB"``, ``"1.5GiB"``, ``"800M"``.

    Decimal units (kB, MB, GB, TB) are powers of 1000, binary ones (KiB, MiB, GiB, TiB, and the bare letters
    K, M, G, T) powers of 1024.

    Raises
    ------
    TypeError
        Neither an int nor a string.
    ValueError
        Not a positive size; the message names `name` and the accepted forms.
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        size = int(value)
    elif isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMgGtT]?)(i?)([bB]?)\s*", value)
        if match is None:
            raise ValueError(f"{name}: {value!r} is not a size (e.g. 2GB, 500MB, 1.5GiB, 800M, or bytes)")
        number, unit, binary, byte = match.groups()
        power = " kmgt".index(unit.lower()) if unit else 0
        base = 1024 if binary or (unit and not byte) else 1000
        size = int(float(number) * base**power)
    else:
        raise TypeError(f"{name} must be a number of bytes or a string like '2GB', "
                        f"got {type(value).__name__}")
    if size <= 0:
        raise ValueError(f"{name} must be a positive size, got {value!r}")
    return size


def default_memory_budget() -> int:
    """Half of the memory available now (psutil, when installed), else half of the physical memory.

    ``psutil.virtual_memory().available`` when psutil can be imported; otherwise ``os.sysconf`` (pages times
    page size) on Unix; 4 GiB where neither answers.
    """
    try:
        import psutil  # type: ignore[import-not-found]
    except ImportError:
        psutil = None
    if psutil is not None:
        return int(psutil.virtual_memory().available) // 2
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")) // 2
    except (AttributeError, OSError, ValueError):
        return 4 * 2**30


#: What a run holds besides its whole-clip stack: the interpreter and libraries, decoder and encoder, the
#: batches of frames in flight and the band-pass's pieces (measured on the cpu backend: see
#: docs/vidmag/memory.md).
OVERHEAD_BYTES = 200 * 2**20


def _value_bytes(backend: str) -> int:
    return 8 if backend in ("cpu", "numpy") else 4  # the reference works in float64, the others in float32


def working_set(plan: Plan, n_frames: int, region: tuple[int, int] | None = None, *, backend: str = "cpu",
                ) -> int:
    """Estimated bytes a whole-clip pipeline holds for `n_frames` frames of a region (default: the frame).

    frames x (pixels of the filtered levels: the Gaussian down stack, or each amplified Laplacian band) x 3
    channels x bytes per value (8 on the cpu backend, 4 on the float32 ones), plus :data:`OVERHEAD_BYTES`;
    laplacian_ideal on a float32 backend counts its largest band twice (its band-passed copy is made while
    it is alive).
    The phase-based ideal pipelines hold more: riesz_ideal the accumulated phase of each level and its
    band-passed copy (6 floats per coefficient of the 4/3-size pyramid: 64 bytes a pixel on the cpu
    backend), steerable_ideal the whole clip's YIQ, spectra, bands and output (14 float64 a pixel: 112
    bytes; measured on 60 frames of baby.mp4: 49 and 110 bytes a pixel; on torch, float32, 22 values: 88
    bytes, measured 86; riesz_ideal's 32 bytes on opencl and torch against 24 and 34 measured over the
    overhead). A streaming pipeline holds O(1) frames: the overhead alone.
    """
    h, w = region or (plan.height, plan.width)
    values = _value_bytes(backend) * 3
    if plan.pipeline == "gaussian_ideal":
        steps = plan.params["level"]
        hh, ww = level_sizes(h, w, steps + 1)[-1]
        per_frame = hh * ww * values
    elif plan.pipeline == "laplacian_ideal":
        sizes = level_sizes(h, w, plan.levels)
        pixels = [sizes[k][0] * sizes[k][1] for k in _kept_levels(plan)]
        per_frame = sum(pixels) * values
        if _value_bytes(backend) == 4 and pixels:
            # a float32 backend's band-pass writes each level's filtered stack while its input is alive: the
            # largest level twice (measured on baby.mp4 with opencl: 1,416 MB, against 838 MB without it)
            per_frame += max(pixels) * values
    elif plan.pipeline == "riesz_ideal":
        per_frame = int(h * w * 4 / 3) * 6 * _value_bytes(backend)
    elif plan.pipeline == "steerable_ideal":
        # float32 (torch) holds more values a pixel than float64 (cpu): its complex64 spectra and bands and
        # their temporal FFTs all at once; measured on 60 frames of baby.mp4: 2,915 MB (86 bytes a pixel
        # over the overhead), where 14 values would have said 1,964 MB
        per_frame = h * w * (14 if _value_bytes(backend) == 8 else 22) * _value_bytes(backend)
    else:
        per_frame = 0
    return OVERHEAD_BYTES + per_frame * n_frames


def choose_tile(plan: Plan, n_frames: int, budget: int, *, backend: str = "cpu") -> tuple[int, int] | None:
    """The largest tile core whose region's :func:`working_set` fits `budget`; None when the whole frame fits.

    The larger side of the core is halved (kept a multiple of the alignment) until its region fits; if even
    a core of one alignment step does not fit, that smallest tile is returned (a warning says so).
    """
    if working_set(plan, n_frames, backend=backend) <= budget:
        return None
    geo = geometry(plan)
    th, tw = plan.height, plan.width
    while True:
        tiles = plan_tiles(plan, tile=(th, tw))
        biggest = max(tiles, key=lambda t: t.region_shape[0] * t.region_shape[1])
        if working_set(plan, n_frames, biggest.region_shape, backend=backend) <= budget:
            return th, tw
        can_rows, can_cols = geo.split_rows and th > geo.align, geo.split_cols and tw > geo.align
        if not (can_rows or can_cols):
            need = working_set(plan, n_frames, biggest.region_shape, backend=backend)
            warnings.warn(f"memory: even the smallest tile ({th} x {tw}, regions of {biggest.region_shape}) "
                          f"needs about {need} bytes, over the budget of {budget}", ResourceWarning,
                          stacklevel=2)
            return th, tw
        if can_rows and (th >= tw or not can_cols):
            th = max(geo.align, _round_up(th // 2, geo.align))
        else:
            tw = max(geo.align, _round_up(tw // 2, geo.align))
