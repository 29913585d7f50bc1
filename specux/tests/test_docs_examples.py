"""Every ```python block of the docs (docs/**/*.md) and of README.md runs: no page drifts from the code.

The blocks of one page run in order in one namespace, as a reader goes down the page (a later block may use a
name an earlier one defined), with the working directory a fresh temporary folder holding three clips
(``face.mp4``, ``baby.mp4``, ``in.mp4``: the first seconds of the paper's clips, cut smaller), so that
examples that read a file run as written. Blocks run with the example-only names ``frames`` (the first 10
frames of face.mp4, in memory) and ``fs`` (30) predefined; a page's text says what they stand for.

A block that cannot run on a machine without a GPU, a camera or the network is marked by an HTML comment on
the line before its fence, with the reason (the comment is invisible on the rendered page)::

    <!-- no-run: needs a CUDA GPU -->
    ```python
    ...

A marker without a reason fails the test; the marker skips that block only. Nothing else is skipped: a block
that fails on a library bug fails this test, and the page or the library has to be fixed.

A block written as an interactive session (lines starting ``>>>`` and ``...``) runs its statements; the
output it shows is what the page's machine printed (devices, timings), so it is not compared.

Shell blocks (```bash) are not run here: the `vidmag` commands they show are covered by the CLI tests.
"""

from __future__ import annotations

import doctest
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*$")
NO_RUN = re.compile(r"^\s*<!--\s*no-run(?::\s*(?P<reason>.*?))?\s*-->\s*$")


def pages() -> list[Path]:
    """README.md and every page under docs/, in a stable order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def python_blocks(text: str) -> list[tuple[int, str, str | None]]:
    """``(line, source, no_run_reason)`` of each ```python block of a Markdown text (line: the fence's).

    ``no_run_reason`` is None for a block that runs, the marker's reason otherwise ("" when the marker gives
    none, which the test refuses).
    """
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = m["indent"], m["lang"], i
        body = []
        i += 1
        while i < len(lines) and not re.match(rf"^{re.escape(indent)}```\s*$", lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        i += 1  # past the closing fence
        if lang not in ("python", "py"):
            continue
        reason = None
        if start > 0:
            marker = NO_RUN.match(lines[start - 1])
            if marker:
                reason = (marker["reason"] or "").strip()
        blocks.append((start + 1, "\n".join(body) + "\n", reason))
    return blocks


def session_source(source: str) -> str:
    """The statements of a block written as a session (``>>>`` / ``...``); other blocks as they are."""
    if not source.lstrip().startswith(">>>"):
        return source
    return "".join(example.source for example in doctest.DocTestParser().get_examples(source))


def test_session_blocks_keep_statements_and_drop_output():
    source = ">>> x = 1\n>>> for i in range(2):\n...     x += i\n>>> x\n2\n"
    assert session_source(source) == "x = 1\nfor i in range(2):\n    x += i\nx\n"
    assert session_source("y = 2\n") == "y = 2\n"


def test_block_parser_reads_fences_markers_and_indentation():
    text = (
        "intro\n"
        "```python\nx = 1\n```\n"
        "<!-- no-run: needs a camera -->\n"
        "```python\nopen_camera()\n```\n"
        "```bash\nvidmag presets\n```\n"
        "- a list item:\n\n"
        "    ```python\n    y = x + 1\n    ```\n"
        "<!-- no-run -->\n"
        "```py\nz = 3\n```\n"
    )
    blocks = python_blocks(text)
    assert [(line, src, reason) for line, src, reason in blocks] == [
        (2, "x = 1\n", None),
        (6, "open_camera()\n", "needs a camera"),
        (14, "y = x + 1\n", None),
        (18, "z = 3\n", ""),
    ]


def _sample_clip(T: int = 24, H: int = 64, W: int = 96) -> np.ndarray:
    """A small textured uint8 (T, H, W, 3) clip with a 1 Hz colour pulse (30 frames per second)."""
    t = np.arange(T) / 30.0
    yy, xx = np.mgrid[0:H, 0:W]
    texture = 40 * np.sin(0.3 * xx) * np.cos(0.2 * yy)
    clip = 120 + texture[None, :, :, None] + 3 * np.sin(2 * np.pi * t)[:, None, None, None]
    return np.clip(np.round(np.broadcast_to(clip, (T, H, W, 3))), 0, 255).astype(np.uint8)


CLIPS = ROOT.parent / "shared" / "data" / "clips"
#: the clips the pages name: the paper's sample whose first frames stand for it, the size kept (the top left
#: corner, so that the pages' regions of interest, such as pulse.md's forehead at x 150..370, y 70..170 of
#: face.mp4, still fall on the same pixels) and the frames kept (face: 3 s, over the pulse estimate's
#: minimum of 86 frames at 30 fps; the others 1 s). A third of each frame and a few seconds: enough to run
#: every example as written, quick enough for every CI run.
CLIP_FILES = {
    "face.mp4": ("face.mp4", 256, 384, 90),
    "baby.mp4": ("baby.mp4", 272, 480, 30),
    "in.mp4": ("face.mp4", 256, 384, 30),
}


@pytest.fixture(scope="module")
def clip_files(tmp_path_factory) -> tuple[Path, np.ndarray]:
    """A folder with face.mp4, baby.mp4 and in.mp4, the first seconds of the paper's clips cut to their top
    left corner (from ../shared; where that is missing, synthetic clips of the same size), so that the pages'
    examples, their regions of interest included, run as written; and ``frames``, the first 10 frames of
    face.mp4."""
    from fractions import Fraction
    from itertools import islice

    from vidmag import io

    folder = tmp_path_factory.mktemp("clips")
    for name, (sample, height, width, count) in CLIP_FILES.items():
        if (CLIPS / sample).exists():
            frames = np.stack([f[:height, :width] for f in islice(io.read_frames(CLIPS / sample), count)])
        else:
            frames = _sample_clip(count, height, width)
        with io.VideoWriter(folder / name, width=frames.shape[2], height=frames.shape[1], fps=Fraction(30),
                            encoder_preset="ultrafast") as writer:
            for frame in frames:
                writer.write(frame)
        if name == "in.mp4":
            first = frames[:10]
    return folder, first


PAGES = [p for p in pages() if python_blocks(p.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_examples_run(page: Path, clip_files, tmp_path: Path, monkeypatch):
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    folder, frames = clip_files
    for name in os.listdir(folder):
        (tmp_path / name).write_bytes((folder / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs_example__", "frames": frames.copy(), "fs": 30.0}
    rel = page.relative_to(ROOT)
    for line, source, reason in blocks:
        if reason is not None:
            assert reason, f"{rel}:{line}: a no-run marker must say why (<!-- no-run: needs a CUDA GPU -->)"
            continue
        code = compile(session_source(source), f"{rel}:{line}", "exec")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an example's warnings are the page's business, not a failure
            try:
                exec(code, namespace)
            except Exception as exc:  # name the page and line: the traceback alone points into exec
                raise AssertionError(f"the ```python block at {rel}:{line} failed: {exc!r}") from exc


def test_docs_have_python_examples():
    # the collection above found the pages: a parser that silently finds nothing would make the test vacuous
    assert sum(len(python_blocks(p.read_text(encoding="utf-8"))) for p in pages()) >= 20
