"""The commands in the docs' shell blocks are ones the programs accept: no page shows a stale option.

Every ```sh / ```bash / ```console / ```shell block of README.md and docs/ is read line by line (a trailing
backslash joins lines; in a block with ``$ `` prompts only the prompted lines are commands, the rest is what
they print). A line is split at ``&&``, ``||``, ``;`` and ``|``; redirections, ``VAR=value`` prefixes and a
``time`` / ``/usr/bin/time -v`` in front are dropped. Then:

- ``vidmag ...`` (also ``.venv/bin/vidmag`` and ``python -m vidmag``) is parsed by the command's own parser
  (:func:`vidmag.cli.build_parser`, nothing is run): an unknown option, a bad choice or value, a missing
  required argument fails with the page and line. A ``vidmag magnify`` line must also give complete, valid
  pipeline parameters (a preset, or a pipeline with all its parameters: what the command checks before it
  opens the file), with the capture rate taken as 30 Hz where neither ``--fs`` nor a preset gives one.
- ``python scripts/...`` / ``python bench/...`` (any ``python``, ``python3``, ``.venv/bin/python``): the
  script exists, and its own argparse parser accepts the options. The parser is taken from the script in a
  subprocess, once per script: the script runs until its first ``parse_args`` call, which hands the parser
  over instead of parsing, so the script does no work; the docs' command lines are then parsed with it.

A block whose commands are not meant to be typed as they stand (a synopsis with placeholders) is marked on
the line before its fence, with the reason::

    <!-- no-check: a synopsis: IN, OUT and ... are placeholders -->
    ```sh

A marker without a reason fails the test.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*$")
NO_CHECK = re.compile(r"^\s*<!--\s*no-check(?::\s*(?P<reason>.*?))?\s*-->\s*$")
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

    def where(self) -> str:
        return f"{self.page}:{self.line}: {shlex.join(self.argv)}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def shell_blocks(text: str) -> list[tuple[int, list[tuple[int, str]], str | None]]:
    """``(fence line, [(line, text)], no_check_reason)`` of each shell block (lines numbered from 1)."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = m["indent"], m["lang"], i
        body = []
        i += 1
        while i < len(lines) and not re.match(rf"^{re.escape(indent)}```\s*$", lines[i]):
            body.append((i + 1, lines[i].strip()))
            i += 1
        i += 1
        if lang not in SHELL:
            continue
        reason = None
        marker = NO_CHECK.match(lines[start - 1]) if start > 0 else None
        if marker:
            reason = (marker["reason"] or "").strip()
        blocks.append((start + 1, body, reason))
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


def commands(page: str, number: int, text: str) -> list[Command]:
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
            found.append(Command(page, number, tuple(argv)))
        argv = []
    return found


def all_commands() -> tuple[list[Command], list[str]]:
    """Every command of every checked shell block, and the markers that give no reason."""
    found, bare = [], []
    for path in pages():
        page = str(path.relative_to(ROOT))
        for fence, body, reason in shell_blocks(path.read_text(encoding="utf-8")):
            if reason == "":
                bare.append(f"{page}:{fence}")
            if reason is not None:
                continue
            for number, text in command_lines(body):
                found.extend(commands(page, number, text))
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
        "```console\n$ vidmag backends\nvidmag: cpu available\n```\n"
        "```python\nvidmag = 1\n```\n"
    )
    blocks = shell_blocks(text)
    assert [(fence, reason) for fence, _, reason in blocks] == [(1, None), (7, "a synopsis"), (10, None)]
    lines = command_lines(blocks[0][1])
    assert lines == [(2, "vidmag presets   # a comment"),
                     (3, "VAR=1 /usr/bin/time -v vidmag magnify a.mp4 -o b.mp4 --preset face 2>&1 | grep x")]
    found = [cmd for number, line in lines for cmd in commands("p.md", number, line)]
    assert [c.argv for c in found] == [("vidmag", "presets"),
                                       ("vidmag", "magnify", "a.mp4", "-o", "b.mp4", "--preset", "face"),
                                       ("grep", "x")]
    assert command_lines(blocks[2][1]) == [(11, "vidmag backends")]


def test_found_the_commands():
    # a collector that silently found nothing would make the checks below vacuous
    assert len(VIDMAG_LINES) >= 30 and len(SCRIPT_LINES) >= 10


def test_no_check_markers_say_why():
    assert not BARE_MARKERS, f"<!-- no-check --> markers without a reason: {BARE_MARKERS}"


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
    from vidmag.params import check_parameters
    from vidmag.presets import preset_params

    options = {k: v for k, v in vars(args).items()
               if k not in ("command", "input", "output", "quiet", "backend", "side_by_side", "quality",
                            "encoder_preset", "audio", "memory")}
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
