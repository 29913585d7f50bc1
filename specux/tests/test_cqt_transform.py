"""specux.cqt / specux.vqt against librosa 0.11, the NumPy references and the definition.

Errors are max |a - b| / max |b| over the whole transform. The tolerances below are measured values with
margin (see docs/specux/constant-q.md): with the soxr resampler specux runs librosa's algorithm step by step,
so the two agree to float rounding (librosa rounds its filters to complex64 even for float64 input, hence
1e-6).
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest
import scipy.signal

import specux
from specux._reference import cqt as ref
from specux.errors import BackendUnavailableError, UnsupportedOperationError

librosa = pytest.importorskip("librosa")

# librosa warns when a low octave's FFT is longer than its (downsampled) signal; so does nothing here
pytestmark = pytest.mark.filterwarnings("ignore:n_fft=.*is too large:UserWarning")

SR = 22050

#: (comparison, real precision) -> largest relative error accepted
TOL = {
    ("librosa_soxr", "float32"): 2e-5,
    ("librosa_soxr", "float64"): 1e-6,
    # scipy's polyphase FIR against soxr's filter: a different anti-aliasing response in every octave
    ("librosa_polyphase", "float32"): 3e-2,
    ("librosa_polyphase", "float64"): 3e-2,
    ("reference", "float32"): 2e-5,
    ("reference", "float64"): 1e-12,
    # without resampling and sparsification the transform is the direct inner products, to rounding
    ("direct", "float64"): 1e-12,
}


def rel_err(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"shape {a.shape} != {b.shape}"
    return float(np.abs(a.astype(np.complex128) - b).max() / np.abs(b).max())


def check(error_table, op: str, peer: str, key: str, got, expected, dtype) -> None:
    err = error_table.record(op, peer, rel_err(got, expected))
    tol = TOL[(key, np.dtype(dtype).name)]
    assert err <= tol, f"{op} vs {peer}: relative error {err:.3e} > {tol:.1e}"


def signal(kind: str, seconds: float = 1.0, dtype=np.float64) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    if kind == "sines":
        y = np.sin(2 * np.pi * 440.0 * t) + 0.5 * np.sin(2 * np.pi * 97.0 * t + 1.0)
    elif kind == "chirp":
        y = np.sin(2 * np.pi * (40.0 * t + 1500.0 * t**2))
    else:
        y = np.random.default_rng(3).standard_normal(t.size)
    return y.astype(dtype)


CQT_CASES = [
    {},
    {"hop_length": 256, "n_bins": 60, "fmin": 55.0},
    {"hop_length": 384, "bins_per_octave": 24, "n_bins": 150, "filter_scale": 0.8},
    {"scale": False, "pad_mode": "reflect", "norm": 2, "sparsity": 0.0},
    {"hop_length": 255, "n_bins": 48, "fmin": 110.0, "window": "hamming"},  # odd hop: no downsampling
    {"hop_length": 2048, "n_bins": 24, "fmin": 30.0},  # early downsampling by 32
    {"hop_length": 2048, "n_bins": 24, "fmin": 30.0, "scale": False},
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["sines", "chirp", "noise"])
@pytest.mark.parametrize("case", range(len(CQT_CASES)))
def test_cqt_matches_librosa_with_soxr(kind, dtype, case, error_table):
    kw = CQT_CASES[case]
    y = signal(kind, dtype=dtype)
    got = specux.cqt(y, sr=SR, **kw)
    expected = librosa.cqt(y, sr=SR, **kw)
    assert got.dtype == expected.dtype
    check(error_table, "cqt", "librosa (soxr_hq)", "librosa_soxr", got, expected, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "kw",
    [
        {"gamma": None},
        {"gamma": 8.0, "hop_length": 128, "n_bins": 72},
        {"gamma": None, "bins_per_octave": 24, "n_bins": 140, "fmin": 50.0},
        {"intervals": [1.0, 1.25, 1.5], "n_bins": 18, "fmin": 65.0, "gamma": 0.0},
    ],
)
def test_vqt_matches_librosa_with_soxr(kw, dtype, error_table):
    y = signal("chirp", dtype=dtype)
    got = specux.vqt(y, sr=SR, **kw)
    expected = librosa.vqt(y, sr=SR, **kw)
    check(error_table, "vqt", "librosa (soxr_hq)", "librosa_soxr", got, expected, dtype)


@pytest.mark.parametrize("window", [("kaiser", 6.0), "blackman", "callable"])
def test_window_specifications_match_librosa(window, error_table):
    window = scipy.signal.windows.blackmanharris if window == "callable" else window
    y = signal("noise", seconds=0.5)
    check(
        error_table,
        "cqt",
        "librosa (soxr_hq)",
        "librosa_soxr",
        specux.cqt(y, sr=SR, window=window),
        librosa.cqt(y, sr=SR, window=window),
        np.float64,
    )


def test_vqt_default_gamma_is_erb_and_differs_from_cqt():
    y = signal("noise")
    assert not np.allclose(specux.vqt(y, sr=SR), specux.cqt(y, sr=SR))
    np.testing.assert_allclose(specux.vqt(y, sr=SR, gamma=0), specux.cqt(y, sr=SR), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["sines", "chirp", "noise"])
def test_polyphase_resampler_within_documented_error_of_librosa(kind, error_table):
    y = signal(kind)
    got = specux.cqt(y, sr=SR, res_type="polyphase")
    check(
        error_table, "cqt", "librosa (polyphase)", "librosa_polyphase", got, librosa.cqt(y, sr=SR), np.float64
    )
    got = specux.vqt(y, sr=SR, res_type="polyphase")
    check(
        error_table, "vqt", "librosa (polyphase)", "librosa_polyphase", got, librosa.vqt(y, sr=SR), np.float64
    )


@pytest.mark.parametrize("res_type", ["soxr_hq", "polyphase", None])
@pytest.mark.parametrize(
    "kw",
    [
        {"gamma": 0},
        {"gamma": None, "hop_length": 384},
        {"gamma": 3.0, "n_bins": 100, "bins_per_octave": 24, "scale": False, "pad_mode": "edge"},
        {"gamma": 0, "hop_length": 1024, "n_bins": 30, "fmin": 40.0},
    ],
)
def test_fast_path_matches_reference(kw, res_type, error_table):
    y = signal("sines", seconds=0.7)
    got = specux.vqt(y, sr=SR, res_type=res_type, **kw)
    expected = ref.vqt(y, sr=SR, res_type=res_type, **kw)
    check(error_table, "vqt", "NumPy reference", "reference", got, expected, np.float64)
    got32 = specux.vqt(y.astype(np.float32), sr=SR, res_type=res_type, **kw)
    check(error_table, "vqt", "NumPy reference", "reference", got32, expected, np.float32)


def test_reference_matches_librosa(error_table):
    y = signal("chirp", seconds=0.7)
    for gamma in (0, None):
        got = ref.vqt(y, sr=SR, gamma=gamma, hop_length=256)
        expected = librosa.vqt(y, sr=SR, gamma=gamma, hop_length=256)
        check(error_table, "vqt reference", "librosa (soxr_hq)", "librosa_soxr", got, expected, np.float64)


@pytest.mark.parametrize("kind", ["sines", "noise"])
def test_no_resampling_mode_matches_direct_inner_products(kind, error_table):
    y = signal(kind, seconds=0.5)
    got = specux.cqt(y, sr=SR, res_type=None, sparsity=0.0, hop_length=256)
    expected = ref.vqt_direct(y, sr=SR, gamma=0, hop_length=256, n_frames=got.shape[-1])
    assert got.shape[-1] == 1 + y.size // 256
    check(error_table, "cqt (res_type=None)", "direct inner products", "direct", got, expected, np.float64)
    got = specux.vqt(y, sr=SR, res_type=None, sparsity=0.0, hop_length=256, n_bins=60, fmin=55.0)
    expected = ref.vqt_direct(
        y, sr=SR, gamma=None, hop_length=256, n_bins=60, fmin=55.0, n_frames=got.shape[-1]
    )
    check(error_table, "vqt (res_type=None)", "direct inner products", "direct", got, expected, np.float64)


@pytest.mark.parametrize("note,bpo", [("A4", 12), ("C3", 12), ("E5", 36), ("G2", 24)])
def test_pure_tone_peaks_at_its_note(note, bpo):
    freq = specux.note_to_hz(note)
    t = np.arange(SR) / SR
    y = np.sin(2 * np.pi * freq * t)
    C = np.abs(specux.cqt(y, sr=SR, bins_per_octave=bpo, n_bins=7 * bpo))
    expected_bin = round((specux.hz_to_midi(freq) - 24) * bpo / 12)
    assert int(np.argmax(C[:, 5:-5].mean(axis=1))) == expected_bin


def test_tuning_shifts_the_bank_and_none_estimates_like_librosa():
    t = np.arange(SR) / SR
    y = np.sin(2 * np.pi * 440.0 * 2 ** (0.3 / 12) * t)
    got = specux.cqt(y, sr=SR, tuning=None)
    np.testing.assert_allclose(np.abs(got), np.abs(librosa.cqt(y, sr=SR, tuning=None)), rtol=1e-5, atol=1e-6)
    tuned = specux.cqt(y, sr=SR, tuning=specux.estimate_tuning(y, sr=SR))
    np.testing.assert_array_equal(got, tuned)


def test_nyquist_error_names_the_limit():
    y = signal("noise", seconds=0.2)
    # from C1 at 22.05 kHz, bin 101 (about 11.18 kHz) is the first whose filter reaches past 11.025 kHz
    with pytest.raises(ValueError, match="Nyquist"):
        specux.cqt(y, sr=SR, n_bins=102)
    with pytest.raises(librosa.util.exceptions.ParameterError, match="Nyquist"):
        librosa.cqt(y, sr=SR, n_bins=102)
    with pytest.raises(ValueError, match="Nyquist"):
        specux.vqt(y, sr=8000, fmin=1000.0, n_bins=30)
    assert specux.cqt(y, sr=SR, n_bins=101).shape[0] == 101


@pytest.mark.parametrize("dtype,out", [(np.float32, np.complex64), (np.float64, np.complex128)])
def test_dtypes_follow_input(dtype, out):
    y = signal("sines", seconds=0.3, dtype=dtype)
    assert specux.cqt(y, sr=SR).dtype == out
    assert specux.vqt(y, sr=SR, dtype=np.complex128).dtype == np.complex128


def test_batch_dimensions_match_single_channels():
    y = np.stack([signal("sines", 0.4), signal("chirp", 0.4), signal("noise", 0.4)]).reshape(3, 1, -1)
    got = specux.cqt(y, sr=SR, hop_length=256)
    assert got.shape[:2] == (3, 1)
    for i in range(3):
        np.testing.assert_allclose(
            got[i, 0], specux.cqt(y[i, 0], sr=SR, hop_length=256), rtol=1e-12, atol=1e-12
        )
    np.testing.assert_allclose(got, librosa.cqt(y, sr=SR, hop_length=256), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"pad_mode": "reflect", "hop_length": 384},
        {"pad_mode": "wrap", "res_type": "polyphase"},
        {"pad_mode": "edge", "hop_length": 255, "n_bins": 48, "fmin": 110.0},  # odd hop: stages shared
        {"hop_length": 2048, "n_bins": 24, "fmin": 30.0, "res_type": "soxr_vhq"},  # early downsampling
        {"hop_length": 1024, "n_bins": 36, "fmin": 30.0, "scale": False},  # early, then halvings
    ],
)
def test_one_long_signal_gives_the_numbers_of_the_batch_path(kw):
    # one signal runs its chain of halvings as a two-thread pipeline fed in pieces of 2 ** 17 samples; a
    # batch runs each row's chain in one go: the numbers must be the same, bit for bit
    y = np.random.default_rng(5).standard_normal((5, 300_001)).astype(np.float32)  # rows go in groups
    batch = specux.cqt(y, sr=SR, **kw)
    for row, expected in zip(y, batch):
        np.testing.assert_array_equal(specux.cqt(row, sr=SR, **kw), expected)


@pytest.mark.parametrize("pad_mode", ["constant", "reflect", "wrap"])
@pytest.mark.parametrize(
    "kw", [{"hop_length": 512}, {"hop_length": 384}, {"hop_length": 255}, {"hop_length": 1024, "fmin": 30.0}]
)
def test_a_signal_halved_in_many_pieces_gives_the_same_numbers(monkeypatch, pad_mode, kw):
    from specux._backends.cpu import cqt as cqt_module

    y = np.random.default_rng(6).standard_normal((3, 50_001)).astype(np.float32)
    kw = {"pad_mode": pad_mode, "n_bins": 36, **kw}
    batch = specux.cqt(y, sr=SR, **kw)
    monkeypatch.setattr(cqt_module, "_CHAIN_PIECE", 1000)
    for row, expected in zip(y, batch):
        np.testing.assert_array_equal(specux.cqt(row, sr=SR, **kw), expected)


@pytest.mark.parametrize("pad_mode", ["constant", "reflect", "edge", "symmetric", "wrap"])
@pytest.mark.parametrize(
    "n,n_fft,hop",
    [
        (3087, 2048, 75),
        (40_000, 256, 512),
        (40_000, 512, 8),
        (900, 256, 64),
        (1200, 1024, 1000),  # frames that barely overlap, the last one mostly padding
        (3000, 256, 100),  # one block: frames into the start padding, inside, into the end padding
        (129, 256, 3),  # a short signal, padded whole
    ],
)
def test_products_are_those_of_the_whole_padded_signal_block_by_block(pad_mode, n, n_fft, hop):
    # reading frames in place and padding only the ends must not change a bit: BLAS's rounding of a frame
    # depends on how many frames share its product, so the blocks must be those of the plain computation
    from specux._backends.cpu import cqt as cqt_module

    x = np.random.default_rng(7).standard_normal((2, n)).astype(np.float32)
    w = np.random.default_rng(8).standard_normal((n_fft, 6)).astype(np.float32)
    n_frames = 1 + n // hop
    got = np.empty((2, 3, n_frames), np.complex64)
    cqt_module._octave_response(x, w, n_fft, hop, pad_mode, n_frames, got)
    padded = np.pad(x, [(0, 0), (n_fft // 2, n_fft // 2)], mode=pad_mode)
    frames = np.lib.stride_tricks.sliding_window_view(padded, n_fft, axis=1)[:, ::hop][:, :n_frames]
    block = cqt_module._block_frames(n_fft)
    for row in range(2):
        for t0 in range(0, n_frames, block):
            chunk = np.ascontiguousarray(frames[row, t0 : t0 + block]) @ w
            np.testing.assert_array_equal(got[row, :, t0 : t0 + block], chunk.view(np.complex64).T)


@pytest.mark.parametrize("pad_mode", ["constant", "reflect", "edge", "symmetric", "wrap"])
@pytest.mark.parametrize("seconds", [0.02, 0.05, 0.6])
def test_padded_ends_match_the_reference(pad_mode, seconds, error_table):
    # frames inside the signal are read in place and only the ends are padded, except where the signal is
    # too short for that (or wrap padding reads the other end): all must equal padding the whole signal
    y = signal("chirp", seconds=seconds)
    kw = {"pad_mode": pad_mode, "hop_length": 64, "n_bins": 36, "fmin": 220.0}
    expected = ref.vqt(y, sr=SR, gamma=0, **kw)
    got = specux.cqt(y, sr=SR, **kw)
    check(error_table, "cqt", "NumPy reference", "reference", got, expected, np.float64)


def test_torch_tensor_in_torch_tensor_out():
    torch = pytest.importorskip("torch")
    y = signal("chirp", 0.5, dtype=np.float32)
    got = specux.cqt(torch.from_numpy(y), sr=SR)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.complex64
    np.testing.assert_array_equal(got.numpy(), specux.cqt(y, sr=SR))
    # the default resampler is differentiable (the gradients themselves: test_torch_ops_gradients.py)
    yt = torch.from_numpy(y).requires_grad_(True)
    specux.vqt(yt, sr=SR).abs().sum().backward()
    assert yt.grad is not None and yt.grad.shape == yt.shape and torch.isfinite(yt.grad).all()


@pytest.mark.parametrize(
    "kw,exc,match",
    [
        ({"hop_length": 0}, ValueError, "hop_length"),
        ({"hop_length": 2.5}, TypeError, "hop_length"),
        ({"tuning": float("nan")}, ValueError, "tuning"),
        ({"fmin": "C1"}, TypeError, "fmin"),  # a string is a TypeError (issue 19, item 5)
        ({"n_bins": 0}, ValueError, "n_bins"),
        ({"bins_per_octave": -12}, ValueError, "bins_per_octave"),
        ({"fmin": -5.0}, ValueError, "fmin"),
        ({"sr": 0}, ValueError, "sr"),
        ({"filter_scale": 0}, ValueError, "filter_scale"),
        ({"sparsity": 1.0}, ValueError, "sparsity"),
        ({"gamma": -1.0}, ValueError, "gamma"),
        ({"norm": "l2"}, TypeError, "norm"),  # vqt's norm takes no names: a string is a TypeError
        ({"pad_mode": "mirror"}, ValueError, "pad_mode"),
        ({"res_type": "kaiser_best"}, ValueError, "res_type"),
        ({"dtype": np.float32}, TypeError, "dtype"),
        ({"intervals": "ji5"}, ValueError, "intervals"),
        ({"backend": "gpu"}, ValueError, "backend"),
    ],
)
def test_bad_arguments_raise_clear_errors(kw, exc, match):
    y = signal("noise", seconds=0.2)
    with pytest.raises(exc, match=match):
        specux.vqt(y, sr=kw.pop("sr", SR), **kw)


def test_bad_signals_raise_clear_errors():
    with pytest.raises(TypeError, match="float32 or float64"):
        specux.cqt(np.arange(4000), sr=SR)
    with pytest.raises(ValueError, match="at least one sample"):
        specux.cqt(np.zeros(0), sr=SR)
    early = {"hop_length": 2048, "n_bins": 24, "fmin": 30.0}  # downsampled by 32 before the first octave
    with pytest.raises(ValueError, match="early downsampling factor 32"):
        specux.cqt(np.zeros(10), sr=SR, **early)
    assert specux.cqt(np.zeros(10), sr=SR, res_type=None, **early).shape == (24, 1)


def test_missing_soxr_is_an_import_error_naming_the_alternatives(monkeypatch):
    monkeypatch.setitem(sys.modules, "soxr", None)  # makes ``import soxr`` raise ImportError
    y = signal("noise", seconds=0.3)
    with pytest.raises(ImportError, match=r"pip install soxr.*polyphase.*None"):
        specux.cqt(y, sr=SR)
    assert specux.cqt(y, sr=SR, res_type="polyphase").shape[0] == 84


def test_concurrent_calls_agree_and_leave_blas_threads_as_they_were():
    y = signal("chirp", seconds=0.5)
    expected = specux.cqt(y, sr=SR)
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = [i["num_threads"] for i in threadpoolctl.threadpool_info()]
    results = []

    def work():
        results.extend(specux.cqt(y, sr=SR) for _ in range(3))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 9 and all(np.array_equal(r, expected) for r in results)
    assert [i["num_threads"] for i in threadpoolctl.threadpool_info()] == before


def test_calls_from_the_shared_pool_run_there_without_waiting_for_it():
    # work handed to the pool from one of its own workers could wait forever for a free worker
    from specux._threads import pool

    y = np.random.default_rng(2).standard_normal((4, 200_000)).astype(np.float32)
    expected = specux.cqt(y, sr=SR)
    jobs = [pool().submit(specux.cqt, y[i], sr=SR) for i in range(4)] + [pool().submit(specux.cqt, y, sr=SR)]
    results = [job.result(timeout=60) for job in jobs]
    for i in range(4):
        np.testing.assert_array_equal(results[i], expected[i])
    np.testing.assert_array_equal(results[4], expected)


def test_a_call_gets_the_same_bits_on_any_thread(monkeypatch):
    # The main thread used to keep threadpoolctl's claim on OpenBLAS's thread count after its first call:
    # on every other thread the limit to one BLAS thread then did nothing, and the products, on several
    # threads, rounded differently (3e-6 in the lowest bins of a float32 transform).
    from specux._backends.cpu import cqt as cqt_module

    y = np.random.default_rng(2).standard_normal(200_000).astype(np.float32)
    for fan_out in (True, False):  # one signal pipelined on the pool, or every octave in turn
        monkeypatch.setattr(cqt_module, "can_fan_out", lambda fan_out=fan_out: fan_out)
        expected = specux.cqt(y, sr=SR)
        for _ in range(2):
            got = []
            t = threading.Thread(target=lambda got=got: got.append(specux.cqt(y, sr=SR)))
            t.start()
            t.join()
            assert len(got) == 1
            np.testing.assert_array_equal(got[0], expected)


def test_unavailable_backend_says_why():
    y = signal("noise", seconds=0.2)
    reason = {b.name: b for b in specux.backends()}["cuda"]
    if reason.available:
        with pytest.raises(UnsupportedOperationError, match="served by: cpu"):
            specux.cqt(y, sr=SR, backend="cuda")
    else:
        with pytest.raises(BackendUnavailableError):
            specux.cqt(y, sr=SR, backend="cuda")
    np.testing.assert_array_equal(specux.cqt(y, sr=SR, backend="cpu"), specux.cqt(y, sr=SR))


def test_non_finite_values_propagate():
    y = signal("noise", seconds=0.5)
    y[3000] = np.nan
    for res_type in ("polyphase", "soxr_hq", None):
        C = specux.cqt(y, sr=SR, res_type=res_type)
        # the top octave's filters are short: the NaN reaches only the frames near sample 3000
        top = C[-12:]
        assert np.isnan(top[:, round(3000 / 512)]).all()
        assert np.isfinite(top[:, -1]).all() and np.isfinite(top[:, 0]).all()
