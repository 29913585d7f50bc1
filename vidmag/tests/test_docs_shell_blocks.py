"""The commands in the docs' shell blocks are ones the programs accept, and they run.

Every fence of README.md and docs/ is code that a test reads (```python: specux/tests/test_docs_examples.py
runs it; the shell labels: this file) or is labelled as what is not code (```text, ```json, ...: a
program's output, a file layout); a fence without a label, or a ``text`` block holding commands (a
transcript, which is ```console), fails with its page and line.

Every ```sh / ```bash / ```console / ```shell block of README.md and docs/ is read line by line (a trailing
backslash joins lines; in a block with ``$ `` prompts only the prompted lines are commands, the rest is what
they print). A line is split at ``&&``, ``||``, ``;`` and ``|``; redirections, ``VAR=value`` prefixes and a
``time`` / ``/usr/bin/time -v`` in front are dropped. Then:

- ``vidmag ...`` (also ``.venv/bin/vidmag`` and ``python -m vidmag``) is parsed by the command's own parser
  (:func:`vidmag.cli.build_parser`): an unknown option, a bad choice or value, a missing required argument
  fails with the page and line. A ``vidmag magnify`` line must also give complete, valid pipeline parameters
  (a preset, or a pipeline with all its parameters: what the command checks before it opens the file), with
  the capture rate taken as 30 Hz where neither ``--fs`` nor a preset gives one.
- Each distinct ``vidmag ...`` line is then run, as ``python -m vidmag`` in a directory of its own
  (``tmp/work``) that holds the clips the docs name: the sample clips by name (``face.mp4``, ``baby.mp4``,
  ...), ``clips/*.mp4`` (two of them), stand-ins for the names no sample clip has (:data:`STAND_INS`:
  ``in.mp4``, ``IN.mp4``, ``baby-60.mp4``), and ``tmp/shared`` linking to the shared folder so that the
  docs' ``../shared/data/clips/X`` resolves; a glob is expanded as the shell would, a ``/tmp/...`` path is
  moved into the run's directory. A run is made short, never different in kind (:func:`runnable`):
  ``magnify`` and ``magnify-many`` take ``--max-frames`` (the clips are full size), ``live`` a frame count
  and a free port for ``--serve``, ``evaluate`` its quick form; ``presets``, ``backends``, ``suggest`` and
  ``demo`` run as written. A run must exit 0 without a traceback, and every output it names (``-o``,
  ``--out``, ``--out-dir``, ``--plot``, ``--record``) must exist, non-empty, inside its directory. A source
  no test machine has (:data:`NO_HARDWARE`: a camera, the docs' private stream address) must fail instead,
  with status non-zero and one line of error, no traceback: what the user without one sees. A run that
  outlives :data:`TIMEOUT_S`, or leaves a process behind (a Dask worker), fails; nothing the commands write
  may appear in the checkout. Two runs go at a time (one process each, mostly on one core). Where a
  transcript shows what a command printed, and the command runs as written and prints the same on every run
  (:data:`PRINTS_THE_SAME`: ``suggest``), its output must be what the page shows; other transcripts show
  timings or a longer run than the test's, and only run.
- ``python scripts/...`` / ``python bench/...`` (any ``python``, ``python3``, ``.venv/bin/python``): the
  script exists, and its own argparse parser accepts the options. The parser is taken from the script in a
  subprocess, once per script: the script runs until its first ``parse_args`` call, which hands the parser
  over instead of parsing, so the script does no work; the docs' command lines are then parsed with it.
  Then each distinct line runs, made short by the script's own options (:data:`SCRIPT_RUNS`: ``--quick``,
  ``--repeat 1``, ``--frames 4``, ...; every script of the docs needs its row there), with the checkout's
  root replaced by a directory of its own as the working directory: every output the line names (or, where
  it names none and the script's default lies in the checkout, one the row gives) is written there and must
  be non-empty; placeholders of the docs (``AUDIO_DIR``, ``/path/to/clips``) stand for files made or found
  here. It must exit 0 without a traceback.
- ``make``, ``pip install -e``, ``python -m pytest``, ``bash SCRIPT`` and ``curl`` lines, and what follows a
  ``|``: checked as the section "the other programs" below says (``make -n``, the distribution and its
  extras, ``--collect-only``, ``bash -n``; curl runs as written against a live viewer); a line of any other
  program fails.

A block whose commands are not meant to be typed as they stand (a synopsis with placeholders) is marked on
the line before its fence, with the reason; a block that is checked but cannot be run on a test machine
(it needs a cluster or a device that no test machine has) is marked ``no-run``, with the reason::

    <!-- no-check: a synopsis: IN, OUT and ... are placeholders -->
    ```sh

    <!-- no-run: needs a Dask scheduler at tcp://10.0.0.5:8786 -->
    ```sh

A marker without a reason fails the test.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*$")
NO_CHECK = re.compile(r"^\s*<!--\s*no-check(?::\s*(?P<reason>.*?))?\s*-->\s*$")
NO_RUN = re.compile(r"^\s*<!--\s*no-run(?::\s*(?P<reason>.*?))?\s*-->\s*$")
SHELL = ("sh", "bash", "console", "shell")
OPERATORS = {"&&", "||", ";", "|", "&"}
REDIRECT = re.compile(r"(?<!\S)\d*(>>?|<)&?\s*\S+")
ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
PYTHON = re.compile(r"^(?:\S*/)?python(?:3(?:\.\d+)?)?$")
VIDMAG = re.compile(r"^(?:\S*/)?vidmag$")


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    argv: tuple[str, ...]
    no_run: str | None = None  # the reason of its block's no-run marker
    shown: tuple[str, ...] | None = None  # in a transcript (``$ `` prompts): what the page shows it printed

    def where(self) -> str:
        return f"{self.page}:{self.line}: {shlex.join(self.argv)}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def fences(text: str) -> list[tuple[int, str, list[tuple[int, str]]]]:
    """``(fence line, label, [(line, text)])`` of every fenced block of a Markdown text, lines numbered from
    1, each line of the body without the fence's indent (and without trailing blanks)."""
    lines = text.splitlines()
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, start = m["indent"], i
        body = []
        i += 1
        while i < len(lines) and not re.match(rf"^{re.escape(indent)}```\s*$", lines[i]):
            line = lines[i].removeprefix(indent) if lines[i].startswith(indent) else lines[i].lstrip()
            body.append((i + 1, line.rstrip()))
            i += 1
        i += 1
        found.append((start + 1, m["lang"], body))
    return found


def shell_blocks(text: str) -> list[tuple[int, list[tuple[int, str]], str | None, str | None]]:
    """``(fence line, [(line, text)], no_check_reason, no_run_reason)`` of each shell block (lines numbered
    from 1, each stripped). The markers are the comment lines right above the fence (both may be there); a
    reason is None without its marker, ``""`` for a marker that gives none."""
    lines = text.splitlines()
    blocks = []
    for fence, lang, raw in fences(text):
        if lang not in SHELL:
            continue
        start, body = fence - 1, [(number, line.strip()) for number, line in raw]
        reasons: dict[str, str] = {}
        above = start - 1
        while above >= 0 and (marker := NO_CHECK.match(lines[above]) or NO_RUN.match(lines[above])):
            reasons.setdefault("check" if marker.re is NO_CHECK else "run", (marker["reason"] or "").strip())
            above -= 1
        blocks.append((start + 1, body, reasons.get("check"), reasons.get("run")))
    return blocks


def command_lines(body: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The commands of a block: continuations joined, prompts honoured, output and comments left out."""
    prompted = any(text.startswith("$ ") for _, text in body)
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, text in body:
        if pending is not None:
            number, text = pending[0], pending[1] + " " + text
            pending = None
        elif prompted:
            if not text.startswith("$ "):
                continue  # what the command printed
            text = text[2:]
        if text.endswith("\\"):
            pending = (number, text[:-1].rstrip())
            continue
        if text and not text.startswith("#"):
            out.append((number, text))
    return out


def printed(body: list[tuple[int, str]]) -> dict[int, tuple[str, ...]]:
    """``{line of a command: the lines the page shows it printed}`` of a transcript (a block with ``$ ``
    prompts; ``{}`` for another): the lines after a prompted command (and its continuations) up to the next
    prompt, as the page shows them (`body` not stripped), trailing blank lines left out."""
    if not any(text.lstrip().startswith("$ ") for _, text in body):
        return {}
    shown: dict[int, list[str]] = {}
    current, continued = None, False
    for number, text in body:
        if text.lstrip().startswith("$ "):
            current, continued = number, text.endswith("\\")
            shown[current] = []
        elif continued:
            continued = text.endswith("\\")
        elif current is not None:
            shown[current].append(text)
    for lines in shown.values():
        while lines and not lines[-1].strip():
            lines.pop()
    return {number: tuple(lines) for number, lines in shown.items()}


def commands(page: str, number: int, text: str, no_run: str | None = None) -> list[Command]:
    """The simple commands of one line, as argv: split at the operators, the prefixes dropped."""
    lexer = shlex.shlex(REDIRECT.sub(" ", text), posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    found, argv = [], []
    for token in [*lexer, ";"]:
        if token not in OPERATORS:
            argv.append(token)
            continue
        while argv and ASSIGNMENT.match(argv[0]):
            argv.pop(0)  # VAR=value in front: the environment of the command
        if argv and argv[0] in ("time", "/usr/bin/time"):
            argv.pop(0)
            while argv and argv[0].startswith("-"):
                argv.pop(0)
        if argv:
            found.append(Command(page, number, tuple(argv), no_run))
        argv = []
    return found


def all_commands() -> tuple[list[Command], list[str]]:
    """Every command of every checked shell block, and the markers that give no reason."""
    found, bare = [], []
    for path in pages():
        page = str(path.relative_to(ROOT))
        text = path.read_text(encoding="utf-8")
        raw = {fence: body for fence, _, body in fences(text)}
        for fence, body, no_check, no_run in shell_blocks(text):
            bare.extend(f"{page}:{fence} ({kind})" for kind, reason in (("no-check", no_check),
                                                                       ("no-run", no_run)) if reason == "")
            if no_check is not None:
                continue
            shown = printed(raw[fence])
            for number, line in command_lines(body):
                found.extend(Command(c.page, c.line, c.argv, c.no_run, shown.get(number))
                             for c in commands(page, number, line, no_run))
    return found, bare


def vidmag_argv(c: Command) -> list[str] | None:
    """The arguments after ``vidmag`` of a vidmag command line, or None for another program."""
    argv = list(c.argv)
    if VIDMAG.match(argv[0]):
        return argv[1:]
    if PYTHON.match(argv[0]) and argv[1:3] == ["-m", "vidmag"]:
        return argv[3:]
    return None


def script_argv(c: Command) -> tuple[str, list[str]] | None:
    """``(script, its arguments)`` of a ``python scripts/...`` or ``python bench/...`` line, else None."""
    argv = list(c.argv)
    if len(argv) >= 2 and PYTHON.match(argv[0]) and re.match(r"^(\./)?(scripts|bench)/", argv[1]):
        return argv[1].removeprefix("./"), argv[2:]
    return None


COMMANDS, BARE_MARKERS = all_commands()
VIDMAG_LINES = [(c, argv) for c in COMMANDS if (argv := vidmag_argv(c)) is not None]
SCRIPT_LINES = [(c, *found) for c in COMMANDS if (found := script_argv(c)) is not None]


def test_parser_reads_blocks_prompts_continuations_and_operators():
    text = (
        "```sh\nvidmag presets   # a comment\nVAR=1 /usr/bin/time -v vidmag magnify a.mp4 \\\n"
        "    -o b.mp4 --preset face 2>&1 | grep x\n```\n"
        "<!-- no-check: a synopsis -->\n```bash\nvidmag magnify IN ...\n```\n"
        "<!-- no-run: needs a camera -->\n```console\n$ vidmag backends\nvidmag: cpu available\n```\n"
        "```python\nvidmag = 1\n```\n"
    )
    blocks = shell_blocks(text)
    assert [(fence, check, run) for fence, _, check, run in blocks] == [
        (1, None, None), (7, "a synopsis", None), (11, None, "needs a camera")]
    lines = command_lines(blocks[0][1])
    assert lines == [(2, "vidmag presets   # a comment"),
                     (3, "VAR=1 /usr/bin/time -v vidmag magnify a.mp4 -o b.mp4 --preset face 2>&1 | grep x")]
    found = [cmd for number, line in lines for cmd in commands("p.md", number, line)]
    assert [c.argv for c in found] == [("vidmag", "presets"),
                                       ("vidmag", "magnify", "a.mp4", "-o", "b.mp4", "--preset", "face"),
                                       ("grep", "x")]
    assert command_lines(blocks[2][1]) == [(12, "vidmag backends")]
    both = "<!-- no-run: x -->\n<!-- no-check -->\n```sh\nvidmag presets\n```\n"
    assert [(check, run) for _, _, check, run in shell_blocks(both)] == [("", "x")]


def test_found_the_commands():
    # a collector that silently found nothing would make the checks below vacuous
    assert len(VIDMAG_LINES) >= 30 and len(SCRIPT_LINES) >= 10
    assert len(RUNS) >= 30 and not any(c.no_run for places, _ in RUNS for c in places)


def test_no_check_and_no_run_markers_say_why():
    assert not BARE_MARKERS, f"<!-- no-check --> / <!-- no-run --> markers without a reason: {BARE_MARKERS}"


def _parse_vidmag(argv: list[str]):
    from vidmag.cli import UsageError, build_parser

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            return build_parser().parse_args(argv), None
    except UsageError as error:
        return None, str(error)
    except SystemExit as exit_:  # --help, --version: printed and exited
        return None, None if exit_.code in (0, None) else err.getvalue().strip() or f"exit {exit_.code}"


def test_vidmag_checks_catch_stale_lines():
    # what the checks exist for: an unknown option, a bad choice, a missing -o, and the README's old line
    # that left out chrom_attenuation (exit 2 when run)
    for argv in (["magnify", "a.mp4", "-o", "b.mp4", "--presset", "face"],
                 ["magnify", "a.mp4", "-o", "b.mp4", "--pipeline", "laplacian_fir"],
                 ["magnify", "a.mp4", "--preset", "face"]):
        assert _parse_vidmag(argv)[1], argv
    args, error = _parse_vidmag(["magnify", "in.mp4", "-o", "out.mp4", "--pipeline", "laplacian_iir",
                                 "--alpha", "10", "--lambda-c", "16", "--r1", "0.4", "--r2", "0.05"])
    assert error is None and "chrom_attenuation" in _magnify_error(args)
    assert "give --preset" in _magnify_error(_parse_vidmag(["magnify", "a.mp4", "-o", "b.mp4"])[0])
    args, _ = _parse_vidmag(["magnify", "a.mp4", "-o", "b.mp4", "--preset", "baby", "--alpha", "20"])
    assert _magnify_error(args) is None


def test_vidmag_lines_parse():
    failures = []
    for c, argv in VIDMAG_LINES:
        _, error = _parse_vidmag(argv)
        if error:
            failures.append(f"{c.where()}\n    {error}")
    assert not failures, "vidmag command lines in the docs that the command refuses:\n" + "\n".join(failures)


def _magnify_error(args) -> str | None:
    from vidmag._cli_options import PIPELINE_OPTION_KEYS
    from vidmag.params import check_parameters
    from vidmag.presets import preset_params

    # the pipeline options by the commands' own list (a new file option, like --max-frames, is not one)
    options = {k: v for k, v in vars(args).items() if k in PIPELINE_OPTION_KEYS}
    preset, pipeline = options.pop("preset", None), options.pop("pipeline", None)
    fs, compat = options.pop("fs", None), options.pop("compat", None)
    try:
        if preset is not None:
            preset_pipeline, preset_fs, params = preset_params(preset, compat)
            if pipeline not in (None, preset_pipeline):
                return f"--preset {preset} uses {preset_pipeline}, not --pipeline {pipeline}"
            pipeline, params = preset_pipeline, {**params, **options}
            fs = preset_fs if fs is None else fs
        elif pipeline is None:
            return "give --preset NAME or --pipeline NAME"
        else:
            params = options
        check_parameters(pipeline, 30.0 if fs is None else fs, compat, params)
    except (TypeError, ValueError) as error:
        return str(error)
    return None


def test_vidmag_magnify_lines_give_valid_parameters():
    failures = []
    for c, argv in VIDMAG_LINES:
        if not argv or argv[0] != "magnify" or "--help" in argv or "-h" in argv:
            continue
        args, error = _parse_vidmag(argv)
        error = error or (args is not None and _magnify_error(args))
        if error:
            failures.append(f"{c.where()}\n    {error}")
    assert not failures, "vidmag magnify lines in the docs with missing or bad parameters:\n" + "\n".join(
        failures)


#: Run in a subprocess with the script and a JSON list of argument lists: runs the script up to its first
#: parse_args / parse_known_args, takes the parser, parses each list with it, prints a JSON list of errors.
DRIVER = r"""
import argparse, contextlib, io, json, os, runpy, sys
script, argvs = sys.argv[1], json.loads(sys.argv[2])
class Handed(BaseException):
    pass
grabbed = []
original = argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args
def hand_over(self, args=None, namespace=None):
    grabbed.append(self)
    raise Handed
argparse.ArgumentParser.parse_args = argparse.ArgumentParser.parse_known_args = hand_over
sys.argv = [script]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
try:
    runpy.run_path(script, run_name="__main__")
except Handed:
    pass
except SystemExit:
    pass
argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args = original
if not grabbed:
    print(json.dumps({"error": "no argparse parser: the script did not call parse_args"}))
    sys.exit(0)
errors = []
for argv in argvs:
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            grabbed[0].parse_args(argv)
        errors.append(None)
    except SystemExit as exit_:
        errors.append(None if exit_.code in (0, None) else err.getvalue().strip().splitlines()[-1])
print(json.dumps({"errors": errors}))
"""


def _script_errors(script: str | Path, argvs: list[list[str]]) -> list[str | None]:
    """What the script's own parser says of each argument list (None: accepted), through DRIVER."""
    done = subprocess.run([sys.executable, "-c", DRIVER, str(script), json.dumps(argvs)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{script}: the parser could not be taken:\n{done.stderr[-3000:]}"
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" not in result, f"{script}: {result.get('error')}"
    return result["errors"]


def test_script_check_refuses_bad_options_without_running_the_script(tmp_path):
    script = tmp_path / "tool.py"
    ran = tmp_path / "ran"
    script.write_text(
        "import argparse, pathlib\n"
        "def main():\n"
        "    ap = argparse.ArgumentParser()\n"
        "    ap.add_argument('--mode', choices=('a', 'b'))\n"
        "    ap.add_argument('--n', type=int)\n"
        "    ap.parse_args()\n"
        f"    pathlib.Path({str(ran)!r}).write_text('work done')\n"
        "main()\n"
    )
    errors = _script_errors(script, [["--mode", "a", "--n", "3"], ["--mode", "c"], ["--stale"], ["--n", "x"],
                                     ["--help"]])
    assert errors[0] is None and errors[4] is None
    assert "invalid choice" in errors[1] and "--stale" in errors[2] and "invalid int" in errors[3]
    assert not ran.exists()  # the script stopped at its parser: no work was done


SCRIPTS = sorted({script for _, script, _ in SCRIPT_LINES})


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_lines_exist_and_parse(script):
    lines = [(c, argv) for c, s, argv in SCRIPT_LINES if s == script]
    path = ROOT / script
    assert path.is_file(), f"{lines[0][0].where()}\n    {script} does not exist"
    if path.suffix != ".py":
        return
    source = path.read_text(encoding="utf-8")
    if "argparse" not in source:  # no parser to ask: the docs may pass it nothing
        offered = [c.where() for c, argv in lines if argv]
        assert not offered, f"{script} takes no options, yet the docs pass some:\n" + "\n".join(offered)
        return
    errors = _script_errors(script, [argv for _, argv in lines])
    failures = [f"{c.where()}\n    {error}" for (c, _), error in zip(lines, errors) if error]
    assert not failures, f"{script} refuses these command lines of the docs:\n" + "\n".join(failures)


# -- running the vidmag commands ---------------------------------------------------------------------------

#: The sample clips (shared/data/clips beside the checkout: never committed).
CLIPS = ROOT.parent / "shared" / "data" / "clips"
#: Clip names of the docs that are no sample clip's name, and the sample clip that stands in for each.
STAND_INS = {"in.mp4": "face.mp4", "IN.mp4": "baby.mp4", "baby-60.mp4": "baby.mp4"}
#: Frames of a ``vidmag magnify`` / ``magnify-many`` run (appended as ``--max-frames``). The docs' clips are
#: full size (up to 960 x 544) and cannot be made smaller, so the frame count is what keeps a run short; every
#: pipeline takes 1 frame and up, and beyond a few frames each costs more than the command's start-up (the
#: steerable pyramid on baby.mp4: about 1 s a frame here).
MAGNIFY_FRAMES = 4
#: Frames of a ``vidmag live`` run that gives no ``--frames`` (one second of the synthetic scene).
LIVE_FRAMES = 30
#: Frames of a clip that ``vidmag evaluate CLIP`` reads (its flicker needs 2; a few more than that).
EVALUATE_FRAMES = 12
#: Pipelines of a run of the synthetic protocol that is not already ``--quick``: one linear, one phase-based.
EVALUATE_PIPELINES = "laplacian_iir,riesz_iir"
#: Seconds a command may take before it counts as hung (the slowest, evaluate --quick, about 30 here).
TIMEOUT_S = 180
#: Seconds a command's helper processes get to end after it did (multiprocessing's resource tracker, which a
#: Dask LocalCluster starts, exits about a second after its parent).
STRAY_GRACE_S = 15
#: Commands run at once: each is one process, mostly on one core, so two cores run two (half the wall time).
RUNS_AT_ONCE = max(1, min(2, os.cpu_count() or 1))
#: Options naming what a command writes: each must exist and be non-empty after the run.
OUTPUT_OPTIONS = ("-o", "--output", "--out", "--out-dir", "--plot", "--record")
#: Sources that need what a test machine has not: their commands must fail cleanly (a non-zero exit, one line
#: on stderr, no traceback), which is what a user without the camera or the stream sees.
NO_HARDWARE = {
    "camera:": "no camera on a test machine (/dev/video0 does not exist)",
    "rtsp://": "the docs' stream is a camera on a private network (192.168.1.20): out of a test's reach",
}
GLOB = re.compile(r"[*?\[]")
#: Commands whose output is the same on every run of the same line (no timing, no machine in it): where a
#: transcript shows what one of them printed and it runs as written, its standard output must be that.
PRINTS_THE_SAME = ("suggest",)


def needs_hardware(argv: list[str]) -> str | None:
    """Why the vidmag command `argv` cannot run here (the reason from :data:`NO_HARDWARE`), or None."""
    if argv and argv[0] == "live" and len(argv) > 1:
        return next((why for start, why in NO_HARDWARE.items() if argv[1].startswith(start)), None)
    return None


def runnable(argv: list[str]) -> list[str]:
    """The arguments a docs line runs with here: made short, never made different in kind.

    - ``magnify`` and ``magnify-many``: ``--max-frames`` (:data:`MAGNIFY_FRAMES`), ``--encoder-preset
      ultrafast`` for ``magnify``; ``magnify-many`` on ``--workers 1`` (two cores here: more workers only
      add start-up time).
    - ``live``: ``--frames`` (:data:`LIVE_FRAMES`) unless the line bounds the run itself; ``--serve``'s port
      becomes 0 (a free one), so that two runs at once, or a server already on 8000, cannot fail the line.
    - ``evaluate CLIP``: ``--max-frames`` (:data:`EVALUATE_FRAMES`). The synthetic protocol as written when
      it is ``--quick`` (seconds); any other run of it (the docs' full table: 20 minutes) gets ``--quick`` and
      ``--pipelines`` (:data:`EVALUATE_PIPELINES`) unless it names its pipelines, its own ``--size`` and
      ``--frames`` kept.
    - anything else (``presets``, ``backends``, ``suggest``, ``demo``) as written.

    An option appended after the line's own replaces its value (argparse keeps the last).
    """
    argv = list(argv)
    command = argv[0] if argv else None
    if command == "magnify" and "--help" not in argv and "-h" not in argv:
        argv += ["--max-frames", str(MAGNIFY_FRAMES), "--encoder-preset", "ultrafast"]
    elif command == "magnify-many":
        argv += ["--max-frames", str(MAGNIFY_FRAMES), "--workers", "1"]
    elif command == "live":
        if "--frames" not in argv and "--seconds" not in argv:
            argv += ["--frames", str(LIVE_FRAMES)]
        if "--serve" in argv:
            at = argv.index("--serve") + 1
            host = argv[at].rpartition(":")[0] if ":" in argv[at] else "127.0.0.1"
            argv[at] = f"{host}:0"
    elif command == "evaluate" and len(argv) > 1 and not argv[1].startswith("-"):
        argv += ["--max-frames", str(EVALUATE_FRAMES)]
    elif command == "evaluate" and "--quick" not in argv and "--help" not in argv and "-h" not in argv:
        argv += ["--quick"] + ([] if "--pipelines" in argv else ["--pipelines", EVALUATE_PIPELINES])
    return argv


def _in_place(argv: list[str], tmp: Path) -> list[str]:
    """`argv` as a shell in the run's directory passes it (globs expanded), ``/tmp/...`` moved into `tmp`."""
    import glob

    out = []
    for arg in argv:
        if arg.startswith("/tmp/"):  # a scratch path of the docs: the run's own scratch directory instead
            (tmp / "tmp").mkdir(exist_ok=True)
            arg = str(tmp / "tmp" / arg.removeprefix("/tmp/"))
        matches = sorted(glob.glob(arg, root_dir=tmp / "work")) if GLOB.search(arg) else []
        out.extend(matches or [arg])  # no match: the word itself, as sh passes it
    return out


def outputs(argv: list[str]) -> list[str]:
    """What the command line says it writes: the values of :data:`OUTPUT_OPTIONS` (``-o X``, ``--out=X``)."""
    found = []
    for i, arg in enumerate(argv):
        name, equals, value = arg.partition("=")
        if equals and name in OUTPUT_OPTIONS:
            found.append(value)
        elif arg in OUTPUT_OPTIONS and i + 1 < len(argv):
            found.append(argv[i + 1])
    if argv and argv[0] == "demo" and not any(o in argv for o in ("-o", "--output")):
        found.append("demo-output")  # the default directory the page names
    return found


def run_directory(tmp: Path) -> Path:
    """``tmp/work``, the cwd of a run, holding the clips the docs name; ``tmp/shared`` links to the shared
    folder, so the docs' ``../shared/data/clips/X`` paths (written from the checkout's root) resolve too."""
    assert CLIPS.is_dir(), f"the sample clips are not in {CLIPS} (the shared folder beside the checkout)"
    work = tmp / "work"
    (work / "clips").mkdir(parents=True)
    (tmp / "shared").symlink_to(ROOT.parent / "shared", target_is_directory=True)
    for clip in sorted(CLIPS.glob("*.mp4")):
        (work / clip.name).symlink_to(clip)
    for name, clip in STAND_INS.items():
        (work / name).symlink_to(CLIPS / clip)
    for name in ("face.mp4", "guitar.mp4"):  # clips/*.mp4 of magnify-many: two clips, two tasks
        (work / "clips" / name).symlink_to(CLIPS / name)
    return work


def _session_processes(sid: int) -> list[int]:
    """Processes still in session `sid` (a command's workers that outlived it)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[3]) == sid:  # after the state: ppid, pgrp, session
            found.append(int(stat.parent.name))
    return found


def run_vidmag(argv: list[str], tmp: Path) -> subprocess.CompletedProcess:
    """``python -m vidmag ARGV`` in ``tmp/work`` (see :func:`run_alone`)."""
    return run_alone([sys.executable, "-m", "vidmag", *argv], tmp / "work")


def run_alone(command: list[str], cwd: Path, timeout_s: float = TIMEOUT_S,
              grace_s: float = STRAY_GRACE_S) -> subprocess.CompletedProcess:
    """`command` in a session of its own: on a timeout, and for any process it leaves behind (a Dask worker)
    once `grace_s` have passed, the whole session is killed, and the test fails."""
    import signal

    env = {k: v for k, v in os.environ.items() if k != "VIDMAG_DEBUG"}  # the user's view: no tracebacks
    process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"{shlex.join(command)}: still running after {timeout_s} s\n{err[-3000:]}")
    deadline = time.monotonic() + grace_s
    while (stray := _session_processes(process.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    if stray:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        pytest.fail(f"{shlex.join(command)}: left processes running: {stray}")
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def _status() -> set[str]:
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--ignored"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    return set(done.stdout.splitlines()) if done.returncode == 0 else set()


def _distinct_runs() -> list[tuple[list[Command], list[str]]]:
    """Each distinct command line to run, with every docs line that shows it (a line repeated on several
    pages runs once)."""
    runs: dict[tuple[str, ...], list[Command]] = {}
    for c, argv in VIDMAG_LINES:
        if c.no_run is None:
            runs.setdefault(tuple(argv), []).append(c)
    return [(places, list(argv)) for argv, places in runs.items()]


RUNS = _distinct_runs()
#: Names the commands write (their outputs' last parts), to find in the checkout should any land there.
WRITTEN = {Path(path).name for _, argv in RUNS for path in outputs(argv)}


@pytest.fixture(scope="module")
def checkout_untouched():
    """Nothing the commands write appears in the checkout. Other work may change it meanwhile, so only
    entries of git status that are new and carry one of the commands' output names count."""
    before = _status()
    yield
    new = [entry for entry in _status() - before
           if set(Path(entry[3:].strip('"').rstrip("/")).parts) & WRITTEN]
    assert not new, f"the docs' commands wrote into the checkout: {new}"


def test_runner_prepares_the_docs_clips_and_shortens_the_runs(tmp_path):
    work = run_directory(tmp_path)
    for name in ("face.mp4", "baby.mp4", "in.mp4", "IN.mp4", "baby-60.mp4", "clips/face.mp4",
                 "../shared/data/clips/wrist.mp4"):
        assert (work / name).is_file(), name
    assert _in_place(["clips/*.mp4", "/tmp/demo", "none*.mp4"], tmp_path) == [
        "clips/face.mp4", "clips/guitar.mp4", str(tmp_path / "tmp" / "demo"), "none*.mp4"]
    assert runnable(["magnify", "a.mp4", "-o", "b.mp4", "--preset", "face"])[-4:] == [
        "--max-frames", str(MAGNIFY_FRAMES), "--encoder-preset", "ultrafast"]
    assert runnable(["live", "synthetic", "--preset", "face", "--serve", "8000"]) == [
        "live", "synthetic", "--preset", "face", "--serve", "127.0.0.1:0", "--frames", str(LIVE_FRAMES)]
    assert runnable(["live", "x.mp4", "--serve", "0.0.0.0:80", "--frames", "5"])[-3:] == [
        "0.0.0.0:0", "--frames", "5"]
    assert runnable(["evaluate", "--quick"]) == ["evaluate", "--quick"]
    assert runnable(["evaluate", "--size", "64", "--out", "e"])[-3:] == ["--quick", "--pipelines",
                                                                          EVALUATE_PIPELINES]
    assert runnable(["evaluate", "a.mp4", "--preset", "baby"])[-2:] == ["--max-frames", str(EVALUATE_FRAMES)]
    assert outputs(["suggest", "a.mp4", "--plot=p.png", "--record", "r.mp4", "-o", "x"]) == ["p.png", "r.mp4",
                                                                                             "x"]
    assert needs_hardware(["live", "camera:0", "--preset", "face"]) and not needs_hardware(["live", "a.mp4"])


def test_runner_reports_a_failing_line_a_hung_one_and_strays(tmp_path):
    run_directory(tmp_path)
    done = run_vidmag(runnable(["magnify", "nothing.mp4", "-o", "out.mp4", "--preset", "face"]), tmp_path)
    assert done.returncode == 1 and "nothing.mp4" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "work" / "out.mp4").exists()
    python = [sys.executable, "-c"]
    with pytest.raises(pytest.fail.Exception, match="still running after"):
        run_alone([*python, "import time; time.sleep(60)"], tmp_path, timeout_s=0.5)
    # a child that let go of the pipes (one that holds them keeps the run going: the timeout's case)
    leaves = ("import subprocess as s, sys; s.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], "
              "stdout=s.DEVNULL, stderr=s.DEVNULL)")
    with pytest.raises(pytest.fail.Exception, match="left processes running"):
        run_alone([*python, leaves], tmp_path, grace_s=0.5)


def _run_in(argv: list[str], tmp: Path) -> tuple[list[str], subprocess.CompletedProcess]:
    run_directory(tmp)
    args = _in_place(runnable(argv), tmp)
    return args, run_vidmag(args, tmp)


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory, checkout_untouched):
    """``{argv: (tmp, future of (args, process))}`` of the selected docs lines, :data:`RUNS_AT_ONCE` running
    at a time in the order the tests take them: a test waits for its own run, the next one already going."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=RUNS_AT_ONCE)
    started: dict[tuple[str, ...], tuple[Path, object]] = {}
    for item in request.session.items:
        if getattr(item, "function", None) is test_vidmag_lines_run and hasattr(item, "callspec"):
            key = tuple(item.callspec.params["argv"])
            if key not in started:
                tmp = tmp_path_factory.mktemp("docs-run")
                started[key] = (tmp, pool.submit(_run_in, list(key), tmp))
    yield started
    pool.shutdown(cancel_futures=True)  # the runs under way end (each within TIMEOUT_S), no new ones start


@pytest.mark.parametrize(("places", "argv"), RUNS, ids=[f"{p[0].page}:{p[0].line}" for p, _ in RUNS])
def test_vidmag_lines_run(places, argv, runs):
    tmp_path, future = runs[tuple(argv)]
    args, done = future.result()
    shown = "\n".join(c.where() for c in places) + f"\n    ran as: vidmag {shlex.join(args)}"
    assert "Traceback" not in done.stderr, f"{shown}\n{done.stderr[-3000:]}"
    why = needs_hardware(argv)
    if why is not None:
        # cannot run here: it must say so cleanly
        lines = done.stderr.strip().splitlines()
        assert done.returncode != 0 and len(lines) == 1 and "error" in lines[0], \
            f"{shown}\n    ({why}) expected one line of error, got status {done.returncode}:\n{done.stderr}"
        return
    assert done.returncode == 0, f"{shown}\n    exit {done.returncode}:\n{done.stderr[-3000:]}"
    if argv[0] in PRINTS_THE_SAME and runnable(argv) == argv:  # run as the page shows it: compared
        got = tuple(line.rstrip() for line in done.stdout.rstrip().splitlines())
        for c in places:
            assert c.shown is None or got == c.shown, (
                f"{c.where()}\n    prints something else than the page shows:\n" + "\n".join(got))
    for path in _in_place(outputs(argv), tmp_path):
        target = tmp_path / "work" / path
        assert target.resolve().is_relative_to(tmp_path.resolve()), f"{shown}\n    {path} is outside the run"
        assert target.exists(), f"{shown}\n    wrote no {path}"
        empty = not any(target.iterdir()) if target.is_dir() else target.stat().st_size == 0
        assert not empty, f"{shown}\n    {path} is empty"


# -- every fence is read by a test, or holds no code ------------------------------------------------------

#: Fence labels whose blocks are code, and the test that reads them: ```python by
#: specux/tests/test_docs_examples.py (each block runs), the shell ones by this file.
CODE_LABELS = {"python": "specux/tests/test_docs_examples.py", "py": "specux/tests/test_docs_examples.py",
               **{label: "vidmag/tests/test_docs_shell_blocks.py" for label in SHELL}}
#: Labels of blocks that hold no code, which no test reads: what a program printed, a file layout, data.
NOT_CODE = ("text", "json", "toml", "yaml")


def _typed_command(line: str) -> bool:
    """Whether a line of a ``text`` block is a command one would type: a ``$ `` prompt, or ``vidmag`` and a
    subcommand (``vidmag: error: ...`` and ``vidmag magnify: error: ...`` are what it prints)."""
    from vidmag.cli import build_parser

    if line.lstrip().startswith("$ "):
        return True
    words = line.split()
    if len(words) < 2 or not VIDMAG.match(words[0]):
        return False
    subcommands = next(a.choices for a in build_parser()._actions if getattr(a, "choices", None))
    return words[1] in subcommands


def fence_problems(page: str, text: str) -> list[str]:
    """``page:line: why`` for each fence of a page that no test reads although it may hold code: one without
    a label, one with a label of neither kind, a ``text`` block holding commands (a transcript: ``console``,
    whose prompted commands this file runs)."""
    problems = []
    for fence, label, body in fences(text):
        if not label:
            problems.append(f"{page}:{fence}: a fence without a language (python, sh or console for code, "
                            f"text for what is not)")
        elif label not in CODE_LABELS and label not in NOT_CODE:
            problems.append(f"{page}:{fence}: ```{label}: no test reads it (code: {', '.join(CODE_LABELS)}; "
                            f"no code: {', '.join(NOT_CODE)})")
        elif label == "text" and (typed := [n for n, line in body if _typed_command(line)]):
            problems.append(f"{page}:{fence}: a text block with commands (line {typed[0]}): a transcript is "
                            f"```console, whose $ lines are run")
    return problems


def test_fence_check_finds_unlabelled_and_unread_blocks():
    text = ("```\nls\n```\n```text\n301 frames -> out.mp4\nvidmag: error: x\nvidmag magnify: error: y\n```\n"
            "```text\n$ vidmag presets\n```\n```text\nvidmag backends\n```\n```ruby\nputs 1\n```\n"
            "  ```python\n  x = 1\n  ```\n```console\n$ vidmag backends\n```\n")
    assert fence_problems("p.md", text) == [
        "p.md:1: a fence without a language (python, sh or console for code, text for what is not)",
        "p.md:9: a text block with commands (line 10): a transcript is ```console, whose $ lines are run",
        "p.md:12: a text block with commands (line 13): a transcript is ```console, whose $ lines are run",
        "p.md:15: ```ruby: no test reads it (code: python, py, sh, bash, console, shell; "
        "no code: text, json, toml, yaml)"]


def test_every_fence_is_code_a_test_reads_or_not_code():
    problems = [problem for path in pages()
                for problem in fence_problems(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))]
    assert not problems, "fences of the docs that no test reads:\n" + "\n".join(problems)


def test_transcripts_keep_what_each_command_printed():
    body = [(1, "$ vidmag suggest a.mp4 \\"), (2, "    --kind colour"), (3, "a.mp4: colour"), (4, "  0.9 Hz"),
            (5, ""), (6, "$ vidmag presets"), (7, "")]
    assert printed(body) == {1: ("a.mp4: colour", "  0.9 Hz"), 6: ()}
    assert printed([(1, "vidmag presets")]) == {}
    c = next(c for c in COMMANDS if c.page == "docs/vidmag/evaluate.md" and c.argv[1:2] == ("suggest",))
    assert c.shown and c.shown[0].startswith("face.mp4: colour spectrum") and c.shown[-1].startswith("wrote")


# -- running the scripts -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Short:
    """How the docs lines of one script run here: made short, and writing only into the run's directory."""

    append: tuple[str, ...] = ()  #: options appended; the line's own of the same names (and values) go
    drop: tuple[str, ...] = ()  #: flags of the line left out too (one that an appended option excludes)
    out: str | None = None  #: ``--out`` given where the line gives none (the script's default: the checkout)
    dirs: tuple[str, ...] = ()  #: options naming a directory that must exist (in the checkout it does)
    root: bool = False  #: ``--root``: a copy of the docs pages and bench/results to work on


#: Every script the docs show, and how its lines run (seconds: one run here, on the 2-core machine, busy).
#: A line that cannot run here even so is marked no-run on its page; a script missing here fails the test.
SCRIPT_RUNS = {
    # 11 s: two operations on the quick batch, one call each (the full run is minutes)
    "bench/specux_cpu.py": Short(("--quick", "--repeat", "1", "--warmup", "0", "--rounds", "1", "--data",
                                  "batch", "--ops", "stft,melspectrogram"), out="specux_cpu.json"),
    # 37 s: every case, one call each (the script's inputs have no smaller size)
    "bench/specux_torch.py": Short(("--repeat", "1", "--overhead-repeat", "1"), out="specux_torch.json"),
    # 28 s on every backend here (cpu, opencl on PoCL), 9 s on cpu
    "bench/specux_fft.py": Short(("--quick", "--repeat", "1")),
    # 12 s: --smoke (tiny workloads, one call) instead of --quick (a minute or two on PoCL)
    "bench/specux_gpu.py": Short(("--smoke",), drop=("--quick",), out="specux_gpu.json"),
    # 15 s: 4 files of 2 s, 1 and 2 workers (more than 2 workers on 2 cores only wait for each other)
    "bench/specux_dask.py": Short(("--quick", "--workers", "1", "2")),
    # 18 s: AUDIO_DIR holds two WAV files of 2 s (:data:`PLACEHOLDERS`), a local cluster as the line asks
    "bench/featurise_to_zarr.py": Short(),
    # 22 s: the first 4 frames of face.mp4, every pipeline and mode asked for
    "bench/vidmag_reference.py": Short(("--frames", "4", "--clips", "face"), out="vidmag_reference.json"),
    # 6 s: the smoke run at 320x240
    "bench/vidmag_live.py": Short(("--quick", "--sizes", "320x240", "--warmup", "1"), out="vidmag_live.json"),
    # 15 to 30 s: 4 frames of baby.mp4, a 2 s synthesised clip of 320x240, the cpu backend (PoCL's compiles
    # double it)
    "bench/vidmag_memory.py": Short(("--quick", "--frames", "4", "--size", "320x240", "--backend", "cpu",
                                     "--timeout", "60"), out="vidmag_memory.json"),
    # 3 to 4 s: --quick (one clip, one preset, 24 frames of a crop)
    "scripts/dev/gallery.py": Short(("--quick",), out="gallery", dirs=("--stills",)),
    # 2 s: the first 16 frames
    "scripts/dev/phase_pictures.py": Short(("--frames", "16"), out="img", dirs=("--out",)),
    # 3 s: on a copy of the pages and the results, so that the rewrite (no --check) writes into the copy
    "scripts/dev/bench_tables.py": Short(root=True),
}
#: Words of the docs' script lines that stand for the reader's own: what each becomes here.
PLACEHOLDERS = {"/path/to/clips": str(CLIPS), "AUDIO_DIR": "AUDIO_DIR"}  # AUDIO_DIR: made by the run
#: Options naming what a script writes: each must exist and be non-empty after the run.
SCRIPT_OUTPUTS = ("--out", "--json", "--stills", "--root")


def script_runnable(script: str, argv: list[str]) -> list[str]:
    """The arguments a docs line of `script` runs with here (see :data:`SCRIPT_RUNS`)."""
    short = SCRIPT_RUNS[script]
    replaced = {arg for arg in short.append if arg.startswith("--")}
    kept, skipping = [], False
    for arg in argv:
        if arg.startswith("-"):
            skipping = arg.split("=")[0] in replaced
            if skipping or arg in short.drop:
                continue
        elif skipping:  # a value of a replaced option
            continue
        kept.append(PLACEHOLDERS.get(arg, arg))
    argv = kept
    if short.out is not None and not any(arg.split("=")[0] in ("--out", "--json") for arg in argv):
        argv += ["--out", short.out]
    if short.root:
        argv += ["--root", "root"]
    return argv + list(short.append)


def script_outputs(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg in SCRIPT_OUTPUTS]


def _distinct_script_runs() -> list[tuple[list[Command], str, list[str]]]:
    """Each distinct run, with the docs lines it stands for: lines that differ only in where they write run
    once (with the arguments of the one that names the most outputs)."""
    runs: dict[tuple[str, ...], tuple[list[Command], list[str]]] = {}
    for c, script, argv in SCRIPT_LINES:
        if c.no_run is None and script in SCRIPT_RUNS:
            args = script_runnable(script, argv)
            key = (script, *(a for i, a in enumerate(args) if a != "--out" and args[i - 1:i] != ["--out"]))
            places, chosen = runs.setdefault(key, ([], args))
            places.append(c)
            if len(script_outputs(args)) > len(script_outputs(chosen)):
                runs[key] = (places, args)
    return [(places, key[0], args) for key, (places, args) in runs.items()]


SCRIPT_RUN_LIST = _distinct_script_runs()
# (bench/results/ is left out of the names to look for: benchmarks running beside the tests write there; the
# runs' outputs are checked to lie in their own directories instead)
WRITTEN |= {Path(path).name for _, _, argv in SCRIPT_RUN_LIST for path in script_outputs(argv)} - {
    path.name for path in (ROOT / "bench" / "results").glob("*")}


def test_every_script_line_runs_or_says_why_not():
    missing = [c.where() for c, script, _ in SCRIPT_LINES if c.no_run is None and script not in SCRIPT_RUNS]
    assert not missing, "script lines that neither run (SCRIPT_RUNS) nor are marked no-run:\n" + "\n".join(
        missing)
    assert len(SCRIPT_RUN_LIST) >= 15


def test_script_runs_are_short_and_write_only_into_their_directory():
    assert script_runnable("bench/specux_gpu.py", ["--backend", "opencl", "--quick"]) == [
        "--backend", "opencl", "--out", "specux_gpu.json", "--smoke"]
    assert script_runnable("bench/vidmag_reference.py", ["--frames", "60", "--clips", "face", "baby",
                                                         "--backend", "cpu"]) == [
        "--backend", "cpu", "--out", "vidmag_reference.json", "--frames", "4", "--clips", "face"]
    assert script_runnable("bench/specux_dask.py", ["--out", "bench/results/x.json"])[:2] == [
        "--out", "bench/results/x.json"]
    assert script_runnable("scripts/dev/phase_pictures.py", ["--clips", "/path/to/clips"])[:2] == [
        "--clips", str(CLIPS)]
    for places, _, argv in SCRIPT_RUN_LIST:
        for path in script_outputs(argv) + [a for a in argv if a.endswith((".json", ".zarr", ".png"))]:
            assert not Path(path).is_absolute() and ".." not in Path(path).parts, \
                f"{places[0].where()}\n    writes {path}, outside its run's directory"


def script_directory(tmp: Path, argv: list[str], dirs: tuple[str, ...]) -> Path:
    """``tmp/work``, the cwd of a script's run, as the checkout's root is for the docs' lines: bench/results
    exists, so do the directories `dirs` name, a copy of the pages and results under ``root`` for
    ``--root``, two WAV files in ``AUDIO_DIR`` where the line names it."""
    import shutil

    work = tmp / "work"
    (work / "bench" / "results").mkdir(parents=True)
    for i, arg in enumerate(argv[:-1]):
        if arg in dirs:
            (work / argv[i + 1]).mkdir(parents=True, exist_ok=True)
    if "--root" in argv:
        root = work / "root"
        shutil.copytree(ROOT / "bench" / "results", root / "bench" / "results")
        for page in pages():
            (root / page.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(page, root / page.relative_to(ROOT))
    if "AUDIO_DIR" in argv:
        import numpy as np
        from scipy.io import wavfile

        (work / "AUDIO_DIR").mkdir()
        t = np.arange(2 * 22050) / 22050
        for k, f in enumerate((440.0, 659.3)):
            tone = 0.3 * np.sin(2 * np.pi * f * t) * 32767
            wavfile.write(str(work / "AUDIO_DIR" / f"tone{k}.wav"), 22050, tone.astype(np.int16))
    return work


def _run_script(script: str, argv: list[str], tmp: Path) -> subprocess.CompletedProcess:
    work = script_directory(tmp, argv, SCRIPT_RUNS[script].dirs)
    return run_alone([sys.executable, str(ROOT / script), *argv], work)


@pytest.fixture(scope="module")
def script_runs(request, tmp_path_factory, checkout_untouched):
    """``{(script, *argv): (tmp, future)}``, as :func:`runs` for the vidmag lines (those are done by now)."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=RUNS_AT_ONCE)
    started: dict[tuple[str, ...], tuple[Path, object]] = {}
    for item in request.session.items:
        if getattr(item, "function", None) is test_script_lines_run and hasattr(item, "callspec"):
            script, argv = item.callspec.params["script"], item.callspec.params["argv"]
            if (key := (script, *argv)) not in started:
                tmp = tmp_path_factory.mktemp("docs-script")
                started[key] = (tmp, pool.submit(_run_script, script, list(argv), tmp))
    yield started
    pool.shutdown(cancel_futures=True)


@pytest.mark.parametrize(("places", "script", "argv"), SCRIPT_RUN_LIST,
                         ids=[f"{p[0].page}:{p[0].line}" for p, _, _ in SCRIPT_RUN_LIST])
def test_script_lines_run(places, script, argv, script_runs):
    tmp_path, future = script_runs[(script, *argv)]
    done = future.result()
    shown = "\n".join(c.where() for c in places) + f"\n    ran as: python {script} {shlex.join(argv)}"
    assert "Traceback" not in done.stderr, f"{shown}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, f"{shown}\n    exit {done.returncode}:\n{done.stderr[-3000:]}"
    for path in script_outputs(argv):
        target = tmp_path / "work" / path
        assert target.exists(), f"{shown}\n    wrote no {path}"
        empty = not any(target.iterdir()) if target.is_dir() else target.stat().st_size == 0
        assert not empty, f"{shown}\n    {path} is empty"


# -- the other programs: make, pip, pytest, bash, curl ----------------------------------------------------
#
# A docs line of a program other than vidmag and the scripts is checked by what that program would do,
# without doing what cannot be undone or needs what no test machine has:
#
# - ``make TARGET``: the Makefile has the target and make can plan it (``make -n``: nothing is built).
# - ``pip install -e ./DIST[extras]``: DIST is a distribution of this checkout and declares each extra (the
#   names the docs install from the index are test_install_names.py's subject).
# - ``python -m pytest ARGS``: pytest collects at least one test from ARGS (``--collect-only``).
# - ``bash SCRIPT``: the script exists and bash parses it (``bash -n``); it must be marked no-run (every one
#   of the docs needs hardware: an NVIDIA GPU).
# - ``curl ...``: the line runs as written, pipes and all, against a live viewer this test starts (``vidmag
#   live synthetic --serve``) on a free port in place of the docs' 8000; it must exit 0 and print something,
#   and what it hands to ``python -m json.tool`` must be JSON.
# - what stands after a ``|`` of a line whose first command is run or checked above is a program of the
#   machine, which must be there (``head``, ``xxd``, ``grep``).
# A command of any other program fails: the docs would show something no test reads.


def line_texts() -> dict[tuple[str, int], str]:
    """``{(page, line): the command line as written}`` (continuations joined, prompts dropped) of every
    checked shell block."""
    found = {}
    for path in pages():
        page = str(path.relative_to(ROOT))
        for _, body, no_check, _ in shell_blocks(path.read_text(encoding="utf-8")):
            if no_check is None:
                found.update({(page, number): line for number, line in command_lines(body)})
    return found


def pytest_args(c: Command) -> list[str] | None:
    """The arguments of a ``python -m pytest ...`` / ``pytest ...`` line, else None."""
    argv = list(c.argv)
    if PYTHON.match(argv[0]) and argv[1:3] == ["-m", "pytest"]:
        return argv[3:]
    return argv[1:] if Path(argv[0]).name == "pytest" else None


def other_kind(c: Command, first: dict[tuple[str, int], Command]) -> str:
    """How a command of another program is checked: make, pip, pytest, bash, curl, stage or unchecked."""
    if pytest_args(c) is not None:
        return "pytest"
    program = Path(c.argv[0]).name
    if program == "make":
        return "make"
    if program == "pip" or (PYTHON.match(c.argv[0]) and c.argv[1:3] == ("-m", "pip")):
        return "pip"
    if program == "bash" and len(c.argv) >= 2 and c.argv[1].endswith(".sh"):
        return "bash"
    if program == "curl":
        return "curl"
    head = first[(c.page, c.line)]
    if head is not c and (vidmag_argv(head) is not None or script_argv(head) is not None
                          or other_kind(head, first) != "unchecked"):
        return "stage"
    return "unchecked"


LINE_TEXT = line_texts()
_FIRST: dict[tuple[str, int], Command] = {}
for _c in COMMANDS:
    _FIRST.setdefault((_c.page, _c.line), _c)
OTHER = [(c, other_kind(c, _FIRST)) for c in COMMANDS if vidmag_argv(c) is None and script_argv(c) is None]


def _kinds(kind: str) -> list[Command]:
    return [c for c, k in OTHER if k == kind]


def _distinct(kind: str) -> list[tuple[list[Command], tuple[str, ...]]]:
    found: dict[tuple[str, ...], list[Command]] = {}
    for c in _kinds(kind):
        found.setdefault(c.argv, []).append(c)
    return [(places, argv) for argv, places in found.items()]


def _ids(items) -> list[str]:
    return [f"{places[0].page}:{places[0].line}" for places, *_ in items]


def test_every_other_command_is_checked():
    unchecked = [c.where() for c in _kinds("unchecked")]
    assert not unchecked, "docs commands of a program no test checks:\n" + "\n".join(unchecked)
    # the checks below are not vacuous
    assert {k for _, k in OTHER} >= {"make", "pip", "pytest", "bash", "curl", "stage"}


def test_other_commands_are_told_apart():
    lines = ["make demo", "pip install -e ./vidmag", "python -m pip install -e ./specux", "bash x.sh",
             ".venv/bin/python -m pytest a.py -k b", "curl -s http://h/x | head -c 3 | xxd", "ls -l",
             "vidmag presets | grep face"]
    found = [c for number, line in enumerate(lines) for c in commands("p.md", number, line)]
    first: dict[tuple[str, int], Command] = {}
    for c in found:
        first.setdefault((c.page, c.line), c)
    assert [other_kind(c, first) if vidmag_argv(c) is None else "vidmag" for c in found] == [
        "make", "pip", "pip", "bash", "pytest", "curl", "stage", "stage", "unchecked", "vidmag", "stage"]
    assert pytest_args(found[4]) == ["a.py", "-k", "b"]


@pytest.mark.parametrize(("places", "argv"), _distinct("make"), ids=_ids(_distinct("make")))
def test_make_lines_name_targets_of_the_makefile(places, argv):
    done = subprocess.run(["make", "-n", "-C", str(ROOT), *argv[1:]], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, f"{places[0].where()}\n{done.stderr[-2000:]}"


def pip_requirements(argv: tuple[str, ...]) -> list[str]:
    """The requirements of a ``pip install`` line (``-e`` values and plain ones), its options left out."""
    args = list(argv[argv.index("install") + 1 :])
    found = []
    while args:
        arg = args.pop(0)
        if arg in ("-e", "--editable"):
            found.append(args.pop(0))
        elif not arg.startswith("-"):
            found.append(arg)
    return found


@pytest.mark.parametrize(("places", "argv"), _distinct("pip"), ids=_ids(_distinct("pip")))
def test_pip_lines_install_distributions_of_the_checkout(places, argv):
    import tomllib

    assert "install" in argv, places[0].where()
    problems = []
    for requirement in pip_requirements(argv):
        m = re.fullmatch(r"(?P<path>\.{1,2}/[^\[\]]+)(?:\[(?P<extras>[^\]]*)\])?", requirement)
        if m is None:
            continue  # a name from the index: test_install_names.py
        pyproject = ROOT / m["path"] / "pyproject.toml"
        if not pyproject.is_file():
            problems.append(f"{requirement}: no pyproject.toml at {m['path']}")
            continue
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        extras = [e.strip() for e in (m["extras"] or "").split(",") if e.strip()]
        if unknown := sorted(set(extras) - set(project.get("optional-dependencies", {}))):
            problems.append(f"{requirement}: {project['name']} has no extra {', '.join(unknown)}")
    assert not problems, f"{places[0].where()}\n" + "\n".join(problems)


def test_pip_check_finds_a_missing_extra_and_a_missing_distribution():
    assert pip_requirements(("pip", "install", "-q", "-e", "./vidmag[torch]", "numpy")) == ["./vidmag[torch]",
                                                                                            "numpy"]
    c = Command("p.md", 1, ("pip", "install", "-e", "./vidmag[no-such-extra]", "-e", "./nowhere"))
    with pytest.raises(AssertionError, match=r"(?s)no extra no-such-extra.*no pyproject.toml at \./nowhere"):
        test_pip_lines_install_distributions_of_the_checkout([c], c.argv)


COLLECTED = re.compile(r"(\d+)(?:/\d+)? tests? collected")


@pytest.mark.parametrize(("places", "argv"), _distinct("pytest"), ids=_ids(_distinct("pytest")))
def test_pytest_lines_collect_tests(places, argv):
    args = pytest_args(places[0])
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    counts = COLLECTED.findall(done.stdout)
    assert done.returncode == 0 and counts and int(counts[-1]) > 0, \
        f"{places[0].where()}\n    collected nothing (exit {done.returncode}):\n{done.stdout[-2000:]}"


@pytest.mark.parametrize(("places", "argv"), _distinct("bash"), ids=_ids(_distinct("bash")))
def test_bash_lines_name_scripts_that_parse(places, argv):
    script = ROOT / argv[1]
    assert script.is_file(), f"{places[0].where()}: no {argv[1]}"
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{places[0].where()}\n{done.stderr}"
    assert all(c.no_run for c in places), \
        f"{places[0].where()}: a bash line this test does not run must be marked no-run with the reason"


@pytest.mark.parametrize(("places", "argv"), _distinct("stage"), ids=_ids(_distinct("stage")))
def test_pipeline_stages_are_programs_of_the_machine(places, argv):
    import shutil

    program = sys.executable if PYTHON.match(argv[0]) else argv[0]
    assert shutil.which(program), f"{places[0].where()}: {argv[0]} is not installed here"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def live_viewer(tmp_path_factory):
    """The port of a ``vidmag live synthetic --serve`` running for the curl lines (stopped after them)."""
    import signal
    import urllib.request

    port = _free_port()
    work = tmp_path_factory.mktemp("docs-viewer")
    process = subprocess.Popen([sys.executable, "-m", "vidmag", "live", "synthetic", "--preset", "face",
                                "--serve", f"127.0.0.1:{port}", "--seconds", str(TIMEOUT_S), "-q"],
                               cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=5) as answer:
                    if json.loads(answer.read()).get("frames"):
                        break
            except OSError:
                pass
            assert process.poll() is None, f"vidmag live --serve ended: {process.stderr.read()[-2000:]}"
            assert time.monotonic() < deadline, "the viewer did not answer within 90 s"
            time.sleep(0.3)
        yield port
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


CURL_LINES = sorted({(c.page, c.line) for c in _kinds("curl")})


@pytest.mark.parametrize("place", CURL_LINES, ids=[f"{p}:{n}" for p, n in CURL_LINES])
def test_curl_lines_run_against_a_live_viewer(place, live_viewer, tmp_path):
    line = LINE_TEXT[place]
    assert "127.0.0.1:8000" in line, f"{place}: the docs' curl lines address the viewer at 127.0.0.1:8000"
    shell = line.replace("127.0.0.1:8000", f"127.0.0.1:{live_viewer}")
    shell = re.sub(r"(?<![\w/.-])python(?=\s)", shlex.quote(sys.executable), shell)
    done = subprocess.run(["bash", "-c", shell], cwd=tmp_path, capture_output=True, timeout=60)
    shown = f"{place[0]}:{place[1]}: {line}\n    ran as: {shell}"
    assert done.returncode == 0 and done.stdout.strip(), \
        f"{shown}\n    exit {done.returncode}: {done.stderr!r}"
    if line.rstrip().endswith("json.tool"):
        assert "frames" in json.loads(done.stdout), shown
    if "/api/params" in line:
        assert "queued" in json.loads(done.stdout), f"{shown}\n    answered {done.stdout!r}"
