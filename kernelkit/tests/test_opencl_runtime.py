"""kernelkit.opencl: the probe's verdicts (a device that cannot build, a device variable naming nothing,
several platforms), 1-, 2- and 3-D launches, many kernels in one program, 64-bit scalars, compile errors and
closing. Runs on PoCL (Debian's pocl-opencl-icd and / or the wheel's)."""

from __future__ import annotations

import numpy as np
import pytest

from kernelkit import cache, opencl
from kernelkit.dialects import OPENCL, Param
from kernelkit.program import KernelSignature, LaunchConfig, Program


@pytest.fixture
def rt(require):
    require("opencl", opencl.probe())
    return opencl.default_runtime()


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """kernelkit.opencl with no verdicts yet and an empty kernel cache; the real verdicts and runtimes (which
    other tests use) come back afterwards."""
    pytest.importorskip("pyopencl")
    for name, value in (("_reports", None), ("_probe_failure", None), ("_devices", {}), ("_runtimes", {})):
        monkeypatch.setattr(opencl, name, value)
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(opencl.DEVICE_ENV, raising=False)
    yield opencl
    for runtime in opencl._runtimes.values():
        runtime.close()


LOG = "error: unknown target CPU 'generic'"


def _fail_builds(monkeypatch, which=lambda device: True):
    """Make every build on the devices ``which`` selects fail as the wheel's PoCL does on an AMD Zen 5."""
    build = opencl.OpenCLRuntime._build

    def fail(self, program):
        return (False, None, LOG) if which(self.device) else build(self, program)

    monkeypatch.setattr(opencl.OpenCLRuntime, "_build", fail)


def test_a_device_whose_build_fails_cannot_run_and_the_reason_says_why(fresh, monkeypatch):
    _fail_builds(monkeypatch)
    reports = fresh.reports()
    assert reports and all(r.reason and LOG in r.reason for r in reports)
    reason = fresh.probe()
    assert reason is not None and "no OpenCL device passed the probe" in reason
    assert LOG in reason and "apt-get install pocl-opencl-icd" in reason
    with pytest.raises(RuntimeError, match="OpenCL cannot run here: no OpenCL device passed the probe"):
        fresh.default_runtime()


def test_the_first_device_that_passes_the_probe_is_used(fresh, monkeypatch):
    import pyopencl as cl

    if sum(len(platform.get_devices()) for platform in cl.get_platforms()) < 2:
        pytest.skip("one OpenCL device here: nothing to choose between")
    first = cl.get_platforms()[0].get_devices()[0]
    _fail_builds(monkeypatch, lambda device: device == first)
    report, reason = fresh.choose()
    assert reason is None and (report.platform_index, report.device_index) != (0, 0)
    failed = next(r for r in fresh.reports() if (r.platform_index, r.device_index) == (0, 0))
    assert LOG in failed.reason
    # naming the failing device does not move to the good one
    monkeypatch.setenv(fresh.DEVICE_ENV, "0:0")
    reason = fresh.probe()
    assert reason is not None and "KERNELKIT_OPENCL_DEVICE='0:0' names" in reason and "cannot run" in reason
    assert LOG in reason


@pytest.mark.parametrize(
    "value, match",
    [("9:9", "names no OpenCL device"), ("first", "is not PLATFORM:DEVICE"), ("0", "is not PLATFORM:DEVICE")],
)
def test_a_device_variable_naming_no_device_gives_a_reason(fresh, monkeypatch, value, match):
    monkeypatch.setenv(fresh.DEVICE_ENV, value)
    reason = fresh.probe()
    assert reason is not None and f"KERNELKIT_OPENCL_DEVICE={value!r}" in reason and match in reason
    with pytest.raises(RuntimeError, match=match):
        fresh.default_runtime()


def test_a_device_variable_naming_a_good_device_uses_it(fresh, monkeypatch, require):
    monkeypatch.setenv(fresh.DEVICE_ENV, "0:0")
    report, reason = fresh.choose()
    require("opencl", reason)
    assert (report.platform_index, report.device_index) == (0, 0)


_ND = """\
__kernel void nd(__global int* out, __global int* sizes) {
    const int x = (int)get_global_id(0), y = (int)get_global_id(1), z = (int)get_global_id(2);
    const int nx = (int)get_global_size(0), ny = (int)get_global_size(1);
    out[(z * ny + y) * nx + x] = x + 100 * y + 10000 * z + 1000000 * (int)get_local_id(0);
    if (x == 0 && y == 0 && z == 0) {
        for (int a = 0; a < 3; ++a) {
            sizes[a] = (int)get_local_size(a);
            sizes[a + 3] = (int)get_num_groups(a);
        }
    }
}
__kernel void fill(__global int* out, const int value) { out[get_global_id(0)] = value; }
__kernel void wide(__global long* out, const long n, const uint u) {
    out[0] = n >> 32; out[1] = n; out[2] = u;
}
"""
_ND_PROGRAM = Program(
    _ND,
    OPENCL,
    (
        KernelSignature("nd", (Param("out", "int", True), Param("sizes", "int", True))),
        KernelSignature("fill", (Param("out", "int", True), Param("value", "int"))),
        KernelSignature("wide", (Param("out", "i64", True), Param("n", "i64"), Param("u", "u32"))),
    ),
    name="nd",
)


@pytest.mark.parametrize("grid, block", [((6,), (4,)), ((3, 5), (4, 2)), ((2, 3, 2), (2, 2, 3))])
def test_launches_of_one_two_and_three_axes(rt, grid, block):
    config = LaunchConfig(grid, block)
    g = config.global_size + (1,) * (3 - config.ndim)
    out, sizes = rt.alloc(4 * int(np.prod(g))), rt.alloc(4 * 6)
    rt.kernel(_ND_PROGRAM, "nd").launch(config, out, sizes)
    got = rt.download(out, np.empty(g[::-1], np.int32))
    z, y, x = np.meshgrid(np.arange(g[2]), np.arange(g[1]), np.arange(g[0]), indexing="ij")
    want = x + 100 * y + 10000 * z + 1000000 * (x % config.block3[0])
    np.testing.assert_array_equal(got, want)
    assert rt.download(sizes, np.empty(6, np.int32)).tolist() == [*config.block3, *config.grid3]


def test_many_kernels_of_one_program_and_64_bit_scalars(rt):
    code = rt.compile(_ND_PROGRAM)
    assert sorted(code.kernels) == ["fill", "nd", "wide"]
    out = rt.alloc(4 * 32)
    code.kernel("fill").launch(LaunchConfig(4, 8), out, -7)
    assert (rt.download(out, np.empty(32, np.int32)) == -7).all()
    wide = rt.alloc(8 * 3)
    n = 3 * 2**40 + 5  # an element count past 2**31 reaches the kernel whole
    code.kernel("wide").launch(LaunchConfig(1, 1), wide, n, 2**32 - 1)
    assert rt.download(wide, np.empty(3, np.int64)).tolist() == [n >> 32, n, 2**32 - 1]
    assert rt.compile(_ND_PROGRAM) is code  # compiled once per runtime


def test_a_compile_error_raises_with_the_log_and_the_dumped_source(require, monkeypatch, tmp_path):
    require("opencl", opencl.probe())
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    report, _ = opencl.choose()
    rt = opencl.OpenCLRuntime(opencl._devices[(report.platform_index, report.device_index)])
    source = "__kernel void bad(__global float* a) { a[0] = nope; }\n"
    bad = Program(source, OPENCL, (KernelSignature("bad"),), name="bad")
    try:
        with pytest.raises(cache.KernelCompileError) as info:
            rt.compile(bad)
    finally:
        rt.close()
    assert "nope" in info.value.log and info.value.source_path.read_text() == bad.source
    assert info.value.source_path.parent == tmp_path / "failed"


def test_a_closed_runtime_refuses_work_and_closing_twice_is_harmless(require):
    require("opencl", opencl.probe())
    report, _ = opencl.choose()
    rt = opencl.OpenCLRuntime(opencl._devices[(report.platform_index, report.device_index)])
    kernel = rt.kernel(_ND_PROGRAM, "fill")
    out = rt.alloc(4 * 8)
    kernel.launch(LaunchConfig(1, 8), out, 1)
    rt.close()
    rt.close()
    with pytest.raises(RuntimeError, match="closed"):
        kernel.launch(LaunchConfig(1, 8), out, 1)
    with pytest.raises(RuntimeError, match="closed"):
        rt.compile(_ND_PROGRAM)


def test_a_program_in_another_dialect_is_refused(rt):
    from kernelkit.dialects import CUDA

    with pytest.raises(ValueError, match="compiles opencl source"):
        rt.compile(Program("", CUDA, (), name="cuda_text"))


def test_max_block_is_the_devices_work_group_limit_and_a_block_of_it_runs(rt):
    """``max_block`` is what plans check a chosen block against: the device's own limit, and usable."""
    limit = rt.max_block()
    assert limit == int(rt.device.max_work_group_size) >= 1
    block = min(limit, 1024)
    config = LaunchConfig((2,), (block,))
    out, sizes = rt.alloc(4 * 2 * block), rt.alloc(4 * 6)
    rt.kernel(_ND_PROGRAM, "nd").launch(config, out, sizes)
    assert rt.download(sizes, np.empty(6, np.int32)).tolist()[:1] == [block]
