"""The compiled-object cache: keys, directory and dump switches, atomic writes, LRU bounds, and disk entries
that carry their length and SHA-256 so that a damaged one is rebuilt instead of reaching the driver."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from kernelkit import cache
from kernelkit.dialects import OPENCL, Param
from kernelkit.program import KernelSignature, LaunchConfig, Program


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
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path / "c"))
    assert cache.cache_dir() == tmp_path / "c"
    for off in ("", "off", "0", "OFF"):
        monkeypatch.setenv("KERNELKIT_CACHE_DIR", off)
        assert cache.cache_dir() is None
        assert cache.disk_get("k", ".bin") is None
        cache.disk_put("k", ".bin", b"x")  # disabled: silently nothing
    monkeypatch.delenv("KERNELKIT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "kernelkit"


def test_disk_roundtrip_and_atomic_write(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    cache.disk_put("abc", ".bin", b"one")
    cache.disk_put("abc", ".bin", b"two")
    assert cache.disk_get("abc", ".bin") == b"two"
    leftovers = [p.name for p in (tmp_path / "kernels").iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_dump_source_switch(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("KERNELKIT_DUMP_SOURCE", raising=False)
    assert cache.dump_source("int x;", "k", "0" * 64, ".cl") is None
    monkeypatch.setenv("KERNELKIT_DUMP_SOURCE", "1")
    path = cache.dump_source("int x;", "k", "0" * 64, ".cl")
    assert path.parent == tmp_path / "c" / "source" and path.read_text() == "int x;"
    monkeypatch.setenv("KERNELKIT_DUMP_SOURCE", str(tmp_path / "dumps"))
    path = cache.dump_source("int y;", "k", "1" * 64, ".cu")
    assert path.parent == tmp_path / "dumps" and path.suffix == ".cu"
    # failed compiles are always dumped, to failed/
    monkeypatch.delenv("KERNELKIT_DUMP_SOURCE")
    path = cache.dump_source("bad", "k", "2" * 64, ".cl", force=True)
    assert path.parent == tmp_path / "c" / "failed"


def test_lru_bounds_entries_and_bytes():
    lru = cache.LRU(max_entries=3, max_bytes=100)
    for i in range(5):
        lru.put(i, str(i), 10)
    assert len(lru) == 3 and lru.get(0) is None and lru.get(4) == "4"
    lru.get(2)  # most recently used survives the next eviction
    lru.put("big", "x", 85)
    assert lru.nbytes <= 100 and lru.get("big") == "x"
    assert lru.get(3) is None


PAYLOAD = bytes(range(256)) * 40


def _damaged(entry: bytes) -> dict[str, bytes]:
    flipped = bytearray(entry)
    flipped[-1] ^= 0x01
    return {
        "truncated to half": entry[: len(entry) // 2],
        "cut by one byte": entry[:-1],
        "zero bytes": b"",
        "header only": entry[: cache._HEADER.size],
        "garbage": os.urandom(len(entry)),
        "padded": entry + b"\x00",
        "one bit flipped": bytes(flipped),
        "raw binary without header": PAYLOAD,
    }


def test_pack_unpack_refuses_every_damaged_entry():
    entry = cache.pack(PAYLOAD)
    assert cache.unpack(entry) == PAYLOAD and cache.unpack(cache.pack(b"")) == b""
    for label, data in _damaged(entry).items():
        assert cache.unpack(data) is None, label


def test_disk_get_deletes_a_damaged_entry(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    path = tmp_path / "kernels" / "k.bin"
    for label, data in _damaged(cache.pack(PAYLOAD)).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        assert cache.disk_get("k", ".bin") is None, label
        assert not path.exists(), label
    cache.disk_put("k", ".bin", PAYLOAD)
    assert cache.disk_get("k", ".bin") == PAYLOAD


_SOURCE = """\
__kernel void kk_axpb(__global const float* x, __global float* y, const float a, const int n) {
    int i = (int)get_global_id(0);
    if (i < n) y[i] = a * x[i] + 1.0f;
}
"""
_PROGRAM = Program(
    _SOURCE,
    OPENCL,
    (
        KernelSignature(
            "kk_axpb",
            (Param("x", "f32", True, True), Param("y", "f32", True), Param("a", "f32"), Param("n", "int")),
        ),
    ),
    name="kk_axpb",
)


def _opencl_device(require):
    from kernelkit import opencl

    report, reason = opencl.choose()
    require("opencl", reason)
    return opencl._devices[(report.platform_index, report.device_index)]


def _run(rt) -> np.ndarray:
    x = np.arange(100, dtype=np.float32)
    y = rt.alloc(x.nbytes)
    rt.kernel(_PROGRAM, "kk_axpb").launch(LaunchConfig(4, 32), rt.upload(x), y, 3.0, 100)
    got = rt.download(y, np.empty_like(x))
    np.testing.assert_array_equal(got, 3 * x + 1)
    return got


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage"])
def test_a_damaged_binary_never_reaches_the_driver(require, monkeypatch, tmp_path, damage):
    from kernelkit.opencl import OpenCLRuntime

    device = _opencl_device(require)
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    first = OpenCLRuntime(device)
    _run(first)
    first.close()
    (path,) = (tmp_path / "kernels").glob("*.clbin")
    entry = path.read_bytes()
    damaged = {"truncated": entry[: len(entry) // 2], "empty": b"", "garbage": os.urandom(len(entry))}
    path.write_bytes(damaged[damage])
    second = OpenCLRuntime(device)
    loaded, built = [], []
    load, build = second._load, second._build

    def record_load(binary, program):
        loaded.append(binary)
        return load(binary, program)

    def record_build(program):
        built.append(program)
        return build(program)

    monkeypatch.setattr(second, "_load", record_load)
    monkeypatch.setattr(second, "_build", record_build)
    try:
        _run(second)
    finally:
        second.close()
    assert loaded == [] and built == [_PROGRAM]
    # rebuilt and stored whole (not necessarily the same bytes: a driver's binary may differ between builds)
    assert cache.unpack(path.read_bytes()) is not None


_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    from kernelkit import opencl
    from kernelkit.dialects import OPENCL, Param
    from kernelkit.program import KernelSignature, LaunchConfig, Program

    rt = opencl.default_runtime()
    x = np.arange(256, dtype=np.float32)
    for i in range(3):  # three programs: three entries to damage three ways
        source = (
            f"__kernel void k{i}(__global const float* x, __global float* y) "
            f"{{ int j = (int)get_global_id(0); y[j] = x[j] + {i}.0f; }}\\n"
        )
        sig = KernelSignature(f"k{i}", (Param("x", "f32", True, True), Param("y", "f32", True)))
        y = rt.alloc(x.nbytes)
        kernel = rt.kernel(Program(source, OPENCL, (sig,), name=f"k{i}"), f"k{i}")
        kernel.launch(LaunchConfig(4, 64), rt.upload(x), y)
        assert np.array_equal(rt.download(y, np.empty_like(x)), x + i), i
    print("ok")
    """
)


def test_damaged_entries_in_a_new_process_are_rebuilt_not_a_crash(require, tmp_path):
    """A truncated ``.clbin`` handed to PoCL crashes the process (SIGSEGV or an assertion): run the process
    apart so that a crash fails this test instead of ending the run."""
    from kernelkit import opencl

    require("opencl", opencl.probe())
    env = {**os.environ, "KERNELKIT_CACHE_DIR": str(tmp_path)}

    def run() -> None:
        proc = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.returncode, proc.stderr[-2000:])

    run()
    entries = sorted((tmp_path / "kernels").glob("*.clbin"), key=lambda p: p.stat().st_mtime)
    assert len(entries) >= 4  # the probe's kernel and the three programs
    damages = [lambda d: d[: len(d) // 2], lambda d: b"", lambda d: os.urandom(len(d))]
    for i, path in enumerate(entries):
        path.write_bytes(damages[i % 3](path.read_bytes()))
    run()
    for path in entries:
        assert cache.unpack(path.read_bytes()) is not None, path.name
