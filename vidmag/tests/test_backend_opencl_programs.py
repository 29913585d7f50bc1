"""vidmag's kernel files as kernelkit Programs: parameters read from the source, compiled and disk-cached by
kernelkit, constant tables in the runtime's bounded cache."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pytest


@pytest.fixture
def runtime(require_backend, tmp_path, monkeypatch):
    """A fresh runtime on the backend's device, with the disk cache in a temporary directory."""
    from kernelkit import cache
    from kernelkit.opencl import OpenCLRuntime

    _, backend = require_backend("opencl")
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    made = []

    def make():
        made.append(OpenCLRuntime(backend.operations.rt.device))
        return made[-1]

    yield make
    for rt in made:
        rt.close()


def test_every_kernel_file_is_a_program_that_agrees_with_the_driver(require_backend):
    import pyopencl as cl

    from vidmag.backend.opencl.device import KERNEL_FILES, kernel_source, program

    _, backend = require_backend("opencl")
    files = sorted(p.name[:-3] for p in resources.files("vidmag.backend.opencl").joinpath("kernels").iterdir()
                   if p.name.endswith(".cl") and p.name != "common.cl")
    assert files == sorted(KERNEL_FILES)
    context = backend.operations.rt.context
    for file in KERNEL_FILES:
        prog = program(file)
        assert prog.source == kernel_source(f"{file}.cl") and prog.kernels
        # the driver's reading of the same source: the same kernels, with the same parameters in order
        built = cl.Program(context, prog.source).build(options=["-cl-std=CL1.2", "-cl-kernel-arg-info"])
        assert sorted(k.function_name for k in built.all_kernels()) == sorted(k.name for k in prog.kernels)
        for signature in prog.kernels:
            handle = getattr(built, signature.name)
            names = [handle.get_arg_info(i, cl.kernel_arg_info.NAME) for i in range(handle.num_args)]
            assert names == [p.name for p in signature.params], signature.name
            pointers = [
                handle.get_arg_info(i, cl.kernel_arg_info.ADDRESS_QUALIFIER)
                == cl.kernel_arg_address_qualifier.GLOBAL
                for i in range(handle.num_args)
            ]
            assert pointers == [p.pointer for p in signature.params], signature.name


def test_programs_are_compiled_once_and_read_back_from_the_disk_cache(runtime, tmp_path, monkeypatch):
    from vidmag.backend.opencl.device import Device

    first = Device(runtime())
    first.kernel("arith", "axpby")
    entries = list((tmp_path / "cache" / "kernels").glob("*.clbin"))
    assert len(entries) == 1
    # a second runtime (as in the next process) loads the binary without building
    second = runtime()

    def no_build(program):
        raise AssertionError(f"{program.name} was built again")

    monkeypatch.setattr(second, "_build", no_build)
    _check_axpby(Device(second))
    # a truncated entry never reaches the driver: it is rebuilt
    entries[0].write_bytes(entries[0].read_bytes()[: entries[0].stat().st_size // 2])
    _check_axpby(Device(runtime()))


def _check_axpby(device) -> None:
    a, b = np.arange(6, dtype=np.float32), np.ones(6, np.float32)
    out = device.empty((6,))
    device.launch("arith", "axpby", (6,), device.to_device(a), device.to_device(b), out, 2.0, -1.0)
    np.testing.assert_array_equal(out.get(), 2 * a - b)


def test_constant_tables_are_shared_by_content_and_bounded(runtime):
    from vidmag.backend.opencl.device import Device

    rt = runtime()
    device = Device(rt)
    table = np.linspace(0, 1, 9)
    assert device.constant(table, np.float32) is device.constant(table.copy(), np.float32)
    for i in range(rt._tables.max_entries + 50):
        device.constant(np.full(3, i), np.int32)
    assert len(rt._tables) <= rt._tables.max_entries


def test_a_tail_launch_covers_only_the_tail(require_backend):
    # the streaming pipelines run the scalar scan on the last p % 8 samples with a global offset
    _, backend = require_backend("opencl")
    device = backend.operations.rt
    p, n = 21, 2
    x = np.arange(n * p, dtype=np.float32).reshape(n, p)
    states = [device.to_device(np.zeros(p, np.float32)) for _ in range(3)]
    xd = device.to_device(x)
    tail = p - p % 8
    coefficients = (0.0, 1.0, 0.0, 0.0, 0.0, 0.0)  # lp1 = x, lp2 = 0: the output is gain * x
    device.launch("temporal", "first_order_scan", (p % 8,), xd, *states, n, p, *coefficients, 2.0, 2.0, 2.0,
                  offset=(tail,))
    out = xd.get()
    np.testing.assert_array_equal(out[:, :tail], x[:, :tail])
    np.testing.assert_array_equal(out[:, tail:], 2 * x[:, tail:])
