"""``vidmag magnify-many SRC... --out-dir DIR``: magnify many clips on a Dask cluster (vidmag.many)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from vidmag._cli_options import PIPELINE_OPTION_KEYS, UsageError, add_pipeline_options

NAME = "magnify-many"

EXAMPLES = """\
examples:
  vidmag magnify-many clips/*.mp4 --out-dir magnified --preset baby --workers 4
  vidmag magnify-many a.mp4 b.mp4 --out-dir out --pipeline laplacian_iir --alpha 10 --lambda-c 16 \\
      --r1 0.4 --r2 0.05 --chrom-attenuation 0.1 --scheduler tcp://10.0.0.5:8786
"""


def add_parser(commands: Any) -> None:
    """Add the ``magnify-many`` subcommand to `commands` (argparse's subparsers object)."""
    parser = commands.add_parser(
        NAME,
        help="magnify many video files on a Dask cluster",
        description="Magnify every SRC into DIR/<stem>-magnified.mp4 on the workers of a Dask cluster: a "
        "local one by default, an existing one with --scheduler. Each output is written under a temporary "
        "name and renamed when complete; a clip that fails is reported (one line each) and the others "
        "finish. Exit status 1 when any clip failed.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("inputs", metavar="SRC", nargs="+", help="video files")
    parser.add_argument("--out-dir", metavar="DIR", required=True, help="directory of the outputs")
    parser.add_argument("--suffix", default="-magnified",
                        help="appended to each stem (default -magnified; --suffix=-x for one with a -)")
    add_pipeline_options(parser.add_argument_group("what to compute"))
    how = parser.add_argument_group("how")
    how.add_argument("--scheduler", metavar="ADDR", help="address of an existing Dask scheduler "
                     "(tcp://host:port); default: a local cluster")
    how.add_argument("--workers", type=int, metavar="N", help="workers of the local cluster (default: one "
                     "per core)")
    how.add_argument("--backend", metavar="NAME", default=argparse.SUPPRESS, help="as for vidmag magnify")
    how.add_argument("--quality", type=int, metavar="CRF", default=argparse.SUPPRESS,
                     help="x264 constant rate factor (default 18)")
    how.add_argument("--memory", metavar="SIZE", default=argparse.SUPPRESS,
                     help="memory budget per clip, as for vidmag magnify")
    how.add_argument("--no-audio", dest="audio", action="store_false", default=argparse.SUPPRESS,
                     help="do not carry the audio tracks over")
    how.add_argument("--max-frames", type=int, metavar="N", default=argparse.SUPPRESS,
                     help="magnify only the first N frames of each clip, as for vidmag magnify")
    how.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary lines")


def run(args: argparse.Namespace) -> int:
    """Run ``vidmag magnify-many``; return the exit status (1 when any clip failed)."""
    from vidmag.many import magnify_files

    options = {key: value for key, value in vars(args).items()
               if key in (*PIPELINE_OPTION_KEYS, "backend", "quality", "memory", "audio", "max_frames")}
    if "preset" not in options and "pipeline" not in options:
        raise UsageError(f"vidmag {NAME}: error: give --preset NAME or --pipeline NAME "
                         f"(see vidmag {NAME} --help)")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"vidmag {NAME}: error: --workers must be at least 1, got {args.workers}")
    if args.workers is not None and args.scheduler is not None:
        raise UsageError(f"vidmag {NAME}: error: --workers is for the local cluster; an existing one "
                         "(--scheduler) has its own")
    results = magnify_files(args.inputs, args.out_dir, scheduler=args.scheduler, workers=args.workers,
                            progress=not args.quiet and sys.stderr.isatty(), suffix=args.suffix, **options)
    failed = [r for r in results if not r.ok]
    if not args.quiet:
        for r in results:
            if r.ok:
                print(r.result.summary())
    for r in failed:
        print(f"vidmag {NAME}: failed: {r.input}: {r.error.splitlines()[0] if r.error else ''}",
              file=sys.stderr)
    if not args.quiet:
        print(f"{len(results) - len(failed)} of {len(results)} clips written to {args.out_dir}")
    return 1 if failed else 0
