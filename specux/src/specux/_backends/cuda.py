"""The ``cuda`` backend: specux's generated kernels compiled by NVRTC and launched through the driver API, by
kernelkit's CUDA runtime (:mod:`kernelkit.cuda`).

Inputs: numpy arrays (staged through pinned host memory on specux's own stream, numpy out), torch CUDA tensors
and cupy arrays (used in place by raw device pointer on the caller's current stream; the result is a tensor /
array of the same library on the same device, allocated by that library). torch and cupy are never imported
here: they are looked up in ``sys.modules``, where they must already be for such an array to exist.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from specux import _arrays
from specux._backends.base import FFT_OP
from specux._backends.generated import GeneratedOps, available_ops, host_call, implementation

NAME = "cuda"

#: storage of each dtype name, and the result dtype name of each (kind, input dtype) for torch / cupy arrays
_RESULT = {
    ("c2c", "complex32"): "complex32",
    ("c2c", "complex64"): "complex64",
    ("c2c", "complex128"): "complex128",
    ("r2c", "float16"): "complex32",
    ("r2c", "float32"): "complex64",
    ("r2c", "float64"): "complex128",
    ("c2r", "complex32"): "float16",
    ("c2r", "complex64"): "float32",
    ("c2r", "complex128"): "float64",
}


def probe() -> str | None:
    """None when CUDA device 0 built and ran kernelkit's probe kernel, else why not (kernelkit caches it)."""
    if importlib.util.find_spec("cuda") is None or importlib.util.find_spec("cuda.bindings") is None:
        return (
            "cuda-bindings is not installed (pip install cuda-bindings nvidia-cuda-nvrtc; for CUDA 12: "
            "'cuda-bindings<13' nvidia-cuda-nvrtc-cu12)"
        )
    try:
        from kernelkit import cuda
    except Exception as exc:
        return f"kernelkit.cuda cannot be imported ({type(exc).__name__}: {exc})"
    return cuda.probe()


class CudaBackend(GeneratedOps):
    """FFT family on CUDA devices (see :mod:`specux._backends.base` for the contract)."""

    name = NAME
    ops = frozenset({FFT_OP}) | available_ops()
    dtypes = frozenset({"float16", "float32", "float64"})

    def __init__(self) -> None:
        from kernelkit import cuda

        self._rt = cuda
        self._host_lock = threading.Lock()

    @property
    def runtime(self) -> Any:
        """The runtime of device 0 (numpy inputs run there; torch / cupy arrays use their own device's)."""
        return self._rt.runtime(0)

    def owns(self, x: Any) -> bool:
        return _arrays.device_kind(x) == "cuda"

    # -- the three entry points --------------------------------------------------------------------------

    def c2c(self, x: Any, axis: int, inverse: bool, scale: float) -> Any:
        return self._run("c2c", x, axis, int(x.shape[axis]), bool(inverse), scale)

    def r2c(self, x: Any, axis: int, scale: float) -> Any:
        return self._run("r2c", x, axis, int(x.shape[axis]), False, scale)

    def c2r(self, x: Any, axis: int, n: int, scale: float) -> Any:
        return self._run("c2r", x, axis, int(n), True, scale)

    def _run(self, kind: str, x: Any, axis: int, n: int, inverse: bool, scale: float) -> Any:
        if _arrays.is_torch(x):
            return self._run_torch(kind, x, axis, n, inverse, scale)
        if _arrays.is_cupy(x):
            return self._run_cupy(kind, x, axis, n, inverse, scale)
        return self._run_numpy(kind, np.asarray(x), axis, n, inverse, scale)

    # -- numpy: pinned staging on specux's own stream ----------------------------------------------------

    def _run_numpy(
        self, kind: str, x: np.ndarray, axis: int, n: int, inverse: bool, scale: float
    ) -> np.ndarray:
        from cuda.bindings import driver as cu

        from specux._runtime import fft_exec

        x = np.ascontiguousarray(x)
        out_dtype = fft_exec.output_dtype(kind, x.dtype)
        in_st, out_st = fft_exec.STORAGE_OF[x.dtype.name], fft_exec.STORAGE_OF[out_dtype.name]
        if "f64" in (in_st, out_st):
            in_st = out_st = "f64"
        rt = self._rt.runtime(0)
        tuning = fft_exec.tuned(rt, n, "f64" if in_st == "f64" else "f32")
        call = fft_exec.resolve(kind, x.shape, axis, n, in_st, out_st, inverse, scale, tuning)
        out = np.empty(call.out_shape, out_dtype)
        if x.size == 0 or out.size == 0:
            out[...] = 0
            return out
        check = self._rt.check
        # one numpy call at a time per process: the pinned staging buffers are shared
        with self._host_lock, rt.session(rt.own_stream):
            stream = rt.stream
            stage_in = rt.pinned(x.nbytes, 0)
            stage_in[:] = x.reshape(-1).view(np.uint8)
            src = rt.alloc(x.nbytes)
            check(cu.cuMemcpyHtoDAsync(src.ptr, stage_in.ctypes.data, x.nbytes, stream))
            dst = rt.alloc(out.nbytes)
            fft_exec.execute(rt, call.plan, src, dst, call.io)
            stage_out = rt.pinned(out.nbytes, 1)
            check(cu.cuMemcpyDtoHAsync(stage_out.ctypes.data, dst.ptr, out.nbytes, stream))
            check(cu.cuStreamSynchronize(stream))
            out.reshape(-1).view(np.uint8)[:] = stage_out
        return out

    # -- the generated operations beyond the FFT (stft, istft, features, fftconvolve) ------------------

    def _generated_call(self, op: str, x: Any, params: Any) -> Any:
        arrays = tuple(x) if op == "fftconvolve" else (x,)
        kinds = {"cupy" if _arrays.is_cupy(a) else "torch" if _arrays.is_torch(a) else "host" for a in arrays}
        if kinds == {"host"}:
            return host_call(self.runtime, op, x, params)
        if len(kinds) > 1:
            raise TypeError(
                f"specux.{op}: on the cuda backend the array arguments must all be cupy arrays, all torch "
                f"CUDA tensors or all host arrays; got {', '.join(sorted(kinds))} (move them to one place "
                "first: nothing is copied behind your back)"
            )
        return self._generated_device(op, arrays, params, kinds.pop())

    def _generated_device(self, op: str, arrays: tuple[Any, ...], params: Any, library: str) -> Any:
        """Generated ``op`` on cupy arrays / torch CUDA tensors, in place (see :meth:`in_place`)."""
        fn = implementation(op)
        return self.in_place(op, arrays, library, lambda rt, inputs: fn(rt, inputs, params))

    def in_place(
        self, op: str, arrays: tuple[Any, ...], library: str, run: Callable[[Any, tuple[Any, ...]], Any]
    ) -> Any:
        """``run(rt, inputs)`` on cupy arrays / torch CUDA tensors (``library``: "cupy" or "torch"), used in
        place by raw pointer on that library's current stream: ``inputs`` are
        :class:`~specux._runtime.device_array.DeviceArray` views of ``arrays`` (made contiguous first),
        temporaries and the result are allocated by the same library (its memory pool), and the result, a
        device array, comes back as an array of that library on the same device. ``op`` names the operation
        in errors. The generated operations run through here, and so do the torch device ops
        (:mod:`specux.torch._device_op`) for CUDA tensors, forward and backward."""
        from cuda.bindings import driver as cu

        from kernelkit.cuda import ForeignBuffer
        from specux._runtime.device_array import DeviceArray

        if library == "cupy":
            xp = sys.modules["cupy"]
            devices = {a.device.id for a in arrays}
            arrays = tuple(xp.ascontiguousarray(a) for a in arrays)
            index = arrays[0].device.id
            pointer = [a.data.ptr for a in arrays]
            names = [a.dtype.name for a in arrays]
        else:
            xp = sys.modules["torch"]
            devices = {a.device.index for a in arrays}
            arrays = tuple(a.detach().resolve_conj().resolve_neg().contiguous() for a in arrays)
            index = arrays[0].device.index
            index = xp.cuda.current_device() if index is None else index
            pointer = [a.data_ptr() for a in arrays]
            names = [str(a.dtype).removeprefix("torch.") for a in arrays]
        if len(devices) > 1:
            raise ValueError(f"specux.{op}: the arrays are on different CUDA devices {sorted(devices)}")
        rt = self._rt.runtime(index)

        def allocate(nbytes: int) -> ForeignBuffer:
            if library == "cupy":
                a = xp.empty(max(int(nbytes), 1), dtype=xp.uint8)
                return ForeignBuffer(a, a.data.ptr)
            t = xp.empty(max(int(nbytes), 1), dtype=xp.uint8, device=arrays[0].device)
            return ForeignBuffer(t, t.data_ptr())

        inputs = tuple(
            DeviceArray(ForeignBuffer(a, ptr), tuple(a.shape), name)
            for a, ptr, name in zip(arrays, pointer, names)
        )
        if library == "cupy":
            with arrays[0].device:
                stream = cu.CUstream(int(xp.cuda.get_current_stream().ptr))
                with rt.session(stream, allocate):
                    out = run(rt, inputs)
        else:
            stream = cu.CUstream(int(xp.cuda.current_stream(arrays[0].device).cuda_stream))
            with rt.session(stream, allocate):
                out = run(rt, inputs)
        # the result's buffer is the library's memory: a session allocation (uint8) or, for an op that returns
        # a view of its input, that input itself
        raw = out.buf.array.reshape(-1).view(xp.uint8)[: out.nbytes]
        if library == "torch":
            return raw.view(getattr(xp, out.dtype)).reshape(out.shape)
        if out.dtype == "complex32":  # cupy has no complex half: widen, as the numpy path does
            return raw.view(xp.float16).astype(xp.float32).view(xp.complex64).reshape(out.shape)
        return raw.view(out.dtype).reshape(out.shape)

    # -- torch and cupy: in place on the caller's stream, allocated by the caller's library -----------

    def _device_call(
        self,
        rt: Any,
        kind: str,
        shape: tuple[int, ...],
        dtype_name: str,
        axis: int,
        n: int,
        inverse: bool,
        scale: float,
    ) -> tuple[Any, str]:
        from specux._runtime import fft_exec

        out_name = _RESULT.get((kind, dtype_name))
        if out_name is None:
            raise TypeError(f"cuda backend: dtype {dtype_name} is not valid for a {kind} transform")
        in_st, out_st = fft_exec.STORAGE_OF[dtype_name], fft_exec.STORAGE_OF[out_name]
        tuning = fft_exec.tuned(rt, n, "f64" if in_st == "f64" else "f32")
        return fft_exec.resolve(kind, shape, axis, n, in_st, out_st, inverse, scale, tuning), out_name

    def _run_torch(self, kind: str, x: Any, axis: int, n: int, inverse: bool, scale: float) -> Any:
        from cuda.bindings import driver as cu

        from kernelkit.cuda import ForeignBuffer
        from specux._runtime import fft_exec

        torch = sys.modules["torch"]
        x = x.detach().resolve_conj().resolve_neg().contiguous()
        dtype_name = str(x.dtype).removeprefix("torch.")
        index = x.device.index if x.device.index is not None else torch.cuda.current_device()
        rt = self._rt.runtime(index)
        call, out_name = self._device_call(rt, kind, tuple(x.shape), dtype_name, axis, n, inverse, scale)
        out = torch.empty(call.out_shape, dtype=getattr(torch, out_name), device=x.device)
        if x.numel() == 0 or out.numel() == 0:
            return out.zero_()

        def allocate(nbytes: int) -> ForeignBuffer:
            t = torch.empty(max(int(nbytes), 1), dtype=torch.uint8, device=x.device)
            return ForeignBuffer(t, t.data_ptr())

        stream = cu.CUstream(int(torch.cuda.current_stream(x.device).cuda_stream))
        with rt.session(stream, allocate):
            fft_exec.execute(
                rt, call.plan, ForeignBuffer(x, x.data_ptr()), ForeignBuffer(out, out.data_ptr()), call.io
            )
        return out

    def _run_cupy(self, kind: str, x: Any, axis: int, n: int, inverse: bool, scale: float) -> Any:
        from cuda.bindings import driver as cu

        from kernelkit.cuda import ForeignBuffer
        from specux._runtime import fft_exec

        cp = sys.modules["cupy"]
        with x.device:
            x = cp.ascontiguousarray(x)
            dtype_name = x.dtype.name
            rt = self._rt.runtime(x.device.id)
            call, out_name = self._device_call(rt, kind, tuple(x.shape), dtype_name, axis, n, inverse, scale)
            if out_name == "complex32":  # cupy has no complex half: results come back in complex64
                out_name = "complex64"
                tuning = fft_exec.tuned(rt, n, "f32")
                call = fft_exec.resolve(kind, tuple(x.shape), axis, n, "f16", "f32", inverse, scale, tuning)
            out = cp.empty(call.out_shape, dtype=out_name)
            if x.size == 0 or out.size == 0:
                out[...] = 0
                return out

            def allocate(nbytes: int) -> ForeignBuffer:
                a = cp.empty(max(int(nbytes), 1), dtype=cp.uint8)
                return ForeignBuffer(a, a.data.ptr)

            stream = cu.CUstream(int(cp.cuda.get_current_stream().ptr))
            with rt.session(stream, allocate):
                fft_exec.execute(
                    rt, call.plan, ForeignBuffer(x, x.data.ptr), ForeignBuffer(out, out.data.ptr), call.io
                )
        return out


@lru_cache(maxsize=1)
def get() -> CudaBackend:
    return CudaBackend()
