"""The opencl backend's probe is kernelkit's: a device counts only once it built and ran a kernel; what "auto"
does when no device can, and when the user pinned one with KERNELKIT_OPENCL_DEVICE."""

from __future__ import annotations

import re

import pytest

from kernelkit import opencl as kernelkit_opencl
from vidmag import backend
from vidmag.backend import opencl, registry
from vidmag.backend.registry import BackendUnavailableError

pytest.importorskip("pyopencl", reason="these tests are about OpenCL devices; pyopencl is not installed")

#: what the PoCL of the pyopencl wheels reports on an AMD Zen 5: listed, but it builds nothing
WHEEL_POCL_ON_ZEN5 = kernelkit_opencl.DeviceReport(
    0, 0, "Portable Computing Language", "cpu-x86-64-AMD Ryzen 9 9950X", "cpu",
    "building or running a probe kernel failed: RuntimeError: error: unknown target CPU 'generic'",
)


@pytest.fixture
def fresh_registry(monkeypatch):
    """A registry that probes again, over opencl, torch and cpu only (a GPU backend present on the machine
    would otherwise answer "auto" first), with no device pinned."""
    monkeypatch.setattr(registry, "_reasons", {})
    monkeypatch.setattr(registry, "_instances", {})
    rows = tuple(spec for spec in registry.BACKENDS if spec.name in ("opencl", "torch", "cpu"))
    monkeypatch.setattr(registry, "BACKENDS", rows)
    monkeypatch.delenv(kernelkit_opencl.DEVICE_ENV, raising=False)
    monkeypatch.delenv("VIDMAG_OPENCL_DEVICE", raising=False)
    return registry


def _next_after_opencl() -> str:
    return next(name for name in ("torch", "cpu") if registry.unavailable_reason(name) is None)


def test_the_probe_is_kernelkits(monkeypatch):
    monkeypatch.setattr(kernelkit_opencl, "probe", lambda: "kernelkit's reason")
    assert opencl.probe() == "kernelkit's reason"


def test_only_a_device_that_builds_nothing_means_opencl_cannot_run_and_auto_moves_on(
    monkeypatch, fresh_registry, capsys
):
    monkeypatch.setattr(kernelkit_opencl, "reports", lambda: [WHEEL_POCL_ON_ZEN5])
    reason = registry.unavailable_reason("opencl")
    assert "no OpenCL device passed the probe" in reason
    assert "unknown target CPU 'generic'" in reason and "apt-get install pocl-opencl-icd" in reason
    assert backend.select("auto")[0] == _next_after_opencl()
    with pytest.raises(BackendUnavailableError, match="unknown target CPU"):
        backend.select("opencl")
    from vidmag.cli import main

    assert main(["backends"]) == 0
    reasons = [row for row in capsys.readouterr().out.splitlines() if row.startswith("opencl:")]
    assert len(reasons) == 1 and "unknown target CPU 'generic'" in reasons[0]


def test_a_pinned_device_that_does_not_exist_stops_auto(monkeypatch, fresh_registry):
    # VIDMAG_OPENCL_DEVICE=abc used to make "auto" move on to torch without a word
    monkeypatch.setenv(kernelkit_opencl.DEVICE_ENV, "abc")
    with pytest.raises(BackendUnavailableError) as error:
        backend.select("auto")
    message = str(error.value)
    assert "'opencl'" in message and "KERNELKIT_OPENCL_DEVICE='abc'" in message
    assert "PLATFORM:DEVICE" in message  # the reason: what the value should look like


def test_a_pinned_device_that_fails_its_probe_stops_auto(monkeypatch, fresh_registry):
    monkeypatch.setattr(kernelkit_opencl, "reports", lambda: [WHEEL_POCL_ON_ZEN5])
    monkeypatch.setenv(kernelkit_opencl.DEVICE_ENV, "0:0")
    with pytest.raises(BackendUnavailableError, match="unknown target CPU 'generic'") as error:
        backend.select("auto")
    assert "KERNELKIT_OPENCL_DEVICE='0:0'" in str(error.value)


def test_unpinned_auto_is_unchanged_and_a_blank_pin_is_no_pin(monkeypatch, fresh_registry):
    monkeypatch.setattr(kernelkit_opencl, "reports", lambda: [WHEEL_POCL_ON_ZEN5])
    monkeypatch.setenv(kernelkit_opencl.DEVICE_ENV, "  ")
    assert opencl.pinned_by() is None
    assert backend.select("auto")[0] == _next_after_opencl()


def test_a_pinned_device_that_runs_is_used(monkeypatch, require_backend, fresh_registry):
    require_backend("opencl")
    report, _ = kernelkit_opencl.choose()
    monkeypatch.setenv(kernelkit_opencl.DEVICE_ENV, f"{report.platform_index}:{report.device_index}")
    assert backend.select("auto")[0] == "opencl"


OLD = "VIDMAG_OPENCL_DEVICE"  # earlier builds' name of KERNELKIT_OPENCL_DEVICE


@pytest.mark.parametrize("value", ["abc", "0:0"])
def test_the_old_variable_alone_is_an_error_naming_the_new_one(monkeypatch, fresh_registry, value):
    # issue 19 item 7: VIDMAG_OPENCL_DEVICE, renamed KERNELKIT_OPENCL_DEVICE, was silently ignored: whoever
    # still sets it wants OpenCL on that device, and got whatever "auto" found first
    import numpy as np

    import vidmag

    monkeypatch.setenv(OLD, value)
    said = rf"{OLD}={value!r} is set, but {OLD} is no longer read: .*set KERNELKIT_OPENCL_DEVICE={value!r}"
    assert re.search(said, registry.unavailable_reason("opencl"))
    assert opencl.pinned_by() == f"{OLD}={value!r}"
    frames = np.full((12, 48, 64, 3), 128, np.uint8)
    params = dict(alpha=10.0, lambda_c=8.0, r1=0.4, r2=0.05, chrom_attenuation=0.5)
    for name in ("auto", "opencl"):  # "auto" stops at opencl: it does not pass over to torch or cpu
        with pytest.raises(BackendUnavailableError, match=said):
            backend.select(name)
        with pytest.raises(BackendUnavailableError, match=said):
            vidmag.magnify(frames, fs=30.0, pipeline="laplacian_iir", backend=name, **params)
    with pytest.raises(BackendUnavailableError, match=rf"while {OLD} is set"):
        backend.select("auto")
    from vidmag.pipelines import select_backend

    with pytest.raises(BackendUnavailableError, match=said):  # the phase pipelines' own walk too
        select_backend("auto", "riesz_iir")


def test_the_old_variable_beside_a_different_new_one_is_an_error_naming_both(monkeypatch, fresh_registry):
    monkeypatch.setenv(OLD, "1:0")
    monkeypatch.setenv(kernelkit_opencl.DEVICE_ENV, "0:0")
    with pytest.raises(BackendUnavailableError,
                       match=rf"{OLD}='1:0' and KERNELKIT_OPENCL_DEVICE='0:0' disagree: .*unset {OLD}"):
        backend.select("auto")


def test_the_old_variable_set_to_the_new_ones_value_is_accepted(monkeypatch, require_backend, fresh_registry):
    require_backend("opencl")
    report, _ = kernelkit_opencl.choose()
    device = f"{report.platform_index}:{report.device_index}"
    monkeypatch.setenv(OLD, device)
    monkeypatch.setenv(kernelkit_opencl.DEVICE_ENV, f" {device}")
    assert registry.unavailable_reason("opencl") is None
    assert opencl.pinned_by() == f"KERNELKIT_OPENCL_DEVICE=' {device}'"
    assert backend.select("auto")[0] == "opencl"


def test_a_blank_old_variable_is_no_setting(monkeypatch, require_backend, fresh_registry):
    require_backend("opencl")
    monkeypatch.setenv(OLD, "  ")
    assert registry.unavailable_reason("opencl") is None and opencl.pinned_by() is None


def test_a_pinned_device_that_fails_stops_auto_for_the_phase_pipelines_too(monkeypatch, fresh_registry):
    # the Riesz pipelines choose among their own backends (vidmag.params.PHASE_BACKENDS, opencl among them):
    # a pinned opencl device that cannot run stops that choice as it stops backend.select("auto")
    from vidmag.pipelines import select_backend

    monkeypatch.setattr(kernelkit_opencl, "reports", lambda: [WHEEL_POCL_ON_ZEN5])
    assert select_backend("auto", "riesz_iir")[0] != "opencl"  # unpinned: auto moves on
    monkeypatch.setenv(kernelkit_opencl.DEVICE_ENV, "0:0")
    with pytest.raises(BackendUnavailableError, match="unknown target CPU 'generic'") as error:
        select_backend("auto", "riesz_iir")
    assert "KERNELKIT_OPENCL_DEVICE='0:0'" in str(error.value) and "riesz_iir" in str(error.value)
