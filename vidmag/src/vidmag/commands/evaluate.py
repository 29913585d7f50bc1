"""``vidmag evaluate [CLIP]``: the quality report.

Without CLIP, the synthetic protocol of Oh et al. (2018) on every pipeline (or ``--pipelines``): writes
``table.txt`` (the summary and every case), ``report.json`` and ``plots.png`` into ``--out`` and prints the
summary. With CLIP, the report that needs no ground truth for one pipeline run on the clip (``--preset`` or
``--pipeline`` and its parameters): writes ``table.txt`` and ``report.json`` and prints the table.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from vidmag._cli_options import PIPELINE_NAMES, PIPELINE_OPTION_KEYS, UsageError, add_pipeline_options

NAME = "evaluate"

EXAMPLES = """\
examples:
  vidmag evaluate --quick --out eval-quick            # a small run of the synthetic protocol (seconds)
  vidmag evaluate --pipelines laplacian_iir,riesz_iir --out eval
  vidmag evaluate baby.mp4 --preset baby --out baby-eval --max-frames 150
"""


def add_parser(commands: Any) -> None:
    """Add the ``evaluate`` subcommand to `commands` (argparse's subparsers object)."""
    parser = commands.add_parser(
        NAME,
        help="quality report: the synthetic protocol, or a clip's noise and flicker",
        description="Without CLIP: the synthetic protocol of Oh et al. (ECCV 2018, as re-released by "
        "Axial-mm): a texture translated by sub-pixel motions, magnified by every pipeline and compared "
        "with the exact ground truth (PSNR, SSIM, measured magnification). With CLIP: one pipeline run on "
        "the clip, and what needs no ground truth (noise amplification in static regions, flicker, "
        "clipping). Writes table.txt and report.json (and plots.png for the protocol) into --out.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("clip", metavar="CLIP", nargs="?",
                        help="a video file (omit it for the synthetic protocol)")
    parser.add_argument("--out", metavar="DIR", default="evaluate-output",
                        help="directory to write into (created if missing; default evaluate-output)")
    parser.add_argument("--backend", metavar="NAME", default=argparse.SUPPRESS,
                        help="backend of the pipelines (default: cpu for the protocol, auto for a clip)")
    synthetic = parser.add_argument_group("the synthetic protocol (without CLIP)")
    synthetic.add_argument("--pipelines", metavar="A,B", default=argparse.SUPPRESS,
                           help="pipelines to measure, comma-separated (default all: "
                           f"{', '.join(PIPELINE_NAMES)})")
    synthetic.add_argument("--quick", action="store_true", default=argparse.SUPPRESS,
                           help="64 x 64 pixels, 40 frames, 2 motions, 2 noise levels, 2 magnifications")
    synthetic.add_argument("--size", type=int, metavar="N", default=argparse.SUPPRESS,
                           help="frames of N x N pixels (default 96; 64 with --quick)")
    synthetic.add_argument("--frames", type=int, metavar="N", default=argparse.SUPPRESS,
                           help="frames per clip (default 60; 40 with --quick)")
    clip = parser.add_argument_group("a clip (with CLIP)")
    add_pipeline_options(clip)
    clip.add_argument("--roi-static", metavar="X,Y,W,H", default=argparse.SUPPRESS,
                      help="a region where nothing moves (default: the 10%% of pixels that vary least)")
    clip.add_argument("--max-frames", type=int, metavar="N", default=argparse.SUPPRESS,
                      help="read at most N frames of the clip")


def _write(path: str, text: str) -> None:
    from vidmag.io import atomic_output

    with atomic_output(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)


def _pipelines(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in PIPELINE_NAMES]
    if unknown or not names:
        raise UsageError(f"vidmag evaluate: error: --pipelines takes names from {', '.join(PIPELINE_NAMES)}; "
                         f"got {', '.join(unknown) or 'none'}")
    return names


def run(args: argparse.Namespace) -> int:
    """Run ``vidmag evaluate``; return the exit status."""
    given = vars(args)
    pipeline_options = {key: given[key] for key in PIPELINE_OPTION_KEYS if key in given}
    synthetic_options = [f"--{key}" for key in ("pipelines", "quick", "size", "frames") if key in given]
    clip_options = [f"--{key.replace('_', '-')}" for key in ("roi_static", "max_frames") if key in given]
    if args.clip is None:
        if pipeline_options or clip_options:
            names = [f"--{k.replace('_', '-')}" for k in pipeline_options] + clip_options
            raise UsageError(f"vidmag evaluate: error: {', '.join(names)} apply to a clip only; give CLIP, "
                             "or leave them out for the synthetic protocol")
        return _synthetic(args)
    if synthetic_options:
        raise UsageError(f"vidmag evaluate: error: {', '.join(synthetic_options)} apply to the synthetic "
                         "protocol only (without CLIP)")
    if "preset" not in pipeline_options and "pipeline" not in pipeline_options:
        raise UsageError("vidmag evaluate: error: with CLIP, give --preset NAME or --pipeline NAME "
                         "(see vidmag evaluate --help)")
    return _clip(args, pipeline_options)


def _synthetic(args: argparse.Namespace) -> int:
    from vidmag.evaluate import QUICK, synthetic_report

    options: dict[str, Any] = dict(QUICK) if getattr(args, "quick", False) else {}
    for key in ("size", "frames"):
        if key in args:
            options[key] = getattr(args, key)
    pipelines = _pipelines(args.pipelines) if "pipelines" in args else None
    os.makedirs(args.out, exist_ok=True)
    progress = None
    if sys.stderr.isatty():
        def progress(done: int, total: int) -> None:
            print(f"\rvidmag evaluate: {done}/{total} clips", end="\n" if done == total else "",
                  file=sys.stderr, flush=True)
    report = synthetic_report(pipelines, backend=getattr(args, "backend", "cpu"), progress=progress,
                              **options)
    _write(os.path.join(args.out, "table.txt"), report.table(full=True))
    _write(os.path.join(args.out, "report.json"), report.to_json() + "\n")
    report.plot(os.path.join(args.out, "plots.png"))
    print(report.table(), end="")
    print(f"wrote table.txt, report.json and plots.png into {args.out}")
    return 0


def _clip(args: argparse.Namespace, options: dict[str, Any]) -> int:
    from vidmag.evaluate import clip_report

    extra = {key: getattr(args, key) for key in ("roi_static", "max_frames") if key in args}
    report = clip_report(args.clip, backend=getattr(args, "backend", "auto"), **options, **extra)
    os.makedirs(args.out, exist_ok=True)
    _write(os.path.join(args.out, "table.txt"), report.table())
    _write(os.path.join(args.out, "report.json"), report.to_json() + "\n")
    print(report.table(), end="")
    print(f"wrote table.txt and report.json into {args.out}")
    return 0
