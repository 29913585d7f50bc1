"""The opencl backend's probe reasons, device choice and kernel files."""

from __future__ import annotations

import importlib.util
from importlib import resources


def test_probe_names_the_missing_extra(monkeypatch):
    from vidmag.backend import opencl

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pyopencl" else real(name, *a)
    )
    assert opencl.probe() == "pyopencl is not installed (pip install pyopencl)"


def test_no_platform_is_a_precise_reason(monkeypatch, require_backend):
    require_backend("opencl")
    from kernelkit import opencl as runtime

    monkeypatch.setattr(runtime, "_reports", None)  # probe again, seeing no platform
    monkeypatch.setattr(runtime, "_probe_failure", None)
    monkeypatch.setattr(runtime, "_import_cl", lambda: type("cl", (), {"get_platforms": staticmethod(list)}))
    device, reason = runtime.choose()
    assert device is None and reason.startswith("no OpenCL platform found")


def test_a_bad_device_choice_is_a_precise_reason(monkeypatch, require_backend):
    require_backend("opencl")
    from kernelkit import opencl as runtime

    monkeypatch.setenv(runtime.DEVICE_ENV, "7:7")
    device, reason = runtime.choose()
    assert device is None and runtime.DEVICE_ENV in reason


def test_kernel_files_are_package_data_and_build(require_backend):
    import pyopencl as cl

    from vidmag.backend.opencl.device import kernel_source as _kernel_source

    _, backend = require_backend("opencl")
    kernels = resources.files("vidmag.backend.opencl").joinpath("kernels")
    files = sorted(p.name for p in kernels.iterdir() if p.name.endswith(".cl"))
    assert files == ["arith.cl", "colour.cl", "common.cl", "fused.cl", "resample.cl", "riesz.cl",
                     "temporal.cl"]
    rt = backend.operations.rt
    for name in files:
        if name != "common.cl":  # definitions only, put in front of every other file
            program = cl.Program(rt.context, _kernel_source(name)).build()
            assert program.all_kernels(), name
