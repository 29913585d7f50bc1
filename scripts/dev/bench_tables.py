#!/usr/bin/env python
"""Write the bench scripts' latest tables into the docs pages, between markers, from their JSON output.

Each bench below has a results file (what its script writes, ``bench/results/NAME.json``) and the pages
that show its latest run. On those pages the table sits between two HTML comments, invisible on the site::

    <!-- bench-table: specux_cpu -->
    ... (written by this script: the machine, the date and the command, then the table) ...
    <!-- /bench-table -->

Only what lies between the markers is rewritten; the rest of the page is the authors'. The table is the one
the bench script itself prints (its own ``table`` function, imported from bench/), so a page shows exactly
what the run printed, under a caption naming the machine (processor, cores, load average at the start and
the end of the run), the library versions, the date and the command. Every script records its command line
(``command`` in its JSON); for the two older results files that lack it (specux_cpu, vidmag_live) the
command is rebuilt from the options and rows they hold, and the caption says so.

A bench may have several results files, one a run, each with its own table name: ``vidmag_memory`` (the
whole of baby.mp4), ``vidmag_memory.phase`` (the phase pipelines on its first frames) and
``vidmag_memory.large`` (a synthesised 1080p clip), for instance.

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


def _versions(versions: dict[str, Any] | None) -> str:
    """``Versions: a 1, b 2.``, leaving out the libraries that did not import; empty when none is known."""
    known = ", ".join(f"{k} {v}" for k, v in (versions or {}).items() if v)
    return f"Versions: {known}." if known else ""


def _caption(data: dict[str, Any], machine: dict[str, Any], versions: dict[str, Any] | None,
             notes: list[str]) -> list[str]:
    """The caption of a table from a results file that records its command: machine, date, command, notes."""
    lines = [_header(machine, data["command"]), ""]
    if _versions(versions):
        lines += [_versions(versions), ""]
    for note in notes:
        lines += [note, ""]
    return lines


def _on_device(name: str | None, backend: str) -> str:
    """What a device backend ran on, said plainly: PoCL is OpenCL on the host processor, not a GPU."""
    if not name:
        return f"{backend}: device not recorded"
    if "Portable Computing Language" in name or name.lower().startswith("pocl"):
        return (f"{backend} on PoCL (`{name}`), OpenCL on the host processor: **not a GPU**; these times say "
                "nothing about a graphics card")
    return f"{backend} on `{name}`"


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


def render_specux_fft(data: dict[str, Any]) -> str:
    """The latest run of bench/specux_fft.py: every implementation's time per case, specux's error."""
    bench = _bench_module("specux_fft")
    devices = data.get("devices", {})
    ran_on = "; ".join(_on_device(name, backend) if backend != "cpu" else f"cpu: {name}"
                       for backend, name in devices.items())
    notes = [f"specux backends: {ran_on}." if ran_on else "specux backends: not recorded."]
    if data.get("quick"):
        notes.append("`--quick`: batches of 2^18 points a case and no length above 65536, not the full run's "
                     "2^21 points and lengths up to 2^20.")
    notes.append(f"Best wall time of {data.get('repeat', '?')} calls; cells: time (time / numpy's), below 1 "
                 "is faster than numpy; for specux also the relative L2 error against numpy in float64:")
    return "\n".join([*_caption(data, data.get("machine", {}), data.get("versions"), notes),
                      bench.table(data["results"])])


def render_specux_gpu(data: dict[str, Any]) -> str:
    """The latest run of bench/specux_gpu.py: where it ran (plainly, when that is not a GPU) and its table."""
    bench = _bench_module("specux_gpu")
    meta = data.get("meta", {})
    dev = meta.get("device", {})
    sizes = {"quick": "`--quick` workloads (8 clips of 4 s, one 30 s clip), not the full ones (64 clips of "
                      "10 s, one 3-minute clip)",
             "smoke": "`--smoke` workloads (tiny, one timed call): a check that it runs, not a measurement",
             "full": "the full workloads (64 clips of 10 s, one 3-minute clip)"}
    notes = [f"specux ran {_on_device(dev.get('name'), dev.get('backend', '?'))}; the peers (torch, "
             f"torchaudio, nnAudio: those installed) on torch's `{dev.get('torch_device', '?')}` device. "
             f"{sizes.get(meta.get('size'), 'workloads not recorded')}.",
             f"Fastest of {meta.get('repeat', '?')} calls taking turns, each synchronised; cells: time "
             "(specux / peer), below 1 means specux is faster; GPU goals (issues 13, 14) count on CUDA only:"]
    table = bench.table(data["results"], dev.get("torch_device", "cpu"), dev.get("copy_bytes_per_s"))
    return "\n".join([*_caption(data, meta.get("machine", {}), meta.get("versions"), notes), table])


def render_specux_torch(data: dict[str, Any]) -> str:
    """The latest run of bench/specux_torch.py: the training-path table, then the torch-tensor overhead."""
    bench = _bench_module("specux_torch")
    meta = data.get("meta", {})
    notes = [f"torch threads: {meta.get('threads', '?')}. Best wall time of {meta.get('repeat', '?')} calls "
             "of each, in blocks; specux / peer below 1 means specux is faster:"]
    lines = _caption(data, meta.get("machine", {}), meta.get("versions"), notes)
    if data.get("rows"):
        lines += [bench.table(data["rows"]), ""]
    lines += [f"A torch CPU tensor against a numpy array of the same data, `specux.stft` of a 16 x 160,000 "
              f"float32 batch (n_fft 512, hop 160), best of {meta.get('overhead_repeat', '?')} calls taking "
              f"turns; goal: tensor / numpy <= {bench.OVERHEAD_GOAL:.2f}:", "",
              bench.overhead_table(data["tensor_overhead"])]
    return "\n".join(lines)


def render_specux_dask(data: dict[str, Any]) -> str:
    """The latest run of bench/specux_dask.py: the loop's time, then each cluster size's."""
    bench = _bench_module("specux_dask")
    notes = [f"{data['files']} WAV files of {data['seconds_each']:g} s (22.05 kHz), mel, mfcc and cqt of "
             f"each into Zarr, time chunks of {data['chunk_seconds']:g} s; the plain loop (specux on numpy, "
             f"file by file) took {data['loop_seconds']:.2f} s:"]
    return "\n".join([*_caption(data, data.get("machine", {}), data.get("versions"), notes),
                      bench.table(data)])


def render_vidmag_memory(data: dict[str, Any]) -> str:
    """A run of bench/vidmag_memory.py: each case's peak RSS against its clip's goal, then a verdict."""
    bench = _bench_module("vidmag_memory")
    rows = data["rows"]
    notes = ["Each case in its own process, its own `ru_maxrss`; `magnify_file` with `encoder_preset="
             "\"veryfast\"` and no audio. `backend` is what ran (`auto` resolved); the budget runs use "
             "`--budget-backend` (cpu unless the command says otherwise). Wall times on a shared machine are "
             "a rough guide only:"]
    done = [r for r in rows if "error" in r or r.get("peak_rss_mb") is not None]
    over = [r for r in done if "error" not in r and r["peak_rss_mb"] > bench.GOALS_MB[r["clip_kind"]]]
    failed = [r for r in done if "error" in r]
    verdict = f"Goal met by {len(done) - len(over) - len(failed)} of {len(done)} cases"
    if over:
        verdict += "; over it: " + ", ".join(
            f"{r['pipeline']} on {r['backend']} with memory {r['memory'] or 'default'} "
            f"({r['peak_rss_mb']:,.0f} MB)" for r in over)
    if failed:
        verdict += "; failed: " + ", ".join(f"{r['pipeline']} ({r['error']})" for r in failed)
    return "\n".join([*_caption(data, data.get("machine", {}), data.get("versions"), notes),
                      bench.table(rows), "", verdict + "."])


def render_vidmag_reference(data: dict[str, Any]) -> str:
    """A run of bench/vidmag_reference.py: peak RSS and frames/s of each pipeline, per clip and mode."""
    bench = _bench_module("vidmag_reference")
    frames = data.get("frames_limit")
    notes = [("The first " + str(frames) + " frames of each clip (x264 CRF 0, no audio)" if frames else
              "The whole clips") + "; each case in its own process. `file`: `vidmag.magnify_file` end to end "
             "(decode, magnify, encode); `magnify`: the clip decoded into an array first, then "
             "`vidmag.magnify` timed (its peak holds the clip and the result). `backend` is what ran (`auto` "
             "resolved):"]
    lines = _caption(data, data.get("machine", {}), data.get("versions"), notes)
    lines.append(bench.table(data["results"]))
    goals = bench.goals(data["results"])
    if goals:
        lines += ["", "Memory goals of `vidmag magnify` (each clip with its preset, the `file` mode):", ""]
        lines += [f"- {line}" for line in goals]
    return "\n".join(lines)


def render_vidmag_reference_seconds(data: dict[str, Any]) -> str:
    """A run of bench/vidmag_reference.py over several backends: seconds of ``vidmag.magnify`` per backend."""
    bench = _bench_module("vidmag_reference")
    frames = data.get("frames_limit")
    notes = [("The first " + str(frames) + " frames of each clip" if frames else "The whole clips")
             + ", one run each, magnification only (`magnify` mode: the clip decoded first, not timed):"]
    return "\n".join([*_caption(data, data.get("machine", {}), data.get("versions"), notes),
                      bench.seconds_table(data["results"])])


@dataclass(frozen=True)
class Bench:
    """A table of the docs and the bench run it shows."""

    script: str  #: the bench script, relative to the repository root
    results: str  #: its JSON, relative to the repository root
    pages: tuple[str, ...]  #: the pages that must hold its marker
    render: Callable[[dict[str, Any]], str]
    rows: str = "results"  #: the key of the JSON that holds the measurements (an empty one is an error)


BENCHES: dict[str, Bench] = {
    "specux_cpu": Bench("bench/specux_cpu.py", "bench/results/specux_cpu.json",
                        ("docs/specux/performance.md",), render_specux_cpu),
    "vidmag_live": Bench("bench/vidmag_live.py", "bench/results/vidmag_live.json", ("docs/vidmag/live.md",),
                         render_vidmag_live),
    "specux_torch": Bench("bench/specux_torch.py", "bench/results/specux_torch.json",
                          ("docs/specux/performance.md",), render_specux_torch, rows="tensor_overhead"),
    "specux_fft": Bench("bench/specux_fft.py", "bench/results/specux_fft.json",
                        ("docs/specux/performance.md",), render_specux_fft),
    "specux_gpu": Bench("bench/specux_gpu.py", "bench/results/specux_gpu.json",
                        ("docs/specux/performance.md",), render_specux_gpu),
    "specux_dask": Bench("bench/specux_dask.py", "bench/results/specux_dask.json", ("docs/scale.md",),
                         render_specux_dask, rows="cluster"),
    "vidmag_memory": Bench("bench/vidmag_memory.py", "bench/results/vidmag_memory.json",
                           ("docs/vidmag/memory.md",), render_vidmag_memory, rows="rows"),
    "vidmag_memory.phase": Bench("bench/vidmag_memory.py", "bench/results/vidmag_memory.phase.json",
                                 ("docs/vidmag/memory.md",), render_vidmag_memory, rows="rows"),
    "vidmag_memory.large": Bench("bench/vidmag_memory.py", "bench/results/vidmag_memory.large.json",
                                 ("docs/vidmag/memory.md",), render_vidmag_memory, rows="rows"),
    "vidmag_reference": Bench("bench/vidmag_reference.py", "bench/results/vidmag_reference.json",
                              ("docs/vidmag/memory.md",), render_vidmag_reference),
    "vidmag_reference.backends": Bench("bench/vidmag_reference.py",
                                       "bench/results/vidmag_reference.backends.json",
                                       ("docs/vidmag/backends.md",), render_vidmag_reference_seconds),
}

#: the results files that record no command (written before the scripts did): their command is rebuilt
REBUILT_COMMAND = ("specux_cpu", "vidmag_live")


def render(name: str, root: Path = ROOT) -> str:
    """The text between the markers of bench ``name``, from its results file under ``root``."""
    if name not in BENCHES:
        raise ValueError(f"bench-table: unknown bench {name!r}; known: {', '.join(BENCHES)}")
    bench = BENCHES[name]
    path = root / bench.results
    if not path.is_file():
        raise ValueError(f"{bench.results}: missing (run python {bench.script} --out {bench.results} first)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{bench.results}: not JSON ({error})") from error
    if not data.get(bench.rows):
        raise ValueError(f"{bench.results}: holds no results ({bench.rows!r} is missing or empty)")
    if name not in REBUILT_COMMAND and not data.get("command"):
        raise ValueError(f"{bench.results}: records no command (rerun {bench.script}, which records it)")
    return bench.render(data)


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
