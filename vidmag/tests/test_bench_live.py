"""bench/vidmag_live.py runs end to end in a smoke size (--quick, tiny frames, the cpu backend): its table
has a row per case with the goal columns, its JSON holds the results, and a backend that cannot run is
refused with the reason. Nothing here looks at the times themselves (tests never assert on wall-clock
time)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "vidmag_live.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)


def test_a_smoke_run_prints_the_table_and_writes_json(tmp_path):
    out = tmp_path / "live.json"
    proc = _run("--quick", "--backends", "cpu", "--sizes", "64x48,96x72", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    header = next(line for line in lines if line.startswith("| backend |"))
    for column in ("frames/s", "median ms", "p99 ms", "goal frames/s", "frames/s / goal", "p99 / 33.3 ms"):
        assert f"| {column} |" in header, header
    rows = [line for line in lines if line.startswith("| cpu |")]
    assert len(rows) == 4, proc.stdout  # two sizes, two pipelines
    data = json.loads(out.read_text())
    assert data["bench"] == "vidmag_live" and "cpu" in data["machine"]
    cases = {(r["pipeline"], r["width"], r["height"]) for r in data["results"]}
    sizes = ((64, 48), (96, 72))
    assert cases == {(p, w, h) for p in ("laplacian_iir", "laplacian_butterworth") for w, h in sizes}
    assert all(r["frames"] == 5 and r["fps"] > 0 and r["fps_goal"] is None for r in data["results"])


def _bench_module():
    """bench/vidmag_live.py imported as a module (it puts its directory on sys.path for ``_common``)."""
    spec = importlib.util.spec_from_file_location("vidmag_live_bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        if str(SCRIPT.parent) in sys.path:
            sys.path.remove(str(SCRIPT.parent))
    return module


def test_a_backend_that_cannot_run_is_refused_with_the_reason(tmp_path):
    bench = _bench_module()
    with pytest.raises(SystemExit, match=r"^vidmag_live: backend 'cuda' cannot run here: "):
        bench.main(["--quick", "--backends", "cuda", "--sizes", "64x48", "--out", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit, match="pipeline must be one of laplacian_iir, laplacian_butterworth"):
        bench.main(["--quick", "--pipelines", "gaussian_ideal", "--out", str(tmp_path / "x.json")])
    assert not (tmp_path / "x.json").exists()
