"""The docs' bench tables are what the committed bench results render (scripts/dev/bench_tables.py).

docs/specux/performance.md and docs/vidmag/live.md show the latest run of bench/specux_cpu.py and
bench/vidmag_live.py between ``<!-- bench-table: NAME -->`` markers; the script writes them from
bench/results/NAME.json. The check here fails when a page drifts from its JSON (a re-run without the pages
rewritten, or a table edited by hand). The renderer itself is tested on small synthetic results files.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench_tables():
    path = ROOT / "scripts" / "dev" / "bench_tables.py"
    spec = importlib.util.spec_from_file_location("bench_tables", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks the module up there
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_pages_match_the_committed_results(bench_tables, capsys):
    # the committed pages against the committed JSON: exit 1 (and the page named) means run the script
    status = bench_tables.main(["--check"])
    assert status == 0, capsys.readouterr().err


SPECUX_CPU = {
    "meta": {
        "machine": {"date_utc": "2026-01-02T03:04:05+00:00", "cpu": "Test CPU", "cpu_count": 4,
                    "usable_cores": 2, "platform": "Linux-test", "python": "3.11.0",
                    "loadavg_start": [0.5, 0, 0], "loadavg_end": [0.7, 0, 0]},
        "versions": {"specux": "0.1.0", "librosa": "0.11.0", "torch": None},
        "quick": True, "repeat": 3, "warmup": 1, "rounds": 2, "turns": False,
    },
    "results": [
        {"data": "batch", "op": "stft", "shape": [4, 32000], "sr": 16000, "n_fft": 512, "hop_length": 128,
         "times": {"specux": {"best": 0.010, "median": 0.011, "cpu_best": 0.015},
                   "librosa": {"best": 0.020, "median": 0.021, "cpu_best": 0.020}}},
    ],
    "targets": [{"data": "batch", "op": "stft", "target": "specux <= fastest of librosa",
                 "value": "specux / librosa = 0.50", "met": True}],
}

VIDMAG_LIVE = {
    "bench": "vidmag_live",
    "machine": {"date_utc": "2026-01-02T03:04:05+00:00", "cpu": "Test CPU", "usable_cores": 2,
                "cpu_count": 2},
    "results": [
        {"backend": "cpu", "pipeline": "laplacian_iir", "preset": "baby", "width": 640, "height": 480,
         "frames": 50, "warmup": 10, "seconds": 1.0, "fps": 50.0, "latency_median_ms": 19.5,
         "latency_p99_ms": 25.25, "fps_goal": None, "fps_vs_goal": None, "p99_vs_frame_period": 0.76},
    ],
}

PAGES = {
    "docs/specux/performance.md": "# Performance\n\nhand-written\n\n<!-- bench-table: specux_cpu -->\nold\n"
                                  "<!-- /bench-table -->\n\nmore hand-written text\n",
    "docs/vidmag/live.md": "# Live\n\n<!-- bench-table: vidmag_live -->\n<!-- /bench-table -->\n",
}


def _tree(root: Path, specux_cpu=SPECUX_CPU, vidmag_live=VIDMAG_LIVE, pages=PAGES) -> Path:
    (root / "bench" / "results").mkdir(parents=True, exist_ok=True)
    (root / "bench" / "results" / "specux_cpu.json").write_text(json.dumps(specux_cpu))
    (root / "bench" / "results" / "vidmag_live.json").write_text(json.dumps(vidmag_live))
    for page, text in pages.items():
        (root / page).parent.mkdir(parents=True, exist_ok=True)
        (root / page).write_text(text)
    return root


def test_renders_machine_date_command_and_table(bench_tables, tmp_path):
    root = _tree(tmp_path)
    text = bench_tables.render("specux_cpu", root)
    assert "Test CPU, 2 of 4 cores usable" in text and "2026-01-02 03:04 UTC" in text
    command = "python bench/specux_cpu.py --quick --repeat 3 --warmup 1 --rounds 2 --ops stft --data batch"
    assert f"`{command}`" in text
    assert "| batch | stft | 10.0 ms | 20.0 ms (0.50) |" in text
    assert "torch None" not in text  # a peer that did not import is not listed as a version
    live = bench_tables.render("vidmag_live", root)
    assert "--backends cpu --pipelines laplacian_iir --sizes 640x480 --frames 50 --warmup 10" in live
    assert "| cpu | laplacian_iir | 640x480 | 50 | 50.0 | 19.50 | 25.25 | - | - | 0.76 |" in live


def test_writes_between_the_markers_only_then_checks_clean(bench_tables, tmp_path, capsys):
    root = _tree(tmp_path)
    assert bench_tables.main(["--root", str(root), "--check"]) == 1  # "old" is not what the JSON renders
    err = capsys.readouterr().err
    assert "docs/specux/performance.md" in err and "docs/vidmag/live.md" in err
    untouched = PAGES["docs/specux/performance.md"]
    assert (root / "docs/specux/performance.md").read_text() == untouched
    assert bench_tables.main(["--root", str(root)]) == 0
    page = (root / "docs/specux/performance.md").read_text()
    assert page.startswith("# Performance\n\nhand-written\n\n<!-- bench-table: specux_cpu -->\n\n")
    assert page.endswith("\n\n<!-- /bench-table -->\n\nmore hand-written text\n")
    assert "old" not in page and "| batch | stft | 10.0 ms |" in page
    assert bench_tables.main(["--root", str(root), "--check"]) == 0
    assert bench_tables.main(["--root", str(root)]) == 0  # idempotent: a second run changes nothing
    assert (root / "docs/specux/performance.md").read_text() == page


def test_a_changed_number_changes_the_table(bench_tables, tmp_path, capsys):
    root = _tree(tmp_path)
    assert bench_tables.main(["--root", str(root)]) == 0
    before = (root / "docs/specux/performance.md").read_text()
    changed = copy.deepcopy(SPECUX_CPU)
    changed["results"][0]["times"]["specux"]["best"] = 0.030
    (root / "bench/results/specux_cpu.json").write_text(json.dumps(changed))
    assert bench_tables.main(["--root", str(root), "--check"]) == 1
    err = capsys.readouterr().err
    assert "docs/specux/performance.md" in err and "docs/vidmag/live.md" not in err
    assert bench_tables.main(["--root", str(root)]) == 0
    after = (root / "docs/specux/performance.md").read_text()
    assert after != before and "| batch | stft | 30.0 ms | 20.0 ms (1.50) |" in after


def test_a_missing_marker_is_an_error_naming_the_page(bench_tables, tmp_path, capsys):
    pages = {**PAGES, "docs/vidmag/live.md": "# Live\n\nno marker here\n"}
    root = _tree(tmp_path, pages=pages)
    with pytest.raises(ValueError, match=r"docs/vidmag/live\.md: no <!-- bench-table: vidmag_live -->"):
        bench_tables.update(root, check=True)
    assert bench_tables.main(["--root", str(root)]) == 2
    assert "docs/vidmag/live.md" in capsys.readouterr().err
    # nothing was written, not even the page whose marker is there
    assert (root / "docs/specux/performance.md").read_text() == PAGES["docs/specux/performance.md"]


def test_bad_markers_and_missing_results_name_the_culprit(bench_tables, tmp_path):
    with pytest.raises(ValueError, match=r"page\.md:3: bench-table 'specux_cpu' is not closed"):
        bench_tables.fill("a\n\n<!-- bench-table: specux_cpu -->\nrest\n", "page.md", {"specux_cpu": "T"})
    with pytest.raises(ValueError, match=r"page\.md: bench-table 'nope' names no bench"):
        bench_tables.fill("<!-- bench-table: nope -->\n<!-- /bench-table -->\n", "page.md", {"x": "T"})
    assert bench_tables.fill("x\n", "page.md", {"specux_cpu": "T"}) == "x\n"
    root = _tree(tmp_path)
    (root / "bench/results/vidmag_live.json").unlink()
    with pytest.raises(ValueError, match=r"bench/results/vidmag_live\.json: missing"):
        bench_tables.update(root)
