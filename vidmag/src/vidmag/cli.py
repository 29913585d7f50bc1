"""The ``vidmag`` command: magnify video files, list presets and backends, run the demonstration.

Exit status: 0 on success, 2 for a usage error (a bad option or parameter value), 1 for anything else that
failed (unreadable input, unwritable output, a backend that cannot run), 130 when interrupted. Errors are one
line on stderr, and so are warnings (``vidmag: warning: ...``); set ``VIDMAG_DEBUG=1`` to get the traceback
as well (and Python's own warning format).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
import warnings
from collections.abc import Sequence

from vidmag._cli_options import PIPELINE_NAMES, UsageError, _Parser, add_pipeline_options
from vidmag.commands import discovered

__all__ = ["PIPELINE_NAMES", "UsageError", "build_parser", "main"]

EXAMPLES = """\
examples:
  vidmag magnify face.mp4 -o face-pulse.mp4 --preset face
  vidmag magnify baby.mp4 -o baby-breathing.mp4 --preset baby --side-by-side
  vidmag magnify clip.mov -o out.mp4 --pipeline laplacian_butterworth \\
      --alpha 20 --lambda-c 80 --fl 0.25 --fh 5 --chrom-attenuation 0
  vidmag magnify face.mp4 -o mit.mp4 --preset face --compat mit   # the MIT code's output
  vidmag presets            # the paper's clips and their parameters
  vidmag backends           # which backends can run here, and why not
  vidmag demo -o demo-output
"""

MAGNIFY_EXAMPLES = """\
Either --preset (the paper's parameters for one of its clips; other options override single values) or
--pipeline with its parameters:
  gaussian_ideal          --alpha --level --fl --fh --chrom-attenuation
  laplacian_ideal         --alpha --lambda-c --fl --fh --chrom-attenuation
  laplacian_butterworth   --alpha --lambda-c --fl --fh --chrom-attenuation
  laplacian_iir           --alpha --lambda-c --r1 --r2 --chrom-attenuation
  riesz_ideal             --alpha --fl --fh --sigma                  (phase-based, luminance only)
  riesz_butterworth       --alpha --fl --fh --sigma
  riesz_iir               --alpha --r1 --r2 --sigma
  steerable_ideal         --alpha --fl --fh --sigma --orientations --bands-per-octave
                          --attenuate-other-freq yes|no              (the slow reference)

examples:
  vidmag magnify face.mp4 -o face-pulse.mp4 --preset face
  vidmag magnify face.mp4 -o face-pulse.mp4 --preset face --alpha 60 --backend cpu
  vidmag magnify wrist.mp4 -o wrist-motion.mp4 --pipeline laplacian_iir \\
      --alpha 10 --lambda-c 16 --r1 0.4 --r2 0.05 --chrom-attenuation 0.1
  vidmag magnify baby.mp4 -o baby-phase.mp4 --pipeline riesz_iir --alpha 20 --r1 0.4 --r2 0.04 --sigma 5
"""

def _version() -> str:
    from vidmag import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``vidmag`` command."""
    parser = _Parser(
        prog="vidmag",
        description="Eulerian video magnification: reveal small colour changes and motions in video "
        "(Wu et al., SIGGRAPH 2012).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"vidmag {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    magnify = commands.add_parser(
        "magnify",
        help="magnify a video file",
        description="Magnify a video file and write the result as H.264 (every frame, the source's frame "
        "rate, its audio). The output is written under a temporary name and renamed when complete.",
        epilog=MAGNIFY_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    magnify.add_argument("input", metavar="IN", help="any video FFmpeg reads")
    magnify.add_argument("-o", "--output", metavar="OUT", required=True,
                         help="output file (.mp4, .m4v, .mov or .mkv); its directory must exist")
    add_pipeline_options(magnify.add_argument_group("what to compute"))
    how = magnify.add_argument_group("how")
    how.add_argument("--backend", metavar="NAME", default=argparse.SUPPRESS,
                     help="'auto' (default) or a name from 'vidmag backends'; a named backend that "
                     "cannot run is an error, never replaced")
    how.add_argument("--side-by-side", action="store_true", default=argparse.SUPPRESS,
                     help="write input and output next to each other")
    how.add_argument("--quality", type=int, metavar="CRF", default=argparse.SUPPRESS,
                     help="x264 constant rate factor, 0 (lossless) to 51; lower is better (default 18)")
    how.add_argument("--encoder-preset", metavar="SPEED", default=argparse.SUPPRESS,
                     help="x264 preset, ultrafast ... veryslow (default medium)")
    how.add_argument("--no-audio", dest="audio", action="store_false", default=argparse.SUPPRESS,
                     help="do not carry the audio track over")
    how.add_argument("--memory", metavar="SIZE", default=argparse.SUPPRESS,
                     help="memory budget of the whole-clip pipelines, e.g. 2GB, 500MB, 1.5GiB (default: half "
                     "the available memory with psutil, else half the physical memory); over it, "
                     "laplacian_ideal keeps its bands on disk (every backend), riesz_ideal and "
                     "steerable_ideal their phase (cpu backend only: elsewhere over the budget is an error), "
                     "and gaussian_ideal runs in tiles")
    how.add_argument("--max-frames", type=int, metavar="N", default=argparse.SUPPRESS,
                     help="magnify only the first N frames, N >= 1 (a quick look at a setting; the audio "
                     "is cut to match; default: every frame)")
    how.add_argument("-q", "--quiet", action="store_true",
                     help="no progress bar and no summary line")

    commands.add_parser("presets", help="list the presets (the paper's clips and parameters)",
                        description="List the presets: the parameters of the paper's results, under the "
                        "default semantics, with the paper's literal values that --compat mit takes.")
    commands.add_parser("backends", help="list the backends and why any cannot run here",
                        description="List the backends in the order 'auto' tries them, and why any of them "
                        "cannot run on this machine.")
    demo = commands.add_parser("demo", help="synthesise a clip, magnify it, write videos and a plot",
                               description="Synthesise a 10 s clip with a colour pulse under half a grey "
                               "level and an edge vibrating by 0.2 pixel, magnify both, write them next to "
                               "the input as mp4 and plot the pulse before and after. Needs no data.")
    demo.add_argument("-o", "--output", metavar="DIR", default="demo-output",
                      help="directory to write into (created if missing; default demo-output)")
    demo.add_argument("--backend", metavar="NAME", default=argparse.SUPPRESS,
                      help="'auto' (default) or a backend name")
    demo.add_argument("--seconds", type=float, metavar="S", default=argparse.SUPPRESS,
                      help="length of the synthetic clip in seconds, 2.5 to 60 (default 10)")
    for command in discovered():
        command.add_parser(commands)
    return parser


def _magnify(args: argparse.Namespace) -> int:
    from vidmag.files import magnify_file

    options = dict(vars(args))
    for key in ("command", "input", "output", "quiet"):
        options.pop(key)
    if "preset" not in options and "pipeline" not in options:
        raise UsageError(
            "vidmag magnify: error: give --preset NAME or --pipeline NAME (see vidmag magnify --help)"
        )
    progress = not args.quiet and sys.stderr.isatty()
    result = magnify_file(args.input, args.output, progress=progress, **options)
    if not args.quiet:
        print(result.summary())
    return 0


def _presets() -> int:
    from vidmag.presets import PRESETS

    def values(params: dict) -> str:
        return " ".join(f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}"
                        for key, value in params.items())

    rows = [(p.name, p.pipeline, f"{p.fs:g}", values(p.params), values(p.paper)) for p in PRESETS.values()]
    header = ("name", "pipeline", "fs", "parameters (default semantics)", "paper (--compat mit)")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[4])
    print()
    for preset in PRESETS.values():
        print(f"{preset.name}: {preset.note}")
    return 0


def _backends() -> int:
    from vidmag.backend.registry import list_backends

    entries = list_backends()
    header = ("backend", "status", "runs on", "written in", "needs")
    rows = [
        (b.name, "available" if b.unavailable_reason is None else "unavailable", b.runs_on, b.written_in,
         b.needs)
        for b in entries
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[4])
    unavailable = [b for b in entries if b.unavailable_reason is not None]
    if unavailable:
        print()
        for b in unavailable:
            print(f"{b.name}: {b.unavailable_reason}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from vidmag.demo import run_demo

    options = {key: getattr(args, key) for key in ("backend", "seconds") if key in args}
    result = run_demo(args.output, **options)
    print(result.report())
    return 0


def _one_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return " ".join(text.split())


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    # A warning is one line, like an error, and says it is one: no source line of vidmag's under it.
    print(f"vidmag: warning: {_one_line(message)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``vidmag`` command with `argv` (default: ``sys.argv[1:]``); return the exit status."""
    with warnings.catch_warnings():
        if not os.environ.get("VIDMAG_DEBUG"):
            warnings.showwarning = _show_warning
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    from vidmag.backend.registry import BackendUnavailableError
    from vidmag.io import VideoFormatError

    debug = bool(os.environ.get("VIDMAG_DEBUG"))
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        if args.command == "magnify":
            return _magnify(args)
        if args.command == "presets":
            return _presets()
        if args.command == "backends":
            return _backends()
        if args.command == "demo":
            return _demo(args)
        return next(c for c in discovered() if c.NAME == args.command).run(args)
    except UsageError as error:
        print(_one_line(error), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("vidmag: interrupted (no output file was left behind)", file=sys.stderr)
        return 130
    except (VideoFormatError, BackendUnavailableError, OSError) as error:
        if debug:
            traceback.print_exc()
        print(f"vidmag: error: {_one_line(error)}", file=sys.stderr)
        return 1
    except (TypeError, ValueError) as error:
        # Parameter checks of the library: a wrong or missing value on the command line.
        if debug:
            traceback.print_exc()
        print(f"vidmag: error: {_one_line(error)}", file=sys.stderr)
        return 2
    except Exception as error:  # anything else: still one line, the traceback on request
        if debug:
            traceback.print_exc()
        hint = "" if debug else " (VIDMAG_DEBUG=1 shows the traceback)"
        print(f"vidmag: error: {type(error).__name__}: {_one_line(error)}{hint}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
