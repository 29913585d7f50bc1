"""The downsamplers of the multirate constant-Q transform: per-row soxr calls, one-filter form, adjoint.

The linear form (``linear_form``) is what the gradient rests on, so it is checked against the resamplers' own
output on every short length (where the ends dominate) and on long signals.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from specux import _soxr_direct
from specux._resample import SOXR_QUALITIES, StreamDownsampler, downsample
from specux._resample_linear import downsample_adjoint, linear_form

soxr = pytest.importorskip("soxr")

LENGTHS = [*range(1, 31), 257, 1000, 1001, 4097]


def _apply_form(x: np.ndarray, factor: int, res_type: str) -> np.ndarray:
    """The linear form written as plain loops over outputs (see specux._resample_linear)."""
    form = linear_form(factor, res_type)
    n = x.shape[-1]
    y = np.zeros((x.shape[0], -(-n // factor)))
    j = np.arange(form.taps.size)
    for m in range(form.count(n)):
        idx = factor * m - form.k0 - j
        ok = (idx >= 0) & (idx < n)
        y[:, m] = x[:, idx[ok]] @ form.taps[ok]
        if m < form.head.shape[0]:
            c = min(n, form.head.shape[1])
            y[:, m] += x[:, :c] @ form.head[m, :c]
    return y * np.sqrt(factor)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("quality", SOXR_QUALITIES)
def test_rows_match_one_soxr_call_each(quality: str, dtype) -> None:
    # 11 rows: libsoxr takes them 8 channels per call, then 3; every row's numbers are its own call's
    x = np.random.default_rng(0).standard_normal((11, 1001)).astype(dtype)
    y = downsample(x, 2, quality, scale=False)
    assert y.dtype == dtype and y.shape == (11, 501)
    for row, out in zip(x, y):
        np.testing.assert_array_equal(out, soxr.resample(row, 2, 1, quality=quality))


def test_long_rows_fed_in_pieces_match_one_soxr_call_each() -> None:
    # rows longer than _soxr_direct.PIECE go to libsoxr piece by piece; the numbers must not change
    n = 2 * _soxr_direct.PIECE + 12_345
    x = np.random.default_rng(2).standard_normal((3, n)).astype(np.float32)
    y = downsample(x, 2, "soxr_hq", scale=False)
    for row, out in zip(x, y):
        np.testing.assert_array_equal(out, soxr.resample(row, 2, 1, quality="soxr_hq"))


def test_strided_rows_are_resampled_as_their_values() -> None:
    x = np.random.default_rng(1).standard_normal((4, 2002)).astype(np.float32)
    np.testing.assert_array_equal(
        downsample(x[:, ::2], 2, "soxr_hq"), downsample(np.ascontiguousarray(x[:, ::2]), 2, "soxr_hq")
    )
    np.testing.assert_array_equal(downsample(x[::2], 2, "soxr_hq"), downsample(x[[0, 2]], 2, "soxr_hq"))


@pytest.mark.parametrize("direct", [True, False], ids=["libsoxr-direct", "soxr-stream"])
@pytest.mark.parametrize("n", [1, 2, 999, 1000, 70_001])
def test_a_signal_fed_in_pieces_gives_the_one_call_numbers(n: int, direct: bool, monkeypatch) -> None:
    x = np.random.default_rng(n).standard_normal((1, n)).astype(np.float32)
    expected = downsample(x, 2, "soxr_hq")[0]
    package = soxr.resample(x[0], 2, 1, "soxr_hq")
    np.testing.assert_array_equal(expected[: package.size], (package / np.sqrt(0.5)).astype(np.float32))
    if not direct:
        monkeypatch.setattr(_soxr_direct, "new_resampler", lambda *args: None)
    dest = np.full(expected.shape, np.nan, np.float32)
    stream = StreamDownsampler(2, "soxr_hq", dest)
    cuts = np.sort(np.random.default_rng(0).integers(0, n + 1, size=6))  # pieces of every size, empty too
    pieces = np.split(x[0], cuts)
    written = [stream.push(piece, last=i == len(pieces) - 1) for i, piece in enumerate(pieces)]
    np.testing.assert_array_equal(dest, expected)
    np.testing.assert_array_equal(np.concatenate(written), expected)


def test_libsoxr_is_called_directly_here_and_gives_the_package_numbers(monkeypatch) -> None:
    # the direct path (ctypes, without the GIL) must be the one in use on this machine, so that CI runs it
    for quality in SOXR_QUALITIES:
        for dtype in (np.float32, np.float64):
            assert _soxr_direct.resampler(2, quality, dtype) is not None, (quality, dtype)
    x = np.random.default_rng(4).standard_normal((5, 10_007)).astype(np.float32)
    direct = downsample(x, 4, "soxr_hq")
    monkeypatch.setattr(_soxr_direct, "resampler", lambda *args: None)  # the soxr package's stream instead
    np.testing.assert_array_equal(downsample(x, 4, "soxr_hq"), direct)


def test_an_unusable_library_is_refused_by_the_check(monkeypatch) -> None:
    _soxr_direct._verified.cache_clear()
    monkeypatch.setattr(_soxr_direct, "_library", lambda: None)
    try:
        assert _soxr_direct.resampler(2, "soxr_mq", np.float32) is None
    finally:
        _soxr_direct._verified.cache_clear()


def test_threads_do_not_share_a_resampler_state() -> None:
    x = np.random.default_rng(1).standard_normal((8, 5000))
    expected = downsample(x, 2, "soxr_hq")
    results: list[np.ndarray] = [None] * 8  # type: ignore[list-item]

    def run(i: int) -> None:
        for _ in range(20):
            results[i] = downsample(x, 2, "soxr_hq")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        np.testing.assert_array_equal(r, expected)


@pytest.mark.parametrize(
    "res_type, factor, tol",
    [
        # libsoxr's own precision: single-precision engines below very high quality
        ("soxr_vhq", 2, 1e-9),
        ("soxr_hq", 2, 1e-6),
        ("soxr_mq", 2, 2e-6),
        ("soxr_lq", 2, 5e-6),
        ("soxr_qq", 2, 1e-6),
        # libsoxr's multi-stage decimation, with its start-up correction
        ("soxr_hq", 4, 1e-6),
        ("soxr_hq", 16, 1e-6),
        ("soxr_vhq", 8, 1e-6),
        ("soxr_mq", 4, 2e-6),
        ("polyphase", 2, 1e-12),
        ("polyphase", 4, 1e-12),
        ("polyphase", 16, 1e-12),
    ],
)
def test_linear_form_reproduces_the_resampler(res_type: str, factor: int, tol: float) -> None:
    for n in [*range(1, 41), 257, 1001, 4097, 20000]:
        x = np.random.default_rng(n).standard_normal((2, n))
        y = downsample(x, factor, res_type)
        # (a short signal may give no output at all: scale by the input then)
        err = np.abs(_apply_form(x, factor, res_type) - y).max() / max(np.abs(y).max(), np.abs(x).max())
        assert err < tol, (n, err)


def test_the_start_up_correction_is_needed_and_absent_by_two() -> None:
    """By 4, libsoxr's first outputs are not one filter's (the correction is real); by 2 they are."""
    assert linear_form(2, "soxr_hq").head.size == 0
    head = linear_form(4, "soxr_hq").head
    assert np.abs(head).max() > 1e-3 * np.abs(linear_form(4, "soxr_hq").taps).max()


@pytest.mark.parametrize(
    "res_type, factor, tol",
    [
        ("soxr_hq", 2, 1e-6),
        ("soxr_vhq", 2, 1e-9),
        ("soxr_hq", 8, 1e-6),
        ("polyphase", 2, 1e-12),
        ("polyphase", 8, 1e-12),
    ],
)
@pytest.mark.parametrize("n", [1, 2, 7, 64, 1001])
def test_adjoint_identity(res_type: str, factor: int, tol: float, n: int) -> None:
    """<D x, g> = <x, D^T g> with D the resampler itself (to libsoxr's precision)."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal((2, n))
    y = downsample(x, factor, res_type)
    g = rng.standard_normal(y.shape)
    lhs = np.sum(y * g)
    rhs = np.sum(x * downsample_adjoint(g, n, factor, res_type))
    scale = np.linalg.norm(y) * np.linalg.norm(g)
    assert abs(lhs - rhs) <= tol * scale


def test_adjoint_keeps_float32() -> None:
    g = np.ones((1, 50), np.float32)
    assert downsample_adjoint(g, 100, 2, "soxr_hq").dtype == np.float32
