"""icqt arguments -> :class:`specux._validate.IcqtParams`."""

from __future__ import annotations

from typing import Any

import numpy as np

from specux import _arrays, _validate
from specux._backends.cpu.icqt import icqt_plan
from specux._filters import constant_q as cqf
from specux._resample import RES_TYPES, check_res_type
from specux._validate import (
    IcqtParams,
)


def validate_icqt(C: Any, public: str, device: bool = False, **kw: Any) -> tuple[np.ndarray, IcqtParams]:
    """Check every argument of :func:`icqt` (see there); return C as numpy and an :class:`IcqtParams`.

    ``device``: for a device backend, where the soxr qualities need no ``soxr`` package (the device designs
    its own filter, see :mod:`specux._runtime.icq_exec`) and ``"soxr_qq"`` is refused."""
    x = _arrays.to_numpy(C) if _arrays.is_host(C) else C
    name = _arrays.real_dtype_name(x)
    if name not in ("complex64", "complex128", "float32", "float64"):
        raise TypeError(
            f"{public}: C must be complex64 or complex128 (or float32 / float64, read as zero phase); got "
            f"dtype {name}"
        )
    if len(x.shape) < 2 or x.shape[-2] == 0 or x.shape[-1] == 0:
        raise ValueError(
            f"{public}: C must have shape (..., n_bins, n_frames) with n_bins >= 1 and n_frames >= 1; got "
            f"shape {tuple(x.shape)}"
        )
    sr = _validate.positive_float(kw["sr"], "sr", public)
    hop = _validate.positive_int(kw["hop_length"], "hop_length", public)
    bpo = _validate.positive_int(kw["bins_per_octave"], "bins_per_octave", public)
    filter_scale = _validate.positive_float(kw["filter_scale"], "filter_scale", public)
    sparsity = _validate.real(kw["sparsity"], "sparsity", public)
    if not 0 <= sparsity < 1:
        raise ValueError(f"{public}: sparsity must be a number in [0, 1); got {kw['sparsity']!r}")
    norm = cqf.check_norm(kw["norm"], public)
    scale = _validate.flag(kw["scale"], "scale", public)
    length = kw["length"]
    if length is not None:
        length = _validate.positive_int(length, "length", public)
    res_type = kw["res_type"]
    if not isinstance(res_type, str) or res_type not in RES_TYPES:
        allowed = ", ".join(repr(r) for r in RES_TYPES)
        raise ValueError(f"{public}: res_type must be one of {allowed}; got {res_type!r}")
    if device:
        from specux._runtime.cq_exec import check_device_res_type

        check_device_res_type(res_type, public)
    else:
        check_res_type(res_type)
    fmin = cqf.c1_hz() if kw["fmin"] is None else _validate.real(kw["fmin"], "fmin", public)
    if not fmin > 0:
        raise ValueError(f"{public}: fmin must be a positive frequency in Hz; got {kw['fmin']!r}")
    tuning = _validate.real(kw["tuning"], "tuning", public)
    dtype = kw["dtype"]
    if dtype is None:
        out = "float32" if name in ("complex64", "float32") else "float64"
    else:
        out = _validate.numpy_dtype(dtype, "dtype", public, "None, float32 or float64").name
        if out not in ("float32", "float64"):
            raise TypeError(f"{public}: dtype must be None, float32 or float64; got {out}")
    params = IcqtParams(
        sr=sr,
        hop_length=hop,
        fmin=fmin * 2.0 ** (tuning / bpo),
        n_bins=int(x.shape[-2]),
        bins_per_octave=bpo,
        filter_scale=filter_scale,
        norm=norm,
        sparsity=sparsity,
        window=kw["window"],
        scale=scale,
        length=length,
        res_type=res_type,
        dtype=out,
    )
    icqt_plan(params, int(x.shape[-1]))  # the bank must stay below Nyquist
    return x, params
