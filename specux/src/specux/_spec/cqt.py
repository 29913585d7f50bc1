"""cqt / vqt arguments -> :class:`specux._validate.VqtParams`, the memory guard and the short-signal
warning."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from specux import _arrays, _memory, _validate
from specux._backends.cpu.cqt import output_frames, vqt_plan
from specux._filters import constant_q as cqf
from specux._resample import check_res_type
from specux._validate import (
    VqtParams,
)
from specux.errors import user_stacklevel


def _check_signal(y: Any, public: str) -> np.ndarray:
    x = _arrays.to_numpy(y)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"{public}: y must be float32 or float64; got dtype {x.dtype}")
    if x.ndim < 1 or x.shape[-1] == 0:
        raise ValueError(
            f"{public}: y must have at least one sample along its last axis; got shape {x.shape}"
        )
    return x


def _output_dtype(dtype: Any, x: Any, public: str) -> str:
    if dtype is None:
        return "complex64" if _arrays.real_dtype_name(x) == "float32" else "complex128"
    name = _validate.numpy_dtype(dtype, "dtype", public, "None, complex64 or complex128").name
    if name not in ("complex64", "complex128"):
        raise TypeError(f"{public}: dtype must be None, complex64 or complex128; got {name}")
    return name


def validate_vqt(y: Any, public: str, device: bool = False, **kw: Any) -> tuple[Any, VqtParams]:
    """Check every argument of :func:`vqt` (see there) and return the numpy signal and a
    :class:`VqtParams`.

    ``device``: for a device backend, where ``y`` may be a device array (returned as it is, never copied to
    the host) and the soxr qualities need no ``soxr`` package (the device designs its own filter, see
    :mod:`specux._runtime.cq_exec`).
    """
    x = _device_signal(y, public) if device else _check_signal(y, public)
    sr = _validate.positive_float(kw["sr"], "sr", public)
    hop = _validate.positive_int(kw["hop_length"], "hop_length", public)
    n_bins = _validate.positive_int(kw["n_bins"], "n_bins", public)
    intervals = kw["intervals"]
    if isinstance(intervals, str):
        bpo = _validate.positive_int(kw["bins_per_octave"], "bins_per_octave", public)
    else:
        ratios = np.asarray(intervals)
        if ratios.dtype.kind not in "iuf":
            raise TypeError(
                f"{public}: intervals must be 'equal' or a sequence of numbers (ratios in [1, 2)); got "
                f"{intervals!r}"
            )
        intervals = tuple(float(r) for r in ratios.astype(np.float64).ravel())
        bpo = len(intervals)
        if bpo == 0:
            raise ValueError(
                f"{public}: intervals must be 'equal' or a non-empty sequence of ratios in [1, 2)"
            )
    gamma = _validate.optional_real(kw["gamma"], "gamma", public)
    if gamma is not None and not gamma >= 0:
        raise ValueError(f"{public}: gamma must be a number >= 0 (Hz) or None; got {kw['gamma']!r}")
    filter_scale = _validate.positive_float(kw["filter_scale"], "filter_scale", public)
    sparsity = _validate.real(kw["sparsity"], "sparsity", public)
    if not 0 <= sparsity < 1:
        raise ValueError(f"{public}: sparsity must be a number in [0, 1); got {kw['sparsity']!r}")
    norm = cqf.check_norm(kw["norm"], public)
    scale = _validate.flag(kw["scale"], "scale", public)
    _validate.choice(kw["pad_mode"], "pad_mode", public, _validate.PAD_MODES)
    res_type = kw["res_type"]
    if device:
        from specux._runtime.cq_exec import check_device_res_type

        check_device_res_type(res_type, public)
    elif res_type is not None:
        check_res_type(res_type)
    fmin = cqf.c1_hz() if kw["fmin"] is None else _validate.real(kw["fmin"], "fmin", public)
    if not fmin > 0:
        raise ValueError(f"{public}: fmin must be a positive frequency in Hz; got {kw['fmin']!r}")
    tuning = kw["tuning"]
    if tuning is None:
        if not isinstance(x, np.ndarray):
            raise ValueError(
                f"{public}: tuning=None estimates the tuning from the signal on the host; for an array on a "
                "device pass tuning explicitly (for example specux.estimate_tuning of a host copy)"
            )
        # the estimate of a signal goes through its front, which computes the spectrogram with the cpu stft
        # before the cpu backend's tuning kernels: reached at call time, as a lower module reaches a higher
        # one
        from specux.ops.tuning import estimate_tuning

        tuning = estimate_tuning(x, sr=sr, bins_per_octave=bpo)
    else:
        tuning = _validate.real(tuning, "tuning", public)
    params = VqtParams(
        sr=sr,
        hop_length=hop,
        fmin=fmin * 2.0 ** (tuning / bpo),
        n_bins=n_bins,
        intervals=intervals,
        gamma=gamma,
        bins_per_octave=bpo,
        filter_scale=filter_scale,
        norm=norm,
        sparsity=sparsity,
        window=kw["window"],
        scale=scale,
        pad_mode=kw["pad_mode"],
        res_type=res_type,
        dtype=_output_dtype(kw["dtype"], x, public),
    )
    _check_memory(x.shape, params, public)
    return x, params


def _check_memory(shape: tuple[int, ...], p: VqtParams, public: str) -> None:
    """The memory guard of a vqt: the output, the signals of the octaves and every octave's filters (built in
    complex128, then kept as frame weights), before anything is allocated."""
    plan = vqt_plan(p)
    item = np.dtype(p.dtype).itemsize  # complex
    rows, n = _memory.product(shape[:-1]), shape[-1]
    n_ffts, kept, build = [], 0, 0
    for octave in plan.octaves:
        longest = float(np.max(plan.lengths[octave.rows])) * octave.sr / plan.sr
        n_fft = 2 ** max(0, math.ceil(math.log2(max(longest, 1.0))))
        k = octave.rows.stop - octave.rows.start
        n_ffts.append((None, n_fft))
        kept += 2 * k * n_fft * item
        build = max(build, 5 * k * n_fft * 16)
    n_frames = output_frames(n, plan, n_ffts)
    out = rows * p.n_bins * n_frames * item
    signals = rows * n * item  # the rows in the real precision and their halvings
    filters = kept + build
    detail = f"{p.n_bins} bins x {n_frames} frames for {rows} signal(s) of {n} samples"
    common = {"public": public, "detail": detail}
    if out >= filters:
        # the output has n_bins rows per hop_length samples: blame whichever is further from its default
        many_bins = p.n_bins / 84 >= 512 / p.hop_length
        _memory.check(
            out + signals + filters,
            parameter="n_bins" if many_bins else "hop_length",
            value=p.n_bins if many_bins else p.hop_length,
            advice="use fewer n_bins or a larger hop_length",
            **common,
        )
    else:
        _memory.check(
            out + signals + filters,
            parameter="fmin",
            value=round(p.fmin, 6),
            advice=f"raise fmin, lower filter_scale or use a lower sr (the longest filter is "
            f"{max(nf for _, nf in n_ffts)} samples)",
            **common,
        )


def warn_if_short(n: int, p: VqtParams, public: str) -> None:
    """Warn (UserWarning, as ``stft`` does for ``n_fft`` longer than the signal) when the longest filter of
    ``p`` is longer than the ``n``-sample signal: its responses are then mostly padding."""
    plan = vqt_plan(p)
    longest = math.ceil(float(np.max(plan.lengths)) * p.sr / plan.sr)
    if longest > n:
        warnings.warn(
            f"{public}: the longest filter ({longest} samples, at {float(plan.freqs[0]):.4g} Hz) is longer "
            f"than the signal length {n}; the frames are mostly padding",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def _device_signal(y: Any, public: str) -> Any:
    """``y`` for a device backend: a numpy view of host input, a device array as it is; checked as
    :func:`_check_signal` checks."""
    x = _arrays.to_numpy(y) if _arrays.is_host(y) else y
    name = _arrays.real_dtype_name(x)
    if name not in ("float32", "float64"):
        raise TypeError(f"{public}: y must be float32 or float64; got dtype {name}")
    if len(x.shape) < 1 or x.shape[-1] == 0:
        raise ValueError(
            f"{public}: y must have at least one sample along its last axis; got shape {tuple(x.shape)}"
        )
    return x
