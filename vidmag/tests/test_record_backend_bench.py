"""``scripts/dev/record_backend_bench.py``'s table: the whole-clip columns, the ratios to the reference and
the frame-at-a-time column (left out for results saved before it existed, a dash for a backend without it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "dev" / "record_backend_bench.py"


def _module():
    spec = importlib.util.spec_from_file_location("record_backend_bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _result(live: dict | None) -> dict:
    def entry(face: float, baby: float) -> dict:
        cases = {name: {"best_s": seconds, "max_abs_diff_vs_cpu": 1}
                 for name, seconds in (("face", face), ("baby", baby))}
        return {"device": "here", "cases": cases}

    backends = {"cpu": entry(16.0, 26.0), "opencl": entry(0.25, 1.3)}
    if live is not None:
        backends["opencl"]["frame_at_a_time"] = live
    machine = {"cpu": "a processor", "cores": 2, "python": "3.11", "load_average_at_start": 0.1,
               "load_average_at_end": 0.2}
    return {"date": "2026-12-06", "machine": machine, "runs": 2, "backends": backends}


def test_the_table_has_the_frame_at_a_time_column_where_measured():
    bench = _module()
    live = {"pipeline": "laplacian_iir", "preset": "baby", "width": 1280, "height": 720, "frames": 120,
            "fps": 187.4, "latency_median_ms": 5.1, "latency_p99_ms": 7.0}
    table = bench.markdown(_result(live))
    head = ("| Backend | Colour, `face.mp4` | Motion, `baby.mp4` | Frame at a time, 720p | "
            "Against the processor |")
    assert head in table
    assert "| OpenCL | 250 ms | 1,300 ms | 187 frames/s | 64.0× / 20.0× |" in table
    assert "| Processor (NumPy) | 16,000 ms | 26,000 ms | — | — |" in table
    assert "1280x720 frames" in table


def test_results_saved_without_it_keep_the_old_table():
    table = _module().markdown(_result(None))
    assert "Frame at a time" not in table
    assert "| OpenCL | 250 ms | 1,300 ms | 64.0× / 20.0× |" in table
