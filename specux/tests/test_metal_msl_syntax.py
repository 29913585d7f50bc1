"""The Metal dialect of the planner's kernels passes a C++ syntax check against a small stub of metal_stdlib.

This is a weak check, and deliberately labelled so: MSL is C++14 plus address spaces and attributes, so with
``device`` / ``threadgroup`` / ``constant`` / ``kernel`` defined away, ``[[buffer(i)]]`` and thread-position
attributes ignored, and ``float2`` / ``half`` / ``threadgroup_barrier`` stubbed, g++ catches typos, undeclared
names, type and arity errors in the generated text. It cannot catch address-space mistakes, Metal-only
restrictions or anything about results; only a run on Apple hardware can (none has been done).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from specux._codegen import METAL, family_cover, fft_plan, render

CXX = shutil.which("g++") or shutil.which("clang++")


@pytest.fixture(autouse=True)
def _compiler_present(require_check):
    if CXX is None:
        require_check("msl", "no C++ compiler (g++ or clang++) for the MSL syntax check")


STUB = """\
#pragma once
// Minimal stand-in for <metal_stdlib>: just enough of MSL's surface for a C++ syntax check.
#define kernel
#define device
#define threadgroup
#define constant
typedef unsigned int uint;
namespace metal {
struct float2 {
    float x, y;
    float2() : x(0), y(0) {}
    float2(float a, float b) : x(a), y(b) {}
};
struct half {
    unsigned short bits;
    half() : bits(0) {}
    explicit half(float) : bits(0) {}
    operator float() const { return 0.0f; }
};
enum class mem_flags { mem_none, mem_device, mem_threadgroup };
inline void threadgroup_barrier(mem_flags) {}
// the float math of metal_stdlib the feature kernels call (MSL has each of these for float and half)
inline float sqrt(float x) { return x; }
inline float pow(float x, float) { return x; }
inline float log(float x) { return x; }
inline float log10(float x) { return x; }
inline float exp(float x) { return x; }
inline float fabs(float x) { return x; }
inline float fmax(float x, float) { return x; }
inline float fmin(float x, float) { return x; }
inline float floor(float x) { return x; }
inline float ceil(float x) { return x; }
inline bool isnan(float) { return false; }
inline bool isinf(float) { return false; }
inline bool isfinite(float) { return true; }
template <typename T> inline T max(T a, T) { return a; }
template <typename T> inline T min(T a, T) { return a; }
}
"""


@pytest.fixture(scope="module")
def stub_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("metal_stub")
    (d / "metal_stdlib").write_text(STUB)
    return d


def _syntax_check(args):
    path, include = args
    proc = subprocess.run(
        [CXX, "-std=c++14", "-fsyntax-only", "-Wno-attributes", "-x", "c++", "-I", str(include), str(path)],
        capture_output=True,
        text=True,
    )
    return path, proc.returncode, proc.stderr


def _metal_specs():
    combos = [c for c in fft_plan.STORAGE_COMBOS if c[0] == "f32"]  # Apple GPUs have no float64
    return fft_plan.structural_cover(fft_plan.kernel_specs(fft_plan.conformance_sizes(), combos))


def test_planned_kernels_pass_the_msl_syntax_check(stub_dir, tmp_path):
    jobs = []
    for i, spec in enumerate(_metal_specs()):
        ks = render(spec, METAL)
        assert "double" not in ks.source
        path = tmp_path / f"{i:03d}_{ks.name}.metal"
        path.write_text(ks.source)
        jobs.append((path, stub_dir))
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        results = list(pool.map(_syntax_check, jobs))
    failures = [f"{p.name}:\n{err}" for p, rc, err in results if rc != 0]
    assert not failures, "\n\n".join(failures[:3])
    assert len(results) >= 20


def test_other_kernel_families_pass_the_msl_syntax_check(stub_dir, tmp_path):
    """stft framing, istft gather, filter banks, dB, DCT, fftconvolve in half and float storage (Apple GPUs
    have no float64)."""
    jobs = []
    for i, (family_render, spec) in enumerate(family_cover(("f16", "f32"))):
        ks = family_render(spec, METAL)
        assert "double" not in ks.source
        path = tmp_path / f"{i:03d}_{ks.name}.metal"
        path.write_text(ks.source)
        jobs.append((path, stub_dir))
    assert jobs, "no kernel family beyond the FFT was found"
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        results = list(pool.map(_syntax_check, jobs))
    failures = [f"{p.name}:\n{err}" for p, rc, err in results if rc != 0]
    assert not failures, "\n\n".join(failures[:3])


def test_constant_q_kernels_pass_the_msl_syntax_check(stub_dir, tmp_path):
    """cqt / vqt's decimating FIR and sparse basis product (specux._codegen.cq_kernels), half and float
    storage."""
    from specux._codegen import cq_kernels

    jobs = []
    for i, spec in enumerate(cq_kernels.cover(("f16", "f32"))):
        ks = cq_kernels.render(spec, METAL)
        assert "double" not in ks.source
        path = tmp_path / f"{i:03d}_{ks.name}.metal"
        path.write_text(ks.source)
        jobs.append((path, stub_dir))
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        results = list(pool.map(_syntax_check, jobs))
    failures = [f"{p.name}:\n{err}" for p, rc, err in results if rc != 0]
    assert not failures, "\n\n".join(failures[:3])
    assert len(results) >= 4


def test_the_check_rejects_broken_msl(stub_dir, tmp_path):
    spec = fft_plan.plan(64, "f32").specs()[0]
    broken = render(spec, METAL).source.replace("cmul(", "cmull(", 1)
    path = tmp_path / "broken.metal"
    path.write_text(broken)
    _, rc, err = _syntax_check((path, stub_dir))
    assert rc != 0 and "cmull" in err


def test_metal_binds_arguments_by_index():
    ks = render(fft_plan.plan(64, "f32").specs()[0], METAL)
    for i, p in enumerate(ks.params):
        assert f"{p.name} [[buffer({i})]]" in ks.source
    assert "[[thread_position_in_threadgroup]]" in ks.source
    assert "[[threadgroup_position_in_grid]]" in ks.source
