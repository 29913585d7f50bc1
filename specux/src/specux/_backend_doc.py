"""The "Backends:" sentence of each public function's docstring, written by the registry rather than by hand.

A docstring says ``{backends}`` where the sentence goes; :func:`backends_doc` fills it from
:func:`specux._backends.registry.backends_line`, which reads what this build's backends serve (without probing
the machine), so the docstrings cannot drift from the code when a backend gains an operation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from specux._backends import registry

F = TypeVar("F", bound=Callable[..., Any])

PLACEHOLDER = "{backends}"


def backends_doc(op: str) -> Callable[[F], F]:
    """Decorate a public function whose docstring holds :data:`PLACEHOLDER` (``op``: the registry's name)."""

    def decorate(fn: F) -> F:
        doc = fn.__doc__ or ""
        if PLACEHOLDER not in doc:
            raise ValueError(f"the docstring of {fn.__qualname__} has no {PLACEHOLDER} line")
        fn.__doc__ = doc.replace(PLACEHOLDER, registry.backends_line(op))
        return fn

    return decorate
