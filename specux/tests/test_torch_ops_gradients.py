"""specux's torch custom ops: opcheck, gradcheck / gradgradcheck in float64, determinism, the autocast policy.

One table of cases covers every op (the FFT primitives, stft in each output mode, istft, melspectrogram, mfcc,
lfcc, cqt, vqt, chroma_stft, chroma_cqt, fftconvolve). Inputs have batch dimensions and are non-contiguous
views (every other sample of a larger tensor) where the op takes a signal. gradcheck runs in fast mode (random
vector-Jacobian projections) to keep the file at seconds; one full-Jacobian check per family guards the rest.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import specux  # noqa: E402
import specux.torch  # noqa: E402  (registers the ops)
from specux._determinism import deterministic, is_deterministic  # noqa: E402

ops = torch.ops.specux
SR = 4000.0
INF = math.inf


def signal(*batch: int, n: int = 300, dtype=torch.float64, seed: int = 0) -> torch.Tensor:
    """A non-contiguous (stride 2) batch of noisy tones, (*batch, n)."""
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(2 * n, dtype=torch.float64) / SR
    tone = torch.sin(2 * math.pi * 440 * t) + 0.5 * torch.sin(2 * math.pi * 700 * t)
    x = tone + 0.3 * torch.randn(*batch, 2 * n, generator=g, dtype=torch.float64)
    return x.to(dtype)[..., ::2]


def spectrum(*shape: int, dtype=torch.complex128, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape[:-1], 2 * shape[-1], generator=g, dtype=dtype)
    return x[..., ::2]


@dataclass
class Case:
    """``fn(*tensors)`` calls ``op`` with the constant arguments; ``make(dtype)`` builds the tensors."""

    name: str
    op: Callable
    make: Callable  # real dtype -> tuple of input tensors
    rest: tuple  # the op's non-tensor arguments after the tensors
    lead: tuple = ()  # constant tensor arguments placed right after the differentiable ones (None: absent)
    gradgrad: bool = False
    #: finite-difference step of gradcheck; linear maps allow a large one, which the soxr cases need because
    #: libsoxr computes in single precision (a 1e-6 step would be lost in its rounding)
    eps: float = 1e-6

    def args(self, dtype=torch.float64) -> tuple:
        return (*self.make(dtype), *self.lead, *self.rest)

    def fn(self, *tensors):
        return self.op(*tensors, *self.lead, *self.rest)


def _c(real):
    return {torch.float32: torch.complex64, torch.float64: torch.complex128}[real]


STFT_REST = ("hann", 32, 8, 24, True, "reflect")
MEL_REST = ("hann", SR, 64, 16, None, True, None, 2.0, 12, 0.0, None, None, "auto", None)
MFCC_REST = (
    "hann",
    SR,
    8,
    2,
    "ortho",
    0.0,
    64,
    16,
    None,
    True,
    None,
    2.0,
    12,
    0.0,
    None,
    None,
    "auto",
    80.0,
    None,
)
LFCC_REST = ("hann", 4000, 12, 0.0, None, 6, 2, "ortho", False, 64, None, None, 2.0, True, "reflect")
VQT_REST = (SR, 32, 150.0, 12, None, None, 6, 0.0, 1.0, 1.0, 0.01, "hann", True, "constant", None)
CQT_REST = (SR, 32, 150.0, 12, 6, 0.0, 1.0, 1.0, 0.01, "hann", True, "constant", None)
CHROMA_STFT_REST = ("hann", SR, INF, 128, 32, None, True, "constant", None, 12, 5.0, 2.0, True)
CHROMA_CQT_REST = (SR, 32, 150.0, INF, 0.0, 0.0, 12, 2, 24, None)

CASES = [
    Case("c2c", ops.c2c, lambda d: (spectrum(2, 3, 10, dtype=_c(d)),), (-1, False, 1.0), gradgrad=True),
    Case("c2c_inverse", ops.c2c, lambda d: (spectrum(3, 9, dtype=_c(d)),), (0, True, 1 / 3), gradgrad=True),
    Case("r2c", ops.r2c, lambda d: (signal(2, 3, n=11, dtype=d),), (-1, 0.5), gradgrad=True),
    Case("c2r_even", ops.c2r, lambda d: (spectrum(2, 6, dtype=_c(d)),), (-1, 10, 1.0), gradgrad=True),
    Case("c2r_odd", ops.c2r, lambda d: (spectrum(6, 2, dtype=_c(d)),), (0, 11, 0.1), gradgrad=True),
    *[
        Case(
            f"stft_{out}",
            ops.stft,
            lambda d: (signal(2, 2, n=150, dtype=d),),
            (*STFT_REST, out),
            (None,),
            gradgrad=out in ("complex", "real_imag", "power"),
        )
        for out in ("complex", "magnitude", "power", "real_imag")
    ],
    Case(
        "stft_constant_nocenter",
        ops.stft,
        lambda d: (signal(3, n=150, dtype=d),),
        ("hann", 32, 10, None, False, "constant", "complex"),
        (None,),
        gradgrad=True,
    ),
    Case(
        "istft",
        ops.istft,
        lambda d: (spectrum(2, 17, 12, dtype=_c(d)),),
        ("hann", None, 8, None, True, None, "ignore"),
        (None,),
        gradgrad=True,
    ),
    Case(
        "istft_length",
        ops.istft,
        lambda d: (spectrum(17, 12, dtype=_c(d)),),
        ("hann", None, 8, 24, False, 70, "ignore"),
        (None,),
        gradgrad=True,
    ),
    Case(
        "melspectrogram", ops.melspectrogram, lambda d: (signal(2, n=300, dtype=d),), MEL_REST, (None, None)
    ),
    Case("mfcc", ops.mfcc, lambda d: (signal(2, n=300, dtype=d),), MFCC_REST, (None, None, None)),
    Case(
        "mfcc_floor",
        ops.mfcc,
        lambda d: (signal(2, n=300, dtype=d),),
        (*MFCC_REST[:17], 8.0, MFCC_REST[18]),
        (None, None, None),
    ),
    Case(
        "mfcc_torchaudio",
        ops.mfcc,
        lambda d: (signal(2, n=300, dtype=d),),
        (*MFCC_REST[:17], 20.0, "torchaudio"),
        (None, None, None),
    ),
    Case("lfcc", ops.lfcc, lambda d: (signal(2, n=300, dtype=d),), LFCC_REST, (None, None, None)),
    Case("vqt", ops.vqt, lambda d: (signal(2, n=400, dtype=d),), VQT_REST, ([],), gradgrad=True),
    Case("cqt", ops.cqt, lambda d: (signal(2, n=400, dtype=d),), CQT_REST, ([],), gradgrad=True),
    # early downsampling by 8 and per-octave halving, through scipy's polyphase resampler
    Case(
        "cqt_polyphase",
        ops.cqt,
        lambda d: (signal(2, n=1500, dtype=d),),
        (8000.0, 256, 40.0, 24, 12, 0.0, 1.0, 1.0, 0.01, "hann", False, "constant", "polyphase"),
        ([],),
        gradgrad=True,
    ),
    # libsoxr between the two octaves (its measured filter's adjoint), and before the only octave (by 2)
    Case(
        "cqt_soxr",
        ops.cqt,
        lambda d: (signal(2, n=400, dtype=d),),
        (*CQT_REST[:-1], "soxr_hq"),
        ([],),
        gradgrad=True,
        eps=1.0,
    ),
    Case(
        "vqt_soxr_vhq_early",
        ops.vqt,
        lambda d: (signal(2, n=400, dtype=d),),
        (SR, 32, 150.0, 6, None, None, 6, 0.0, 1.0, 1.0, 0.01, "hann", False, "constant", "soxr_vhq"),
        ([],),
        gradgrad=True,
        eps=1.0,
    ),
    # libsoxr's early downsampling by 8 (several stages, with a start-up correction), then per-octave halving
    Case(
        "cqt_soxr_early8",
        ops.cqt,
        lambda d: (signal(2, n=1500, dtype=d),),
        (8000.0, 256, 40.0, 24, 12, 0.0, 1.0, 1.0, 0.01, "hann", False, "constant", "soxr_hq"),
        ([],),
        eps=1.0,
    ),
    Case(
        "chroma_cqt_soxr",
        ops.chroma_cqt,
        lambda d: (signal(2, n=500, dtype=d),),
        (*CHROMA_CQT_REST[:-1], "soxr_hq"),
        ([], None),
        eps=1e-2,
    ),
    Case(
        "chroma_stft", ops.chroma_stft, lambda d: (signal(2, n=400, dtype=d),), CHROMA_STFT_REST, (None, None)
    ),
    Case("chroma_cqt", ops.chroma_cqt, lambda d: (signal(2, n=500, dtype=d),), CHROMA_CQT_REST, ([], None)),
    Case(
        "fftconvolve_full",
        ops.fftconvolve,
        lambda d: (signal(2, n=20, dtype=d), signal(1, n=7, dtype=d, seed=3)),
        ("full", None),
        gradgrad=True,
    ),
    Case(
        "fftconvolve_same_complex",
        ops.fftconvolve,
        lambda d: (spectrum(2, 12, dtype=_c(d)), signal(2, n=5, dtype=d, seed=3)),
        ("same", [1]),
        gradgrad=True,
    ),
    Case(
        "fftconvolve_valid_swapped",
        ops.fftconvolve,
        lambda d: (signal(n=6, dtype=d), signal(n=15, dtype=d, seed=3)),
        ("valid", None),
        gradgrad=True,
    ),
]
IDS = [c.name for c in CASES]


def _grad_inputs(case: Case, dtype=torch.float64) -> tuple:
    return tuple(t.detach().requires_grad_() for t in case.make(dtype))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_opcheck(case: Case) -> None:
    # fake kernel, schema, autograd registration and AOT dispatch of the forward op
    torch.library.opcheck(case.op, (*_grad_inputs(case), *case.lead, *case.rest))


#: backward ops whose arguments are (grad, *the forward's arguments)
BACKWARD_OPS = {
    "stft": ops.stft_backward,
    "istft": ops.istft_backward,
    "melspectrogram": ops.melspectrogram_backward,
    "mfcc": ops.mfcc_backward,
    "lfcc": ops.lfcc_backward,
    "vqt": ops.vqt_backward,
    "chroma_stft": ops.chroma_stft_backward,
    "chroma_cqt": ops.chroma_cqt_backward,
    "fftconvolve": ops.fftconvolve_backward,
}
BACKWARD_CASES = [c for c in CASES if c.op.__name__ in BACKWARD_OPS]


@pytest.mark.parametrize("case", BACKWARD_CASES, ids=[c.name for c in BACKWARD_CASES])
def test_opcheck_backward_ops(case: Case) -> None:
    inputs = case.make(torch.float64)
    grad = torch.randn_like(case.fn(*inputs))
    torch.library.opcheck(BACKWARD_OPS[case.op.__name__], (grad, *inputs, *case.lead, *case.rest))


def test_opcheck_fft_adjoint_ops() -> None:
    x = signal(2, n=10)
    torch.library.opcheck(ops.r2c_backward, (ops.r2c(x, -1, 1.0), -1, 10, 1.0))
    torch.library.opcheck(ops.c2r_backward, (x, -1, 0.5))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradcheck(case: Case) -> None:
    inputs = _grad_inputs(case)
    assert torch.autograd.gradcheck(case.fn, inputs, fast_mode=True, atol=1e-6, eps=case.eps)


@pytest.mark.parametrize("case", [c for c in CASES if c.gradgrad], ids=[c.name for c in CASES if c.gradgrad])
def test_gradgradcheck(case: Case) -> None:
    inputs = _grad_inputs(case)
    assert torch.autograd.gradgradcheck(case.fn, inputs, fast_mode=True, atol=1e-6, eps=case.eps)


@pytest.mark.parametrize(
    "name", ["stft_magnitude", "mfcc_floor", "c2r_odd", "fftconvolve_same_complex", "r2c"]
)
def test_gradcheck_full_jacobian(name: str) -> None:
    """The slow, exhaustive Jacobian comparison on one op per family (small inputs)."""
    case = {c.name: c for c in CASES}[name]
    inputs = _grad_inputs(case)
    if name == "stft_magnitude":  # one signal of the batch keeps the Jacobian small
        inputs = (inputs[0].detach()[:1, :1].requires_grad_(),)
    assert torch.autograd.gradcheck(case.fn, inputs, fast_mode=False, atol=1e-6)


def test_mfcc_floor_case_really_clamps() -> None:
    """The top_db floor's gradient (routed to the maximum) is only exercised if some values are floored."""
    case = {c.name: c for c in CASES}["mfcc_floor"]
    (y,) = case.make(torch.float64)
    S = specux.melspectrogram(y.numpy(), sr=SR, n_fft=64, hop_length=16, n_mels=12)
    db = 10 * np.log10(np.maximum(S, 1e-10))
    assert (db < db.max() - 8.0).any()


@pytest.mark.parametrize(
    "name", ["stft_magnitude", "melspectrogram", "mfcc", "lfcc", "chroma_stft", "chroma_cqt"]
)
def test_nonlinear_ops_refuse_double_backward(name: str) -> None:
    """Outputs that are not linear in the signal say so instead of returning a wrong second derivative."""
    case = {c.name: c for c in CASES}[name]
    (y,) = _grad_inputs(case)
    out = case.fn(y)
    (g,) = torch.autograd.grad(out.abs().sum(), y, create_graph=True)
    with pytest.raises(RuntimeError):
        torch.autograd.grad(g.sum(), y)


def test_soxr_cases_go_through_the_resampler() -> None:
    """The soxr cases above do what they claim: octaves at two rates, early downsampling by 2 and by 8."""
    from specux._backends.cpu.cqt import vqt_plan
    from specux._spec.cqt import validate_vqt

    y = signal(n=400).numpy()
    kw = dict(intervals="equal", gamma=0, tuning=0.0, window="hann", pad_mode="constant", dtype=None)
    _, p = validate_vqt(y, "cqt", sr=SR, hop_length=32, fmin=150.0, n_bins=12, bins_per_octave=6,
                        filter_scale=1.0, norm=1.0, sparsity=0.01, scale=True, res_type="soxr_hq", **kw)
    assert len({o.sr for o in vqt_plan(p).octaves}) == 2
    _, p = validate_vqt(y, "vqt", sr=SR, hop_length=32, fmin=150.0, n_bins=6, bins_per_octave=6,
                        filter_scale=1.0, norm=1.0, sparsity=0.01, scale=False, res_type="soxr_vhq", **kw)
    assert vqt_plan(p).early_factor == 2
    _, p = validate_vqt(y, "cqt", sr=8000.0, hop_length=256, fmin=40.0, n_bins=24, bins_per_octave=12,
                        filter_scale=1.0, norm=1.0, sparsity=0.01, scale=False, res_type="soxr_hq", **kw)
    assert vqt_plan(p).early_factor == 8 and len({o.sr for o in vqt_plan(p).octaves}) == 2


def test_window_gradient_is_refused_not_dropped() -> None:
    """istft's window has no gradient (stft's has: test_torch_constants_gradients.py): refused, not zero."""
    D = spectrum(17, 12).requires_grad_()
    w = torch.hann_window(32, periodic=True, dtype=torch.float64).requires_grad_()
    out = ops.istft(D, w, "boxcar", None, 8, None, True, None, "ignore")
    with pytest.raises(RuntimeError, match="window"):
        out.sum().backward()


# --- determinism -------------------------------------------------------------------------------------------


def _run(case: Case, dtype=torch.float32) -> tuple[torch.Tensor, list[torch.Tensor]]:
    inputs = _grad_inputs(case, dtype)
    out = case.fn(*inputs)
    weights = torch.linspace(-1, 1, out.numel(), dtype=out.real.dtype).reshape(out.shape)
    loss = (
        (out.real * weights).sum() + (out.imag * weights).sum() if out.is_complex() else (out * weights).sum()
    )
    grads = torch.autograd.grad(loss, inputs)
    return out.detach(), [g.detach() for g in grads]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_run_twice_bitwise_equal_under_deterministic_mode(case: Case) -> None:
    with deterministic(True):
        assert is_deterministic()
        out1, g1 = _run(case)
        out2, g2 = _run(case)
    assert torch.equal(out1, out2)
    assert all(torch.equal(a, b) for a, b in zip(g1, g2))


def test_torch_deterministic_algorithms_switch_on_deterministic_mode() -> None:
    before = torch.are_deterministic_algorithms_enabled()
    try:
        torch.use_deterministic_algorithms(True)
        assert is_deterministic()
        case = {c.name: c for c in CASES}["istft"]
        a, ga = _run(case)
        b, gb = _run(case)
        assert torch.equal(a, b) and torch.equal(ga[0], gb[0])
    finally:
        torch.use_deterministic_algorithms(before)
    assert is_deterministic() == before


def test_deterministic_switch_and_context() -> None:
    assert not is_deterministic()
    with deterministic(True):
        assert is_deterministic()
        with deterministic(False):
            assert not is_deterministic()
        assert is_deterministic()
    assert not is_deterministic()
    with pytest.raises(TypeError, match="mode"):
        deterministic("yes")


# --- autocast ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if not c.make(torch.float32)[0].is_complex()],
    ids=[c.name for c in CASES if not c.make(torch.float32)[0].is_complex()],
)
def test_autocast_computes_in_float32(case: Case) -> None:
    inputs = tuple(t.to(torch.bfloat16) for t in case.make(torch.float32))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = case.fn(*inputs)
    want = case.op(*case.make(torch.float32), *case.lead, *case.rest)
    assert out.dtype == want.dtype and out.dtype in (torch.float32, torch.complex64)


def test_half_input_outside_autocast_is_refused() -> None:
    with pytest.raises(TypeError, match=r"float16|dtype"):
        ops.stft(signal(n=150, dtype=torch.float16), None, *STFT_REST, "complex")
