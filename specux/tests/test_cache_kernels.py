"""The kernel cache: keys, directory and dump switches, atomic writes, disk reuse, compile errors, bounds."""

from __future__ import annotations

import numpy as np
import pytest

from specux._codegen import OPENCL, fft_plan, render
from specux._codegen.fft_kernels import KernelSource
from specux._runtime import cache


def test_key_changes_with_every_component(monkeypatch):
    base = ("src", ("-O3",), "nvrtc 13.0", "sm_90")
    key = cache.cache_key(*base)
    assert len(key) == 64
    variants = [
        ("src2", ("-O3",), "nvrtc 13.0", "sm_90"),
        ("src", ("-O2",), "nvrtc 13.0", "sm_90"),
        ("src", ("-O3",), "nvrtc 13.1", "sm_90"),
        ("src", ("-O3",), "nvrtc 13.0", "sm_80"),
    ]
    assert len({key, *(cache.cache_key(*v) for v in variants)}) == 5
    monkeypatch.setattr(cache, "package_version", lambda: "99.0")
    assert cache.cache_key(*base) != key
    monkeypatch.setattr(cache, "SCHEMA_VERSION", cache.SCHEMA_VERSION + 1)
    assert cache.cache_key(*base) != key


def test_cache_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECUX_CACHE_DIR", str(tmp_path / "c"))
    assert cache.cache_dir() == tmp_path / "c"
    for off in ("", "off", "0"):
        monkeypatch.setenv("SPECUX_CACHE_DIR", off)
        assert cache.cache_dir() is None
        assert cache.disk_get("k", ".bin") is None
        cache.disk_put("k", ".bin", b"x")  # disabled: silently nothing
    monkeypatch.delenv("SPECUX_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "specux"


def test_disk_roundtrip_and_atomic_write(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECUX_CACHE_DIR", str(tmp_path))
    cache.disk_put("abc", ".bin", b"one")
    cache.disk_put("abc", ".bin", b"two")
    assert cache.disk_get("abc", ".bin") == b"two"
    leftovers = [p.name for p in (tmp_path / "kernels").iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_dump_source_switch(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECUX_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("SPECUX_DUMP_SOURCE", raising=False)
    assert cache.dump_source("int x;", "k", "0" * 64, ".cl") is None
    monkeypatch.setenv("SPECUX_DUMP_SOURCE", "1")
    path = cache.dump_source("int x;", "k", "0" * 64, ".cl")
    assert path.parent == tmp_path / "c" / "source" and path.read_text() == "int x;"
    monkeypatch.setenv("SPECUX_DUMP_SOURCE", str(tmp_path / "dumps"))
    path = cache.dump_source("int y;", "k", "1" * 64, ".cu")
    assert path.parent == tmp_path / "dumps" and path.suffix == ".cu"


def test_lru_bounds_entries_and_bytes():
    lru = cache.LRU(max_entries=3, max_bytes=100)
    for i in range(5):
        lru.put(i, str(i), 10)
    assert len(lru) == 3 and lru.get(0) is None and lru.get(4) == "4"
    lru.get(2)  # most recently used survives the next eviction
    lru.put("big", "x", 85)
    assert lru.nbytes <= 100 and lru.get("big") == "x"
    assert lru.get(3) is None


def test_plan_and_table_caches_are_bounded():
    assert fft_plan.plan.cache_info().maxsize is not None
    from specux._runtime import device

    assert device.MAX_TABLE_BYTES <= 2**30 and device.MAX_KERNELS <= 4096


def _fresh_runtime(opencl):
    from specux._runtime.opencl import OpenCLRuntime

    return OpenCLRuntime(opencl.runtime.device)


def test_compile_error_raises_with_log_and_dumped_source(require_backend, monkeypatch, tmp_path):
    opencl = require_backend("opencl")
    monkeypatch.setenv("SPECUX_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SPECUX_DUMP_SOURCE", raising=False)
    rt = _fresh_runtime(opencl)
    bad = KernelSource(
        "spx_bad", "__kernel void spx_bad(__global float* a) { a[0] = not_declared; }\n", (), 1
    )
    with pytest.raises(cache.KernelCompileError) as info:
        rt.compile(bad)
    err = info.value
    assert "not_declared" in err.log
    assert err.source_path is not None and err.source_path.read_text() == bad.source
    assert str(err.source_path) in str(err)


def test_second_process_loads_the_binary_from_disk(require_backend, monkeypatch, tmp_path):
    opencl = require_backend("opencl")
    monkeypatch.setenv("SPECUX_CACHE_DIR", str(tmp_path))
    spec = fft_plan.plan(12, "f32").specs()[0]
    first = _fresh_runtime(opencl)
    first.kernel(spec)
    stored = list((tmp_path / "kernels").glob("*.clbin"))
    assert len(stored) == 1
    second = _fresh_runtime(opencl)

    def no_build(ks):
        raise AssertionError("compiled from source although the binary was cached")

    monkeypatch.setattr(second, "_build", no_build)
    _, ks = second.kernel(spec)
    assert ks.source == render(spec, OPENCL).source
    # the reloaded kernel computes
    from specux._runtime import fft_exec

    x = (np.arange(24, dtype=np.float32).reshape(2, 12) * 0.5).astype(np.complex64)
    got = fft_exec.run_host(second, "c2c", x, 1, 12, False, 1.0)
    np.testing.assert_allclose(got, np.fft.fft(x), rtol=1e-5, atol=1e-4)


def test_autotune_times_candidates_and_persists_the_winner(require_backend, monkeypatch, tmp_path):
    require_backend("opencl")
    import specux.fft as sfft
    import specux.plans as plans
    from specux._codegen import fft_plan
    from specux._runtime import tuning

    monkeypatch.setenv("SPECUX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("SPECUX_OPENCL_OPTIONS", "-cl-opt-disable")
    tuning.forget()
    try:
        n = 4608  # four-step in float32: several n1 x n2 splits to choose from
        report = plans.autotune(n, "float32", backend="opencl", batch=2, repeat=1)
        assert len(report["candidates"]) >= 2
        assert all(c["rel_l2"] <= 1e-5 for c in report["candidates"])
        stored = (tmp_path / "tuning.json").read_text()
        assert f"|{n}|f32" in stored
        tuning.forget()  # a new process: read back from disk
        from specux._backends import registry

        rt = registry.get("opencl").runtime
        chosen = tuning.lookup(rt, n, "f32")
        want = report["chosen"]
        assert chosen == fft_plan.Tuning(want["threads"], want["rows"], want["split"])
        x = np.random.default_rng(1).standard_normal((2, n)).astype(np.complex64)
        got = sfft.fft(x, backend="opencl")  # planned with the stored tuning
        assert np.linalg.norm(got - np.fft.fft(x)) / np.linalg.norm(np.fft.fft(x)) <= 1e-5
    finally:
        tuning.forget()
