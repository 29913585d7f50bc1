"""Installing the right thing (issue 19): the index has other projects called vidmag and specux, so our
distributions have names of their own, and nothing we write tells anyone to ``pip install`` one of ours by
name (not published yet: from a checkout, ``pip install -e ./vidmag``) or one of those foreign names."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OURS = {"kernelkit": "kernelkit", "vidmag": "vidmag-evm", "specux": "specux-dsp"}
#: names a `pip install` must not take from the index: the foreign projects and our unpublished ones
FORBIDDEN = {"vidmag", "specux", *OURS.values()}
#: lines that name a forbidden install on purpose, to warn against it
ALLOWED = {("README.md", "`pip install vidmag` or `pip install specux` installs someone else's code")}


def _files():
    yield from sorted(ROOT.glob("*.md"))
    yield from sorted((ROOT / "docs").rglob("*.md"))
    for package in OURS:
        yield ROOT / package / "README.md"
        yield from sorted((ROOT / package / "src").rglob("*.py"))


def _requirements(command: str) -> list[str]:
    """The requirement names of one `pip install ...` (paths, options and their values left out)."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    names, skip = [], False
    for word in words:
        word = word.strip("`\"'(),;")
        if skip:
            skip = False
            continue
        if word in ("-r", "--requirement", "-c", "--constraint", "--index-url", "-i", "--target", "-t"):
            skip = True
            continue
        if not word or word.startswith(("-", ".", "/", "~")) or "://" in word:
            continue
        names.append(re.split(r"[\[<>=!~;@ ]", word, maxsplit=1)[0].lower())
    return names


def test_the_distributions_have_names_of_their_own():
    for package, distribution in OURS.items():
        text = (ROOT / package / "pyproject.toml").read_text()
        project = text.split("[project]", 1)[1].split("\n[", 1)[0]  # tomllib is Python 3.11's
        assert re.findall(r'^name = "([^"]+)"$', project, flags=re.M) == [distribution]
    assert {"vidmag", "specux"}.isdisjoint(OURS.values())


def test_the_parser():
    assert _requirements('-e "./vidmag[face]"') == []
    assert _requirements('"specux[dask]"     # dask[array,distributed]') == ["specux"]
    assert _requirements("torch==2.13.0 -r requirements-dev.txt") == ["torch"]
    assert _requirements("cuda-bindings nvidia-cuda-nvrtc (CUDA 13)") == [
        "cuda-bindings", "nvidia-cuda-nvrtc", "cuda", "13"]


@pytest.mark.parametrize("path", list(_files()), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_install_of_a_foreign_or_unpublished_name(path):
    rel = str(path.relative_to(ROOT))
    bad = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if any(rel == where and text in line for where, text in ALLOWED):
            continue
        for match in re.finditer(r"pip install ([^`\n]*)", line):
            named = FORBIDDEN.intersection(_requirements(match.group(1)))
            if named:
                bad.append(f"{rel}:{number}: {line.strip()}")
    assert not bad, "install from a checkout (pip install -e ./vidmag ...):\n" + "\n".join(bad)
