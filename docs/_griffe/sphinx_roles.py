"""A griffe extension for the API reference: Sphinx roles in docstrings shown as code.

The docstrings cross-reference with Sphinx roles (``:func:`specux.stft```, ``:class:`Backend```), which
mkdocstrings' numpy parser leaves as literal text. This rewrites each ``:role:`target``` to ```target```
(the ``~`` prefix, which asks Sphinx for the last component only, is honoured). They become code rather than
links: a link to a target mkdocs cannot resolve would fail ``mkdocs build --strict``.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const|ref|term):`(~?)([^`]+)`")


def _code(match: re.Match) -> str:
    short, target = match.groups()
    if short:
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def plain(text: str) -> str:
    """``text`` with every Sphinx role written as inline code."""
    return ROLE.sub(_code, text)


class SphinxRoles(griffe.Extension):
    """Rewrite the Sphinx roles of every docstring griffe loads."""

    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
