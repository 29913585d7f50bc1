"""Gradients of specux.icqt on a device backend (``specux::icqt_device``; OpenCL on PoCL here).

A complex torch CPU tensor requiring grad with ``backend="opencl"`` runs the device's icqt forward
(:func:`specux._runtime.icq_exec.icqt`) and its transpose backward (:func:`specux._runtime.icq_exec.
icqt_adjoint`: the kernels ``interpolate_adjoint`` and ``icq_synth_adjoint``). Checked here: the gradient
against the CPU op's (``specux::icqt``, the analytic adjoint of :mod:`specux._backends.cpu.icqt`) for float32
and float64, 1-D and batched responses, ``length``, ``scale``, several hops and bins per octave, polyphase and
the soxr qualities (the device's upsamplers are libsoxr's measured linear form, the one the CPU's gradient
transposes, so the two agree to rounding); gradcheck and gradgradcheck in float64; dot-product tests of each
new kernel; ``torch.compile(fullgraph=True)``; bit-for-bit repeatable backward; and the refusals.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("soxr")

import specux  # noqa: E402
from specux._backends.cpu.icqt import icqt_plan  # noqa: E402
from specux._codegen import cq_kernels  # noqa: E402
from specux._runtime import device_array as da  # noqa: E402
from specux._runtime import icq_exec  # noqa: E402
from specux._spec.icqt import validate_icqt  # noqa: E402
from specux.errors import UnsupportedOperationError  # noqa: E402

SR = 8000
#: bounds of max |device - cpu| / max |cpu| of the forward (test_icqt_device_kernels.py's; measured 1.5e-7 to
#: 5.3e-7 in float32, below 1e-15 in float64 with "polyphase") and of the gradient (measured 3.3e-7 to 1.3e-6
#: in float32, below 2e-15 in float64 with every resampler)
BOUND = {"float32": 2e-6, "float64": 1e-12}
GRAD_BOUND = {"float32": 4e-6, "float64": 1e-12}
#: the CPU's forward with a soxr quality is libsoxr itself, which computes "soxr_hq", "soxr_mq" and
#: "soxr_lq" in single precision and whose measured taps (the device's) stop at 1e-9 of their peak: float64
#: forward bounds (measured 6.6e-8 to 1.5e-7, and 2.2e-10 for "soxr_vhq"). The gradients do not meet
#: libsoxr: the CPU's gradient is the transpose of the same measured form as the device's
SOXR_FORWARD64 = {"soxr_vhq": 1e-9, "soxr_hq": 5e-7, "soxr_mq": 5e-7, "soxr_lq": 5e-7}
_COMPLEX = {"float32": torch.complex64, "float64": torch.complex128}

#: (n_bins, frames, batch, keyword arguments): hops 64 / 96 / 128, 6 to 24 bins per octave, up to four
#: octaves (upsampling by 8: the soxr qualities' start-up rows, the "head" kernels)
CASES = [
    (36, 12, (), dict(hop_length=64, bins_per_octave=12, res_type="polyphase")),
    (48, 10, (2,), dict(hop_length=64, bins_per_octave=12, res_type="polyphase", length=500, scale=False)),
    (24, 9, (2, 3), dict(hop_length=96, bins_per_octave=6, res_type="polyphase", length=1200)),
    (48, 8, (2,), dict(hop_length=128, bins_per_octave=24, res_type="polyphase")),
    (24, 10, (2,), dict(hop_length=64, bins_per_octave=12, res_type="soxr_hq")),
    (48, 8, (2,), dict(hop_length=64, bins_per_octave=12, res_type="soxr_hq", length=600)),
    (36, 8, (), dict(hop_length=64, bins_per_octave=12, res_type="soxr_vhq", scale=False)),
    (24, 8, (2,), dict(hop_length=128, bins_per_octave=12, res_type="soxr_mq")),
    (24, 8, (2,), dict(hop_length=64, bins_per_octave=12, res_type="soxr_lq", length=900)),
]


def _float64(opencl) -> None:
    if "float64" not in opencl.dtypes:
        pytest.skip("this OpenCL device has no cl_khr_fp64")


def _responses(shape, dtype=torch.complex128, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    real = torch.float32 if dtype == torch.complex64 else torch.float64
    parts = [torch.randn(*shape, dtype=real, generator=g) for _ in range(2)]
    return torch.complex(*parts)


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


def _value_and_grad(C: torch.Tensor, backend: str, **kw):
    """The inverse and the gradient of ``sum(y * W)`` for a fixed random ``W`` (every sample weighed
    differently, so a misplaced gradient entry cannot pass)."""
    x = C.detach().clone().requires_grad_()
    y = specux.icqt(x, sr=SR, fmin=100.0, backend=backend, **kw)
    w = torch.randn(y.shape, dtype=y.dtype, generator=torch.Generator().manual_seed(1))
    (grad,) = torch.autograd.grad((y * w).sum(), x)
    return y.detach(), grad


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "n_bins, frames, batch, kw", CASES, ids=[f"{c[3]['res_type']}-{i}" for i, c in enumerate(CASES)]
)
def test_device_gradient_matches_the_cpu_ops(opencl, dtype, n_bins, frames, batch, kw):
    if dtype == "float64":
        _float64(opencl)
    C = _responses((*batch, n_bins, frames), _COMPLEX[dtype], seed=n_bins + frames)
    y, grad = _value_and_grad(C, "opencl", **kw)
    y_cpu, grad_cpu = _value_and_grad(C, "cpu", **kw)
    assert y.shape == y_cpu.shape and y.dtype == y_cpu.dtype == getattr(torch, dtype)
    assert grad.shape == C.shape and grad.dtype == C.dtype
    forward = BOUND[dtype] if dtype == "float32" else SOXR_FORWARD64.get(kw["res_type"], BOUND[dtype])
    assert _rel(y, y_cpu) <= forward
    assert _rel(grad, grad_cpu) <= GRAD_BOUND[dtype]


@pytest.mark.parametrize("res_type", ["polyphase", "soxr_hq"])
def test_frames_past_the_reach_of_length_get_zero_as_on_the_cpu(opencl, res_type):
    C = _responses((2, 24, 40), torch.complex64, seed=4)
    kw = dict(hop_length=64, bins_per_octave=12, res_type=res_type, length=200)
    read = icqt_plan(_params(24, 40, "float32", **kw), 40).n_frames
    assert read < 40  # the check below is not empty
    _, grad = _value_and_grad(C, "opencl", **kw)
    _, grad_cpu = _value_and_grad(C, "cpu", **kw)
    assert not grad[..., read:].any()
    assert grad.abs().max() > 0
    assert _rel(grad, grad_cpu) <= GRAD_BOUND["float32"]


def test_complex64_responses_with_a_float64_result_and_a_real_strided_input(opencl):
    _float64(opencl)
    C = _responses((2, 36, 20), torch.complex64, seed=3)[..., ::2]  # not contiguous
    kw = dict(hop_length=64, bins_per_octave=12, res_type="polyphase")
    y, grad = _value_and_grad(C, "opencl", dtype=torch.float64, **kw)
    y_cpu, grad_cpu = _value_and_grad(C, "cpu", dtype=torch.float64, **kw)
    assert y.dtype == torch.float64 and grad.dtype == torch.complex64
    assert _rel(y, y_cpu) <= 1e-12 and _rel(grad, grad_cpu) <= GRAD_BOUND["float32"]
    # a real C is read as responses of zero phase: its gradient is the real part
    R = C.real.contiguous()
    y, grad = _value_and_grad(R, "opencl", **kw)
    y_cpu, grad_cpu = _value_and_grad(R, "cpu", **kw)
    assert grad.dtype == torch.float32 and _rel(grad, grad_cpu) <= GRAD_BOUND["float32"]


@pytest.mark.parametrize(
    "kw",
    [
        dict(res_type="polyphase", length=300),
        dict(res_type="soxr_hq"),  # by 8 in the lowest octave: the start-up rows
        dict(res_type="soxr_vhq", scale=False, length=700),
    ],
)
def test_gradcheck_and_gradgradcheck_in_float64(opencl, kw):
    """The device map is linear and exact in float64 (libsoxr's measured taps, not libsoxr itself), so
    gradcheck's default step applies to every quality."""
    _float64(opencl)
    C = _responses((1, 48, 6), seed=5).requires_grad_()

    def fn(c):
        return specux.icqt(c, sr=SR, hop_length=64, fmin=100.0, bins_per_octave=12, backend="opencl", **kw)

    assert torch.autograd.gradcheck(fn, (C,), fast_mode=True)
    assert torch.autograd.gradgradcheck(fn, (C,), fast_mode=True)


# --- the new kernels alone: <A x, g> == <x, A^T g> ----------------------------------------------------------


def _params(n_bins: int, frames: int, dtype: str, **kw):
    probe = np.zeros((n_bins, frames), {"float32": np.complex64, "float64": np.complex128}[dtype])
    base = dict(sr=SR, hop_length=64, fmin=100.0, bins_per_octave=12, tuning=0.0, filter_scale=1, norm=1)
    base.update(sparsity=0.01, window="hann", scale=True, length=None, res_type="polyphase", dtype=None)
    kw = dict(base, **kw)
    return validate_icqt(probe, "icqt", device=True, **kw)[1]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "factor, res_type, n_dst",
    [
        (2, "polyphase", 600),
        (4, "polyphase", 1000),
        (8, "soxr_hq", 2400),
        (8, "soxr_hq", 150),
        (1, "soxr_hq", 250),
    ],
)
def test_interpolate_adjoint_is_the_transpose_of_interpolate(opencl, dtype, factor, res_type, n_dst):
    """n_dst above, at and below ``factor * n_in`` (``length`` pads or cuts); by 8 with a soxr quality the
    kernel's ``head`` variant (the start-up rows' transpose) runs."""
    if dtype == "float64":
        _float64(opencl)
    rt = opencl.runtime
    rng = np.random.default_rng(factor)
    n_in = 280
    x = rng.standard_normal((2, n_in)).astype(dtype)
    g = rng.standard_normal((2, n_dst)).astype(dtype)
    with rt.batch():
        y = icq_exec._interpolate(rt, da.upload(rt, x), factor, res_type, n_dst, None)
        xg = icq_exec._interpolate_adjoint(rt, da.upload(rt, g), n_in, factor, res_type)
    y, xg = da.download(rt, y), da.download(rt, xg)
    assert xg.shape == x.shape and xg.dtype == x.dtype
    if factor == 8:
        assert icq_exec.upsampler_form(factor, res_type, dtype)[2].size  # the head variant ran
    lhs = float(np.sum(y.astype(np.float64) * g))
    rhs = float(np.sum(x.astype(np.float64) * xg))
    scale = np.linalg.norm(y) * np.linalg.norm(g) + np.linalg.norm(x) * np.linalg.norm(xg)
    assert abs(lhs - rhs) <= (1e-6 if dtype == "float32" else 1e-14) * scale


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("hop, frames, t_src", [(64, 9, 9), (96, 7, 11), (64, 1, 3)])
def test_icq_synth_adjoint_is_the_transpose_of_icq_synth(opencl, dtype, hop, frames, t_src):
    """Every octave of a 36-bin bank; ``t_src > frames`` is C wider than the frames the inverse reads (their
    gradient must be 0); one frame: no signal, a zero gradient."""
    if dtype == "float64":
        _float64(opencl)
    rt = opencl.runtime
    p = _params(36, frames, dtype, hop_length=hop)
    plan = icqt_plan(p, frames)
    rng = np.random.default_rng(hop + frames)
    cdtype = da.COMPLEX_OF[dtype]
    C = (rng.standard_normal((2, 36, t_src)) + 1j * rng.standard_normal((2, 36, t_src))).astype(cdtype)
    C_dev = da.upload(rt, C)
    out = da.upload(rt, np.full((2, 36, t_src), np.nan, cdtype))  # every entry must be written
    for octave in plan.octaves:
        with rt.batch():
            y = icq_exec._synth(rt, C_dev, 2, p, plan, octave, dtype)
        y = da.download(rt, y)
        g = rng.standard_normal(y.shape).astype(dtype)
        with rt.batch():
            icq_exec._synth_adjoint(rt, da.upload(rt, g), out, p, plan, octave)
        gC = da.download(rt, out)[:, octave.rows]
        assert np.isfinite(gC).all()
        assert not gC[..., plan.n_frames :].any()
        lhs = float(np.sum(y.astype(np.float64) * g))
        c = C[:, octave.rows]
        rhs = float(np.sum(c.real.astype(np.float64) * gC.real + c.imag.astype(np.float64) * gC.imag))
        scale = np.linalg.norm(y) * np.linalg.norm(g) + np.linalg.norm(c) * np.linalg.norm(gC)
        assert abs(lhs - rhs) <= (1e-6 if dtype == "float32" else 1e-14) * max(scale, 1e-30)
        if frames == 1:
            assert y.size == 0 and not gC.any()


def test_new_kernels_join_the_nvrtc_and_msl_covers():
    """test_cuda_compile_nvrtc.py (sm_80 / sm_90 / sm_100) and test_metal_msl_syntax.py compile every spec of
    cq_kernels.cover; the existing kernels' texts are unchanged (only variants were added)."""
    specs = cq_kernels.cover(("f16", "f32", "f64"))
    for prec in ("f32", "f64"):
        assert cq_kernels.IcqSynthAdjointSpec(prec) in specs
        assert cq_kernels.InterpolateAdjointSpec(prec) in specs
        assert cq_kernels.InterpolateAdjointSpec(prec, head=True) in specs
    from specux._codegen import OPENCL

    for spec in (cq_kernels.IcqSynthAdjointSpec("f32"), cq_kernels.InterpolateAdjointSpec("f32", head=True)):
        text = cq_kernels.render(spec, OPENCL).source
        assert "atomic" not in text  # a gather: deterministic


# --- torch.compile, determinism ----------------------------------------------------------------------------


def _loss(C: torch.Tensor) -> torch.Tensor:
    y = specux.icqt(C, sr=SR, hop_length=64, fmin=100.0, res_type="polyphase", length=400, backend="opencl")
    return (y * torch.linspace(-1.0, 1.0, y.shape[-1])).pow(2).sum()


def test_compile_fullgraph_forward_and_backward(opencl):
    C0 = _responses((2, 36, 8), torch.complex64, seed=9)
    x_eager = C0.clone().requires_grad_()
    want = _loss(x_eager)
    (g_eager,) = torch.autograd.grad(want, x_eager)
    torch._dynamo.reset()
    compiled = torch.compile(_loss, fullgraph=True, backend="aot_eager")
    x = C0.clone().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = compiled(x)
    (g,) = torch.autograd.grad(got, x)
    assert torch.allclose(got, want, rtol=1e-6, atol=0)
    assert _rel(g, g_eager) <= 1e-6


def test_backward_is_bitwise_repeatable(opencl):
    C0 = _responses((3, 48, 9), torch.complex64, seed=11)
    grads = []
    for _ in range(2):
        x = C0.clone().requires_grad_()
        y = specux.icqt(x, sr=SR, hop_length=64, fmin=100.0, res_type="soxr_hq", backend="opencl")
        y.pow(2).sum().backward()
        grads.append(x.grad)
    assert torch.equal(grads[0], grads[1])


# --- refusals -----------------------------------------------------------------------------------------------


def test_soxr_qq_refused_on_the_device_naming_res_type_and_cpu(opencl):
    C = _responses((24, 6), torch.complex64).requires_grad_()
    with pytest.raises(ValueError, match=r"res_type='soxr_qq'.*backend='cpu'"):
        specux.icqt(C, sr=SR, fmin=100.0, hop_length=64, res_type="soxr_qq", backend="opencl")


def test_float64_refused_where_the_device_lacks_it(opencl, monkeypatch):
    monkeypatch.setattr(opencl, "dtypes", frozenset({"float16", "float32"}))
    C = _responses((24, 6), torch.complex128).requires_grad_()
    with pytest.raises(TypeError, match=r"float64.*backend='cpu'"):
        specux.icqt(C, sr=SR, fmin=100.0, hop_length=64, res_type="polyphase", backend="opencl")


def test_griffinlim_cqt_stays_without_autograd(opencl):
    S = _responses((24, 6), torch.complex64).abs().requires_grad_()
    with pytest.raises(UnsupportedOperationError, match=r"griffinlim_cqt: gradients are not available"):
        specux.griffinlim_cqt(S, sr=SR, fmin=100.0, hop_length=64, n_iter=1, backend="opencl")


def test_without_grad_the_front_runs_the_same_kernels(opencl):
    C = _responses((2, 36, 8), torch.complex64, seed=2)
    kw = dict(sr=SR, fmin=100.0, hop_length=64, res_type="polyphase", backend="opencl")
    front = specux.icqt(C, **kw)
    op = specux.icqt(C.clone().requires_grad_(), **kw).detach()
    assert torch.equal(front, op)
