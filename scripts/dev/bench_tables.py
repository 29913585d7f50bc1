#!/usr/bin/env python
"""Write the bench scripts' latest tables into the docs pages, between markers, from their JSON output.

Each bench below has a results file (what its script writes, ``bench/results/NAME.json``) and the pages
that show its latest run. On those pages the table sits between two HTML comments, invisible on the site::

    <!-- bench-table: specux_cpu -->
    ... (written by this script: the machine, the date and the command, then the table) ...
    <!-- /bench-table -->

Only what lies between the markers is rewritten; the rest of the page is the authors'. The table is the one
the bench script itself prints (its own ``table`` function, imported from bench/), so a page shows exactly
what the run printed. The command line is rebuilt from what the JSON records (the options and the rows it
holds), since the scripts do not store their argv; a results file that carries ``command`` uses that.

    python scripts/dev/bench_tables.py           # rewrite the tables from bench/results/*.json
    python scripts/dev/bench_tables.py --check   # exit 1, naming each page whose table differs

A page that lacks its marker, a marker never closed, a marker naming no bench or a missing results file is an
error naming the page or the file (exit 2). Pages are written under a temporary name and renamed, and only
when their text changes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCH_DIR = ROOT / "bench"

OPEN = re.compile(r"^<!-- bench-table: (?P<name>[\w.-]+) -->[ \t]*$", re.MULTILINE)
CLOSE = "<!-- /bench-table -->"


@cache
def _bench_module(name: str) -> ModuleType:
    """The bench script ``bench/NAME.py`` as a module (its ``table`` renders the rows as it prints them)."""
    if str(BENCH_DIR) not in sys.path:  # the scripts import their helpers as a sibling module, `_common`
        sys.path.insert(0, str(BENCH_DIR))
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _unique(values: list[Any]) -> list[Any]:
    """``values`` without repeats, in order of first appearance."""
    return list(dict.fromkeys(values))


def _date(iso: str | None) -> str:
    if not iso:
        return "date not recorded"
    try:
        when = dt.datetime.fromisoformat(iso).astimezone(dt.timezone.utc)
    except ValueError:
        return iso
    return when.strftime("%Y-%m-%d %H:%M UTC")


def _machine(m: dict[str, Any]) -> str:
    cores = m.get("usable_cores")
    parts = [str(m.get("cpu", "processor not recorded"))]
    if cores is not None:
        parts.append(f"{cores} of {m.get('cpu_count', cores)} cores usable")
    if m.get("platform"):
        parts.append(str(m["platform"]))
    if m.get("python"):
        parts.append(f"Python {m['python']}")
    start, end = m.get("loadavg_start"), m.get("loadavg_end")
    if start:
        load = f"load average {start[0]:.1f}" + (f" to {end[0]:.1f}" if end else "") + " (1 minute)"
        parts.append(load)
    return ", ".join(parts)


def _header(machine: dict[str, Any], command: str, extra: str = "") -> str:
    line = f"Machine: {_machine(machine)}. Date: {_date(machine.get('date_utc'))}. Command: `{command}`"
    return line + (f" {extra}" if extra else "") + "."


def _specux_cpu_command(data: dict[str, Any]) -> str:
    meta, rows = data.get("meta", {}), data["results"]
    args = ["--quick"] if meta.get("quick") else []
    for key in ("repeat", "warmup", "rounds"):
        if meta.get(key) is not None:
            args += [f"--{key}", str(meta[key])]
    if meta.get("turns"):
        args.append("--turns")
    args += ["--ops", ",".join(_unique([r["op"] for r in rows])),
             "--data", ",".join(_unique([r["data"] for r in rows]))]
    return "python bench/specux_cpu.py " + shlex.join(args)


def render_specux_cpu(data: dict[str, Any]) -> str:
    """The latest run of bench/specux_cpu.py: the machine, the versions, the wall-time table, the targets."""
    bench = _bench_module("specux_cpu")
    meta = data.get("meta", {})
    command = data.get("command") or _specux_cpu_command(data)
    versions = ", ".join(f"{k} {v}" for k, v in meta.get("versions", {}).items() if v)
    lines = [_header(meta.get("machine", {}), command, "(rebuilt from the JSON)" if "command" not in data
                     else ""), ""]
    if versions:
        lines += [f"Versions: {versions}.", ""]
    lines += ["Wall-clock times, the fastest call of each; cells: time (specux / peer), below 1 means specux "
              "is faster:", "", bench.table(data["results"])]
    goals = data.get("targets") or []
    if goals:
        rows = [(g["data"], g["op"], g["target"], g["value"], "met" if g["met"] else "**not met**")
                for g in goals]
        lines += ["", bench.markdown_table(("data", "op", "target", "value", "verdict"), rows)]
    return "\n".join(lines)


def _vidmag_live_command(data: dict[str, Any]) -> str:
    rows = data["results"]
    warmups = _unique([r["warmup"] for r in rows])
    frames = max(r["frames"] for r in rows)
    args = ["--backends", ",".join(_unique([r["backend"] for r in rows])),
            "--pipelines", ",".join(_unique([r["pipeline"] for r in rows])),
            "--sizes", ",".join(_unique([f"{r['width']}x{r['height']}" for r in rows]))]
    if (frames, warmups) == (5, [2]):
        args.append("--quick")
    else:
        args += ["--frames", str(frames), "--warmup", str(max(warmups))]
    return "python bench/vidmag_live.py " + shlex.join(args)


def render_vidmag_live(data: dict[str, Any]) -> str:
    """The latest run of bench/vidmag_live.py: the machine, the date, the command and its table."""
    bench = _bench_module("vidmag_live")
    command = data.get("command") or _vidmag_live_command(data)
    extra = "" if "command" in data else "(rebuilt from the JSON, which does not record `--budget`)"
    return "\n".join([_header(data.get("machine", {}), command, extra), "", bench.table(data["results"])])


@dataclass(frozen=True)
class Bench:
    """A bench whose latest table the docs show."""

    results: str  #: its JSON, relative to the repository root
    pages: tuple[str, ...]  #: the pages that must hold its marker
    render: Callable[[dict[str, Any]], str]


BENCHES: dict[str, Bench] = {
    "specux_cpu": Bench("bench/results/specux_cpu.json", ("docs/specux/performance.md",), render_specux_cpu),
    "vidmag_live": Bench("bench/results/vidmag_live.json", ("docs/vidmag/live.md",), render_vidmag_live),
}


def render(name: str, root: Path = ROOT) -> str:
    """The text between the markers of bench ``name``, from its results file under ``root``."""
    if name not in BENCHES:
        raise ValueError(f"bench-table: unknown bench {name!r}; known: {', '.join(BENCHES)}")
    path = root / BENCHES[name].results
    if not path.is_file():
        raise ValueError(f"{BENCHES[name].results}: missing (run python bench/{name}.py first)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{BENCHES[name].results}: not JSON ({error})") from error
    if not data.get("results"):
        raise ValueError(f"{BENCHES[name].results}: holds no results")
    return BENCHES[name].render(data)


def fill(text: str, page: str, tables: dict[str, str]) -> str:
    """``text`` with the block of every marker replaced by ``tables[name]``; the rest kept as it is.

    Raises ValueError naming ``page`` for a marker that names no bench of ``tables`` or is never closed.
    """
    out, pos = [], 0
    for m in OPEN.finditer(text):
        if m.start() < pos:  # inside a block already replaced: a second opening before the close
            raise ValueError(f"{page}: bench-table {m['name']!r} opens inside another block")
        name = m["name"]
        if name not in tables:
            raise ValueError(f"{page}: bench-table {name!r} names no bench; known: {', '.join(tables)}")
        end = text.find(CLOSE, m.end())
        if end < 0:
            line = text.count("\n", 0, m.start()) + 1
            raise ValueError(f"{page}:{line}: bench-table {name!r} is not closed by {CLOSE}")
        # blank lines around it: Markdown reads the table as a table, not as part of the comment's HTML
        out += [text[pos:m.end()], "\n\n", tables[name], "\n\n"]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def update(root: Path = ROOT, check: bool = False) -> list[str]:
    """Render every bench's table into its pages under ``root`` (``check``: write nothing).

    Returns
    -------
    list of str
        The pages (relative to ``root``) whose tables differ(ed) from what the results render: rewritten,
        or with ``check``, left as they are.
    """
    tables = {name: render(name, root) for name in BENCHES}
    pages: dict[str, set[str]] = {}
    for name, bench in BENCHES.items():
        for page in bench.pages:
            pages.setdefault(page, set()).add(name)
    changed = []
    for page, names in pages.items():
        path = root / page
        if not path.is_file():
            raise ValueError(f"{page}: missing (it should show the latest {', '.join(sorted(names))} table)")
        text = path.read_text(encoding="utf-8")
        missing = sorted(names - {m["name"] for m in OPEN.finditer(text)})
        if missing:
            raise ValueError(f"{page}: no <!-- bench-table: {missing[0]} --> marker (the latest {missing[0]} "
                             f"table goes between it and {CLOSE})")
        new = fill(text, page, tables)
        if new != text:
            changed.append((page, path, new))
    if not check:  # every page checked before any is written: an error leaves all of them as they were
        for _, path, new in changed:
            _write(path, new)
    return [page for page, _, _ in changed]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 naming each page whose table differs from the JSON")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)  # the tests' own tree
    args = parser.parse_args(argv)
    try:
        changed = update(args.root, check=args.check)
    except ValueError as error:
        print(f"bench_tables: error: {error}", file=sys.stderr)
        return 2
    for page in changed:
        if args.check:
            print(f"{page}: its bench table differs from the results JSON; run python scripts/dev/"
                  "bench_tables.py", file=sys.stderr)
        else:
            print(f"rewrote {page}")
    return 1 if changed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
