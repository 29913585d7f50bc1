"""Backends: choose one with :func:`select`; ``registry`` holds the table (and :func:`owner` routes a
library's arrays to their backend), ``operations`` the contract in two tiers (the primitives and the fused
tier), ``stages`` the pipelines' stages over each tier, ``generic`` the pipelines written once over them and
``bind``, ``stream`` the :class:`~vidmag.backend.stream.Stream` that ``backend.open(plan)`` returns.

Importing this package imports no GPU library.
"""

from __future__ import annotations

from vidmag.backend.registry import (
    BackendUnavailableError,
    list_backends,
    load,
    names,
    owner,
    pinned_by,
    unavailable_reason,
)

__all__ = ["BackendUnavailableError", "list_backends", "owner", "select"]


def select(name: str = "auto"):
    """Choose a backend.

    Parameters
    ----------
    name : str
        ``"auto"`` takes the first backend that can run here, in the order cuda, metal, opencl, vulkan,
        torch, cpu (the same one on every call in a process); any other name is honoured exactly or raises.
        A backend whose device the user pinned (``KERNELKIT_OPENCL_DEVICE`` for opencl,
        ``KERNELKIT_VULKAN_DEVICE`` for vulkan) is never passed over: if "auto" reaches it and it cannot
        run, that raises.

    Returns
    -------
    (str, vidmag.backend.generic.Backend)
        The backend's name and the backend.

    Raises
    ------
    ValueError
        ``name`` is neither "auto" nor a backend's name.
    BackendUnavailableError
        The named backend cannot run here, or "auto" reached a pinned backend that cannot; the message says
        why. Nothing falls back to another backend.

    Examples
    --------
    >>> from vidmag.backend import select
    >>> name, backend = select("cpu")
    >>> name
    'cpu'
    >>> name, backend = select()   # "auto": the first backend in the table that can run here
    >>> name in ("cuda", "metal", "opencl", "vulkan", "torch", "cpu")
    True
    """
    if name == "auto":
        for candidate in names():
            reason = unavailable_reason(candidate)
            if reason is None:
                return candidate, load(candidate)
            pin = pinned_by(candidate)
            if pin is not None:
                variable = pin.partition("=")[0]
                said = "" if pin in reason else f"{pin} pins its device; "
                raise BackendUnavailableError(
                    f"backend {candidate!r} cannot run here: {reason} ({said}backend='auto' does not move on "
                    f"to another backend while {variable} is set: correct it or unset it)"
                )
        # cpu can always run, so reaching this means a broken installation
        raise BackendUnavailableError("no backend can run here, not even cpu")
    return name, load(name)
