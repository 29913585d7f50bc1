#!/usr/bin/env python
"""Regenerate the measured table of docs/vidmag/backends.md: whole-clip speed of every backend that runs here.

Two runs, each with its paper preset under the default semantics: colour (``face.mp4``, gaussian_ideal) and
motion (``baby.mp4``, laplacian_iir), and a frame-at-a-time column (720p laplacian_iir frames pushed one at a
time through ``vidmag.live.Magnifier``, as ``bench/vidmag_live.py`` does). Magnification only: each clip is
decoded into memory first, and the timed call is ``vidmag.magnify(frames, ...)`` (an array in, an array out;
no decode, no encode). Per backend and clip: one warm-up run, then the best of two (wall time; the process's
processor time, steadier on a shared machine, is printed and saved beside it). Ratios are against the NumPy
reference (``cpu``). Every output is also compared with the reference's: the largest difference of any byte is
recorded.

Writes ``backends.json`` and ``backends.md`` to ``--out`` (default ``bench/results``), prints the table, and
with ``--update-docs`` replaces the table between the ``bench:start`` / ``bench:end`` markers of the docs
page.

    python scripts/dev/record_backend_bench.py [--backends cpu,opencl,torch] [--clips DIR] [--update-docs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DOCS_PAGE = ROOT / "docs" / "vidmag" / "backends.md"
MARK_START, MARK_END = "<!-- bench:start -->", "<!-- bench:end -->"

#: (column title, clip file, preset name).
CASES = (("Colour, `face.mp4`", "face.mp4", "face"), ("Motion, `baby.mp4`", "baby.mp4", "baby"))

#: The frame-at-a-time column: laplacian_iir (the baby preset's streaming form) at this size, one frame pushed
#: and returned before the next (``bench/vidmag_live.py``'s case), as a live stream runs.
LIVE_SIZE = (1280, 720)

#: How the table names each backend.
LABELS = {
    "cuda": "CUDA",
    "metal": "Metal",
    "vulkan": "Vulkan",
    "opencl": "OpenCL",
    "torch": "PyTorch",
    "cpu": "Processor (NumPy)",
}


def decode(path: Path) -> np.ndarray:
    """All frames of a video as uint8 (T, H, W, 3) RGB."""
    import av

    with av.open(str(path)) as container:
        return np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_of(name: str) -> str:
    """What the backend runs on here, in words."""
    if name == "opencl":
        from kernelkit.opencl import choose

        report, _ = choose()
        return f"{report.platform}: {report.name}" if report is not None else "?"
    if name == "torch":
        import torch

        from vidmag.backend.torch import default_device

        return f"torch {torch.__version__} on {default_device()} ({torch.get_num_threads()} threads)"
    return "NumPy " + np.__version__ if name == "cpu" else name


def processor_seconds() -> float:
    """User + system time of this process so far, every thread (a device's worker threads, such as PoCL's
    and lavapipe's, included)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def time_backend(
    frames: np.ndarray, preset, backend: str, runs: int
) -> tuple[list[float], list[float], np.ndarray]:
    """Wall times, processor times and the last output of ``runs`` runs. Processor time is the steadier
    figure on a shared machine: work of other processes lengthens the wall time, not this process's total."""
    import vidmag

    times, processor, out = [], [], None
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), processor_seconds()
        out = vidmag.magnify(frames, fs=preset.fs, pipeline=preset.pipeline, backend=backend, **preset.params)
        times.append(time.perf_counter() - start)
        processor.append(processor_seconds() - start_cpu)
    return times, processor, out


def time_live(backend: str, frames: int) -> dict:
    """Frames/s and latency of ``backend`` fed :data:`LIVE_SIZE` frames one at a time (at most 20 s of
    timed pushes, at least 5)."""
    bench = str(ROOT / "bench")
    if bench not in sys.path:  # called once per backend
        sys.path.insert(0, bench)
    from vidmag_live import run_case

    case = run_case(backend, "laplacian_iir", LIVE_SIZE, frames=frames, warmup=5, budget=20.0)
    keys = ("pipeline", "preset", "width", "height", "frames", "fps", "latency_median_ms", "latency_p99_ms")
    return {key: case[key] for key in keys}


def markdown(result: dict) -> str:
    live = any("frame_at_a_time" in e for e in result["backends"].values())
    width, height = LIVE_SIZE
    live_title = f" | Frame at a time, {height}p" if live else ""
    rows = [
        "| Backend | " + " | ".join(c[0] for c in CASES) + live_title + " | Against the processor |",
        "|---|" + "---|" * len(CASES) + ("---|" if live else "") + "---|",
    ]
    base = result["backends"].get("cpu")
    for name, entry in result["backends"].items():
        cells = [f"{entry['cases'][c[2]]['best_s'] * 1000:,.0f} ms" for c in CASES]
        if base is None or name == "cpu":
            ratio = "—"
        else:
            ratio = " / ".join(
                f"{base['cases'][c[2]]['best_s'] / entry['cases'][c[2]]['best_s']:.1f}×" for c in CASES
            )
        if live:
            case = entry.get("frame_at_a_time")
            cells.append("—" if case is None else f"{case['fps']:,.0f} frames/s")
        rows.append(f"| {LABELS.get(name, name)} | " + " | ".join(cells) + f" | {ratio} |")
    m = result["machine"]
    agree = ", ".join(
        f"{LABELS.get(n, n)} {max(e['cases'][c[2]]['max_abs_diff_vs_cpu'] for c in CASES)}"
        for n, e in result["backends"].items()
        if n != "cpu" and "cpu" in result["backends"]
    )
    lines = [
        f"Measured {result['date']} on {m['cpu']} ({m['cores']} cores), Python {m['python']}; "
        "magnification only (decoding and encoding excluded), one warm-up, then the best of "
        f"{result['runs']}.",
        "",
        *rows,
        "",
        "What each backend ran on: "
        + "; ".join(f"{LABELS.get(n, n)}: {e['device']}" for n, e in result["backends"].items())
        + ".",
    ]
    if live:
        lines += [
            "",
            f"Frame at a time: laplacian_iir with the `baby` preset's streaming form, {width}x{height} "
            "frames of the synthetic scene pushed one at a time into a `vidmag.live.Magnifier`, each "
            "returned before the next (`bench/vidmag_live.py`'s case; at most 20 s of pushes).",
        ]
    if agree:
        lines += ["", f"Largest difference of any output byte from the reference: {agree}."]
    start, end = m.get("load_average_at_start"), m.get("load_average_at_end")
    if start is not None and end is not None:
        lines += [
            "",
            f"Load average (1 minute) {start} at the start and {end} at the end, on {m['cores']} cores: "
            + (
                "other work shared the machine, so these figures are pessimistic and noisy."
                if max(start, end) > 1.5
                else "the machine was otherwise idle."
            ),
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", help="comma-separated backends (default: every one that runs here)")
    parser.add_argument(
        "--clips",
        type=Path,
        default=ROOT.parent / "shared" / "data" / "clips",
        help="folder holding face.mp4 and baby.mp4 (default: ../shared/data/clips)",
    )
    parser.add_argument("--runs", type=int, default=2, help="timed runs after the warm-up; the best counts")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--update-docs", action="store_true", help=f"rewrite the table in {DOCS_PAGE}")
    parser.add_argument("--live-frames", type=int, default=120,
                        help="timed pushes of the frame-at-a-time column (0: no such column)")
    parser.add_argument(
        "--from-json", type=Path, help="rewrite the table from a saved backends.json, measuring nothing"
    )
    args = parser.parse_args(argv)
    if args.from_json:
        result = json.loads(args.from_json.read_text())
        return _publish(result, args, parser)

    from vidmag import PRESETS
    from vidmag.backend import registry

    if args.backends:
        names = [n.strip() for n in args.backends.split(",") if n.strip()]
        for name in names:
            reason = registry.unavailable_reason(name)
            if reason is not None:
                parser.error(f"backend {name!r} cannot run here: {reason}")
    else:
        names = [b.name for b in registry.list_backends() if b.available]
    if "cpu" in names:  # the reference first: the others are compared with its output
        names = ["cpu"] + [n for n in names if n != "cpu"]

    clips = {}
    for _, file, preset in CASES:
        path = args.clips / file
        if not path.exists():
            parser.error(f"{path} not found (use --clips)")
        clips[preset] = decode(path)
        print(f"decoded {file}: {clips[preset].shape}", file=sys.stderr)

    result = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d"),
        "machine": {
            "load_average_at_start": _load(),
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "runs": args.runs,
        "backends": {},
    }
    reference: dict[str, np.ndarray] = {}
    for name in names:
        entry = {"device": device_of(name), "cases": {}}
        for _, file, preset_name in CASES:
            preset = PRESETS[preset_name]
            times, processor, out = time_backend(clips[preset_name], preset, name, 1 + args.runs)
            case = {
                "clip": file,
                "pipeline": preset.pipeline,
                "frames": len(out),
                "size": list(clips[preset_name].shape[1:3]),
                "warmup_s": times[0],
                "times_s": times[1:],
                "best_s": min(times[1:]),
                "processor_s": processor[1:],
                "best_processor_s": min(processor[1:]),
            }
            if name == "cpu":
                reference[preset_name] = out
            elif preset_name in reference:
                diff = np.abs(out.astype(np.int16) - reference[preset_name].astype(np.int16))
                case["max_abs_diff_vs_cpu"] = int(diff.max())
                case["fraction_differing"] = float((diff > 0).mean())
            entry["cases"][preset_name] = case
            runs = ", ".join(f"{t:.3f}" for t in times)
            print(f"{name:7} {preset_name:5} best {case['best_s']:.3f} s  (runs {runs}); processor time best "
                  f"{case['best_processor_s']:.3f} s", file=sys.stderr)
        if args.live_frames > 0:
            entry["frame_at_a_time"] = live = time_live(name, args.live_frames)
            print(f"{name:7} live  {live['fps']:.1f} frames/s at {live['width']}x{live['height']} "
                  f"(median latency {live['latency_median_ms']:.1f} ms)", file=sys.stderr)
        result["backends"][name] = entry

    result["machine"]["load_average_at_end"] = _load()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "backends.json").write_text(json.dumps(result, indent=2) + "\n")
    return _publish(result, args, parser)


def _load() -> float | None:
    """The 1-minute load average: other work on the machine skews every figure, so it is recorded."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _publish(result: dict, args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Write the markdown table beside the JSON, print it, and update the docs page when asked."""
    table = markdown(result)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "backends.md").write_text(table)
    print(table)
    if args.update_docs:
        page = DOCS_PAGE.read_text()
        block = f"{MARK_START}\n{table}{MARK_END}"
        pattern = re.compile(re.escape(MARK_START) + ".*?" + re.escape(MARK_END), re.S)
        if not pattern.search(page):
            parser.error(f"{DOCS_PAGE} has no {MARK_START} ... {MARK_END} block")
        DOCS_PAGE.write_text(pattern.sub(lambda _: block, page))
        print(f"updated {DOCS_PAGE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
