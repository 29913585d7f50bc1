"""Shared helpers of kernelkit's tests: the required-device rule.

A test that needs a device (or a check such as NVRTC's compile) that this machine cannot run is a skip with
the reason, unless the device's name is listed in ``KERNELKIT_REQUIRE_DEVICES`` (comma-separated, e.g.
``opencl,vulkan,nvrtc,msl``; CI sets it): then the same test fails with the reason, so a device that stopped
working on CI cannot hide behind a skip.
"""

from __future__ import annotations

import os

import pytest

REQUIRE_ENV = "KERNELKIT_REQUIRE_DEVICES"


def required_devices() -> set[str]:
    return {name.strip() for name in os.environ.get(REQUIRE_ENV, "").split(",") if name.strip()}


def require_or_skip(name: str, reason: str | None) -> None:
    """Nothing when ``reason`` is None; else skip with it, or fail when ``name`` is required."""
    if reason is None:
        return
    message = f"{name} cannot run here: {reason}"
    if name in required_devices():
        pytest.fail(f"{message} (required by {REQUIRE_ENV})")
    pytest.skip(message)


@pytest.fixture(scope="session")
def require():
    """``require(name, reason)``: skip with ``reason`` (None: go on), or fail when ``name`` is listed in
    ``KERNELKIT_REQUIRE_DEVICES``."""
    return require_or_skip
