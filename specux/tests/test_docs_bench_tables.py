"""The docs' bench tables are what the committed bench results render (scripts/dev/bench_tables.py).

The pages show the latest run of every bench script between ``<!-- bench-table: NAME -->`` markers
(docs/specux/performance.md: specux_cpu, specux_torch, specux_fft, specux_gpu; docs/vidmag/live.md:
vidmag_live; docs/scale.md: specux_dask; docs/vidmag/memory.md: vidmag_memory and vidmag_reference;
docs/vidmag/backends.md: vidmag_reference.backends); the script writes them from bench/results/NAME.json.
The check here fails when a page drifts from its JSON (a re-run without the pages rewritten, or a table
edited by hand). The renderer itself is tested on small synthetic results files.
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

MACHINE = {"date_utc": "2026-01-02T03:04:05+00:00", "cpu": "Test CPU", "cpu_count": 4, "usable_cores": 2,
           "loadavg_start": [0.5, 0, 0], "loadavg_end": [0.7, 0, 0]}

SPECUX_FFT = {
    "command": "python bench/specux_fft.py --quick --out bench/results/specux_fft.json",
    "machine": MACHINE, "versions": {"specux": "0.1.0", "numpy": "2.0.0", "torch": None},
    "backends": ["opencl", "cpu"], "quick": True, "repeat": 5,
    "devices": {"opencl": "Portable Computing Language / pthread-test", "cpu": "the host processor"},
    "results": [{"case": "pow2", "op": "fft", "shape": [4, 256], "bytes": 16384,
                 "seconds": {"numpy": 0.002, "specux-opencl": 0.004}, "gbps": {},
                 "ratio_vs_numpy": {"numpy": 1.0, "specux-opencl": 2.0},
                 "rel_l2_error": {"specux-opencl": 1.2e-7}}],
}

SPECUX_GPU = {
    "command": "python bench/specux_gpu.py --backend opencl --quick",
    "meta": {"machine": MACHINE, "versions": {"specux": "0.1.0"}, "size": "quick", "repeat": 5, "warmup": 1,
             "device": {"backend": "opencl", "torch_device": "cpu",
                        "name": "Portable Computing Language / pthread-test", "copy_bytes_per_s": 1e10}},
    "results": [{"data": "batch", "op": "stft", "pass": "forward", "specux_input": "numpy",
                 "seconds": {"specux": 0.010, "torch": 0.020}, "not_applicable": {},
                 "ratio_specux_over": {"torch": 0.5}, "fastest_peer": "torch", "ratio_to_fastest": 0.5,
                 "gbps": 1.0, "peak_fraction": None, "rel_err_vs_cpu": 2e-7, "peer_rel_err_vs_cpu": {}}],
    "goals": [],
}

SPECUX_TORCH = {
    "command": "python bench/specux_torch.py --repeat 3",
    "meta": {"machine": MACHINE, "versions": {"torch": "2.0"}, "threads": 2, "repeat": 3,
             "overhead_repeat": 4},
    "rows": [{"case": "mfcc", "mode": "forward", "specux": 0.003, "peer": "torchaudio", "peer_time": 0.004,
              "ratio": 0.75}],
    "tensor_overhead": [{"mode": "forward", "tensor": 0.022, "numpy": 0.020, "ratio": 1.1,
                         "ratio_median": 1.2, "ratio_cpu": 1.05}],
}

SPECUX_DASK = {
    "command": "python bench/specux_dask.py --quick --out bench/results/specux_dask.json",
    "machine": MACHINE, "versions": {"dask": "2025.1"}, "files": 4, "seconds_each": 2.0, "chunk_seconds": 1.0,
    "loop_seconds": 3.0, "cluster": [{"workers": 2, "seconds": 2.0, "speedup": 1.5, "per_worker": 0.75,
                                      "max_rel_err": 0.0}],
}


def _memory(kind: str, rows: list[dict]) -> dict:
    return {"bench": "vidmag_memory", "command": f"python bench/vidmag_memory.py --clips {kind}",
            "machine": MACHINE, "versions": {"vidmag": "0.1.0"}, "rows": rows}


VIDMAG_MEMORY = _memory("baby", [
    {"clip": "baby.mp4", "clip_kind": "baby", "pipeline": "laplacian_ideal", "backend": "opencl",
     "memory": None, "route": "in memory", "peak_rss_mb": 1440.0, "seconds": 30.0, "frames": 301},
    {"clip": "baby.mp4", "clip_kind": "baby", "pipeline": "laplacian_ideal", "backend": "cpu",
     "memory": "500MB", "route": "bands on disk", "peak_rss_mb": 240.4, "seconds": 120.0, "frames": 301},
])

VIDMAG_REFERENCE = {
    "bench": "vidmag_reference", "command": "python bench/vidmag_reference.py --backend auto",
    "machine": MACHINE, "versions": {"vidmag": "0.1.0"}, "frames_limit": None,
    "results": [{"clip": "face", "pipeline": "gaussian_ideal", "preset": "face", "mode": mode,
                 "backend": "opencl", "frames": 301, "size": "528x592", "seconds": 5.0,
                 "frames_per_s": fps, "peak_rss_mb": rss} for mode, fps, rss in
                (("magnify", 60.2, 700.0), ("file", 40.0, 380.4))],
}

#: every bench's results file in the synthetic tree (specux_cpu and vidmag_live come from the arguments)
RESULTS = {
    "specux_fft": SPECUX_FFT, "specux_gpu": SPECUX_GPU, "specux_torch": SPECUX_TORCH,
    "specux_dask": SPECUX_DASK, "vidmag_memory": VIDMAG_MEMORY,
    "vidmag_memory.phase": _memory("baby --frames 60", [{**VIDMAG_MEMORY["rows"][1], "frames": 60,
                                                         "pipeline": "riesz_ideal",
                                                         "route": "phase on disk"}]),
    "vidmag_memory.large": _memory("large", [{**VIDMAG_MEMORY["rows"][0], "clip_kind": "large",
                                              "clip": "synthetic 64x48, 60 frames"}]),
    "vidmag_reference": VIDMAG_REFERENCE,
    "vidmag_reference.backends": {**VIDMAG_REFERENCE, "frames_limit": 60},
}

PAGES = {
    "docs/specux/performance.md": "# Performance\n\nhand-written\n\n<!-- bench-table: specux_cpu -->\nold\n"
                                  "<!-- /bench-table -->\n\n<!-- bench-table: specux_torch -->\n"
                                  "<!-- /bench-table -->\n<!-- bench-table: specux_fft -->\n"
                                  "<!-- /bench-table -->\n"
                                  "<!-- bench-table: specux_gpu -->\n<!-- /bench-table -->\n\n"
                                  "more hand-written text\n",
    "docs/vidmag/live.md": "# Live\n\n<!-- bench-table: vidmag_live -->\n<!-- /bench-table -->\n",
    "docs/scale.md": "# Scale\n\n<!-- bench-table: specux_dask -->\n<!-- /bench-table -->\n",
    "docs/vidmag/memory.md": "".join(f"<!-- bench-table: {name} -->\n<!-- /bench-table -->\n" for name in
                                     ("vidmag_memory", "vidmag_memory.phase", "vidmag_memory.large",
                                      "vidmag_reference")),
    "docs/vidmag/backends.md": "# Backends\n\n<!-- bench-table: vidmag_reference.backends -->\n"
                               "<!-- /bench-table -->\n",
}


def _tree(root: Path, specux_cpu=SPECUX_CPU, vidmag_live=VIDMAG_LIVE, pages=PAGES, results=RESULTS) -> Path:
    (root / "bench" / "results").mkdir(parents=True, exist_ok=True)
    (root / "bench" / "results" / "specux_cpu.json").write_text(json.dumps(specux_cpu))
    (root / "bench" / "results" / "vidmag_live.json").write_text(json.dumps(vidmag_live))
    for name, data in results.items():
        (root / "bench" / "results" / f"{name}.json").write_text(json.dumps(data))
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


def test_every_bench_has_a_page_and_a_results_file(bench_tables):
    # the six scripts whose tables used to be copied by hand, and the two older ones
    scripts = {b.script for b in bench_tables.BENCHES.values()}
    assert scripts == {f"bench/{n}.py" for n in ("specux_cpu", "vidmag_live", "specux_torch", "specux_fft",
                                                 "specux_gpu", "specux_dask", "vidmag_memory",
                                                 "vidmag_reference")}
    assert set(RESULTS) | {"specux_cpu", "vidmag_live"} == set(bench_tables.BENCHES)


def test_new_tables_say_machine_date_command_and_versions(bench_tables, tmp_path):
    root = _tree(tmp_path)
    for name, data in RESULTS.items():
        text = bench_tables.render(name, root)
        caption = text.split("\n\n")[0]
        assert "Test CPU, 2 of 4 cores usable" in caption and "load average 0.5 to 0.7" in caption, name
        assert "2026-01-02 03:04 UTC" in caption and f"`{data['command']}`" in caption, name
        assert "rebuilt from the JSON" not in caption, name
        assert "Versions: " in text and " None" not in text, name


def test_new_tables_hold_the_scripts_cells(bench_tables, tmp_path):
    root = _tree(tmp_path)
    fft = bench_tables.render("specux_fft", root)
    assert "| pow2 | fft | 4x256 | 2.0 ms (1.00) | 4.0 ms (2.00), err 1e-07 |" in fft
    assert "`--quick`" in fft
    gpu = bench_tables.render("specux_gpu", root)
    assert "| batch | stft | forward | numpy | 10.0 ms |" in gpu and "20.0 ms (0.50)" in gpu
    assert "`--quick` workloads" in gpu
    torch = bench_tables.render("specux_torch", root)
    assert "| mfcc | forward | 3.0 ms | torchaudio: 4.0 ms | 0.75 |" in torch
    assert "| forward | 22.0 ms | 20.0 ms | 1.10 | 1.20 | 1.05 | met / met |" in torch
    dask = bench_tables.render("specux_dask", root)
    assert "| 2 | 2.00 | 1.50x | 0.75x | 0.0e+00 |" in dask and "took 3.00 s" in dask
    memory = bench_tables.render("vidmag_memory", root)
    row = "| baby.mp4 | laplacian_ideal | cpu | 500MB | bands on disk | 240 MB | 120.0 s | meets (<= 500 MB)"
    assert row in memory
    verdict = "Goal met by 1 of 2 cases; over it: laplacian_ideal on opencl with memory default (1,440 MB)."
    assert verdict in memory
    reference = bench_tables.render("vidmag_reference", root)
    assert "| face | gaussian_ideal (face) | opencl | 301 | 700 MB | 60.2 | 380 MB | 40.0 |" in reference
    assert "The whole clips" in reference
    assert "- face.mp4, gaussian_ideal (face) on opencl: 380 MB against <= 1,000 MB: met" in reference
    assert "baby.mp4" not in reference  # no goal line for a clip that did not run
    backends = bench_tables.render("vidmag_reference.backends", root)
    assert "| opencl | 5.00 s |" in backends and "The first 60 frames" in backends


def test_pocl_is_said_to_be_no_gpu(bench_tables, tmp_path):
    root = _tree(tmp_path)
    for name in ("specux_fft", "specux_gpu"):
        text = bench_tables.render(name, root)
        assert "PoCL" in text and "**not a GPU**" in text, name
    on_gpu = copy.deepcopy(SPECUX_GPU)
    on_gpu["meta"]["device"].update(backend="cuda", torch_device="cuda", name="NVIDIA H200")
    root = _tree(tmp_path, results={**RESULTS, "specux_gpu": on_gpu})
    text = bench_tables.render("specux_gpu", root)
    assert "cuda on `NVIDIA H200`" in text and "not a GPU" not in text


def test_results_without_command_or_rows_are_errors_naming_the_file(bench_tables, tmp_path):
    no_command = {k: v for k, v in SPECUX_FFT.items() if k != "command"}
    root = _tree(tmp_path, results={**RESULTS, "specux_fft": no_command})
    with pytest.raises(ValueError, match=r"bench/results/specux_fft\.json: records no command"):
        bench_tables.render("specux_fft", root)
    root = _tree(tmp_path, results={**RESULTS, "vidmag_memory.large": _memory("large", [])})
    with pytest.raises(ValueError, match=r"vidmag_memory\.large\.json: holds no results \('rows'"):
        bench_tables.update(root, check=True)
    (root / "bench/results/specux_dask.json").unlink()
    with pytest.raises(ValueError, match=r"specux_dask\.json: missing \(run python bench/specux_dask\.py"):
        bench_tables.render("specux_dask", root)
