"""The documentation site builds, and every public name of the three packages is documented on it.

- ``mkdocs build --strict`` (mkdocs.yml: mkdocs-material and mkdocstrings) passes: a broken link or anchor, a
  page missing from the nav or an API reference that does not resolve fails it. It builds into a temporary
  folder (about 15 s here), so CI builds the site on every run of the README's test command.
- Every public name (``__all__`` of specux, vidmag and kernelkit and of their public submodules) has a
  numpydoc docstring with a Parameters section when it takes any, a Returns (or Yields) section when it
  returns something, and an Examples section, as griffe (the parser mkdocstrings renders with) reads it,
  and is on one of the API reference pages.
- The Examples of those docstrings run (doctest, output compared with ELLIPSIS and NORMALIZE_WHITESPACE).
- The README's relative links point at files that exist (the README is outside the site, so mkdocs does not
  check it).
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import inspect
import logging
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The modules whose __all__ is public API. A new public module gets a line here and a reference page.
PUBLIC_MODULES = [
    "specux",
    "specux.fft",
    "specux.filters",
    "specux.convert",
    "specux.torch",
    "vidmag",
    "vidmag.io",
    "vidmag.files",
    "vidmag.many",
    "vidmag.backend",
    "vidmag.backend.generic",
    "vidmag.backend.stream",
    "vidmag.demo",
    "vidmag.live",
    "vidmag.pulse",
    "vidmag.face",
    "vidmag.synthetic",
    "vidmag.evaluate",
    "vidmag.suggest",
    "kernelkit",
]

# Known gaps: public names whose docstring lacks these sections. Each entry is a debt, not a permission: the
# test fails when a name not listed here lacks a section, and also when a listed section has been added
# (delete the entry then), so this table only shrinks. It is empty: keep it so.
KNOWN_GAPS: dict[str, set[str]] = {}


def _sections(doc: str) -> set[str]:
    from griffe import Docstring

    logger = logging.getLogger("griffe")
    level = logger.level
    logger.setLevel(logging.ERROR)  # griffe's style warnings are the site build's business
    try:
        parsed = Docstring(inspect.cleandoc(doc), parser="numpy").parse()
    finally:
        logger.setLevel(level)
    return {section.kind.value for section in parsed}


def _own_doc(obj) -> str:
    if inspect.isclass(obj):
        return obj.__dict__.get("__doc__") or ""
    return getattr(obj, "__doc__", None) or ""


def missing_sections(obj) -> set[str]:
    """The numpydoc sections ``obj``'s docstring lacks: "docstring", "Parameters", "Returns", "Examples"."""
    if isinstance(obj, types.ModuleType):
        return set() if (obj.__doc__ or "").strip() else {"docstring"}
    doc = _own_doc(obj)
    if not doc.strip():
        return {"docstring"}
    kinds = _sections(doc)
    missing = set()
    signature = None
    own_init = inspect.isclass(obj) and any(
        name in obj.__dict__ for name in ("__init__", "__new__", "__dataclass_fields__")
    )
    if own_init or (callable(obj) and not inspect.isclass(obj)):
        try:
            signature = inspect.signature(obj)
        except (TypeError, ValueError):  # a builtin without a signature: nothing to check against
            signature = None
    if signature is not None:
        params = [p for p in signature.parameters.values() if p.name not in ("self", "cls")]
        documented = {"parameters", "other parameters"} | ({"attributes"} if inspect.isclass(obj) else set())
        if params and not kinds & documented:
            missing.add("Parameters")
        if not inspect.isclass(obj):
            annotation = signature.return_annotation
            returns = annotation not in (None, "None", type(None))
            if returns and not kinds & {"returns", "yields"}:
                missing.add("Returns")
    if "examples" not in kinds:
        missing.add("Examples")
    return missing


def public_names() -> list[tuple[str, object]]:
    """``(qualified name, object)`` of every documented public name: classes, functions, modules."""
    names = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if name.startswith("__") or not (inspect.isclass(obj) or callable(obj) or inspect.ismodule(obj)):
                continue  # constants (PRESETS, DIALECTS, __version__) carry no docstring of their own
            names.append((f"{module_name}.{name}", obj))
    return names


def test_missing_sections_reads_numpydoc():
    def documented(x: int) -> int:
        """Double.

        Parameters
        ----------
        x : int
            A number.

        Returns
        -------
        int
            Twice ``x``.

        Examples
        --------
        >>> documented(2)
        4
        """
        return 2 * x

    def bare(x: int) -> int:
        """Double ``x``."""
        return 2 * x

    def nothing_back() -> None:
        """Do nothing.

        Examples
        --------
        >>> nothing_back()
        """

    assert missing_sections(documented) == set()
    assert missing_sections(bare) == {"Parameters", "Returns", "Examples"}
    assert missing_sections(nothing_back) == set()
    assert missing_sections(lambda: 1) == {"docstring"}


def test_public_names_have_parameters_returns_and_examples():
    found = {name: missing_sections(obj) for name, obj in public_names()}
    new_gaps = {name: sorted(gap - KNOWN_GAPS.get(name, set())) for name, gap in found.items()}
    new_gaps = {name: gap for name, gap in new_gaps.items() if gap}
    filled = {
        name: sorted(listed - found.get(name, set()))
        for name, listed in KNOWN_GAPS.items()
        if listed - found.get(name, set())
    }
    assert not new_gaps, f"public names whose docstring lacks these numpydoc sections: {new_gaps}"
    assert not filled, f"filled since KNOWN_GAPS was written: remove them from KNOWN_GAPS: {filled}"


def _examples(name: str, obj) -> doctest.DocTest:
    return doctest.DocTestParser().get_doctest(_own_doc(obj), {}, name, None, 0)


_WITH_EXAMPLES = [(name, obj) for name, obj in public_names() if _examples(name, obj).examples]


@pytest.mark.parametrize("name,obj", _WITH_EXAMPLES, ids=[name for name, _ in _WITH_EXAMPLES])
def test_docstring_examples_run(name, obj, tmp_path, monkeypatch):
    # the Examples sections are on the reference pages: they run, and print what they show
    monkeypatch.chdir(tmp_path)
    test = _examples(name, obj)
    # as doctest runs a module's examples: in a copy of the namespace of the module that defines the name
    home = sys.modules.get(getattr(obj, "__module__", None) or "") if not inspect.ismodule(obj) else obj
    test.globs = dict(vars(home)) if home is not None else {}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out: list[str] = []
    runner.run(test, out=out.append)
    assert runner.summarize(verbose=False).failed == 0, "".join(out)


def _reference_text() -> str:
    pages = sorted((ROOT / "docs" / "reference").rglob("*.md"))
    return "\n".join(p.read_text(encoding="utf-8") for p in pages)


def test_every_public_name_is_on_a_reference_page():
    directives = set(re.findall(r"^::: ([\w.]+)", _reference_text(), flags=re.MULTILINE))

    def covered(name: str) -> bool:  # by its own directive or by its module's, which renders the members
        parts = name.split(".")
        return any(".".join(parts[:i]) in directives for i in range(1, len(parts) + 1))

    names = public_names()
    # one object under two public names (specux.stft is specux.ops.stft.stft; specux.convert's functions are
    # specux's) needs one page
    covered_ids = {id(obj) for name, obj in names if covered(name)}
    absent = [name for name, obj in names if id(obj) not in covered_ids]
    assert not absent, f"public names on no page of docs/reference/: {absent}"


def test_readme_links_resolve():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    broken = [t for t in targets if "://" not in t and not t.startswith("#")
              and not (ROOT / t.split("#")[0]).exists()]
    assert targets and not broken, f"README.md links to missing files: {broken}"


def test_site_builds_strict(tmp_path):
    # no skip when mkdocs is missing: requirements-dev.txt installs it, and CI must build the site
    assert importlib.util.find_spec("mkdocs"), "mkdocs is missing: pip install -r requirements-dev.txt"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site), "--config-file",
         str(ROOT / "mkdocs.yml")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-6000:]}"
    # the reference pages rendered the docstrings (not just the page titles)
    page = (site / "reference" / "specux" / "spectrograms" / "index.html").read_text(encoding="utf-8")
    assert "n_fft" in page and "specux.stft" in page
    # and the Sphinx roles of the docstrings came out as code, not as literal ":func:`...`" text
    literal = [str(f.relative_to(site)) for f in (site / "reference").rglob("*.html")
               if re.search(r":(func|class|meth|mod|data|attr):`", f.read_text(encoding="utf-8"))]
    assert not literal, f"reference pages with Sphinx roles left as text: {literal}"


def test_sphinx_roles_become_code():
    path = ROOT / "docs" / "_griffe" / "sphinx_roles.py"
    spec = importlib.util.spec_from_file_location("sphinx_roles", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.plain("See :func:`specux.stft` and :class:`~vidmag.io.VideoWriter`.") == (
        "See `specux.stft` and `VideoWriter`."
    )
    assert module.plain("no roles, `code` stays") == "no roles, `code` stays"
