"""Which array library an input belongs to, and moving results back into it.

Nothing here imports torch or cupy: a tensor can only exist if its library is already in ``sys.modules``, so
detection looks there first and the library module is taken from ``sys.modules`` when it is needed.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

NUMPY = "numpy"
TORCH = "torch"
CUPY = "cupy"


def _torch():
    return sys.modules.get("torch")


def _cupy():
    return sys.modules.get("cupy")


def is_torch(x: Any) -> bool:
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


def is_cupy(x: Any) -> bool:
    cupy = _cupy()
    return cupy is not None and isinstance(x, cupy.ndarray)


def library(x: Any) -> str:
    """``"torch"``, ``"cupy"`` or ``"numpy"`` (anything else is treated as array-like for numpy)."""
    if is_torch(x):
        return TORCH
    if is_cupy(x):
        return CUPY
    return NUMPY


def device_kind(x: Any) -> str:
    """Where ``x`` lives: ``"cpu"`` for host memory, else the device type (``"cuda"``, ``"mps"``, ...)."""
    if is_torch(x):
        return x.device.type
    if is_cupy(x):
        return "cuda"
    return "cpu"


def is_host(x: Any) -> bool:
    return device_kind(x) == "cpu"


def to_numpy(x: Any) -> np.ndarray:
    """View host input as numpy (zero-copy for numpy and torch CPU tensors). Gradients are not tracked."""
    if is_torch(x):
        if x.device.type != "cpu":
            raise ValueError(f"to_numpy: tensor lives on {x.device}, not in host memory")
        t = x.detach()
        if t.is_conj():
            t = t.resolve_conj()
        if t.is_neg():
            t = t.resolve_neg()
        return t.numpy()
    if is_cupy(x):
        raise ValueError("to_numpy: a cupy array lives on a CUDA device, not in host memory")
    return np.asarray(x)


def like(out: Any, ref: Any) -> Any:
    """Return ``out`` (numpy, or already in ``ref``'s library) in the library of ``ref``."""
    if isinstance(out, tuple):
        return tuple(like(o, ref) for o in out)
    if is_torch(ref) and isinstance(out, np.ndarray):
        torch = _torch()
        if not out.flags.writeable:
            out = out.copy()
        return torch.from_numpy(np.ascontiguousarray(out) if out.ndim == 0 else out)
    return out


# --- a minimal array namespace for the FFT frontend (numpy, torch and cupy) ---------------------------------


def real_dtype_name(x: Any) -> str:
    """numpy name of ``x``'s dtype (``"float32"``, ``"complex64"``, ``"int64"``, ``"bool"``, ...)."""
    if is_torch(x):
        return str(x.dtype).removeprefix("torch.")
    return np.dtype(x.dtype).name


def astype(x: Any, dtype_name: str) -> Any:
    """Cast ``x`` to the dtype named by numpy (no copy when it already has it)."""
    if is_torch(x):
        torch = _torch()
        name = {"complex32": "complex32"}.get(dtype_name, dtype_name)
        return x.to(getattr(torch, name))
    if is_cupy(x):
        return x.astype(dtype_name, copy=False)
    return np.asarray(x).astype(dtype_name, copy=False)


def resize_axis(x: Any, axis: int, n: int) -> Any:
    """Truncate or zero-pad ``x`` along ``axis`` to length ``n`` (numpy.fft's rule for ``n`` / ``s``)."""
    length = x.shape[axis]
    if length == n:
        return x
    if length > n:
        index = [slice(None)] * x.ndim
        index[axis] = slice(0, n)
        return x[tuple(index)]
    if is_torch(x):
        torch = _torch()
        shape = list(x.shape)
        shape[axis] = n - length
        return torch.cat([x, torch.zeros(shape, dtype=x.dtype, device=x.device)], dim=axis)
    xp = _cupy() if is_cupy(x) else np
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, n - length)
    return xp.pad(x, widths)


def conj(x: Any) -> Any:
    if is_torch(x):
        return x.conj().resolve_conj()
    return x.conj()


def shape(x: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in x.shape)
