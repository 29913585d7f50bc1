"""Moving data between the custom ops' tensors and their NumPy kernels (CPU only, no copies on the way in)."""

from __future__ import annotations

import numpy as np
import torch

_NAMES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.complex64: "complex64",
    torch.complex128: "complex128",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
}
_COMPLEX_OF = {torch.float32: torch.complex64, torch.float64: torch.complex128}
_REAL_OF = {torch.complex64: torch.float32, torch.complex128: torch.float64}


def dtype_name(t: torch.Tensor) -> str:
    return _NAMES.get(t.dtype, str(t.dtype).removeprefix("torch."))


def complex_of(dtype: torch.dtype) -> torch.dtype:
    """complex64 for float32 (and complex64), complex128 for float64 (and complex128)."""
    return _COMPLEX_OF.get(dtype, dtype)


def real_of(dtype: torch.dtype) -> torch.dtype:
    return _REAL_OF.get(dtype, dtype)


def check_cpu(t: torch.Tensor, op: str) -> None:
    if t.device.type != "cpu":
        raise RuntimeError(
            f"specux::{op}: this kernel runs on the CPU backend; got a tensor on {t.device} (no specux GPU "
            "backend is registered for it in this build)"
        )


def numpy_of(t: torch.Tensor | None) -> np.ndarray | None:
    """A NumPy view of a CPU tensor (strided views stay views; conjugate / negative bits are resolved); a
    tensor on another device is copied to the host first (the windows and filter banks of a call on CUDA
    tensors, read to build its parameters; a signal never comes here from a device: the CPU ops refuse it
    first, ``check_cpu``)."""
    if t is None:
        return None
    t = t.detach()
    if t.device.type not in ("cpu", "meta"):
        t = t.cpu()
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    return t.numpy()


def tensor_of(a: np.ndarray, *inputs: np.ndarray | None) -> torch.Tensor:
    """A fresh C-contiguous tensor holding ``a``: copied when it shares memory with any of ``inputs``, is not
    writeable or not contiguous, so that a custom op never returns an alias of its arguments and its layout is
    the one its fake kernel promises (contiguous)."""
    a = np.asarray(a)
    if (
        not a.flags.writeable
        or not a.flags.c_contiguous
        or any(i is not None and np.shares_memory(a, i) for i in inputs)
    ):
        a = np.array(a, order="C", copy=True)
    return torch.from_numpy(a)

