"""The row kernels over the 3-D grid (``templates.GRID_KERNELS``) against their flat twins on the Vulkan
device (lavapipe in CI): the same values for every shape the host code sends to one or the other (widths whose
rows are whole vectors and widths that are not, the three modes of a one-axis map), launches of more frames
than one grid holds, and the host code's choice of kernel.

The two kernels of a pair do the same arithmetic in the same order, so their outputs agree to the last bit
unless a compiler contracts a multiply and an add into an FMA in one shader and not in the other: floats are
compared to 1e-6 of their scale, bytes within 1.
"""

from __future__ import annotations

import numpy as np
import pytest

from vidmag.backend import spatial_taps
from vidmag.backend.kernels import device as device_module
from vidmag.backend.kernels.operations import _floats
from vidmag.backend.kernels.templates import (
    GRID_KERNELS,
    KERNELS,
    MAX_GROUPS,
    ROWS_PER_ITEM,
    cover_grid,
    program,
)


@pytest.fixture
def ops(require_backend):
    return require_backend("vulkan")[1].operations


def _close(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.shape == expected.shape
    scale = max(1.0, float(np.abs(expected).max()))
    assert np.abs(got - expected).max() <= 1e-6 * scale


def _launched(ops, monkeypatch) -> list[str]:
    names: list[str] = []
    launch, launch_grid = type(ops.rt).launch, type(ops.rt).launch_grid

    def flat(self, name, *args):
        names.append(name)
        return launch(self, name, *args)

    def grid(self, name, *args):
        names.append(name)
        return launch_grid(self, name, *args)

    monkeypatch.setattr(type(ops.rt), "launch", flat)
    monkeypatch.setattr(type(ops.rt), "launch_grid", grid)
    return names


@pytest.mark.parametrize("kind", ["u8", "f32"])
@pytest.mark.parametrize("width", [16, 32, 8, 9, 10])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_one_axis_maps_agree_with_the_flat_kernels(ops, kind, width, mode):
    rng = np.random.default_rng(width + 10 * mode)
    n, h = 3, 13
    if kind == "u8":
        host = rng.integers(0, 256, (n, h, width, 3), dtype=np.uint8)
    else:
        host = rng.standard_normal((n, h, width, 3)).astype(np.float32)
    rt = ops.rt
    frames = rt.to_device(host)
    maps = (("cols", spatial_taps.gaussian_down(h, 2)), ("rows", spatial_taps.expand(width, 2 * width - 1)))
    for axis, taps in maps:
        idx, wt = ops.taps(taps)
        k = taps.index.shape[1]
        out_shape = (n, taps.n_out, width, 3) if axis == "cols" else (n, h, taps.n_out, 3)
        other_host = rng.standard_normal(out_shape).astype(np.float32)
        other = rt.to_device(other_host) if mode else rt.dummy()
        flat, grid = rt.empty(out_shape), rt.empty(out_shape)
        w3 = width * 3
        if axis == "cols":
            rt.launch(f"cols_{kind}", n * taps.n_out * w3, frames, flat, other, idx, wt, k, h, taps.n_out, w3,
                      mode)
            lanes = 16 if kind == "u8" else 4  # a uint4 of bytes, a float4 per item
            if w3 % lanes:
                continue  # rows that are not whole vectors take the flat kernel (checked below)
            rt.launch_grid(f"cols_grid_{kind}", w3 // lanes, taps.n_out, n, frames, grid, other, idx, wt, k,
                           h, taps.n_out, mode)
        else:
            rt.launch(f"rows_{kind}", n * h * taps.n_out, frames, flat, other, idx, wt, k, width, taps.n_out,
                      mode)
            blocks = -(-h // ROWS_PER_ITEM)  # h = 13: the last block is short
            rt.launch_grid(f"rows_grid_{kind}", taps.n_out, blocks, n, frames, grid, other, idx, wt, k, h,
                           width, mode)
        expected = flat.get()
        _close(grid.get(), expected)
        # and both are the map itself (float64 through the dense matrix), plus or minus `other`
        source = host.astype(np.float64)
        dense = spatial_taps.to_dense(taps)
        mapped = np.einsum("oi,nihc->nohc", dense, source) if axis == "cols" else np.einsum(
            "oi,nhic->nhoc", dense, source)
        truth = {0: mapped, 1: other_host + mapped, 2: other_host - mapped}[mode]
        assert np.abs(expected - truth).max() <= 1e-4 * max(1.0, np.abs(truth).max())


@pytest.mark.parametrize("width", [8, 12, 32])
@pytest.mark.parametrize("k", [0, 3])
def test_render_over_the_grid_agrees_with_the_flat_render(ops, width, k):
    rng = np.random.default_rng(width + k)
    n, H, h = 3, 7, 4
    rt = ops.rt
    frames = rt.to_device(rng.integers(0, 256, (n, H, width, 3), dtype=np.uint8))
    c = rng.uniform(-0.2, 1.5, (3, 3)) / 255.0
    e = rng.uniform(-1.0, 1.0, (3, 3))
    if k:
        taps = spatial_taps.bicubic(h, H)
        iy, wy = ops.taps(taps)
        k = taps.index.shape[1]
        signal = rt.to_device(rng.standard_normal((n, h, width, 3)).astype(np.float32))
    else:
        iy = wy = signal = rt.dummy()
    flat = rt.empty((n, H, width, 3), np.uint8)
    grid = rt.empty((n, H, width, 3), np.uint8)
    pixels = n * H * width
    rt.launch("render", -(-pixels // 4), frames, signal, flat, iy, wy, k, H, width, h, pixels, *_floats(c),
              *_floats(e))
    rt.launch_grid("render_grid", width // 4, H, n, frames, signal, grid, iy, wy, k, H, width, h, *_floats(c),
                   *_floats(e))
    a, b = flat.get().astype(np.int16), grid.get().astype(np.int16)
    assert np.abs(a - b).max() <= 1
    assert (a != b).mean() < 0.01  # an FMA's last bit moves a rounding now and then, not the picture


def test_more_frames_than_one_grid_holds_go_in_pieces(ops, monkeypatch):
    """Past MAX_GROUPS frames the launch is cut into pieces that start at ``f0``: the same values."""
    rng = np.random.default_rng(1)
    host = rng.standard_normal((7, 5, 8, 3)).astype(np.float32)
    taps = spatial_taps.reduce(5, "laplacian")
    whole = ops.map_cols(ops.rt.to_device(host), taps).get()
    names = _launched(ops, monkeypatch)
    monkeypatch.setattr(device_module, "MAX_GROUPS", 2)
    configs = []
    enqueue = type(ops.rt)._enqueue
    monkeypatch.setattr(type(ops.rt), "_enqueue", lambda self, kernel, config, args: (
        configs.append((config.grid, args[-2])), enqueue(self, kernel, config, args))[1])
    pieces = ops.map_cols(ops.rt.to_device(host), taps).get()
    assert names == ["cols_grid_f32"]
    assert [(grid[2], f0) for grid, f0 in configs] == [(2, 0), (2, 2), (2, 4), (1, 6)]
    np.testing.assert_array_equal(pieces, whole)


def test_the_host_code_picks_the_grid_kernel_where_rows_are_whole_vectors(ops, monkeypatch):
    names = _launched(ops, monkeypatch)
    for width, dtype in ((16, np.uint8), (8, np.uint8), (8, np.float32), (6, np.float32)):
        ops.map_cols(ops.rt.to_device(np.zeros((2, 6, width, 3), dtype)), spatial_taps.reduce(6, "gaussian"))
    ops.map_rows(ops.rt.to_device(np.zeros((2, 6, 9, 3), np.uint8)), spatial_taps.reduce(9, "gaussian"))
    assert names == ["cols_grid_u8", "cols_u8", "cols_grid_f32", "cols_f32", "rows_grid_u8"]


def test_the_grid_kernels_are_kernels_and_the_grid_is_bounded():
    assert GRID_KERNELS <= set(KERNELS)
    for name in GRID_KERNELS:
        params = program(name, "glsl").signature(name).params
        assert [p.name for p in params[-2:]] == ["f0", "xs"]
    config = cover_grid(65, 3, 2)
    assert config.grid == (2, 3, 2)
    with pytest.raises(ValueError, match="rows and frames"):
        cover_grid(1, MAX_GROUPS + 1, 1)



def test_the_scan_four_samples_per_item_agrees_with_the_scan(ops, monkeypatch):
    """``scan4`` (float4 loads) against ``scan``: the outputs and the carried state, over two calls; the host
    code takes it where the values per frame are whole float4s."""
    rng = np.random.default_rng(3)
    t, p = 5, 24
    coefficients = (0.6, 0.25, 0.15, 0.9, 0.06, 0.04, 7.0)
    start = [rng.standard_normal(p).astype(np.float32) for _ in range(3)]
    chunks = [rng.standard_normal((t, p)).astype(np.float32) for _ in range(2)]
    results = {}
    for kernel, items in (("scan", p), ("scan4", p // 4)):
        state = [ops.rt.to_device(v) for v in start]
        outs = []
        for chunk in chunks:
            x = ops.rt.to_device(chunk)
            ops.rt.launch(kernel, items, x, *state, t, items, *coefficients)
            outs.append(x.get())
        results[kernel] = outs + [v.get() for v in state]
    for got, expected in zip(results["scan4"], results["scan"]):
        _close(got, expected)
    names = _launched(ops, monkeypatch)
    for values in (24, 21):
        state = ops.start_state(ops.rt.to_device(np.zeros(values, np.float32)))
        ops.scan_into(state, ops.rt.to_device(np.zeros((2, values), np.float32)), (1, 0, 0), (1, 0, 0), 1.0)
    assert [n for n in names if n.startswith("scan")] == ["scan4", "scan"]
