"""The one hook through which the functional API runs torch tensors: ``call(op, *args, **kwargs)``.

``specux.stft(tensor, ...)`` (and every other transform) hands its arguments, unchanged, to :func:`call`,
which turns them into a ``torch.ops.specux.*`` call: validation and defaults stay the functional API's (they
run inside the op), so the result is the same as for a NumPy array, but autograd works and ``torch.compile``
traces the call as a single node. The Python here is deliberately plain (argument packing, dtype casts, no
NumPy on the common path) so that dynamo traces it without graph breaks.

A torch CPU tensor with ``backend="auto"`` or ``"cpu"`` runs on the CPU backend's ops; with a named device
backend (``"opencl"``, ``"cuda"``, ``"metal"``) the operations of :data:`specux.torch._ops_device.OPS` run
on that backend's device ops, the same arguments plus the backend's name (:func:`_op`); so does a CUDA
tensor with ``"cuda"`` (the hook names ``"cuda"`` for ``"auto"``): the device ops have CUDA kernels that run
on the tensor's memory. A float32 / float64 CUDA tensor passed to :mod:`specux.fft` with ``"auto"`` or
``"cuda"`` runs on the FFT ops' CUDA kernels (the cuda backend's generated FFTs). Any other case is checked
by the backend registry, which raises with the reason (no other torch ops exist on GPUs in this build).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor

from specux import _validate
from specux._spec.features import COMPATS as _COMPATS
from specux._spec.features import DCT_NORMS as _DCT_NORMS
from specux._spec.features import DCT_TYPES as _DCT_TYPES
from specux.errors import UnsupportedOperationError, user_stacklevel
from specux.torch import _fft, _ops, _ops_cq, _ops_device, _ops_icqt
from specux.torch._device_op import DEVICE_BACKENDS
from specux.torch._ops_features import LFCC_ARGS, MEL_ARGS, MFCC_ARGS
from specux.torch._ops_stft import ISTFT_ARGS, STFT_ARGS
from specux.torch._params import OpArguments, encode_spec

_HOST_BACKENDS = ("auto", "cpu")


def _check_backend(x: Tensor, backend: str, op: str, public: str) -> None:
    if backend in _HOST_BACKENDS and x.device.type == "cpu":
        return
    on_cpu = backend in DEVICE_BACKENDS and x.device.type == "cpu"
    if op in _ops_device.OPS and (on_cpu or (backend == "cuda" and x.device.type == "cuda")):
        return  # the device op checks the backend itself (in its fake kernel too, so at trace time)
    from specux._backends import registry

    registry.select(x, backend, op, f"specux.{public}")  # raises for unknown / unavailable / foreign devices
    if op == "fft" and x.device.type == "cuda":
        return  # the FFT family's ops have CUDA kernels (the cuda backend's)
    raise UnsupportedOperationError(
        f"specux.{public}: torch tensors on {x.device} with backend={backend!r} have no specux ops in this "
        "build "
        "(the torch integration runs on the CPU backend)"
    )


def _op(name: str, backend: str) -> Callable[..., Tensor]:
    """The op computing ``name`` under ``backend``: the CPU backend's ``specux::<name>``, or the device op
    ``specux::<name>_device`` with the backend's name appended to the same arguments."""
    if backend in _HOST_BACKENDS:
        return getattr(_ops, name)
    return _ops_device.on_backend(name, backend)


def _refuse_given(public: str, what: str, backend: str) -> None:
    """A given spectrogram (``S`` / ``C``) on a device backend: only the signal's chain runs there."""
    if backend not in _HOST_BACKENDS:
        raise UnsupportedOperationError(
            f"specux.{public}: with backend={backend!r} a torch tensor runs from the signal y (the device's "
            f"kernels and adjoints); the {what}= variant is a product torch differentiates on the CPU: pass "
            "backend='cpu'"
        )


def _real_dtype(dtype: Any) -> torch.dtype | None:
    """A requested dtype (numpy or torch, real or complex) as the torch real precision, or None."""
    if dtype is None:
        return None
    if isinstance(dtype, torch.dtype):
        t = dtype
    else:
        import numpy as np

        t = getattr(torch, np.dtype(dtype).name)
    return {torch.complex64: torch.float32, torch.complex128: torch.float64}.get(t, t)


def _window(window: Any, like: Tensor, win_length: int | None, n_fft: int) -> tuple[Tensor | None, str]:
    """(window tensor or None, window_spec): names and tuples travel as specs, arrays as tensors."""
    if isinstance(window, str):
        return None, window
    if isinstance(window, Tensor):
        return window.to(device=like.device), "boxcar"
    if isinstance(window, (tuple, int, float)):
        return None, encode_spec(window)
    from specux._filters.windows import window_for

    w = window_for(window, n_fft if win_length is None else win_length, n_fft)
    return torch.as_tensor(np.array(w, dtype=np.float64), device=like.device), "boxcar"


def _float_signal(y: Tensor, dtype: Any) -> Tensor:
    want = _real_dtype(dtype)
    return y if want is None else y.to(want)


# --- the scalar arguments, checked as the numpy path checks them --------------------------------------------
#
# The ops' schemas take ints, floats, bools and strings; a value of another type (center="False",
# n_fft="256") would be refused there with a RuntimeError that names no parameter, or (a string passed to
# float()) silently read. So every scalar argument is checked first with the helpers the numpy path uses, with
# the same messages. The checks are plain Python on Python values, which dynamo runs at trace time without
# graph breaks; symbolic sizes (torch.SymInt, under dynamic shapes) pass as they are.

_SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)
Check = Callable[[Any, str, str], Any]


def _optional(check: Check) -> Check:
    return lambda value, name, public: None if value is None else check(value, name, public)


def _one_of(allowed: tuple) -> Check:
    return lambda value, name, public: _validate.choice(value, name, public, allowed)


def _int_at_least(minimum: int) -> Check:
    return lambda value, name, public: _validate.positive_int(value, name, public, minimum)


def _any_real(value: Any, name: str, public: str) -> float:
    return _validate.real(value, name, public, finite=False)


def _res_type(value: Any, name: str, public: str) -> Any:
    if value is not None and not isinstance(value, str):
        from specux._resample import check_res_type

        check_res_type(value)  # the numpy path's error for a resampler that is not one of the names
    return value


_INT = _int_at_least(1)
_OPT_INT = _optional(_INT)
_FLAG = _validate.flag
_OPT_FLAG = _validate.optional_flag
_REAL = _validate.real
_OPT_REAL = _validate.optional_real
_OPT_ANY_REAL = _optional(_any_real)
_POSITIVE = _validate.positive_float
_PAD = _one_of(_validate.PAD_MODES)
_OPT_PAD = _optional(_PAD)
_FRAMING = {"n_fft": _INT, "hop_length": _OPT_INT, "win_length": _OPT_INT, "center": _FLAG}
_MEL_FRAMING = {**_FRAMING, "n_fft": _OPT_INT, "pad_mode": _OPT_PAD, "power": _POSITIVE, "n_mels": _INT,
                "fmin": _REAL, "fmax": _OPT_REAL, "htk": _OPT_FLAG, "compat": _one_of(_COMPATS),
                "sr": _optional(_POSITIVE)}
_CQ = {"sr": _POSITIVE, "hop_length": _INT, "fmin": _OPT_REAL, "n_bins": _INT, "bins_per_octave": _INT,
       "tuning": _OPT_REAL, "filter_scale": _POSITIVE, "norm": _OPT_ANY_REAL, "sparsity": _REAL,
       "scale": _FLAG, "pad_mode": _PAD, "res_type": _res_type}

#: op -> {public parameter: check returning the value to pass on}
SCALAR_CHECKS: dict[str, dict[str, Check]] = {
    "stft": {**_FRAMING, "pad_mode": _PAD, "output": _one_of(_validate.STFT_OUTPUTS)},
    "istft": {**_FRAMING, "n_fft": _OPT_INT, "length": _OPT_INT, "nola": _one_of(_validate.NOLA_MODES)},
    "melspectrogram": {**_MEL_FRAMING, "norm": _validate.mel_norm},
    "mfcc": {**_MEL_FRAMING, "mel_norm": _validate.mel_norm, "n_mfcc": _OPT_INT,
             "dct_type": _one_of(_DCT_TYPES), "norm": _one_of(_DCT_NORMS), "lifter": _any_real,
             "top_db": _OPT_ANY_REAL},
    "lfcc": {**_FRAMING, "sample_rate": _POSITIVE, "n_filter": _INT, "f_min": _REAL, "f_max": _OPT_REAL,
             "n_lfcc": _INT, "dct_type": _one_of((2,)), "norm": _one_of(_DCT_NORMS), "log_lf": _FLAG,
             "power": _POSITIVE, "pad_mode": _PAD},
    "vqt": {**_CQ, "gamma": _OPT_REAL},
    "cqt": _CQ,
    "chroma_stft": {**_FRAMING, "sr": _POSITIVE, "norm": _OPT_ANY_REAL, "hop_length": _INT, "pad_mode": _PAD,
                    "tuning": _OPT_REAL, "n_chroma": _INT, "ctroct": _REAL, "octwidth": _OPT_REAL,
                    "base_c": _FLAG},
    "chroma_cqt": {"sr": _POSITIVE, "hop_length": _INT, "fmin": _OPT_REAL, "norm": _OPT_ANY_REAL,
                   "threshold": _optional(_any_real), "tuning": _OPT_REAL, "n_chroma": _INT,
                   "n_octaves": _INT, "bins_per_octave": _OPT_INT, "res_type": _res_type},
    "fftconvolve": {"mode": _one_of(_validate.CONVOLVE_MODES)},
}


def check_scalars(op: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with every scalar argument of ``op`` checked and converted (numpy numbers to Python
    ones)."""
    checks = SCALAR_CHECKS.get(op)
    if not checks:
        return kwargs
    out = dict(kwargs)
    for name, check in checks.items():
        if name in out and not isinstance(out[name], _SYMBOLIC):
            out[name] = check(out[name], name, op)
    return out


def _warn_if_real(D: Tensor) -> Tensor:
    """istft of a real tensor: the numpy path's warning, then the zero-phase spectrum it stands for."""
    if D.dtype.is_complex or D.dtype not in (torch.float32, torch.float64):
        return D
    got = str(D.dtype).removeprefix("torch.")
    # librosa 0.11 takes it silently; a magnitude spectrogram passed by mistake would go unnoticed
    warnings.warn(
        f"istft: stft_matrix is real ({got}), not complex, so it is taken as a spectrum with zero phase "
        "(a magnitude spectrogram does not invert that way: pass the complex stft, or estimate the phase "
        "first); to mean zero phase, pass it as complex (stft_matrix.to(torch.complex64))",
        UserWarning,
        stacklevel=user_stacklevel(),
    )
    return D.to(torch.complex64 if D.dtype == torch.float32 else torch.complex128)


def _takes(
    signal: str, arguments: OpArguments, *own: str, before: dict[str, str] | None = None
) -> Callable[[Callable], Callable]:
    """Declare a route's parameters: ``signal``, the op's ``arguments`` (spelled in its signature, by their
    public names) and the route's ``own`` (backend, dtype, ...), all passed by name by :func:`call`.

    The public function's order (a test compares the two) is the op's but where ``before`` says: each of its
    names (one of ``own``, or one of the op's that the public function puts elsewhere) goes just before the
    name it maps to, in the mapping's order; ``own`` names not placed come last.
    """

    def declare(route: Callable) -> Callable:
        names = [*arguments.public, *own]
        for name, anchor in (before or {}).items():
            names.remove(name)
            names.insert(names.index(anchor), name)
        kind = inspect.Parameter.KEYWORD_ONLY
        route.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(signal, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
            + [inspect.Parameter(name, kind) for name in names]
        )
        return route

    return declare


# --- stft / istft -------------------------------------------------------------------------------------------


@_takes("y", STFT_ARGS, "window", "dtype", "backend", before={"window": "center", "dtype": "pad_mode"})
def stft(y, *, window, dtype, backend, **kw):
    _check_backend(y, backend, "stft", "stft")
    w, spec = _window(window, y, kw["win_length"], kw["n_fft"])
    args = STFT_ARGS.passed(kw)
    if backend not in _HOST_BACKENDS:  # the device's own layout is (bins, frames)
        return _op("stft", backend)(_float_signal(y, dtype), w, spec, *args)
    # the kernel's own layout (frames, bins), returned as the transposed view: no copy (see stft_frames)
    D = _ops.stft_frames(_float_signal(y, dtype), w, spec, *args)
    return D.transpose(-2, -3) if kw["output"] == "real_imag" else D.transpose(-1, -2)


@_takes(
    "stft_matrix",
    ISTFT_ARGS,
    "window",
    "dtype",
    "backend",
    before={"window": "center", "n_fft": "window", "dtype": "length"},
)
def istft(stft_matrix, *, window, dtype, backend, **kw):
    _check_backend(stft_matrix, backend, "istft", "istft")
    D = _warn_if_real(stft_matrix)
    want = _real_dtype(dtype)
    if want is not None:
        D = D.to({torch.float32: torch.complex64, torch.float64: torch.complex128}.get(want, want))
    n = 2 * (D.shape[-2] - 1) if kw["n_fft"] is None else kw["n_fft"]
    w, spec = _window(window, D, kw["win_length"], n)
    return _op("istft", backend)(D, w, spec, *ISTFT_ARGS.passed(kw))


# --- mel / cepstral -----------------------------------------------------------------------------------------


def _mel_n_fft(compat: str | None, n_fft: int | None) -> int:
    """The FFT length a mel-family call will use (its ``None`` default follows ``compat``)."""
    if n_fft is not None:
        return n_fft
    from specux._spec.features import resolve

    return resolve(compat, "n_fft", None)


def _bank_of_spectrogram(S: Tensor, basis) -> Tensor:
    return torch.matmul(torch.as_tensor(np.array(basis), dtype=S.dtype, device=S.device), S)


@_takes("y", MEL_ARGS, "S", "window", "backend", before={"S": "n_fft", "window": "center"})
def melspectrogram(y, *, S, window, backend, **kw):
    if S is not None:
        # a given spectrogram is only multiplied by the bank: a matrix product that torch differentiates
        # itself
        _refuse_given("melspectrogram", "S", backend)
        _check_backend(S, backend, "melspectrogram", "melspectrogram")
        from specux._spec.features import mel_validate

        p = mel_validate(S, from_spectrogram=True, window=window, **MEL_ARGS.from_public(kw))
        return _bank_of_spectrogram(S, p.basis)
    _check_backend(y, backend, "melspectrogram", "melspectrogram")
    w, spec = _window(window, y, kw["win_length"], _mel_n_fft(kw["compat"], kw["n_fft"]))
    kw["norm"] = encode_spec(kw["norm"])
    return _op("melspectrogram", backend)(y, w, None, spec, *MEL_ARGS.passed(kw))


@_takes("y", MFCC_ARGS, "S", "window", "backend", before={"S": "n_mfcc", "window": "center"})
def mfcc(y, *, S, window, backend, **kw):
    if S is not None:
        # a given log-power spectrogram only meets the DCT matrix: a product torch differentiates itself
        _refuse_given("mfcc", "S", backend)
        _check_backend(S, backend, "mfcc", "mfcc")
        from specux._spec.features import dct_matrix, resolve

        n = resolve(kw["compat"], "n_mfcc", kw["n_mfcc"])
        if n > S.shape[-2]:
            raise ValueError(f"mfcc: n_mfcc={n} must be <= the number of mel bands ({S.shape[-2]})")
        return _bank_of_spectrogram(
            S, dct_matrix(n, S.shape[-2], kw["dct_type"], kw["norm"], float(kw["lifter"]))
        )
    _check_backend(y, backend, "mfcc", "mfcc")
    w, spec = _window(window, y, kw["win_length"], _mel_n_fft(kw["compat"], kw["n_fft"]))
    kw["mel_norm"] = encode_spec(kw["mel_norm"])
    return _op("mfcc", backend)(y, w, None, None, spec, *MFCC_ARGS.passed(kw))


@_takes("waveform", LFCC_ARGS, "window", "backend", before={"window": "power"})
def lfcc(waveform, *, window, backend, **kw):
    _check_backend(waveform, backend, "lfcc", "lfcc")
    w, spec = _window(window, waveform, kw["win_length"], kw["n_fft"])
    return _op("lfcc", backend)(waveform, w, None, None, spec, *LFCC_ARGS.passed(kw))


# --- constant-Q and chroma ----------------------------------------------------------------------------------


def _cq_window(window: Any, public: str) -> str:
    if isinstance(window, str):
        return window
    if isinstance(window, (tuple, int, float)):
        return encode_spec(window)
    raise TypeError(f"{public}: for torch inputs, window must be a name or a (name, parameter) tuple")


@_takes("y", _ops_cq.VQT_ARGS, "dtype", "backend")
def vqt(y, *, intervals, window, dtype, backend, **kw):
    _check_backend(y, backend, "vqt", "vqt")
    kw.update(intervals=_ops_cq.intervals_arg(intervals), window=_cq_window(window, "vqt"))
    return _op("vqt", backend)(_float_signal(y, dtype), [], *_ops_cq.VQT_ARGS.passed(kw))


@_takes("y", _ops_cq.CQT_ARGS, "dtype", "backend")
def cqt(y, *, window, dtype, backend, **kw):
    _check_backend(y, backend, "cqt", "cqt")
    kw.update(window=_cq_window(window, "cqt"))
    return _op("cqt", backend)(_float_signal(y, dtype), [], *_ops_cq.CQT_ARGS.passed(kw))


@_takes("y", _ops_cq.CHROMA_STFT_ARGS, "S", "window", "backend", before={"S": "norm", "window": "center"})
def chroma_stft(y, *, S, window, backend, **kw):
    if S is not None:
        raise UnsupportedOperationError(
            "specux.chroma_stft: for torch tensors pass the signal y (differentiable through "
            "specux::chroma_stft); "
            "the S= variant runs on numpy arrays (pass S.detach().numpy())"
        )
    _check_backend(y, backend, "chroma_stft", "chroma_stft")
    w, spec = _window(window, y, kw["win_length"], kw["n_fft"])
    return _op("chroma_stft", backend)(y, w, None, spec, *_ops_cq.CHROMA_STFT_ARGS.passed(kw))


@_takes(
    "y",
    _ops_cq.CHROMA_CQT_ARGS,
    "C",
    "window",
    "cqt_mode",
    "backend",
    before={"C": "hop_length", "window": "bins_per_octave", "cqt_mode": "res_type"},
)
def chroma_cqt(y, *, C, window, cqt_mode, backend, **kw):
    if C is not None:
        raise UnsupportedOperationError(
            "specux.chroma_cqt: for torch tensors pass the signal y (differentiable through "
            "specux::chroma_cqt); "
            "the C= variant runs on numpy arrays (pass C.detach().numpy())"
        )
    _check_backend(y, backend, "chroma_cqt", "chroma_cqt")
    if cqt_mode != "full":
        raise ValueError(
            f"chroma_cqt: cqt_mode must be 'full' (the hybrid transform is not offered); got {cqt_mode!r}"
        )
    fold = None
    if window is not None:
        from specux._filters.constant_q import cq_to_chroma

        n_chroma, bins_per_octave = kw["n_chroma"], kw["bins_per_octave"]
        bpo = n_chroma if bins_per_octave is None else bins_per_octave
        M = cq_to_chroma(
            kw["n_octaves"] * bpo, bins_per_octave=bpo, n_chroma=n_chroma, fmin=kw["fmin"], window=window
        )
        fold = torch.as_tensor(np.array(M, dtype=np.float64))
    out = _op("chroma_cqt", backend)(y, [], fold, *_ops_cq.CHROMA_CQT_ARGS.passed(kw))
    if fold is not None and backend not in _HOST_BACKENDS:
        # the device computes in the signal's precision; the CPU op (and the numpy device path) promote to
        # the fold's, float64 with a window
        out = out.to(torch.promote_types(out.dtype, fold.dtype))
    return out


def icqt(C, *, backend, **kw):
    """``specux.icqt`` of a torch tensor: ``specux::icqt`` on the CPU backend, ``specux::icqt_device`` on a
    named device backend (the device's kernels forward, their transposes backward)."""
    _check_backend(C, backend, "icqt", "icqt")
    C, args = _ops_icqt.arguments(C, **kw)
    if backend in _HOST_BACKENDS:
        return _ops_icqt.icqt(C, *args)
    return _ops_device.on_backend("icqt", backend)(C, *args)


# --- fftconvolve and the FFT family -------------------------------------------------------------------------


def fftconvolve(in1, in2, mode, axes, *, backend):
    _check_backend(in1, backend, "fftconvolve", "fftconvolve")
    if not isinstance(in2, Tensor):
        in2 = torch.as_tensor(in2, device=in1.device)
    if in2.device != in1.device:
        raise ValueError(
            f"fftconvolve: in1 and in2 must live on the same device; got {in1.device} and {in2.device}"
        )
    a = in1 if in1.is_floating_point() or in1.is_complex() else in1.to(torch.float64)
    b = in2 if in2.is_floating_point() or in2.is_complex() else in2.to(torch.float64)
    ax = None if axes is None else ([int(axes)] if isinstance(axes, int) else [int(v) for v in axes])
    return _op("fftconvolve", backend)(a, b, mode, ax)


def fft_family(name: str, a: Tensor, *args: Any, backend: str = "auto", **kwargs: Any) -> Tensor:
    _check_backend(a, backend, "fft", f"fft.{name}")
    return _fft.FUNCTIONS[name](a, *args, **kwargs)


_PUBLIC = {
    "stft": stft,
    "istft": istft,
    "melspectrogram": melspectrogram,
    "mfcc": mfcc,
    "lfcc": lfcc,
    "vqt": vqt,
    "cqt": cqt,
    "chroma_stft": chroma_stft,
    "chroma_cqt": chroma_cqt,
    "fftconvolve": fftconvolve,
    "icqt": icqt,
}


def call(op: str, *args: Any, **kwargs: Any) -> Any:
    """Run the public transform ``op`` (``"stft"``, ..., ``"fft.<name>"``) on torch tensors via specux's ops.

    ``args`` / ``kwargs`` are the public function's own arguments, every one passed (the frontend forwards
    them unchanged, defaults included), so defaults live once, in the public signature.
    """
    if op.startswith("fft."):
        return fft_family(op[4:], *args, **kwargs)
    try:
        fn = _PUBLIC[op]
    except KeyError:
        raise ValueError(f"specux.torch: no torch route for operation {op!r}") from None
    return fn(*args, **check_scalars(op, kwargs))
