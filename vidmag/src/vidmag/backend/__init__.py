"""Backends: choose one with :func:`select`; ``registry`` holds the table, ``operations`` the primitives
contract and ``generic`` the pipelines written over it.

Importing this package imports no GPU library.
"""

from __future__ import annotations

from vidmag.backend.registry import BackendUnavailableError, list_backends, load, names, unavailable_reason

__all__ = ["BackendUnavailableError", "list_backends", "select"]


def select(name: str = "auto"):
    """Choose a backend.

    Parameters
    ----------
    name : str
        ``"auto"`` takes the first backend that can run here, in the order cuda, metal, vulkan, opencl,
        torch, cpu (the same one on every call in a process); any other name is honoured exactly or raises.

    Returns
    -------
    (str, vidmag.backend.generic.Backend)
        The backend's name and the backend.

    Raises
    ------
    ValueError
        ``name`` is neither "auto" nor a backend's name.
    BackendUnavailableError
        The named backend cannot run here; the message says why. Nothing falls back to another backend.
    """
    if name == "auto":
        for candidate in names():
            if unavailable_reason(candidate) is None:
                return candidate, load(candidate)
        # cpu can always run, so reaching this means a broken installation
        raise BackendUnavailableError("no backend can run here, not even cpu")
    return name, load(name)
