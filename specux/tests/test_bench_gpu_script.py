"""bench/specux_gpu.py runs end to end on the opencl backend (PoCL in CI) in its --smoke size: it prints the
ratio table with the error column, reports that specux ran on numpy inputs, and its JSON holds results that
match the CPU backend. Also the peak-bandwidth table and the refusal of a backend that cannot run.

Nothing here looks at the times themselves (tests never assert on wall-clock time).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

import specux

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "specux_gpu.py"
HAS_TORCH = importlib.util.find_spec("torch") is not None


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def _bench_module():
    """bench/specux_gpu.py imported as a module (its directory on sys.path for ``_common``)."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        spec = importlib.util.spec_from_file_location("specux_gpu_bench", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclass looks its module up there
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(SCRIPT.parent))
    return module


def test_smoke_run_on_opencl_prints_ratio_table_and_errors(require_backend, tmp_path):
    require_backend("opencl")
    out = tmp_path / "gpu.json"
    proc = _run("--backend", "opencl", "--smoke", "--data", "batch", "--ops", "stft,istft,melspectrogram",
                "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout
    header = next(line for line in text.splitlines() if line.startswith("| data | op | pass |"))
    for column in ("specux", "GB/s", "% of peak", "err vs cpu", "fastest peer", "specux / fastest"):
        assert f"| {column} |" in header, header
    rows = [line for line in text.splitlines() if line.startswith("| batch |")]
    assert len(rows) == 6, text  # three ops, forward and forward+backward each
    assert "peak memory bandwidth: unknown" in text
    assert "measured device-to-device copy" in text
    # the fallback to numpy inputs is said, per op
    assert "specux input for stft: numpy in / numpy out" in text
    # gradients cannot reach the opencl backend: n/a, with the reason
    assert "specux n/a:" in text and "no gradients reach the opencl backend" in text

    data = json.loads(out.read_text())
    forward = [r for r in data["results"] if r["pass"] == "forward"]
    assert {r["op"] for r in forward} == {"stft", "istft", "melspectrogram"}
    for r in forward:
        assert r["specux_input"] == "numpy"
        assert r["rel_err_vs_cpu"] is not None and r["rel_err_vs_cpu"] <= 1e-5, r
        assert r["gbps"] is not None and r["gbps"] > 0
        # the error column shows the same number, in the row of that op and pass
        line = next(x for x in rows if f"| {r['op']} | forward |" in x)
        assert f"{r['rel_err_vs_cpu']:.1e}" in line, line
        if HAS_TORCH:
            assert r["fastest_peer"] in ("torch", "torchaudio"), r
            assert r["ratio_to_fastest"] is not None and r["ratio_to_fastest"] > 0
            assert f"{r['ratio_to_fastest']:.2f}" in line
    backward = [r for r in data["results"] if r["pass"] == "forward+backward"]
    assert all("specux" in r["not_applicable"] and "specux" not in r["seconds"] for r in backward)
    assert data["meta"]["device"]["backend"] == "opencl"


def test_backend_that_cannot_run_is_refused_with_its_reason():
    info = {b.name: b for b in specux.backends()}
    name = next((n for n in ("cuda", "metal") if not info[n].available), None)
    if name is None:
        pytest.skip("cuda and metal both run here")
    proc = _run("--backend", name, "--smoke", timeout=120)
    assert proc.returncode == 2
    assert f"--backend {name}: not available here" in proc.stderr
    assert info[name].unavailable_reason.split(":")[0] in proc.stderr


def test_known_peaks_prefer_the_specific_name():
    bench = _bench_module()
    assert bench._known_peak("NVIDIA H200") == 4.8e12
    assert bench._known_peak("NVIDIA H100 PCIe") == 2.0e12
    assert bench._known_peak("NVIDIA H100 80GB HBM3") == 3.35e12
    assert bench._known_peak("Some Future GPU") is None
    assert bench._known_peak(None) is None
