"""The kernel generator with no device: butterflies evaluated numerically, plans, tables, dialect hygiene."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from kernelkit.emitter import Emitter
from specux._codegen import CUDA, METAL, OPENCL, fft_plan, render
from specux._codegen.butterflies import RADICES, emit_dft

rng = np.random.default_rng(5)


class _C:
    """Stands in for double2 so that the emitted C of a butterfly runs as Python."""

    def __init__(self, x, y):
        self.x, self.y = float(x), float(y)


_HELPERS = {
    "double2": _C,
    "cadd": lambda a, b: _C(a.x + b.x, a.y + b.y),
    "csub": lambda a, b: _C(a.x - b.x, a.y - b.y),
    "cmul_mi": lambda a: _C(a.y, -a.x),
}


def _run_c_as_python(code: str, env: dict) -> None:
    for statement in code.replace("\n", " ").split(";"):
        statement = re.sub(r"^\s*(const\s+)?(double2|double|int)\s+", "", statement).strip()
        if statement:
            exec(statement, env)


@pytest.mark.parametrize("radix", RADICES)
def test_each_butterfly_is_the_forward_dft(radix):
    e = Emitter(OPENCL)
    names = [f"x{i}" for i in range(radix)]
    outs = emit_dft(e, "f64", names, "y")
    values = rng.standard_normal(radix) + 1j * rng.standard_normal(radix)
    env = dict(_HELPERS)
    env.update({n: _C(v.real, v.imag) for n, v in zip(names, values)})
    _run_c_as_python(e.text(), env)
    got = np.array([env[o].x + 1j * env[o].y for o in outs])
    np.testing.assert_allclose(got, np.fft.fft(values), rtol=0, atol=1e-13)


def test_radices_factor_the_length():
    for n in range(1, 3000):
        if fft_plan.is_smooth(n):
            radices = fft_plan.radices_for(n)
            assert int(np.prod(radices)) == n and set(radices) <= set(RADICES)
    assert fft_plan.radices_for(4096) == (8, 8, 8, 8)
    assert fft_plan.radices_for(1024) == (8, 8, 4, 4)


@pytest.mark.parametrize("prec", ["f32", "f64"])
def test_plan_shapes_and_resource_bounds(prec):
    limit = fft_plan.local_max(prec)
    assert isinstance(fft_plan.plan(limit, prec), fft_plan.LocalPlan)
    four = fft_plan.plan(2**20, prec)
    assert isinstance(four, fft_plan.FourStepPlan) and four.n1 * four.n2 == 2**20
    assert four.n1 <= limit and four.n2 <= limit
    blue = fft_plan.plan(100003, prec)
    assert isinstance(blue, fft_plan.BluesteinPlan) and blue.m == 262144
    assert isinstance(blue.conv, fft_plan.FourStepPlan)
    small_prime = fft_plan.plan(17, prec)
    assert isinstance(small_prime, fft_plan.BluesteinPlan) and small_prime.m == 64
    for n in [*range(1, 300), 2049, 6000, 100003, 2**20]:
        for spec in fft_plan.plan(n, prec).specs():
            if isinstance(spec, fft_plan.StockhamSpec):
                # two shared buffers must fit 32 KiB; blocks stay within every target's thread limit
                assert 2 * spec.rows * spec.n * fft_plan.complex_bytes(prec) <= fft_plan.LOCAL_BYTES
                assert spec.threads <= fft_plan.MAX_THREADS and spec.block <= 1024
    with pytest.raises(ValueError, match="exceeds"):
        fft_plan.plan(fft_plan.max_length(prec) + 1, prec)
    with pytest.raises(ValueError, match="prec"):
        fft_plan.plan(8, "f16")


def test_tables_are_exact_to_float64():
    n = 100003
    k = np.arange(n)
    # float64 evaluation of the angle loses up to a few ulp; the tables are within about one rounding
    np.testing.assert_allclose(fft_plan.twiddles(n, "f64"), np.exp(-2j * np.pi * k / n), rtol=0, atol=4e-15)
    ch = fft_plan.chirp(n, "f64")
    # k^2 mod 2n in integers: the phase of bin 99999 is exact although k^2 ~ 1e10
    np.testing.assert_allclose(ch, np.exp(-1j * np.pi * (((k * k) % (2 * n)) / n)), rtol=0, atol=4e-15)
    if np.finfo(np.longdouble).eps < np.finfo(np.float64).eps:
        # with an extended long double, the symmetric entries agree to the last bit (one correct rounding)
        tw = fft_plan.twiddles(n, "f64")
        np.testing.assert_array_equal(tw[1:], np.conj(tw[1:][::-1]))


@pytest.mark.parametrize("n", [17, 101, 127])
def test_bluestein_tables_give_the_dft(n):
    """The identity the Bluestein kernels implement, run in numpy with the generator's own tables."""
    p = fft_plan.plan(n, "f64")
    x = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    w = fft_plan.chirp(n, "f64")
    a = np.zeros(p.m, complex)
    a[:n] = x * w
    conv = np.fft.ifft(np.fft.fft(a) * fft_plan.bluestein_filter(n, p.m, "f64")) * p.m
    np.testing.assert_allclose(conv[:n] * w, np.fft.fft(x), rtol=0, atol=1e-11 * np.abs(x).sum())


def test_dialects_stay_in_their_tables():
    specs = fft_plan.plan(60, "f32", "f16", "f16").specs() + fft_plan.plan(17, "f32").specs()
    foreign = {
        "opencl": ("__syncthreads", "__shared__", "threadgroup", "[[", "blockIdx"),
        "cuda": ("__kernel", "__local", "barrier(CLK", "threadgroup", "[["),
        "metal": ("__kernel", "__global", "__shared__", "__syncthreads", "get_local_id", "double"),
    }
    for d in (OPENCL, CUDA, METAL):
        for spec in specs:
            source = render(spec, d).source
            for word in foreign[d.name]:
                assert word not in source, (d.name, word)


def test_metal_refuses_nothing_but_has_no_double():
    assert "f64" not in METAL.compute_precisions
    assert {"f32", "f64"} <= OPENCL.compute_precisions and {"f32", "f64"} <= CUDA.compute_precisions


def test_codegen_imports_no_gpu_library():
    code = (
        "import sys, specux._codegen, specux._codegen.fft_plan; "
        "bad = [m for m in ('pyopencl', 'cuda', 'Metal', 'vulkan', 'torch', 'cupy') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_plans_describe():
    import specux.plans as plans

    assert plans.describe(1024)["kind"] == "local"
    assert plans.describe(2**20)["kind"] == "four-step"
    d = plans.describe(100003, "float64")
    assert d["kind"] == "bluestein" and d["m"] == 262144 and d["kernels"] == 7
    with pytest.raises(ValueError, match="dtype"):
        plans.describe(8, "int8")
    plans.clear_caches()
