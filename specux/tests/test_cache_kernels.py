"""specux's kernels through kernelkit's cache and tuning store: compile errors, disk reuse, damaged entries,
autotuning, and tuning files of the wrong shape.

The cache itself (keys, directory and dump switches, atomic writes, checksums, LRU bounds) is tested in
kernelkit/tests/test_cache.py; here it is exercised through specux's FFT kernels and the public FFT entry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from kernelkit import cache, runtime
from kernelkit.dialects import OPENCL
from kernelkit.program import KernelSignature, Program
from kernelkit.tuning import TuningFileWarning
from specux._codegen import fft_plan, render


def test_plan_and_table_caches_are_bounded():
    assert fft_plan.plan.cache_info().maxsize is not None
    from specux._runtime import launch

    assert launch.program.cache_info().maxsize is not None
    assert runtime.MAX_TABLE_BYTES <= 2**30 and runtime.MAX_OBJECTS <= 4096


def _fresh_runtime(opencl):
    from kernelkit.opencl import OpenCLRuntime

    return OpenCLRuntime(opencl.runtime.device)


def test_compile_error_raises_with_log_and_dumped_source(require_backend, monkeypatch, tmp_path):
    opencl = require_backend("opencl")
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("KERNELKIT_DUMP_SOURCE", raising=False)
    rt = _fresh_runtime(opencl)
    bad = Program(
        "__kernel void spx_bad(__global float* a) { a[0] = not_declared; }\n",
        OPENCL,
        (KernelSignature("spx_bad"),),
        name="spx_bad",
    )
    try:
        with pytest.raises(cache.KernelCompileError) as info:
            rt.compile(bad)
    finally:
        rt.close()
    err = info.value
    assert "not_declared" in err.log
    assert err.source_path is not None and err.source_path.read_text() == bad.source
    assert str(err.source_path) in str(err)


def test_second_process_loads_the_binary_from_disk(require_backend, monkeypatch, tmp_path):
    from specux._runtime import fft_exec

    opencl = require_backend("opencl")
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    spec = fft_plan.plan(12, "f32").specs()[0]
    program = fft_exec.program(spec, OPENCL)
    assert program.source == render(spec, OPENCL).source
    first = _fresh_runtime(opencl)
    first.compile(program)
    first.close()
    stored = list((tmp_path / "kernels").glob("*.clbin"))
    assert len(stored) == 1
    second = _fresh_runtime(opencl)

    def no_build(program):
        raise AssertionError("compiled from source although the binary was cached")

    monkeypatch.setattr(second, "_build", no_build)
    try:
        # the reloaded kernel computes
        x = (np.arange(24, dtype=np.float32).reshape(2, 12) * 0.5).astype(np.complex64)
        got = fft_exec.run_host(second, "c2c", x, 1, 12, False, 1.0)
    finally:
        second.close()
    np.testing.assert_allclose(got, np.fft.fft(x), rtol=1e-5, atol=1e-4)


_FFT_RUN = textwrap.dedent(
    """
    import sys, numpy as np, specux.fft as sfft
    x = (np.arange(48, dtype=np.float32).reshape(3, 16) * 0.25).astype(np.complex64)
    got = sfft.fft(x, backend="opencl")
    err = np.linalg.norm(got - np.fft.fft(x)) / np.linalg.norm(np.fft.fft(x))
    assert err <= 1e-5, err
    print("ok")
    """
)


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage"])
def test_a_damaged_cached_binary_is_rebuilt_never_loaded(require_backend, tmp_path, damage):
    """A cut, empty or garbage ``.clbin`` once made every later OpenCL FFT die in PoCL (SIGSEGV or an
    assertion) until the file was deleted by hand. Each process runs in a subprocess, so a crash is a failure
    here rather than the end of the test run."""
    require_backend("opencl")
    env = {**os.environ, "KERNELKIT_CACHE_DIR": str(tmp_path), "KERNELKIT_OPENCL_OPTIONS": "-cl-opt-disable"}

    def run() -> None:
        proc = subprocess.run([sys.executable, "-c", _FFT_RUN], env=env, capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.returncode, proc.stderr[-2000:])

    run()
    entries = sorted((tmp_path / "kernels").glob("*.clbin"))
    assert entries  # the FFT kernel and the probe kernel
    for path in entries:
        data = path.read_bytes()
        path.write_bytes(
            {"truncated": data[: len(data) // 2], "empty": b"", "garbage": os.urandom(len(data))}[damage]
        )
    run()
    for path in entries:  # rebuilt and stored whole again
        assert cache.unpack(path.read_bytes()) is not None, path.name


def test_autotune_times_candidates_and_persists_the_winner(require_backend, monkeypatch, tmp_path):
    require_backend("opencl")
    import specux.fft as sfft
    import specux.plans as plans
    from specux._runtime import tuning

    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("KERNELKIT_OPENCL_OPTIONS", "-cl-opt-disable")
    tuning.forget()
    try:
        n = 4608  # four-step in float32: several n1 x n2 splits to choose from
        report = plans.autotune(n, "float32", backend="opencl", batch=2, repeat=1)
        assert len(report["candidates"]) >= 2
        assert all(c["rel_l2"] <= 1e-5 for c in report["candidates"])
        stored = json.loads((tmp_path / "tuning.json").read_text())
        assert any(key.endswith(f"|{n}|f32") for key in stored["specux.fft"])
        tuning.forget()  # a new process: read back from disk
        from specux._backends import registry

        rt = registry.get("opencl").runtime
        chosen = tuning.lookup(rt, n, "f32")
        want = report["chosen"]
        split = tuple(want["split"]) if want["split"] else None
        assert chosen == fft_plan.Tuning(want["threads"], want["rows"], split)
        x = np.random.default_rng(1).standard_normal((2, n)).astype(np.complex64)
        got = sfft.fft(x, backend="opencl")  # planned with the stored tuning
        assert np.linalg.norm(got - np.fft.fft(x)) / np.linalg.norm(np.fft.fft(x)) <= 1e-5
    finally:
        tuning.forget()


def _bad_tuning_files(key: str) -> dict[str, str]:
    """Files that once broke every OpenCL FFT (``dict([1, 2, 3])``, ``entry.get`` on a str, ...)."""
    section = "specux.fft"
    return {
        "not json": "{not json",
        "list": "[1, 2, 3]",
        "null": "null",
        "str member": json.dumps({"k": "x"}),
        "str section": json.dumps({section: "x"}),
        "str entry": json.dumps({section: {key: "x"}}),
        "str rows": json.dumps({section: {key: {"rows": "x"}}}),
        "bool threads": json.dumps({section: {key: {"threads": True}}}),
        "negative threads": json.dumps({section: {key: {"threads": -4}}}),
        "split not a pair": json.dumps({section: {key: {"split": 4608}}}),
        "split of another n": json.dumps({section: {key: {"split": [3, 5]}}}),
    }


def test_wrong_shaped_tuning_files_are_ignored_with_a_warning(require_backend, monkeypatch, tmp_path):
    import specux.fft as sfft
    from specux._runtime import tuning

    opencl = require_backend("opencl")
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("KERNELKIT_OPENCL_OPTIONS", "-cl-opt-disable")
    n = 16
    key = f"opencl|{opencl.runtime.arch()}|{n}|f32"
    path = tmp_path / "tuning.json"
    x = np.random.default_rng(2).standard_normal((3, n)).astype(np.complex64)
    want = np.fft.fft(x)
    try:
        for label, text in _bad_tuning_files(key).items():
            path.write_text(text)
            tuning.forget()
            with pytest.warns(TuningFileWarning, match="tuning file .*tuning.json") as caught:
                got = sfft.fft(x, backend="opencl")
            assert len([w for w in caught if w.category is TuningFileWarning]) == 1, label
            assert np.linalg.norm(got - want) / np.linalg.norm(want) <= 1e-5, label
            assert tuning.lookup(opencl.runtime, n, "f32") is None, label
            # a later store rewrites the file atomically: valid JSON, the new entry, the bad one gone
            tuning.store(opencl.runtime, n, "f32", fft_plan.Tuning(threads=2))
            stored = json.loads(path.read_text())
            assert stored == {"specux.fft": {key: {"threads": 2, "rows": None, "split": None}}}, label
    finally:
        tuning.forget()
