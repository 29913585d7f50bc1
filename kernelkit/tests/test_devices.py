"""kernelkit.devices(): every runtime with None or the reason it cannot run; importing kernelkit loads no GPU
library."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import kernelkit
from kernelkit import RuntimeStatus, _devices

GPU_MODULES = ("pyopencl", "cuda", "cuda.bindings", "vulkan", "Metal", "torch", "cupy")


def test_importing_kernelkit_imports_no_gpu_library():
    code = (
        "import sys, kernelkit; kernelkit.devices; kernelkit.Program; kernelkit.LaunchConfig; "
        "import kernelkit.dialects, kernelkit.emitter, kernelkit.program, kernelkit.cache, kernelkit.tuning; "
        f"print(sorted(m for m in {GPU_MODULES!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_devices_lists_every_runtime_with_none_or_a_reason(require):
    rows = kernelkit.devices()
    assert [r.name for r in rows] == ["cuda", "opencl", "metal", "vulkan"]
    for r in rows:
        assert isinstance(r, RuntimeStatus) and r.available == (r.reason is None)
        assert r.reason is None or (isinstance(r.reason, str) and r.reason.strip()), r
    by_name = {r.name: r for r in rows}
    if sys.platform != "darwin":
        assert by_name["metal"].reason == f"Metal needs macOS (this is {sys.platform})"
    require("opencl", by_name["opencl"].reason)  # PoCL is here, and CI requires it


def test_the_listing_agrees_with_each_runtimes_probe():
    for row in kernelkit.devices():
        try:
            module = importlib.import_module(f"kernelkit.{row.name}")
        except ModuleNotFoundError:
            assert "has no" in row.reason
            continue
        assert row.reason == module.probe(), row.name


def test_a_missing_or_broken_runtime_module_is_a_reason(monkeypatch):
    real = importlib.import_module

    def fake(name, *args):
        if name == "kernelkit.vulkan":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        if name == "kernelkit.metal":
            raise ImportError("libobjc went away")
        return real(name, *args)

    monkeypatch.setattr(_devices.importlib, "import_module", fake)
    rows = {r.name: r.reason for r in kernelkit.devices()}
    assert rows["vulkan"] == "this kernelkit has no vulkan runtime (kernelkit.vulkan is not part of it)"
    assert rows["metal"] == "kernelkit.metal cannot be imported: ImportError: libobjc went away"


def test_a_probe_that_raises_is_reported_not_raised(monkeypatch):
    from kernelkit import metal

    def boom():
        raise OSError("driver exploded")

    monkeypatch.setattr(metal, "probe", boom)
    rows = {r.name: r.reason for r in kernelkit.devices()}
    assert rows["metal"] == "the metal probe failed: OSError: driver exploded"


@pytest.mark.parametrize("name", ["cuda", "metal"])
def test_the_gpu_runtime_modules_import_without_their_gpu(name):
    module = importlib.import_module(f"kernelkit.{name}")
    reason = module.probe()
    assert reason is None or isinstance(reason, str)
