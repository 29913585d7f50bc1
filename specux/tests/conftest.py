"""Shared helpers of specux's tests: the required-backend rule, tolerances, fixture data and the error table.

- ``require_backend(name)``: the backend object; a backend that cannot run here is a skip with its reason,
  or a failure when its name is listed in ``SPECUX_REQUIRE_BACKENDS`` (comma-separated; CI sets it).
- ``TOLERANCES``: one table, keyed by (operation, dtype), of the relative error allowed against the NumPy
  reference or a peer library.
- ``error_table``: records the worst relative error seen per (operation, peer); printed at the end of the run
  and written as JSON to ``$SPECUX_ERROR_TABLE`` when that is set (the source of the docs' error table).
- ``ref_data``: the folder of librosa's MATLAB fixtures (``../shared/ref/librosa-test-data`` from the
  repository root, or ``$SPECUX_REF_DATA``); tests that need it skip with the reason when it is absent.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

# Test modules import the helpers below as ``from specux_test_support import rel_err, tolerance``: under
# pytest's importlib mode this file is not importable as ``conftest`` (the repository root's conftest holds
# that name), so it registers itself under a name of its own when pytest loads it, before any test module.
sys.modules.setdefault("specux_test_support", sys.modules[__name__])

REQUIRE_ENV = "SPECUX_REQUIRE_BACKENDS"
REF_ENV = "SPECUX_REF_DATA"
TABLE_ENV = "SPECUX_ERROR_TABLE"

#: relative error (max |a - b| / max |b|) allowed per (operation, real precision)
TOLERANCES: dict[tuple[str, str], float] = {
    ("fft", "float32"): 1e-5,
    ("fft", "float64"): 1e-12,
    ("stft", "float32"): 1e-5,
    ("stft", "float64"): 1e-12,
    ("istft", "float32"): 1e-5,
    ("istft", "float64"): 1e-11,
    ("melspectrogram", "float32"): 1e-5,
    ("melspectrogram", "float64"): 1e-10,
    # librosa's mel bank is float32 by default: a float64 signal meets float32-rounded weights there
    ("melspectrogram_vs_librosa", "float64"): 1e-6,
    ("melspectrogram_vs_torchaudio", "float32"): 2e-5,
    ("mfcc", "float32"): 1e-4,
    ("mfcc", "float64"): 1e-9,
    ("mfcc_vs_librosa", "float64"): 1e-6,
    ("mfcc_vs_torchaudio", "float32"): 2e-5,
    ("lfcc", "float32"): 1e-4,
    ("lfcc", "float64"): 1e-9,
    ("lfcc_vs_torchaudio", "float32"): 2e-5,
    ("fftconvolve", "float32"): 1e-5,
    ("fftconvolve", "float64"): 1e-12,
}


def device_dtypes(backend, wanted=("float32", "float64", "float16")) -> list[str]:
    """The dtypes of ``wanted`` that ``backend`` accepts (float64 only where the device has it)."""
    return [d for d in wanted if d in backend.dtypes]


def reference_dtype(dtype: str) -> str:
    """The CPU precision a device result of input ``dtype`` compares with (half storage computes in
    float32)."""
    return "float32" if dtype == "float16" else dtype


@pytest.fixture
def opencl(require_backend, monkeypatch):
    """The opencl backend for sweeps: built with ``-cl-opt-disable`` (PoCL's first launch of a kernel costs
    about six times less; the default options are spot-checked in the FFT conformance tests)."""
    monkeypatch.setenv("KERNELKIT_OPENCL_OPTIONS", "-cl-opt-disable")
    return require_backend("opencl")


def tolerance(op: str, dtype) -> float:
    return TOLERANCES[(op, np.dtype(dtype).name if not isinstance(dtype, str) else dtype)]


def rel_err(a, b) -> float:
    """max |a - b| / max |b| (0 when both are all zero); NaN positions must agree."""
    a = np.asarray(a)
    b = np.asarray(b)
    assert a.shape == b.shape, f"shape {a.shape} != {b.shape}"
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    assert np.array_equal(nan_a, nan_b), "NaN positions differ"
    a = np.where(nan_a, 0, a)
    b = np.where(nan_b, 0, b)
    scale = np.abs(b).max() if b.size else 0.0
    diff = np.abs(a.astype(np.complex128) - b.astype(np.complex128)).max() if b.size else 0.0
    return float(diff / scale) if scale > 0 else float(diff)


def required_backends() -> set[str]:
    return {name.strip() for name in os.environ.get(REQUIRE_ENV, "").split(",") if name.strip()}


def require_backend_or_skip(name: str):
    """The backend object called ``name``; skip (or fail, if listed in SPECUX_REQUIRE_BACKENDS) if
    unavailable."""
    from specux._backends import registry

    reason, backend = registry._load(name)
    if reason is not None:
        message = f"specux backend {name!r} cannot run here: {reason}"
        if name in required_backends():
            pytest.fail(f"{message} (required by {REQUIRE_ENV})")
        pytest.skip(message)
    return backend


@pytest.fixture
def require_backend():
    """``require_backend(name) -> backend``, skipping or failing per ``SPECUX_REQUIRE_BACKENDS``."""
    return require_backend_or_skip


def skip_or_fail(name: str, reason: str) -> None:
    """Skip with ``reason``, or fail when ``name`` (a backend or a check such as ``nvrtc``) is required."""
    message = f"{name} cannot run here: {reason}"
    if name in required_backends():
        pytest.fail(f"{message} (required by {REQUIRE_ENV})")
    pytest.skip(message)


@pytest.fixture
def require_check():
    """``require_check(name, reason)``: skip, or fail when ``name`` is listed in ``SPECUX_REQUIRE_BACKENDS``.

    For checks that are not backends but must run in CI all the same: ``nvrtc`` (CUDA kernels compile to
    cubin) and ``msl`` (the emitted Metal source passes the C++ syntax check)."""
    return skip_or_fail


def ref_data_dir() -> Path | None:
    env = os.environ.get(REF_ENV)
    if env:
        path = Path(env)
    else:
        path = Path(__file__).resolve().parents[2].parent / "shared" / "ref" / "librosa-test-data"
    return path if path.is_dir() else None


@pytest.fixture(scope="session")
def ref_data() -> Path:
    path = ref_data_dir()
    if path is None:
        pytest.skip(f"librosa reference fixtures not found (../shared/ref/librosa-test-data or ${REF_ENV})")
    return path


class ErrorTable:
    """Worst relative error per (operation, peer) over the run."""

    def __init__(self) -> None:
        self.worst: dict[tuple[str, str], float] = {}

    def record(self, op: str, peer: str, err: float) -> float:
        key = (op, peer)
        self.worst[key] = max(self.worst.get(key, 0.0), float(err))
        return err


_TABLE = ErrorTable()


@pytest.fixture(scope="session")
def error_table() -> ErrorTable:
    return _TABLE


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # pragma: no cover - reporting only
    if not _TABLE.worst:
        return
    terminalreporter.section("specux: worst relative error per operation and peer")
    for (op, peer), err in sorted(_TABLE.worst.items()):
        terminalreporter.write_line(f"{op:<28} {peer:<26} {err:.3e}")
    target = os.environ.get(TABLE_ENV)
    if target:
        rows = [
            {"op": op, "peer": peer, "worst_rel_err": err} for (op, peer), err in sorted(_TABLE.worst.items())
        ]
        Path(target).write_text(json.dumps(rows, indent=2))


@pytest.fixture(scope="session")
def compare():
    """``compare(op, peer, got, expected, tol_key=None, dtype=None) -> err``: record the relative error
    against
    ``peer`` in the error table and assert it is within ``TOLERANCES[(tol_key or op, dtype)]``."""

    def check(op: str, peer: str, got, expected, tol_key: str | None = None, dtype=None) -> float:
        got = got.numpy() if hasattr(got, "numpy") and not isinstance(got, np.ndarray) else got
        expected = (
            expected.numpy()
            if hasattr(expected, "numpy") and not isinstance(expected, np.ndarray)
            else expected
        )
        dt = np.dtype(dtype) if dtype is not None else np.asarray(got).real.dtype
        err = _TABLE.record(f"{op} [{dt.name}]", peer, rel_err(got, expected))
        tol = tolerance(tol_key or op, dt)
        assert err <= tol, f"{op} vs {peer}: relative error {err:.3e} > {tol:.1e}"
        return err

    return check


# --- property tests (test_properties_*.py) ------------------------------------------------------------------
#: the transforms that had no entry above, with the numbers their example-based tests hold the comparison with
#: the NumPy reference to (test_cqt_transform's and test_chroma_features' TOL); chroma_cqt folds |vqt| onto
#: pitch classes (sums of magnitudes, then a per-frame scale), which keeps vqt's relative error
TOLERANCES.update(
    {
        ("vqt", "float32"): 2e-5,
        ("vqt", "float64"): 1e-12,
        ("chroma_stft", "float32"): 1e-5,
        ("chroma_stft", "float64"): 1e-12,
        ("chroma_cqt", "float32"): 2e-5,
        ("chroma_cqt", "float64"): 1e-12,
    }
)

# Hypothesis profiles (ci, thorough) are registered once, in the repository's conftest.py.


@pytest.fixture(scope="session")
def backend_check():
    """``require_backend`` for property tests: hypothesis refuses function-scoped fixtures in ``@given``
    tests, and this one keeps no state between examples."""
    return require_backend_or_skip


@pytest.fixture
def small_os(monkeypatch):
    """fftconvolve's overlap-save thresholds low enough for short test signals (block 64..., chunks of a few
    frames), so the device's overlap-save path runs on them."""
    from specux._runtime import convolve_exec as ce

    monkeypatch.setattr(ce, "OS_MIN_LONG", 256)
    monkeypatch.setattr(ce, "OS_RATIO", 8)
    monkeypatch.setattr(ce, "OS_FACTOR", 4)
    monkeypatch.setattr(ce, "OS_MIN_BLOCK", 64)
    monkeypatch.setattr(ce, "OS_CHUNK", 1000)
