"""``vidmag suggest CLIP``: the clip's spectrum, its peaks named, a recommended band and capture warnings."""

from __future__ import annotations

import argparse
import os
from typing import Any

from vidmag._cli_options import UsageError

NAME = "suggest"

#: Suffixes of the files --plot writes (formats matplotlib's Agg canvas writes).
PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")

EXAMPLES = """\
examples:
  vidmag suggest face.mp4 --roi 230,120,80,60 --kind colour --plot face-spectrum.png
  vidmag suggest baby.mp4 --kind motion
"""


def add_parser(commands: Any) -> None:
    """Add the ``suggest`` subcommand to `commands` (argparse's subparsers object)."""
    parser = commands.add_parser(
        NAME,
        help="suggest a temporal band (fl, fh) from the clip's spectrum",
        description="Compute the spectrum of a region's mean colour (--kind colour, for gaussian_ideal) or "
        "of its local motion (--kind motion, for the motion pipelines), name its peaks, recommend fl / fh "
        "around the strongest, and warn about capture problems: an inter-frame codec (H.264, HEVC), and "
        "mains flicker (100 / 120 Hz) aliased into the band.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("clip", metavar="CLIP", help="a video file")
    parser.add_argument("--roi", metavar="X,Y,W,H", help="region to analyse, in pixels (default: the frame)")
    parser.add_argument("--kind", choices=("auto", "colour", "motion"), default="auto",
                        help="the signal: mean colour, local motion, or auto (the clearer peak)")
    parser.add_argument("--fs", type=float, metavar="HZ", help="capture rate (default: the container's)")
    parser.add_argument("--max-frames", type=int, metavar="N", help="read at most N frames")
    parser.add_argument("--plot", metavar="OUT", help=f"write the spectrum plot ({', '.join(PLOT_SUFFIXES)})")


def run(args: argparse.Namespace) -> int:
    """Run ``vidmag suggest``; return the exit status."""
    from vidmag.suggest import suggest

    if args.plot is not None:
        suffix = os.path.splitext(args.plot)[1].lower()
        if suffix not in PLOT_SUFFIXES:
            raise UsageError(f"vidmag suggest: error: --plot must end in one of {', '.join(PLOT_SUFFIXES)}; "
                             f"got {args.plot!r}")
        directory = os.path.dirname(os.path.abspath(args.plot))
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"--plot: no such directory: {directory!r}")
    result = suggest(args.clip, args.fs, roi=args.roi, kind=args.kind, max_frames=args.max_frames)
    print(result.report(), end="")
    if args.plot is not None:
        result.plot(args.plot)
        print(f"wrote {args.plot}")
    return 0
