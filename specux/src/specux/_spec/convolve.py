"""fftconvolve arguments -> :class:`specux._validate.ConvolveParams`."""

from __future__ import annotations

from typing import Any

import numpy as np

from specux import _arrays, _validate
from specux._validate import (
    ConvolveParams,
)

_ACCEPTED = ("float32", "float64", "complex64", "complex128")


def fftconvolve_validate(in1: Any, in2: Any, *, mode: str = "full", axes: Any = None) -> ConvolveParams:
    """Validate fftconvolve arguments (shapes, mode, axes, dtypes) and resolve the output."""
    names = []
    for name, v in (("in1", in1), ("in2", in2)):
        got = _arrays.real_dtype_name(v)
        if got == "bool" or got.startswith(("int", "uint")):
            got = "float64"  # scipy promotes integers to float64
        if got not in _ACCEPTED:
            raise TypeError(
                f"fftconvolve: {name} has dtype {_arrays.real_dtype_name(v)}; accepted: "
                f"{', '.join(_ACCEPTED)} (integers and bool are promoted to float64)"
            )
        names.append(got)
    dtype = np.result_type(*names).name
    return _validate.convolve_params(tuple(in1.shape), tuple(in2.shape), dtype, mode, axes)
