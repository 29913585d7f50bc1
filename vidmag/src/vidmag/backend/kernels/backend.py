"""What the cuda and metal backends' ``probe()`` and ``create()`` share: kernelkit's probe of a runtime, and
a backend of the shared kernel tier (primitives, fused tier, Riesz pipelines) on a
:class:`~vidmag.backend.kernels.device.KernelDevice`. (The vulkan backend has primitives and a fused tier of
its own, the opencl one its own kernels, so neither comes here.) Importing this module imports no device
library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vidmag.backend.kernels.device import KernelDevice

__all__ = ["create", "probe"]


def probe(runtime: str) -> str | None:
    """Why kernelkit's ``runtime`` cannot run here, or None when it can.

    Parameters
    ----------
    runtime : str
        The kernelkit module, ``"cuda"`` or ``"metal"``.

    Returns
    -------
    str or None
        kernelkit's own reason with its remedy, or that ``kernelkit.<runtime>`` failed to import (a broken
        install); None when it runs.

    See Also
    --------
    create : the backend once it can run.

    Examples
    --------
    >>> from vidmag.backend.kernels.backend import probe
    >>> probe.__name__
    'probe'
    """
    try:
        module = importlib.import_module(f"kernelkit.{runtime}")
    except Exception as error:  # a broken install
        return f"kernelkit.{runtime} failed to import: {type(error).__name__}: {error}"
    return module.probe()


def create(device: KernelDevice, name: str) -> Any:
    """The backend named ``name``: the pipelines over the shared fused tier, the shared primitives and the
    Riesz pipelines of :mod:`vidmag.backend.kernels.riesz`, on ``device``.

    Parameters
    ----------
    device : KernelDevice
        The device (e.g. :class:`~vidmag.backend.cuda.device.CudaDevice`).
    name : str
        The backend's name (``"cuda"``, ``"metal"``).

    Returns
    -------
    vidmag.backend.phase.PhaseBackend
        The backend.

    See Also
    --------
    vidmag.backend.kernels.riesz.phase_backend

    Examples
    --------
    >>> from vidmag.backend.kernels.backend import create
    >>> create.__name__
    'create'
    """
    from vidmag.backend.generic import bind
    from vidmag.backend.kernels.fused import KernelFused
    from vidmag.backend.kernels.operations import KernelOperations
    from vidmag.backend.kernels.riesz import phase_backend

    operations = KernelOperations(device)
    return phase_backend(bind(operations, name=name, fused=KernelFused(operations, name=name)))
