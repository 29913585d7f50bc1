"""bench/vidmag_memory.py runs end to end in a smoke size (--quick, a 64x48 synthesised clip, the cpu
backend): one row per case, the budget run of a whole-clip pipeline takes its bounded route, the JSON holds
the peaks. Nothing here looks at the peaks' or times' values beyond their being measured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "vidmag_memory.py"


def test_a_smoke_run_prints_the_table_and_writes_json(tmp_path):
    out = tmp_path / "memory.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--size", "64x48", "--clips", "large", "--backend", "cpu",
         "--pipelines", "laplacian_ideal,laplacian_iir", "--budget-large", "100MB", "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("| clip | pipeline | backend | memory | route | peak RSS |")
    rows = [line for line in lines if line.startswith("| synthetic 64x48")]
    assert len(rows) == 3, proc.stdout  # laplacian_ideal twice (default, budget), laplacian_iir once
    assert any("goals:" in line and "500 MB" in line for line in lines)
    data = json.loads(out.read_text())
    assert data["bench"] == "vidmag_memory" and "cpu" in data["machine"]
    routes = {(r["pipeline"], r["memory"]): r["route"] for r in data["rows"]}
    assert routes == {("laplacian_ideal", None): "in memory", ("laplacian_ideal", "100MB"): "bands on disk",
                      ("laplacian_iir", None): "in memory"}
    assert all(r["peak_rss_mb"] > 0 and r["frames"] == 60 for r in data["rows"])
