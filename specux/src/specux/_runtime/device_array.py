"""A typed view of one device buffer, the currency of the generated operations (``*_exec`` modules).

The operations beyond the FFT family (stft, istft, the filter-bank features, fftconvolve) are written once
against :class:`DeviceArray`: a buffer of any kernelkit runtime with a C-contiguous shape and an element
dtype. The host path (:mod:`specux._backends.generated`) uploads numpy arrays into them and downloads the
result; a device path (torch CUDA tensors, cupy arrays) wraps the caller's memory instead and allocates
through the caller's library (``DeviceRuntime.alloc`` inside a CUDA session), so the same exec code serves
both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kernelkit.runtime import DeviceRuntime

#: storage name (the kernels' element type) of each dtype a DeviceArray may hold
STORAGE = {
    "float16": "f16",
    "float32": "f32",
    "float64": "f64",
    "complex32": "f16",
    "complex64": "f32",
    "complex128": "f64",
}
#: bytes per element
ITEMSIZE = {"float16": 2, "float32": 4, "float64": 8, "complex32": 4, "complex64": 8, "complex128": 16}
#: the complex dtype of each real one and back
COMPLEX_OF = {"float16": "complex32", "float32": "complex64", "float64": "complex128"}
REAL_OF = {v: k for k, v in COMPLEX_OF.items()}


@dataclass(frozen=True)
class DeviceArray:
    """``buf`` holds ``prod(shape)`` elements of ``dtype``, C-contiguous (complex as interleaved pairs)."""

    buf: Any
    shape: tuple[int, ...]
    dtype: str

    @property
    def size(self) -> int:
        count = 1
        for s in self.shape:
            count *= int(s)
        return count

    @property
    def nbytes(self) -> int:
        return self.size * ITEMSIZE[self.dtype]

    @property
    def storage(self) -> str:
        """``"f16"``, ``"f32"`` or ``"f64"``: the scalar type the kernels read and write."""
        return STORAGE[self.dtype]

    @property
    def is_complex(self) -> bool:
        return self.dtype.startswith("complex")

    def reshape(self, *shape: int) -> DeviceArray:
        """The same buffer seen with another C-contiguous shape of the same size."""
        out = DeviceArray(self.buf, tuple(int(s) for s in shape), self.dtype)
        if out.size != self.size:
            raise ValueError(f"cannot view {self.shape} as {out.shape}")
        return out


def empty(rt: DeviceRuntime, shape: tuple[int, ...], dtype: str) -> DeviceArray:
    """A fresh device array (its contents undefined); at least one byte is allocated."""
    shape = tuple(int(s) for s in shape)
    probe = DeviceArray(None, shape, dtype)
    return DeviceArray(rt.alloc(max(probe.nbytes, 1)), shape, dtype)


def upload(rt: DeviceRuntime, x: np.ndarray) -> DeviceArray:
    """A numpy array (float16/32/64, complex64/128) copied to the device."""
    x = np.ascontiguousarray(x)
    if x.dtype.name not in STORAGE:
        raise TypeError(f"no device storage for dtype {x.dtype}")
    if x.size == 0:
        return empty(rt, x.shape, x.dtype.name)
    return DeviceArray(rt.upload(x), tuple(x.shape), x.dtype.name)


def host_dtype(dtype: str) -> np.dtype:
    """The numpy dtype a device dtype comes back as (numpy has no complex half: complex32 -> complex64)."""
    return np.dtype("complex64" if dtype == "complex32" else dtype)


def download(rt: DeviceRuntime, a: DeviceArray) -> np.ndarray:
    """The device array's contents as a new numpy array (complex half widened to complex64)."""
    if a.dtype == "complex32":
        pairs = np.empty((*a.shape, 2), np.float16)
        if a.size:
            rt.download(a.buf, pairs)
        return pairs.astype(np.float32).view(np.complex64)[..., 0]
    out = np.empty(a.shape, host_dtype(a.dtype))
    if a.size:
        rt.download(a.buf, out)
    return out
