"""The subcommands of ``vidmag`` beyond magnify / presets / backends / demo, one module each.

Each module here defines ``NAME`` (the subcommand), ``add_parser(commands)`` (adds its parser to the
``add_subparsers`` object, using :mod:`vidmag._cli_options` for the shared pipeline options) and
``run(args) -> int`` (the exit status). :func:`discovered` finds them, so that a new subcommand is a new
module and the command line itself does not change. A module that cannot be imported is an error, not a
missing subcommand.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from types import ModuleType

__all__ = ["discovered"]


@cache
def discovered() -> tuple[ModuleType, ...]:
    """The subcommand modules of this package, sorted by name."""
    modules = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for attribute in ("NAME", "add_parser", "run"):
            if not hasattr(module, attribute):
                raise ImportError(f"{module.__name__} is a vidmag subcommand without {attribute}")
        modules.append(module)
    return tuple(modules)
