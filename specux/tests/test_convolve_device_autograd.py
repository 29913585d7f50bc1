"""Autograd of fftconvolve on a device backend: ``specux::fftconvolve_device`` and its backward
(``specux.torch._ops_device_convolve``, the adjoint kernels of ``convolve_exec.fftconvolve_adjoint``) on PoCL,
against the CPU op ``specux::fftconvolve`` (NumPy) within the fftconvolve tolerances: every mode, real and
complex, both precisions (float64 where the device has it), 1-D, batched, 2-D, broadcast inputs (whose
gradients are summed on the device), axes given, swapped inputs, mixed dtypes, no convolved axis and the
overlap-save forward path; the adjoint by the dot-product test; double backward; torch.compile(fullgraph=True)
forward and backward; bitwise repeatability; and the refusals.
"""

from __future__ import annotations

import numpy as np
import pytest
from specux_test_support import rel_err, tolerance

torch = pytest.importorskip("torch")

import specux.torch  # noqa: E402, F401  (registers the ops)
from specux._runtime import convolve_exec as ce  # noqa: E402
from specux._spec.convolve import fftconvolve_validate  # noqa: E402

MODES = ["full", "same", "valid"]
DTYPES = ["float32", "float64", "complex64", "complex128"]
REAL = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}

#: (in1 shape, in2 shape, axes)
CASES = {
    "1d": ((37,), (11,), None),
    "swapped": ((9,), (33,), None),
    "batched": ((3, 40), (3, 9), [1]),
    "broadcast_in2": ((3, 40), (1, 9), [-1]),
    "broadcast_in1": ((1, 30, 2), (4, 7, 2), [1]),
    "2d": ((6, 10), (3, 4), None),
    "no_convolved_axis": ((4, 1), (4, 5), [1]),
}


def _tensor(shape, dtype, seed, grad=True):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(shape, dtype=getattr(torch, dtype), generator=g)
    return t.requires_grad_(grad)


def _needs(opencl, *dtypes):
    for d in dtypes:
        if REAL[d] not in opencl.dtypes:
            pytest.skip(f"the opencl device has no {REAL[d]}")


def _grads(op, a, b, mode, axes, seed=7, *extra):
    y = op(a, b, mode, axes, *extra)
    v = _tensor(y.shape, str(y.dtype).removeprefix("torch."), seed, grad=False)
    return (y, *torch.autograd.grad(y, (a, b), v))


def _compare(opencl, a, b, mode, axes):
    got = _grads(torch.ops.specux.fftconvolve_device, a, b, mode, axes, 7, "opencl")
    want = _grads(torch.ops.specux.fftconvolve, a, b, mode, axes, 7)
    tol = tolerance("fftconvolve", REAL[str(want[0].dtype).removeprefix("torch.")])
    for name, x, ref in zip(("output", "grad in1", "grad in2"), got, want):
        assert x.dtype == ref.dtype and x.shape == ref.shape, name
        assert rel_err(x.detach().numpy(), ref.detach().numpy()) < tol, name


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("mode", MODES)
def test_gradients_match_the_cpu_op(opencl, mode, case, dtype):
    _needs(opencl, dtype)
    s1, s2, axes = CASES[case]
    a, b = _tensor(s1, dtype, 1), _tensor(s2, dtype, 2)
    p = fftconvolve_validate(a, b, mode=mode, axes=axes)
    assert p.swapped == (case == "swapped" and mode == "valid")
    assert (not p.axes) == (case == "no_convolved_axis")
    _compare(opencl, a, b, mode, axes)


@pytest.mark.parametrize(
    "d1, d2", [("float32", "complex64"), ("complex128", "float64"), ("float32", "float64")]
)
@pytest.mark.parametrize("mode", MODES)
def test_mixed_dtypes_give_each_input_its_own_dtype(opencl, mode, d1, d2):
    """A real input convolved with a complex one gets the real part; float32 with float64 computes in float64
    and hands float32 back."""
    _needs(opencl, d1, d2)
    _compare(opencl, _tensor((2, 25), d1, 3), _tensor((1, 6), d2, 4), mode, [1])


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("mode", MODES)
def test_gradients_when_the_forward_takes_overlap_save(opencl, small_os, monkeypatch, mode, dtype):
    _needs(opencl, dtype)
    taken = []
    original = ce._overlap_save

    def spy(*args):
        taken.append("os")
        return original(*args)

    monkeypatch.setattr(ce, "_overlap_save", spy)
    a, b = _tensor((2, 700), dtype, 5), _tensor((2, 13), dtype, 6)
    _compare(opencl, a, b, mode, [1])
    assert taken, "the forward did not take the overlap-save path"


def _vdot(x, y):
    return complex(torch.sum(torch.conj(x.detach().to(torch.complex128)) * y.detach().to(torch.complex128)))


@pytest.mark.parametrize("dtype", ["float64", "complex128", "float32"])
@pytest.mark.parametrize("mode", MODES)
def test_the_backward_is_the_adjoint(opencl, mode, dtype):
    """<v, conv(x, b)> == <G_in1(v, b), x> and <v, conv(a, x)> == <G_in2(v, a), x> (the dot-product test:
    the backward is the forward's adjoint in each input, torch's convention for complex)."""
    _needs(opencl, dtype)
    args = (mode, [1], "opencl")
    a, b = _tensor((3, 31), dtype, 8, grad=False), _tensor((1, 8), dtype, 9, grad=False)
    xa, xb = _tensor(a.shape, dtype, 10, grad=False), _tensor(b.shape, dtype, 11, grad=False)
    y = torch.ops.specux.fftconvolve_device(a, b, *args)
    v = _tensor(y.shape, str(y.dtype).removeprefix("torch."), 12, grad=False)
    ga, gb = torch.ops.specux.fftconvolve_device_backward(v, a, b, *args)
    lhs_a = _vdot(v, torch.ops.specux.fftconvolve_device(xa, b, *args))
    lhs_b = _vdot(v, torch.ops.specux.fftconvolve_device(a, xb, *args))
    tol = 10 * tolerance("fftconvolve", REAL[dtype])
    for lhs, g, x in ((lhs_a, ga, xa), (lhs_b, gb, xb)):
        rhs = _vdot(g, x)
        if not dtype.startswith("complex"):  # real inputs: only the real part is an inner product
            lhs, rhs = lhs.real, rhs.real
        assert abs(lhs - rhs) <= tol * max(abs(lhs), 1.0)


def test_double_backward(opencl):
    _needs(opencl, "float64")
    a = _tensor((9,), "float64", 13)
    b = _tensor((4,), "complex128", 14)
    op = torch.ops.specux.fftconvolve_device
    assert torch.autograd.gradcheck(lambda a, b: op(a, b, "same", None, "opencl"), (a, b))
    assert torch.autograd.gradgradcheck(lambda a, b: op(a, b, "valid", None, "opencl"), (a, b))


def test_compiled_forward_and_backward_match_eager(opencl):
    def f(a, b):
        y = torch.ops.specux.fftconvolve_device(a, b, "same", [1], "opencl")
        return (y * y).sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    a, b = _tensor((2, 50), "float32", 15), _tensor((1, 9), "float32", 16)
    want = torch.autograd.grad(f(a, b), (a, b))
    got = torch.autograd.grad(compiled(a, b), (a, b))
    for x, ref in zip(got, want):
        assert rel_err(x.numpy(), ref.numpy()) < tolerance("fftconvolve", "float32")


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_the_backward_is_repeatable_bit_for_bit(opencl, dtype):
    a, b = _tensor((1, 64, 3), dtype, 17), _tensor((5, 9, 3), dtype, 18)
    first = _grads(torch.ops.specux.fftconvolve_device, a, b, "full", [1], 7, "opencl")
    again = _grads(torch.ops.specux.fftconvolve_device, a, b, "full", [1], 7, "opencl")
    for x, y in zip(first, again):
        assert torch.equal(x, y)


def test_refusals_name_the_problem(opencl):
    a, b = torch.randn(10), torch.randn(3)
    with pytest.raises(ValueError, match="backend must be one of"):
        torch.ops.specux.fftconvolve_device(a, b, "full", None, "vulkan")
    with pytest.raises(ValueError, match="mode"):
        torch.ops.specux.fftconvolve_device(a, b, "middle", None, "opencl")
    with pytest.raises(TypeError, match="in2 has dtype"):
        torch.ops.specux.fftconvolve_device(a, b.to(torch.int64), "full", None, "opencl")


def test_a_missing_float64_is_refused_at_trace_time(opencl, monkeypatch):
    from torch._subclasses.fake_tensor import FakeTensorMode

    monkeypatch.setattr(opencl, "dtypes", frozenset({"float32", "float16"}))
    with FakeTensorMode(), pytest.raises(TypeError, match=r"needs float64 .*backend='cpu'"):
        a, b = torch.empty(10, dtype=torch.float64), torch.empty(3, dtype=torch.float64)
        torch.ops.specux.fftconvolve_device(a, b, "full", None, "opencl")


def test_fake_kernels_give_the_shapes(opencl):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a, b = torch.empty(3, 40), torch.empty(1, 9, dtype=torch.complex64)
        y = torch.ops.specux.fftconvolve_device(a, b, "valid", [1], "opencl")
        ga, gb = torch.ops.specux.fftconvolve_device_backward(y, a, b, "valid", [1], "opencl")
    assert tuple(y.shape) == (3, 32) and y.dtype == torch.complex64
    assert (ga.shape, ga.dtype, gb.shape, gb.dtype) == (a.shape, a.dtype, b.shape, b.dtype)


def test_opcheck(opencl):
    a, b = _tensor((2, 20), "float32", 19), _tensor((2, 5), "float32", 20)
    torch.library.opcheck(torch.ops.specux.fftconvolve_device.default, (a, b, "same", [1], "opencl"))
    g = torch.randn(2, 20)
    torch.library.opcheck(
        torch.ops.specux.fftconvolve_device_backward.default,
        (g, a.detach(), b.detach(), "same", [1], "opencl"),
    )


def test_swapped_valid_gradients_land_on_their_own_inputs(opencl):
    """in2 longer than in1 in mode "valid": the exec runs on the swapped pair; each gradient still has its own
    input's shape (here different lengths, so a mix-up could not pass)."""
    a, b = _tensor((2, 6), "float32", 21), _tensor((2, 20), "float32", 22)
    _, ga, gb = _grads(torch.ops.specux.fftconvolve_device, a, b, "valid", [1], 7, "opencl")
    assert ga.shape == a.shape and gb.shape == b.shape
    assert np.isfinite(ga.numpy()).all()


def test_strided_inputs(opencl):
    """Non-contiguous views (a transpose, a step) give the gradients of their contiguous copies."""
    base1 = _tensor((30, 2), "float32", 23)
    base2 = _tensor((2, 14), "float32", 24)
    a, b = base1.t(), base2[:, ::2]
    _compare(opencl, a, b, "same", [1])
