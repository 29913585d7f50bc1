"""Benchmark of vidmag's live path: one frame pushed and returned before the next, per backend and size.

For every backend that runs here (``vidmag.backend.registry.list_backends``), both streaming pipelines
(laplacian_iir with the ``baby`` preset, laplacian_butterworth with the ``face`` preset's streaming form) and
640x480, 1280x720 and 1920x1080 frames, a :class:`vidmag.live.Magnifier` is fed frames of the synthetic scene
one at a time: ``--warmup`` pushes (the first builds kernels and buffers), then ``--frames`` timed pushes
(fewer when a case is slow: at most ``--budget`` seconds of them, and at least 5).
Printed per case: frames/s (timed pushes over their wall-clock time), per-frame latency (median and 99th
percentile of the pushes) and the ratios to the issue's goals on this machine's processor: 720p at
>= 120 frames/s, 1080p at >= 60 frames/s, latency within one frame period at 30 frames/s (33.3 ms).
The table is printed and saved as JSON.

    .venv/bin/python bench/vidmag_live.py                      # every backend, the three sizes
    .venv/bin/python bench/vidmag_live.py --backends opencl,cpu --sizes 1280x720 --frames 300
    .venv/bin/python bench/vidmag_live.py --quick              # a smoke run: few frames
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, markdown_table, write_json

ROOT = Path(__file__).resolve().parent.parent
SIZES = ((640, 480), (1280, 720), (1920, 1080))
#: pipeline -> the preset it runs with (its streaming form: vidmag.live.presets)
PIPELINE_PRESETS = {"laplacian_iir": "baby", "laplacian_butterworth": "face"}
#: frames/s goals of the issue by frame height (the best backend on this 2-core processor)
FPS_GOALS = {720: 120.0, 1080: 60.0}
#: the latency goal: one frame period at 30 frames/s, ms
LATENCY_GOAL_MS = 1000.0 / 30.0
#: distinct frames cycled through (the synthetic scene, noise and a pulse: every frame differs)
DISTINCT_FRAMES = 8


def _sizes(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split(","):
        width, _, height = item.strip().lower().partition("x")
        out.append((int(width), int(height)))
    return out


def run_case(backend: str, pipeline: str, size: tuple[int, int], frames: int, warmup: int,
             budget: float = float("inf")) -> dict:
    """Time one case in this process: warmup pushes, then `frames` timed pushes of one frame each.

    A slow case stops early: the warmup after `budget` / 2 seconds (at least 2 pushes), the timed pushes
    after `budget` seconds (at least 5); the frames actually timed are recorded."""
    from vidmag import synthetic
    from vidmag.live import Magnifier

    width, height = size
    scene = synthetic.scene(width, height, n_frames=DISTINCT_FRAMES)
    clip = list(scene)
    latencies = []
    with Magnifier(preset=PIPELINE_PRESETS[pipeline], fs=30.0, backend=backend) as magnifier:
        start = time.perf_counter()
        for i in range(warmup):
            magnifier.push(clip[i % len(clip)])
            if i >= 1 and time.perf_counter() - start > budget / 2:
                warmup = i + 1
                break
        start = time.perf_counter()
        for i in range(frames):
            t0 = time.perf_counter()
            out = magnifier.push(clip[i % len(clip)])
            latencies.append(time.perf_counter() - t0)
            if i >= 4 and time.perf_counter() - start > budget:
                break
        seconds = time.perf_counter() - start
        frames = len(latencies)
    assert out.shape == (height, width, 3) and out.dtype == np.uint8
    median = statistics.median(latencies) * 1e3
    p99 = float(np.percentile(latencies, 99)) * 1e3
    goal = FPS_GOALS.get(height)
    fps = frames / seconds
    return {
        "backend": backend, "pipeline": pipeline, "preset": PIPELINE_PRESETS[pipeline], "width": width,
        "height": height, "frames": frames, "warmup": warmup, "seconds": seconds, "fps": fps,
        "latency_median_ms": median, "latency_p99_ms": p99, "fps_goal": goal,
        "fps_vs_goal": None if goal is None else fps / goal,
        "p99_vs_frame_period": p99 / LATENCY_GOAL_MS,
    }


def table(results: list[dict]) -> str:
    """The markdown table of the cases."""
    header = ("backend", "pipeline", "size", "pushes", "frames/s", "median ms", "p99 ms", "goal frames/s",
              "frames/s / goal", "p99 / 33.3 ms")
    rows = [
        (r["backend"], r["pipeline"], f"{r['width']}x{r['height']}", r["frames"], f"{r['fps']:.1f}",
         f"{r['latency_median_ms']:.2f}", f"{r['latency_p99_ms']:.2f}",
         "-" if r["fps_goal"] is None else f"{r['fps_goal']:g}",
         "-" if r["fps_vs_goal"] is None else f"{r['fps_vs_goal']:.2f}", f"{r['p99_vs_frame_period']:.2f}")
        for r in results
    ]
    return markdown_table(header, rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends",
                        help="comma-separated backend names (default: every one that runs here)")
    parser.add_argument("--pipelines", default=",".join(PIPELINE_PRESETS),
                        help="comma-separated streaming pipelines (default: both)")
    parser.add_argument("--sizes", help="comma-separated WxH (default: 640x480,1280x720,1920x1080)")
    parser.add_argument("--frames", type=int, default=200, help="timed pushes per case (default 200)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed pushes first (default 10)")
    parser.add_argument("--budget", type=float, default=15.0,
                        help="seconds of timed pushes per case at most (default 15; at least 5 pushes)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 5 timed pushes after 2")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "vidmag_live.json"),
                        help="JSON file of the results")
    args = parser.parse_args(argv)
    pipelines = [p.strip() for p in args.pipelines.split(",")]
    for pipeline in pipelines:
        if pipeline not in PIPELINE_PRESETS:
            sys.exit(f"vidmag_live: pipeline must be one of {', '.join(PIPELINE_PRESETS)}, got {pipeline!r}")
    from vidmag.backend import registry

    if args.backends is None:
        backends = [b.name for b in registry.list_backends() if b.available]
    else:
        backends = [b.strip() for b in args.backends.split(",")]
        for name in backends:  # probes only the backends named
            try:
                reason = registry.unavailable_reason(name)
            except ValueError as error:
                reason = str(error)
            if reason is not None:
                sys.exit(f"vidmag_live: backend {name!r} cannot run here: {reason}")
    sizes = list(SIZES) if args.sizes is None else _sizes(args.sizes)
    frames, warmup = (5, 2) if args.quick else (args.frames, args.warmup)
    print(f"vidmag live bench: {frames} timed pushes after {warmup} (at most {args.budget:g} s per case), "
          f"one frame at a time; backends {', '.join(backends)}", flush=True)
    where = machine()  # before the runs: its load average is the one they started under
    results = []
    for size in sizes:
        for pipeline in pipelines:
            for backend in backends:
                result = run_case(backend, pipeline, size, frames, warmup, args.budget)
                results.append(result)
                print(f"  {backend:7s} {pipeline:22s} {size[0]}x{size[1]}: {result['frames']} pushes, "
                      f"{result['fps']:.1f} frames/s, "
                      f"median {result['latency_median_ms']:.2f} ms, p99 {result['latency_p99_ms']:.2f} ms",
                      flush=True)
    print()
    print(table(results))
    for height, goal in FPS_GOALS.items():
        cases = [r for r in results if r["height"] == height and r["pipeline"] == "laplacian_iir"]
        if cases:
            best = max(cases, key=lambda r: r["fps"])
            print(f"best laplacian_iir at {best['width']}x{height}: {best['fps']:.1f} frames/s on "
                  f"{best['backend']} = {best['fps'] / goal:.2f} x the goal of {goal:g}")
    path = write_json(args.out, {"bench": "vidmag_live", "machine": where, "results": results})
    print(f"\nwritten {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
