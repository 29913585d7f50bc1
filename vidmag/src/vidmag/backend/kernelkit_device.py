"""What the backends whose device kernelkit runs (opencl, vulkan) ask kernelkit the same way: the probe and
the device pin. Imports nothing of kernelkit's runtimes until called.
"""

from __future__ import annotations

import importlib
import importlib.util
import os

#: The device variables of earlier builds, by kernelkit runtime, now kernelkit's (``DEVICE_ENV``): one still
#: set is an error naming it, never silently ignored, unless kernelkit's variable is set to the same value.
RENAMED_DEVICE_ENV = {"opencl": "VIDMAG_OPENCL_DEVICE"}


def _renamed(runtime: str) -> tuple[str, str] | None:
    """(``"<OLD>='...'"``, the reason) when the earlier build's device variable of ``runtime`` is set and
    kernelkit's is not set to the same value; None when it is not set (or blank) or agrees."""
    old = RENAMED_DEVICE_ENV.get(runtime)
    value = os.environ.get(old, "").strip() if old else ""
    if not value:
        return None
    new = importlib.import_module(f"kernelkit.{runtime}").DEVICE_ENV
    current = os.environ.get(new, "").strip()
    if current == value:
        return None  # both set, to the same device: the one that is read says what the other meant
    setting = f"{old}={value!r}"
    if current:
        return setting, (
            f"{setting} and {new}={current!r} disagree: {old} is no longer read, the device is chosen by "
            f"{new} alone; unset {old} (or set it to the same value)"
        )
    return setting, (
        f"{setting} is set, but {old} is no longer read: the device is chosen by {new} now; set "
        f"{new}={value!r} instead, and unset {old}"
    )


def probe(runtime: str, binding: str, missing: str) -> str | None:
    """Why ``kernelkit.<runtime>`` cannot run here, or None: an earlier build's device variable still set
    (:data:`RENAMED_DEVICE_ENV`), ``missing`` when the Python binding ``binding`` is not installed (looked up
    without importing it), else kernelkit's probe, under which a device counts only once a small kernel has
    been built and run on it."""
    renamed = _renamed(runtime)
    if renamed is not None:
        return renamed[1]
    if importlib.util.find_spec(binding) is None:
        return missing
    try:
        module = importlib.import_module(f"kernelkit.{runtime}")
    except Exception as error:  # a broken install
        return f"kernelkit.{runtime} failed to import: {type(error).__name__}: {error}"
    return module.probe()


def pinned_by(runtime: str) -> str | None:
    """``"<VARIABLE>='...'"`` when the user set ``kernelkit.<runtime>``'s device variable: "auto" then stops
    at that backend if it cannot run, instead of moving on to another. An earlier build's device variable
    that is still set, and not to the same value, is the pin (``"VIDMAG_OPENCL_DEVICE='...'"``)."""
    renamed = _renamed(runtime)
    if renamed is not None:
        return renamed[0]
    name = importlib.import_module(f"kernelkit.{runtime}").DEVICE_ENV
    value = os.environ.get(name, "")
    return f"{name}={value!r}" if value.strip() else None
