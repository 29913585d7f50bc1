"""Which device runtimes can run here, and why the others cannot.

Each runtime module has a ``probe()`` that returns None once a tiny kernel has been built and run on its
device, or the reason it cannot run. :func:`devices` asks each of them, importing a runtime's module (and
with it its GPU library) only when called. A variable of an earlier build still set (``SPECUX_CACHE_DIR``,
``SPECUX_DUMP_SOURCE``; ``SPECUX_OPENCL_OPTIONS`` for OpenCL: see :data:`kernelkit.cache.RENAMED`) is the
reason a runtime cannot run, ahead of its probe; it is checked at every call, never kept as a verdict.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from kernelkit import cache

#: every runtime kernelkit knows, in the order they are listed
RUNTIMES = ("cuda", "opencl", "metal", "vulkan")


@dataclass(frozen=True)
class RuntimeStatus:
    """One row of :func:`devices`: a runtime and, when it cannot run here, why.

    Parameters
    ----------
    name : str
        ``"cuda"``, ``"opencl"``, ``"metal"`` or ``"vulkan"``.
    reason : str or None
        Why it cannot run here; None when it can.

    Examples
    --------
    >>> from kernelkit import RuntimeStatus
    >>> row = RuntimeStatus("metal", "Metal needs macOS (this is linux)")
    >>> row.reason or "available"
    'Metal needs macOS (this is linux)'
    """

    name: str
    reason: str | None

    @property
    def available(self) -> bool:
        return self.reason is None


def _probe(name: str) -> str | None:
    try:
        module = importlib.import_module(f"kernelkit.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"kernelkit.{name}":
            return f"this kernelkit has no {name} runtime (kernelkit.{name} is not part of it)"
        return f"kernelkit.{name} cannot be imported: {exc}"
    except Exception as exc:  # a broken runtime module must not break the listing
        return f"kernelkit.{name} cannot be imported: {type(exc).__name__}: {exc}"
    problems = cache.renamed_problems(getattr(module, "RENAMED", cache.RENAMED))
    if problems:
        return "; ".join(problems)
    try:
        return module.probe()
    except Exception as exc:  # probes never raise; one that does is reported, not propagated
        return f"the {name} probe failed: {type(exc).__name__}: {exc}"


def devices() -> list[RuntimeStatus]:
    """Every runtime (cuda, opencl, metal, vulkan) with None or the reason it cannot run on this machine.

    Probes run once per process and build and run a kernel on the device they find, so the first call takes
    a moment (about a second with PoCL); later calls return the same verdicts.

    Returns
    -------
    list of RuntimeStatus
        ``name`` and ``reason`` (None when the runtime can run), in the order of :data:`RUNTIMES`.

    Examples
    --------
    >>> import kernelkit
    >>> [row.name for row in kernelkit.devices()]
    ['cuda', 'opencl', 'metal', 'vulkan']
    """
    return [RuntimeStatus(name, _probe(name)) for name in RUNTIMES]
