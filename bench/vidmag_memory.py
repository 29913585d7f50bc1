"""Peak resident memory of ``vidmag.magnify_file`` for every pipeline, with and without a memory budget.

Two clips: ``baby.mp4`` (the paper's, from shared/data/clips; ``--frames`` trims it) and a clip this script
synthesises into a temporary directory (``--size``, default 1920x1080, ``--minutes`` long, default 10; not
kept). ``--quick`` makes the synthesised clip a few seconds long (a smoke run).

Every case runs in its own Python process, which reports its own ``ru_maxrss`` (resource.getrusage): the
peak of that case alone, interpreter and libraries included. A case runs once without ``memory=`` (the
default budget: half the machine's available memory) and, for the pipelines whose memory grows with the clip,
once with the budget of its clip (``--budget-baby``, default 500MB; ``--budget-large``, default 2GB).
Printed: the table, and each row against the issue's goals (<= 500 MB on baby.mp4, <= 2 GB on the large
clip). Saved as JSON with the machine's record.

    .venv/bin/python bench/vidmag_memory.py --clips baby --out bench/results/vidmag_memory.json
    .venv/bin/python bench/vidmag_memory.py --clips large --minutes 0.1 --pipelines laplacian_ideal
    .venv/bin/python bench/vidmag_memory.py --quick --size 64x48    # a smoke run
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
from vidmag_reference import trimmed_copy

ROOT = Path(__file__).resolve().parent.parent
CLIPS = ROOT.parent / "shared" / "data" / "clips"

#: Each pipeline's options: a paper preset where there is one, else the parameters of the nearest one.
PIPELINE_OPTIONS = {
    "gaussian_ideal": {"preset": "face"},
    "laplacian_ideal": {"preset": "guitar_e"},
    "laplacian_butterworth": {"preset": "face2_motion"},
    "laplacian_iir": {"preset": "baby"},
    "riesz_ideal": {"pipeline": "riesz_ideal", "alpha": 20.0, "fl": 0.4, "fh": 3.0, "sigma": 5.0},
    "riesz_butterworth": {"pipeline": "riesz_butterworth", "alpha": 20.0, "fl": 0.4, "fh": 3.0, "sigma": 5.0},
    "riesz_iir": {"preset": "baby_phase"},
    "steerable_ideal": {"pipeline": "steerable_ideal", "alpha": 25.0, "fl": 0.4, "fh": 3.0, "sigma": 2.0,
                        "orientations": 4, "bands_per_octave": 1, "attenuate_other_freq": False},
}

#: The pipelines whose memory grows with the clip (the others hold O(1) frames: no budget run).
WHOLE_CLIP = ("gaussian_ideal", "laplacian_ideal", "riesz_ideal", "steerable_ideal")

#: The issue's goals, MB of peak RSS.
GOALS_MB = {"baby": 500, "large": 2000}


def synthesise(path: Path, width: int, height: int, frames: int, fps: int = 30) -> Path:
    """A textured clip with a slow drift and a 1.2 Hz colour pulse, written fast (x264 ultrafast)."""
    import numpy as np

    from vidmag import io

    rng = np.random.default_rng(0)
    base = rng.integers(40, 215, (height // 8 + 2, width // 8 + 2, 3), dtype=np.uint8)
    texture = np.repeat(np.repeat(base, 8, axis=0), 8, axis=1)
    with io.VideoWriter(path, width=width, height=height, fps=fps, quality=23, encoder_preset="ultrafast",
                        ) as writer:
        for t in range(frames):
            dx = (t // 4) % 8
            frame = texture[:height, dx:dx + width].astype(np.int16)
            frame += round(3 * np.sin(2 * np.pi * 1.2 * t / fps))
            writer.write(np.clip(frame, 0, 255).astype(np.uint8))
    return path


def run_case(case: dict) -> dict:
    """One magnify_file in this process; its measurements."""
    import warnings

    import vidmag

    options = dict(PIPELINE_OPTIONS[case["pipeline"]])
    if case["pipeline"] in ("riesz_ideal", "riesz_butterworth", "steerable_ideal") or "fs" in case:
        options.setdefault("fs", case.get("fs", 30.0))
    with tempfile.TemporaryDirectory() as directory, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = vidmag.magnify_file(case["src"], os.path.join(directory, "out.mp4"), backend=case["backend"],
                                     memory=case["memory"], audio=False, encoder_preset="veryfast", **options)
    return {**case, "backend": result.backend, "route": result.route, "frames": result.frames,
            "size": f"{result.width}x{result.height}", "seconds": round(result.seconds, 2),
            "peak_rss_mb": round(peak_rss_mb(), 1)}


def _child(case: dict, timeout: float) -> dict:
    try:
        done = subprocess.run([sys.executable, __file__, "--case", json.dumps(case)], capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {**case, "error": f"over {timeout:g} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [""])[-1]
        return {**case, "error": f"exit status {done.returncode}: {last[:200]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _row(r: dict) -> list:
    goal = GOALS_MB[r["clip_kind"]]
    if "error" in r:
        return [r["clip"], r["pipeline"], r["backend"], r["memory"] or "default", "-", "-", "-", r["error"]]
    verdict = "meets" if r["peak_rss_mb"] <= goal else "over"
    return [r["clip"], r["pipeline"], r["backend"], r["memory"] or "default", r["route"],
            f"{r['peak_rss_mb']:,.0f} MB", f"{r['seconds']:.1f} s", f"{verdict} (<= {goal:,} MB)"]


HEADER = ["clip", "pipeline", "backend", "memory", "route", "peak RSS", "wall time", "goal"]


def table(rows: list[dict]) -> str:
    """The markdown table of the cases (the JSON's ``rows``), each against its clip's goal."""
    return markdown_table(HEADER, [_row(r) for r in rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--clips", default="baby,large", help="baby, large or both (default)")
    parser.add_argument("--pipelines", default=",".join(PIPELINE_OPTIONS),
                        help="comma-separated (default: all eight)")
    parser.add_argument("--backend", default="auto", help="backend of the cases (default auto)")
    parser.add_argument("--budget-backend", default="cpu",
                        help="backend of the budget runs (default cpu, where every bounded route runs)")
    parser.add_argument("--frames", type=int, help="trim baby.mp4 to this many frames")
    parser.add_argument("--minutes", type=float, default=10.0, help="length of the synthesised clip")
    parser.add_argument("--size", default="1920x1080", help="WxH of the synthesised clip")
    parser.add_argument("--quick", action="store_true", help="a smoke run: a 2-second synthesised clip")
    parser.add_argument("--budget-baby", default="500MB")
    parser.add_argument("--budget-large", default="2GB")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per case before it is dropped")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "vidmag_memory.json"))
    args = parser.parse_args(argv)
    if args.case:
        print(json.dumps(run_case(json.loads(args.case))))
        return 0
    pipelines = [p.strip() for p in args.pipelines.split(",") if p.strip()]
    unknown = sorted(set(pipelines) - set(PIPELINE_OPTIONS))
    kinds = [k.strip() for k in args.clips.split(",") if k.strip()]
    if unknown or set(kinds) - set(GOALS_MB):
        parser.error(f"unknown pipeline(s) {unknown} or clips {kinds}: choose from {list(PIPELINE_OPTIONS)}, "
                     f"{list(GOALS_MB)}")
    width, _, height = args.size.lower().partition("x")
    where = machine()  # before the runs: its load average is the one they started under
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="vidmag-memory-") as directory:
        clips = {}
        if "baby" in kinds:
            baby = CLIPS / "baby.mp4"
            clips["baby"] = (trimmed_copy(baby, args.frames, directory) if args.frames else baby, "baby.mp4",
                             args.budget_baby)
        if "large" in kinds:
            seconds = 2.0 if args.quick else args.minutes * 60
            frames = max(12, round(seconds * 30))
            t0 = time.perf_counter()
            path = synthesise(Path(directory) / "large.mp4", int(width), int(height), frames)
            print(f"synthesised {frames} frames of {args.size} in {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr)
            clips["large"] = (path, f"synthetic {args.size}, {frames} frames", args.budget_large)
        for kind, (src, label, budget) in clips.items():
            for pipeline in pipelines:
                runs = [(args.backend, None)]
                if pipeline in WHOLE_CLIP:
                    runs.append((args.budget_backend, budget))
                for backend, memory in runs:
                    case = {"src": str(src), "clip": label, "clip_kind": kind, "pipeline": pipeline,
                            "backend": backend, "memory": memory}
                    row = _child(case, args.timeout)
                    rows.append(row)
                    print(" | ".join(str(c) for c in _row(row)), file=sys.stderr, flush=True)
    print(table(rows))
    print(f"\ngoals: every pipeline <= {GOALS_MB['baby']} MB on baby.mp4, <= {GOALS_MB['large']:,} MB on the "
          "large clip (10 minutes of 1080p in the issue)")
    write_json(args.out, {"bench": "vidmag_memory", "command": command_line(__file__, argv),
                          "machine": finish_machine(where),
                          "versions": versions(["vidmag", "numpy", "scipy", "av", "torch", "pyopencl"]),
                          "argv": sys.argv[1:] if argv is None else argv, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
