"""What the backends whose device kernelkit runs (opencl, vulkan) ask kernelkit the same way: the probe and
the device pin. Imports nothing of kernelkit's runtimes until called.
"""

from __future__ import annotations

import importlib
import importlib.util
import os


def probe(runtime: str, binding: str, missing: str) -> str | None:
    """Why ``kernelkit.<runtime>`` cannot run here, or None: ``missing`` when the Python binding
    ``binding`` is not installed (looked up without importing it), else kernelkit's probe, under which a
    device counts only once a small kernel has been built and run on it."""
    if importlib.util.find_spec(binding) is None:
        return missing
    try:
        module = importlib.import_module(f"kernelkit.{runtime}")
    except Exception as error:  # a broken install
        return f"kernelkit.{runtime} failed to import: {type(error).__name__}: {error}"
    return module.probe()


def pinned_by(runtime: str) -> str | None:
    """``"<VARIABLE>='...'"`` when the user set ``kernelkit.<runtime>``'s device variable: "auto" then stops
    at that backend if it cannot run, instead of moving on to another."""
    name = importlib.import_module(f"kernelkit.{runtime}").DEVICE_ENV
    value = os.environ.get(name, "")
    return f"{name}={value!r}" if value.strip() else None
