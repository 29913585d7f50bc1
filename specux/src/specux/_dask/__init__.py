"""specux on dask arrays: every public transform given a ``dask.array.Array`` returns one, lazily.

The public fronts carry :func:`dask_route` (through :func:`specux._torch_hook.torch_route`, which every
transform already wears, and directly on the decibel conversions). When any argument is a dask array, the call
goes with every argument bound (defaults included, so they live once, in the public signature) to
:func:`specux._dask.wrap.call`, which builds the graph: each block runs through the same public front, so a
numpy block takes the cpu backend and a cupy block the cuda backend (that path is untested here: no GPU).
How much each op needs from its neighbours along time is worked out in :mod:`specux._dask.overlap`.

Importing this package imports no dask: a dask array can only exist once ``dask.array`` is in
``sys.modules``, so detection looks there.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def is_dask(x: Any) -> bool:
    """Whether ``x`` is a ``dask.array.Array`` (without importing dask)."""
    module = sys.modules.get("dask.array")
    return module is not None and isinstance(x, module.Array)


def holds_dask(args: tuple, kwargs: dict) -> bool:
    """Whether any positional or keyword argument is a dask array."""
    if sys.modules.get("dask.array") is None:
        return False
    return any(is_dask(a) for a in args) or any(is_dask(v) for v in kwargs.values())


def dask_route(op: str, fn: Callable[..., Any] | None = None) -> Callable[[F], F]:
    """Decorate a public front so that a call with a dask array argument builds a dask graph instead.

    Parameters
    ----------
    op : str
        The operation's public name (``"stft"``, ``"fft.rfft"``, ``"power_to_db"``, ...): blocks run through
        that public function.
    fn : callable or None
        The function whose signature binds the arguments (the undecorated front); ``None``: the decorated one.
    """

    def decorate(wrapped: F) -> F:
        signature = inspect.signature(fn if fn is not None else wrapped)
        var_kw = [n for n, p in signature.parameters.items() if p.kind is p.VAR_KEYWORD]

        @functools.wraps(wrapped)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if holds_dask(args, kwargs):
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                arguments = dict(bound.arguments)
                for name in var_kw:  # **kwargs pass on flat, as the caller gave them
                    arguments.update(arguments.pop(name, {}))
                from specux._dask.wrap import call

                return call(op, arguments)
            return wrapped(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
