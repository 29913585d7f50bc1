"""bench/specux_dask.py runs end to end in a small size on a one-worker LocalCluster: it prints the table with
the speed-up columns, and its JSON holds features equal to the plain loop's. Nothing looks at the times
themselves (tests never assert on wall-clock time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dask.distributed")
pytest.importorskip("zarr")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "specux_dask.py"


def test_quick_run_prints_speedups_and_matches_the_loop(tmp_path):
    out = tmp_path / "dask.json"
    args = ["--quick", "--workers", "1", "--files", "2", "--seconds", "1", "--json", str(out)]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "speed-up per worker" in done.stdout and "plain loop" in done.stdout
    result = json.loads(out.read_text())
    assert result["files"] == 2 and [r["workers"] for r in result["cluster"]] == [1]
    row = result["cluster"][0]
    assert row["speedup"] > 0 and row["per_worker"] == pytest.approx(row["speedup"])
    assert row["max_rel_err"] <= 2e-6  # the cluster's features are the loop's (see test_dask_ops.py)


def test_bad_sizes_are_refused():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--files", "0"], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 2 and "must be positive" in done.stderr
