"""The operations beyond the FFT family, as generated kernels, for every device backend (opencl, cuda,
metal) at once.

Each operation is a function ``op(rt, inputs, params) -> DeviceArray`` in one of the
``specux._runtime.*_exec`` modules (table below): ``rt`` a kernelkit device runtime, ``inputs`` a tuple of
:class:`~specux._runtime.device_array.DeviceArray` (one per array argument of the public function:
``(y,)`` for stft, ``(in1, in2)`` for fftconvolve, already swapped as the parameters say), ``params`` the
frozen dataclass of :mod:`specux._validate`. The function allocates its result and temporaries with
``rt.alloc`` and never touches host memory except to read small tables. It wraps its launches in
``rt.batch()`` (one submission on Metal and Vulkan) and downloads anything it must look at (a NOLA check)
only after the batch. It runs on any runtime, so a backend only says which runtime and how host arrays
travel; :func:`host_call` is that travel for numpy inputs.

An operation whose exec module cannot be imported is simply not served (it shows in :func:`specux.backends`).
"""

from __future__ import annotations

import importlib
import threading
from functools import cache
from typing import Any

import numpy as np

from specux._runtime import device_array as da

#: public operation -> the ``specux._runtime`` module holding the function of that name
EXEC_MODULES = {
    "stft": "spectral_exec",
    "istft": "spectral_exec",
    "melspectrogram": "feature_exec",
    "mfcc": "feature_exec",
    "lfcc": "feature_exec",
    "chroma_stft": "feature_exec",
    "fftconvolve": "convolve_exec",
    "cqt": "cq_exec",
    "vqt": "cq_exec",
    "chroma_cqt": "cq_exec",
    "icqt": "icq_exec",
    "griffinlim_cqt": "icq_exec",
    "power_to_db": "feature_exec",
    "amplitude_to_db": "feature_exec",
}

# one host call at a time per runtime: kernelkit's runtimes keep per-runtime scratch (tables, staging)
_locks: dict[int, threading.Lock] = {}
_locks_guard = threading.Lock()


@cache
def implementation(op: str) -> Any:
    """The exec function of ``op``, running with its op-level plan (:mod:`specux._runtime.op_tuning`), or
    None when its module is missing or lacks it."""
    module_name = EXEC_MODULES.get(op)
    if module_name is None:
        return None
    try:
        module = importlib.import_module(f"specux._runtime.{module_name}")
    except ImportError:
        return None
    fn = getattr(module, op, None)
    if fn is None:
        return None
    from specux._runtime import op_tuning  # with the exec modules: it needs kernelkit's runtime layer

    return op_tuning.planned(op, fn)


def available_ops() -> frozenset[str]:
    """The generated operations this build has."""
    return frozenset(op for op in EXEC_MODULES if implementation(op) is not None)


def _lock(rt: Any) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(id(rt), threading.Lock())


def host_inputs(op: str, x: Any) -> tuple[np.ndarray, ...]:
    """The array arguments of ``op`` as the frontend passes them (fftconvolve: the pair)."""
    if op == "fftconvolve":
        return tuple(np.asarray(v) for v in x)
    return (np.asarray(x),)


def host_call(rt: Any, op: str, x: Any, params: Any) -> np.ndarray:
    """Run generated ``op`` on numpy input(s) ``x``: upload, compute on the device, download."""
    fn = implementation(op)
    if fn is None:  # pragma: no cover - the backend lists only available ops
        raise AttributeError(op)
    with _lock(rt):
        inputs = tuple(da.upload(rt, a) for a in host_inputs(op, x))
        out = fn(rt, inputs, params)
        return da.download(rt, out)


class GeneratedOps:
    """Mixin of a device backend: every available generated operation as a method ``op(x, params)`` that
    runs numpy inputs on ``self.runtime``."""

    runtime: Any

    def _generated_call(self, op: str, x: Any, params: Any) -> Any:
        """Run generated ``op``; numpy inputs by default (a backend with device arrays overrides this)."""
        return host_call(self.runtime, op, x, params)

    def __getattr__(self, op: str) -> Any:
        if op in EXEC_MODULES and implementation(op) is not None:
            return lambda x, params: self._generated_call(op, x, params)
        raise AttributeError(f"{type(self).__name__} has no attribute {op!r}")
