"""Benchmark of vidmag's pipelines on the paper's clips: speed and peak memory, per case.

Each pipeline runs with its paper preset (gaussian_ideal: face, laplacian_ideal: guitar_e,
laplacian_butterworth: face2_motion, laplacian_iir: baby) on face.mp4 and baby.mp4, two ways:

- ``magnify``: the clip is first decoded into memory (not timed), then ``vidmag.magnify`` is timed;
- ``file``: ``vidmag.magnify_file`` end to end (decode + magnify + H.264 encode), timed as a whole.

Every case runs in its own Python process, so the peak resident memory (``ru_maxrss``) is that case's alone.
The table is printed and saved as JSON, with the machine, the library versions and the command.

    .venv/bin/python bench/vidmag_reference.py                       # full clips, cpu backend
    .venv/bin/python bench/vidmag_reference.py --frames 60 --backend auto --out /tmp/bench.json
    .venv/bin/python bench/vidmag_reference.py --backend cpu,opencl,vulkan --modes magnify  # side by side
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import command_line, finish_machine, machine, markdown_table, peak_rss_mb, versions, write_json

ROOT = Path(__file__).resolve().parent.parent
CLIPS = ROOT.parent / "shared" / "data" / "clips"
PIPELINE_PRESETS = {
    "gaussian_ideal": "face",
    "laplacian_ideal": "guitar_e",
    "laplacian_butterworth": "face2_motion",
    "laplacian_iir": "baby",
}
#: the project's memory goals of `vidmag magnify` (the `file` mode), MB of peak RSS, each clip with its preset
FILE_GOALS_MB = {("baby", "laplacian_iir"): 500, ("face", "gaussian_ideal"): 1000}


def trimmed_copy(src: Path, frames: int, directory: str) -> Path:
    """The first `frames` frames of `src`, re-encoded near-losslessly (x264 CRF 0), with no audio."""
    from fractions import Fraction

    from vidmag import io

    info = io.probe(src)
    dst = Path(directory) / f"{src.stem}-{frames}.mp4"
    with io.VideoWriter(dst, width=info.width, height=info.height, fps=Fraction(info.fps), quality=0,
                        encoder_preset="ultrafast") as writer:
        for index, frame in enumerate(io.read_frames(src)):
            if index == frames:
                break
            writer.write(frame)
    return dst


def run_case(case: dict) -> dict:
    """Run one case in this process and return its measurements."""
    import numpy as np

    import vidmag
    from vidmag import io
    from vidmag.backend import select
    from vidmag.presets import preset_params

    backend, _ = select(case["backend"])
    src = case["src"]
    if case["mode"] == "magnify":
        frames = np.stack(list(io.read_frames(src)))
        pipeline, fs, params = preset_params(case["preset"], None)
        rss_decoded = peak_rss_mb()
        start = time.perf_counter()
        out = vidmag.magnify(frames, fs=fs, pipeline=pipeline, backend=backend, **params)
        seconds = time.perf_counter() - start
        n_frames, (height, width) = len(out), out.shape[1:3]
        extra = {"peak_rss_mb_after_decode": round(rss_decoded, 1)}
    else:
        with tempfile.TemporaryDirectory() as directory:
            result = vidmag.magnify_file(src, os.path.join(directory, "out.mp4"), preset=case["preset"],
                                         backend=backend)
        seconds, n_frames, width, height = result.seconds, result.frames, result.width, result.height
        extra = {}
    return {
        **case,
        "backend": backend,
        "frames": n_frames,
        "size": f"{width}x{height}",
        "seconds": round(seconds, 3),
        "frames_per_s": round(n_frames / seconds, 2),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        **extra,
    }


def table(results: list[dict]) -> str:
    """The markdown table of the cases: one row per clip, pipeline and backend, two columns per mode."""
    modes = list(dict.fromkeys(r["mode"] for r in results))
    def key(r: dict) -> tuple:
        return r["clip"], r["pipeline"], r["preset"], r["backend"]

    keys = list(dict.fromkeys(key(r) for r in results))
    header = ["clip", "pipeline (preset)", "backend", "frames"]
    for mode in modes:
        header += [f"`{mode}`: peak RSS", f"`{mode}`: frames/s"]
    rows = []
    for clip, pipeline, preset, backend in keys:
        cases = {r["mode"]: r for r in results if key(r) == (clip, pipeline, preset, backend)}
        frames = next((str(r["frames"]) for r in cases.values() if "frames" in r), "-")
        cells = [clip, f"{pipeline} ({preset})", backend, frames]
        for mode in modes:
            r = cases.get(mode)
            if r is None:
                cells += ["-", "-"]
            elif "error" in r:
                cells += [f"error: {r['error'][:80]}", "-"]
            else:
                cells += [f"{r['peak_rss_mb']:,.0f} MB", f"{r['frames_per_s']:.1f}"]
        rows.append(cells)
    return markdown_table(header, rows)


def goals(results: list[dict]) -> list[str]:
    """One line per memory goal whose case ran in the `file` mode: its peak RSS and whether it is met."""
    lines = []
    for (clip, pipeline), goal in FILE_GOALS_MB.items():
        for r in results:
            if (r["clip"], r["pipeline"], r["mode"]) != (clip, pipeline, "file"):
                continue
            if "error" in r:
                lines.append(f"{clip}.mp4, {pipeline} ({r['preset']}) on {r['backend']}: failed, goal <= "
                             f"{goal:,} MB not measured")
                continue
            verdict = "met" if r["peak_rss_mb"] <= goal else "NOT met"
            lines.append(f"{clip}.mp4, {pipeline} ({r['preset']}) on {r['backend']}: "
                         f"{r['peak_rss_mb']:,.0f} MB against <= {goal:,} MB: {verdict}")
    return lines


def seconds_table(results: list[dict], mode: str = "magnify") -> str:
    """Seconds of one mode's cases: one row per backend, one column per clip and pipeline (preset)."""
    cases = [r for r in results if r["mode"] == mode]
    columns = list(dict.fromkeys((r["clip"], r["pipeline"], r["preset"]) for r in cases))
    backends = list(dict.fromkeys(r["backend"] for r in cases))
    rows = []
    for backend in backends:
        cells = [backend]
        for clip, pipeline, preset in columns:
            r = next((r for r in cases if (r["clip"], r["pipeline"], r["preset"], r["backend"])
                      == (clip, pipeline, preset, backend)), None)
            cells.append("-" if r is None else "error" if "error" in r else f"{r['seconds']:.2f} s")
        rows.append(cells)
    header = ["backend", *(f"`{clip}.mp4`, {pipeline} ({preset})" for clip, pipeline, preset in columns)]
    return markdown_table(header, rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="cpu",
                        help="backend, 'auto', or several separated by commas (default cpu, the reference)")
    parser.add_argument("--frames", type=int, default=None, help="use only the first N frames of each clip")
    parser.add_argument("--clips-dir", default=str(CLIPS), help="directory of the sample clips")
    parser.add_argument("--clips", nargs="+", default=["face", "baby"], help="clip names (default face baby)")
    parser.add_argument("--pipelines", nargs="+", default=list(PIPELINE_PRESETS),
                        choices=list(PIPELINE_PRESETS))
    parser.add_argument("--modes", nargs="+", default=["magnify", "file"], choices=["magnify", "file"])
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "vidmag_reference.json"),
                        help="where to write the JSON results")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # internal: run one case (JSON) in this process
    args = parser.parse_args(argv)

    if args.case:
        print(json.dumps(run_case(json.loads(args.case))))
        return

    results = []
    where = machine()  # before the runs: its load average is the one they started under
    print(_header(), flush=True)
    with tempfile.TemporaryDirectory() as directory:
        sources = {}
        for clip in args.clips:
            path = Path(args.clips_dir) / f"{clip}.mp4"
            if not path.exists():
                sys.exit(f"vidmag_reference: clip not found: {path}")
            sources[clip] = trimmed_copy(path, args.frames, directory) if args.frames else path
        backends = [b.strip() for b in args.backend.split(",") if b.strip()]
        for clip, src in sources.items():
            for pipeline in args.pipelines:
                for mode, backend in ((m, b) for m in args.modes for b in backends):
                    case = {"clip": clip, "pipeline": pipeline, "preset": PIPELINE_PRESETS[pipeline],
                            "mode": mode, "backend": backend, "src": str(src)}
                    done = subprocess.run([sys.executable, __file__, "--case", json.dumps(case)],
                                          capture_output=True, text=True)
                    if done.returncode != 0:
                        tail = done.stderr.strip().splitlines()[-1:] or ["?"]
                        result = {**case, "error": tail[0]}
                    else:
                        result = json.loads(done.stdout.strip().splitlines()[-1])
                    result.pop("src", None)
                    results.append(result)
                    print(_row(result), flush=True)

    report = {
        "bench": "vidmag_reference",
        "command": command_line(__file__, argv),
        "machine": finish_machine(where),
        "versions": versions(["vidmag", "numpy", "scipy", "av", "torch", "pyopencl"]),
        "frames_limit": args.frames,
        "results": results,
    }
    print()
    print(table(results))
    for line in goals(results):
        print(f"goal: {line}")
    print(f"\nwrote {write_json(args.out, report)}")


def _header() -> str:
    return (f"{'clip':6} {'pipeline':22} {'preset':13} {'mode':8} {'backend':8} {'frames':>6} {'size':>9} "
            f"{'seconds':>8} {'frames/s':>9} {'peak RSS MB':>11}")


def _row(r: dict) -> str:
    start = f"{r['clip']:6} {r['pipeline']:22} {r['preset']:13} {r['mode']:8} {r['backend']:8}"
    if "error" in r:
        return f"{start} error: {r['error']}"
    return (f"{start} {r['frames']:>6} {r['size']:>9} {r['seconds']:>8.2f} {r['frames_per_s']:>9.2f} "
            f"{r['peak_rss_mb']:>11.0f}")


if __name__ == "__main__":
    main()
