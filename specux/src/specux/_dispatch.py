"""The common path of a public transform: pick the backend, hand it the input, return the caller's library."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from specux import _arrays
from specux._backends import registry
from specux.errors import UnsupportedOperationError


def prepare(x: Any, backend: str, op: str, public: str) -> tuple[Any, Any]:
    """``(backend object, input for it)``: host input (numpy, torch CPU, lists) becomes a numpy view."""
    if not (_arrays.is_torch(x) or _arrays.is_cupy(x)):
        x = np.asarray(x)
    chosen = registry.select(x, backend, op, f"specux.{public}")
    if _arrays.is_torch(x) and x.requires_grad and sys.modules["torch"].is_grad_enabled():
        # never drop gradients silently; the differentiable ops come with specux.torch
        raise UnsupportedOperationError(
            f"specux.{public}: gradients are not available for this operation yet; "
            "pass a tensor that does not "
            "require grad (x.detach()) or call it under torch.no_grad()"
        )
    if _arrays.is_host(x):
        x = _arrays.to_numpy(x)
    return chosen, x


def cast_host(x: Any, dtype: str) -> Any:
    """Cast an input (numpy, cupy or a torch device tensor) to the computing precision."""
    if isinstance(x, np.ndarray) or _arrays.is_cupy(x):
        return x.astype(dtype, copy=False)
    if _arrays.is_torch(x):  # a device tensor (host tensors arrive as numpy views)
        return x.to(getattr(sys.modules["torch"], dtype))
    return x


def finish(out: Any, ref: Any) -> Any:
    """Return ``out`` in the library of the caller's input ``ref``."""
    return _arrays.like(out, ref)
