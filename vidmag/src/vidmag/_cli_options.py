"""What every ``vidmag`` subcommand shares: the usage error, the parser class, the pipeline options.

Kept apart from :mod:`vidmag.cli` so that the subcommands of :mod:`vidmag.commands` can use them without
importing the command line itself (imports run one way: cli -> commands -> _cli_options).
"""

from __future__ import annotations

import argparse

from vidmag.params import PIPELINE_PARAMETERS


def _flag(text: str) -> bool:
    """A yes/no option value: yes, true, on, 1 or no, false, off, 0 (any case)."""
    value = text.strip().lower()
    if value in ("yes", "true", "on", "1"):
        return True
    if value in ("no", "false", "off", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected yes or no (true/false, on/off, 1/0), got {text!r}")


_flag.__name__ = "yes/no"  # argparse names the type in its error message

# Pipeline parameters: option name -> (keyword of magnify_file, type, help).
_PARAMETER_OPTIONS = (
    ("--alpha", "alpha", float, "amplification factor"),
    ("--level", "level", int, "Gaussian stack level (gaussian_ideal)"),
    ("--lambda-c", "lambda_c", float, "spatial cut-off wavelength in pixels (laplacian pipelines)"),
    ("--fl", "fl", float, "low end of the temporal pass band, Hz"),
    ("--fh", "fh", float, "high end of the temporal pass band, Hz"),
    ("--r1", "r1", float, "fast low-pass weight (laplacian_iir, riesz_iir)"),
    ("--r2", "r2", float, "slow low-pass weight (laplacian_iir, riesz_iir)"),
    ("--chrom-attenuation", "chrom_attenuation", float, "factor on the amplified chrominance (0 to 1)"),
    ("--sigma", "sigma", float, "amplitude-weighted smoothing of the phase in pixels, 0 for none (riesz_*, "
     "steerable_ideal)"),
    ("--orientations", "orientations", int, "orientations per scale (steerable_ideal: 4 octave, 8 "
     "half-octave)"),
    ("--bands-per-octave", "bands_per_octave", int, "1 (octave) or 2 (half-octave) (steerable_ideal)"),
    ("--attenuate-other-freq", "attenuate_other_freq", _flag,
     "yes: remove the motion outside the band (steerable_ideal)"),
)

#: Every pipeline name, from the one table of their parameters.
PIPELINE_NAMES = tuple(PIPELINE_PARAMETERS)


class UsageError(Exception):
    """A mistake in how the command was called (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one line and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: error: {message} (see {self.prog} --help)")



def add_pipeline_options(group: argparse._ArgumentGroup | argparse.ArgumentParser) -> None:
    """Add ``--preset``, ``--pipeline``, each pipeline parameter, ``--fs`` and ``--compat`` to `group`.

    Every option defaults to ``argparse.SUPPRESS``, so the namespace holds only what the user gave: the
    keywords of :func:`vidmag.files.magnify_file` (a preset's values are overridden one by one).
    """
    group.add_argument("--preset", metavar="NAME", default=argparse.SUPPRESS,
                       help="a preset from 'vidmag presets' (pipeline, fs and parameters)")
    group.add_argument("--pipeline", choices=PIPELINE_NAMES, default=argparse.SUPPRESS)
    for option, dest, kind, text in _PARAMETER_OPTIONS:
        group.add_argument(option, dest=dest, type=kind, metavar="X", default=argparse.SUPPRESS, help=text)
    group.add_argument("--fs", type=float, metavar="HZ", default=argparse.SUPPRESS,
                       help="capture rate in Hz for the temporal filters (default: the preset's, else the "
                       "container's frame rate; the output keeps the container's rate)")
    group.add_argument("--compat", choices=("mit",), default=argparse.SUPPRESS,
                       help="reproduce the MIT code's output, quirks included (takes the paper's literal "
                       "values)")


#: The keys of a parsed namespace that are pipeline options (what add_pipeline_options adds).
PIPELINE_OPTION_KEYS = ("preset", "pipeline", "fs", "compat", *(dest for _, dest, _, _ in _PARAMETER_OPTIONS))
