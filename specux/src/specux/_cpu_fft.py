"""The real-FFT engine of the CPU stft blocks: scipy's pocketfft, or torch.fft's (MKL in the x86-64 wheels).

:func:`rfft_into` and :func:`irfft_into` transform one block of frames on the calling thread, writing into a
given array (:func:`specux._backends.cpu.stft.spectrum_blocks` calls them from its pool threads). Which
engine does it:

- ``SPECUX_CPU_FFT`` (read at every call): ``auto`` (the default), ``scipy`` or ``torch``; anything else is a
  ValueError naming the variable and the allowed values. A forced engine that cannot run here raises and says
  why (no silent fallback).
- ``scipy``: scipy's pocketfft (always there), the reference: the numbers librosa and scipy give.
- ``torch``: torch's FFT library. Where torch is built with MKL (the x86-64 wheels), MKL's DFTI functions
  that torch's library exports are called directly (through ctypes, on the numpy buffers, writing into the
  given array, one thread per call); elsewhere ``torch.fft.rfft`` / ``irfft`` with ``out=`` on zero-copy
  tensors of the numpy arrays (which computes into a fresh tensor and copies it into ``out``: 2.3 of 8.7 ms
  of one thread for the 16 x 1001 frames of 512 of issue 19, on a 2-core Zen 3). "auto" considers it only
  when torch is already imported in the process (an import costs seconds, and a process that has not
  imported torch would not want it loaded by an stft); forcing it imports torch.
- Each engine is checked once against ``scipy.fft`` on a small input; one that computes something else (beyond
  the stft tolerance) is never chosen by "auto", and raises when forced.
- "auto" keeps small calls on scipy: fewer than :data:`LARGE` output bins in the whole call (read from the
  array the block's output is a view of; a block written into a buffer of its own counts as small, as in
  the melspectrogram and the stft adjoint). There the saving would be microseconds, and the numbers stay
  those of scipy and librosa. On large calls, when torch is a candidate, the blocks take the engines in
  turn and each block's wall time per frame is recorded, on the pool threads with the other cores busy, as
  the stft really runs (a separate timing of one engine on an idle machine favoured MKL by 15 to 20 % on a
  2-core Zen 3, where in the running stft the two were even). Once every engine has :data:`SAMPLES` blocks
  for that transform (direction, length, precision), the engine with the least time per frame over its
  blocks is kept for the rest of the process (scipy unless another is faster by more than :data:`MARGIN`);
  :func:`choice` tells what was decided. The least, not the median: a block's time is its engine's plus
  what the other threads took from it meanwhile, and on a 2-core Zen 1 the medians of the two engines fell
  within noise of each other (half the processes kept scipy) although MKL ran the issue-19 stft in 11.5 ms
  against scipy's 15.0 ms; the least times told them apart in every process (0.86 to 0.95 against 1.13 to
  1.16 us per frame).

Engines give results within the stft tolerance of each other, not the same bits. Under scipy a frame's
spectrum does not depend on the blocking (checked by the stft block tests); under torch that is not promised.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.fft

from specux._threads import in_pool

ENV = "SPECUX_CPU_FFT"
#: the values of :data:`ENV`
CHOICES = ("auto", "scipy", "torch")
#: output bins of a whole call (all frames of all rows) from which "auto" may use an engine other than scipy
LARGE = 1 << 20
#: timed blocks per engine before "auto" decides, for one (direction, length, precision): 24 let one slow
#: spell of a 2-core Zen 1 guest decide for scipy in one process of five; 48 chose MKL in six of six
SAMPLES = 48
#: a non-scipy engine must be this much faster (relative, least time per frame) to be chosen
MARGIN = 0.03


def requested() -> str:
    """The engine :data:`ENV` asks for (``"auto"`` when unset or empty)."""
    raw = os.environ.get(ENV)
    if not raw:
        return "auto"
    raw = raw.strip().lower()
    if not raw:
        return "auto"
    if raw not in CHOICES:
        raise ValueError(f"{ENV} must be one of {', '.join(CHOICES)}; got {os.environ[ENV]!r}")
    return raw


# --- the engines ------------------------------------------------------------------------------------------


_tls = threading.local()


@functools.cache
def _torch_thread_setters() -> tuple[Callable[[int], Any], ...]:
    """Functions that set the calling thread's own thread count for torch's MKL and OpenMP (MKL's
    ``MKL_Set_Num_Threads_Local`` and OpenMP's ``omp_set_num_threads``, both of the calling thread only),
    from the libraries torch has loaded; those not found are left out."""
    import torch

    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    setters = []
    # RTLD_NOLOAD: only a library the process has already loaded (no second copy of anything)
    mode = getattr(os, "RTLD_NOLOAD", 0) | getattr(os, "RTLD_LOCAL", 0)
    for pattern, symbol in (
        ("libtorch_cpu.*", "MKL_Set_Num_Threads_Local"),
        ("libgomp*", "omp_set_num_threads"),
        ("libiomp*", "omp_set_num_threads"),
    ):
        for path in sorted(glob.glob(os.path.join(lib, pattern))):
            try:
                fn = getattr(ctypes.CDLL(path, mode=mode), symbol)
            except (OSError, AttributeError):
                continue
            # MKL's returns the thread's previous count, OpenMP's nothing
            fn.argtypes, fn.restype = [ctypes.c_int], (ctypes.c_int if symbol.startswith("MKL") else None)
            setters.append(fn)
            break
    return tuple(setters)


def _torch_one_thread() -> None:
    """On a pool thread, once: torch's FFT there on one thread (each pool thread already has a core; torch's
    own threads on top of them ran 4 threads on 2 cores, 13 to 29 % slower). The setters act on the calling
    thread only, and pool threads run nothing but specux's blocks; other threads are left as they are
    (changing the count around each call cost more than the FFT, and a caller's settings are its own)."""
    if getattr(_tls, "torch_single", False) or not in_pool():
        return
    import torch

    torch.get_num_threads()  # torch's own first-use setup of this thread, which sets the counts it wants
    for setter in _torch_thread_setters():
        setter(1)
    _tls.torch_single = True


def _as_tensor_source(a: np.ndarray) -> np.ndarray:
    """``a``, or a copy where ``torch.from_numpy`` would refuse it (negative strides) or warn (read-only;
    the FFT does not write its input, but torch cannot know)."""
    if not a.flags.writeable or any(s < 0 for s in a.strides):
        return a.copy()  # C order, writeable
    return a


# MKL's DFTI interface (mkl_dfti.h): configuration parameters and values
_DFTI_CONJUGATE_EVEN_STORAGE, _DFTI_PLACEMENT = 10, 11
_DFTI_INPUT_STRIDES, _DFTI_OUTPUT_STRIDES, _DFTI_INPUT_DISTANCE, _DFTI_OUTPUT_DISTANCE = 12, 13, 14, 15
_DFTI_NUMBER_OF_TRANSFORMS, _DFTI_THREAD_LIMIT = 7, 27
_DFTI_REAL, _DFTI_COMPLEX_COMPLEX, _DFTI_NOT_INPLACE = 33, 39, 44
#: descriptors kept per thread (one per block layout: an stft has two or three); all dropped when full
_DFTI_PLANS = 32


@dataclass(frozen=True)
class _DftiLib:
    """The DFTI functions of the MKL that torch's library holds (MKL_LONG is C's long on LP64 systems)."""

    create: tuple[Callable[..., int], Callable[..., int]]  # 1-D descriptor, single and double precision
    set_value: Callable[..., int]
    commit: Callable[..., int]
    forward: Callable[..., int]
    backward: Callable[..., int]
    free: Callable[..., int]
    message: Callable[[int], bytes]

    def ok(self, status: int, what: str) -> None:
        if status != 0:
            text = self.message(status).decode(errors="replace")
            raise RuntimeError(f"MKL DFTI {what} failed: {text} (status {status})")


_DFTI_NAMES = ("CreateDescriptor_s_1d", "CreateDescriptor_d_1d", "SetValue", "CommitDescriptor",
               "ComputeForward", "ComputeBackward", "FreeDescriptor", "ErrorMessage")


@functools.cache
def _dfti() -> _DftiLib | None:
    """MKL's DFTI from the ``libtorch_cpu`` torch has loaded (which exports it where torch is built with MKL);
    None where torch's FFT library is another (pocketfft) or the symbols are missing."""
    import torch

    if not torch.backends.mkl.is_available():
        return None
    mode = getattr(os, "RTLD_NOLOAD", 0) | getattr(os, "RTLD_LOCAL", 0)
    for path in sorted(glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.*"))):
        try:
            lib = ctypes.CDLL(path, mode=mode)
            fns = [getattr(lib, "Dfti" + name) for name in _DFTI_NAMES]
        except (OSError, AttributeError):
            continue
        for fn in fns[:-1]:  # DftiSetValue and the compute functions are variadic: no argtypes
            fn.restype = ctypes.c_long
        fns[6].argtypes = [ctypes.c_void_p]
        fns[7].restype, fns[7].argtypes = ctypes.c_char_p, [ctypes.c_long]
        return _DftiLib((fns[0], fns[1]), *fns[2:])
    return None


class _DftiPlan:
    """One committed DFTI descriptor: ``count`` real transforms of length ``n`` between real rows (element
    stride ``real[0]``, row distance ``real[1]``) and conjugate-even rows of ``n // 2 + 1`` complex values
    (``spectral``), out of place, on the calling thread only (``DFTI_THREAD_LIMIT`` 1)."""

    def __init__(self, lib: _DftiLib, n: int, double: bool, count: int, real: tuple[int, int],
                 spectral: tuple[int, int], forward: bool) -> None:
        self.lib, self.handle = lib, ctypes.c_void_p()
        lib.ok(lib.create[double](ctypes.byref(self.handle), ctypes.c_int(_DFTI_REAL), ctypes.c_long(n)),
               "descriptor creation")
        src, dst = (real, spectral) if forward else (spectral, real)
        strides = ctypes.c_long * 2
        self.src_strides, self.dst_strides = strides(0, src[0]), strides(0, dst[0])  # kept alive with it
        for param, value in (
            (_DFTI_PLACEMENT, ctypes.c_int(_DFTI_NOT_INPLACE)),
            (_DFTI_CONJUGATE_EVEN_STORAGE, ctypes.c_int(_DFTI_COMPLEX_COMPLEX)),
            (_DFTI_NUMBER_OF_TRANSFORMS, ctypes.c_long(count)),
            (_DFTI_INPUT_STRIDES, self.src_strides),
            (_DFTI_OUTPUT_STRIDES, self.dst_strides),
            (_DFTI_INPUT_DISTANCE, ctypes.c_long(src[1])),
            (_DFTI_OUTPUT_DISTANCE, ctypes.c_long(dst[1])),
            (_DFTI_THREAD_LIMIT, ctypes.c_int(1)),
        ):
            lib.ok(lib.set_value(self.handle, ctypes.c_int(param), value), f"setting parameter {param}")
        lib.ok(lib.commit(self.handle), "commit")
        self.compute = lib.forward if forward else lib.backward

    def __call__(self, src: np.ndarray, dst: np.ndarray) -> None:
        self.lib.ok(self.compute(self.handle, ctypes.c_void_p(src.ctypes.data),
                                 ctypes.c_void_p(dst.ctypes.data)), "compute")

    def __del__(self) -> None:
        if self.handle:
            self.lib.free(ctypes.byref(self.handle))


def _dfti_layout(rows: np.ndarray) -> tuple[int, int] | None:
    """(element stride, row distance) of the 2-D ``rows`` in items, or None where DFTI cannot take them
    (a stride that is not a positive multiple of the item size, unaligned or byte-swapped data)."""
    item = rows.itemsize
    if not (rows.flags.aligned and rows.dtype.isnative):
        return None
    step, dist = rows.strides[1], rows.strides[0] if rows.shape[0] > 1 else item * rows.shape[1]
    if step <= 0 or dist <= 0 or step % item or dist % item:
        return None
    return step // item, dist // item


def _dfti_run(lib: _DftiLib, src: np.ndarray, dst: np.ndarray, n: int, forward: bool) -> None:
    """``dst[...] = rfft(src)`` (forward: real (..., n) -> complex (..., n // 2 + 1)) or the unscaled inverse
    (complex -> real (..., n)), by a descriptor of this thread for the two layouts."""
    real_dtype = np.dtype(np.float64 if dst.dtype in (np.float64, np.complex128) else np.float32)
    src_dtype = real_dtype if forward else np.result_type(real_dtype, np.complex64)
    rows = dst.size // dst.shape[-1] if dst.shape[-1] else 0
    if rows == 0:
        return
    dst_rows = dst.reshape(rows, dst.shape[-1])
    dst_layout = _dfti_layout(dst_rows) if np.may_share_memory(dst_rows, dst) else None
    if dst_layout is None:  # no view of the output that DFTI can write: into a buffer, then copied
        buffer = np.empty(dst.shape, dst.dtype)
        _dfti_run(lib, src, buffer, n, forward)
        dst[...] = buffer
        return
    src_rows = src.astype(src_dtype, copy=False).reshape(rows, src.shape[-1])
    src_layout = _dfti_layout(src_rows)
    if src_layout is None or np.may_share_memory(src_rows, dst_rows):  # out of place: no overlap either
        src_rows = np.ascontiguousarray(src_rows)
        src_layout = _dfti_layout(src_rows)
    real, spectral = (src_layout, dst_layout) if forward else (dst_layout, src_layout)
    key = (n, real_dtype.char, rows, real, spectral, forward)
    plans = getattr(_tls, "dfti_plans", None)
    if plans is None:
        plans = _tls.dfti_plans = {}
    plan = plans.get(key)
    if plan is None:
        if len(plans) >= _DFTI_PLANS:
            plans.clear()
        plan = plans[key] = _DftiPlan(lib, n, real_dtype == np.float64, rows, real, spectral, forward)
    plan(src_rows, dst_rows)


def _torch_rfft(frames: np.ndarray, out: np.ndarray) -> None:
    lib = _dfti()
    if lib is not None:
        _dfti_run(lib, frames, out, frames.shape[-1], forward=True)
        return
    import torch

    _torch_one_thread()
    frames = _as_tensor_source(frames)
    torch.fft.rfft(torch.from_numpy(frames), dim=-1, out=torch.from_numpy(out))


def _torch_irfft(spectra: np.ndarray, n: int, out: np.ndarray) -> None:
    lib = _dfti()
    if lib is not None:
        _dfti_run(lib, spectra, out, n, forward=False)
        return
    import torch

    _torch_one_thread()
    spectra = _as_tensor_source(spectra)
    torch.fft.irfft(torch.from_numpy(spectra), n=n, dim=-1, norm="forward", out=torch.from_numpy(out))


@dataclass(frozen=True)
class Engine:
    """One real-FFT library: ``rfft(frames, out)`` writes ``scipy.fft.rfft(frames, axis=-1)`` into ``out``,
    ``irfft(spectra, n, out)`` writes ``scipy.fft.irfft(spectra, n, axis=-1, norm="forward")``."""

    name: str
    rfft: Callable[[np.ndarray, np.ndarray], None]
    irfft: Callable[[np.ndarray, int, np.ndarray], None]
    describe: Callable[[], str] = field(compare=False)


def _describe_scipy() -> str:
    return f"scipy's pocketfft (scipy {scipy.__version__})"


def _unused_scipy(*args: Any) -> None:  # the scipy engine's code is the caller's (see rfft_into)
    raise AssertionError("the scipy engine runs the function its caller passes")


def _describe_torch() -> str:
    torch = sys.modules.get("torch")
    if torch is None:
        return "torch.fft (torch not imported)"
    lib = "MKL" if torch.backends.mkl.is_available() else "pocketfft"
    return f"torch.fft ({lib}, torch {torch.__version__})"


ENGINES: dict[str, Engine] = {
    "scipy": Engine("scipy", _unused_scipy, _unused_scipy, _describe_scipy),
    "torch": Engine("torch", _torch_rfft, _torch_irfft, _describe_torch),
}


def _tolerance(dtype: Any) -> float:
    return 1e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


_checked: dict[str, str | None] = {}
_checked_lock = threading.Lock()


def _check(name: str) -> str | None:
    """Why engine ``name`` cannot be used here (None: it runs and agrees with ``scipy.fft`` on a small input,
    in both precisions and directions, the inverse on spectra whose first and last bins are not real, which
    the inverse must ignore as scipy's does); checked once per process."""
    if name == "scipy":
        return None
    if name in _checked:  # written once under the lock; reading a dict needs none
        return _checked[name]
    engine = ENGINES[name]
    reason = None
    try:
        rng = np.random.default_rng(1)
        for real in (np.float32, np.float64):
            cplx = np.result_type(real, np.complex64)
            x = rng.standard_normal((5, 24)).astype(real)
            out = np.empty((5, 13), cplx)
            engine.rfft(x, out)
            want = scipy.fft.rfft(x, axis=-1, workers=1)
            err = float(np.max(np.abs(out - want)) / np.max(np.abs(want)))
            spectra = (rng.standard_normal((5, 13)) + 1j * rng.standard_normal((5, 13))).astype(cplx)
            back = np.empty((5, 24), real)
            engine.irfft(spectra, 24, back)
            want_back = scipy.fft.irfft(spectra, n=24, axis=-1, norm="forward", workers=1)
            err = max(err, float(np.max(np.abs(back - want_back)) / np.max(np.abs(want_back))))
            if not err <= _tolerance(real):
                reason = f"its FFT differs from scipy.fft's by {err:.3g} (relative) in {np.dtype(real).name}"
                break
    except Exception as exc:  # an engine whose library is missing or broken is not a candidate
        reason = f"{type(exc).__name__}: {exc}"
    with _checked_lock:
        _checked[name] = reason
    return reason


def _forced(name: str) -> Engine:
    if name == "torch":
        try:
            import torch  # noqa: F401  (asked for by name: loading it is what the user wants)
        except ImportError as exc:
            raise RuntimeError(f"{ENV}=torch, but torch cannot be imported: {exc}") from exc
    reason = _check(name)
    if reason is not None:
        raise RuntimeError(f"{ENV}={name}, but that engine cannot be used here: {reason}")
    return ENGINES[name]


def candidates() -> list[str]:
    """The engines "auto" may choose between in this process now (scipy first)."""
    names = ["scipy"]
    if "torch" in sys.modules and _check("torch") is None:
        names.append("torch")
    return names


# --- the calibration of "auto" ----------------------------------------------------------------------------


class _Calibration:
    """Per-frame times of the engines on one transform (direction, length, precision) until one is chosen."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.samples: dict[str, list[float]] = {n: [] for n in names}
        self.turn = 0
        self.chosen: str | None = None
        self.lock = threading.Lock()

    def next_engine(self) -> str:
        with self.lock:
            if self.chosen is not None:
                return self.chosen
            name = self.names[self.turn % len(self.names)]
            self.turn += 1
            return name

    def record(self, name: str, seconds_per_frame: float) -> None:
        with self.lock:
            if self.chosen is not None:
                return
            self.samples[name].append(seconds_per_frame)
            if all(len(s) >= SAMPLES for s in self.samples.values()):
                # the least time of each: the engine's own speed, what other threads took from a block
                # (and the first call's planning) left out (see the module docstring)
                least = {n: min(s) for n, s in self.samples.items()}
                best = min(least, key=least.get)
                if best != "scipy" and least[best] > (1 - MARGIN) * least["scipy"]:
                    best = "scipy"
                self.chosen = best


_calibrations: dict[tuple, _Calibration] = {}
_calibrations_lock = threading.Lock()


def _calibration(key: tuple, names: list[str]) -> _Calibration:
    with _calibrations_lock:
        cal = _calibrations.get(key)
        if cal is None or cal.names != names:  # torch imported since: calibrate again with it
            cal = _calibrations[key] = _Calibration(names)
        return cal


def choice() -> dict[str, str]:
    """What "auto" has decided so far in this process: ``{"rfft 512 float32": "torch", ...}``, a transform
    still being timed shown as "timing"; plus the requested mode under the key ``"requested"``."""
    out = {"requested": os.environ.get(ENV, "").strip() or "auto"}
    with _calibrations_lock:
        for (direction, n, dtype), cal in sorted(_calibrations.items(), key=lambda kv: str(kv[0])):
            out[f"{direction} {n} {np.dtype(dtype).name}"] = cal.chosen or "timing"  # dtype: its char
    return out


def describe() -> str:
    """A line naming the engine(s) the CPU stft uses in this process, for benchmarks and bug reports."""
    mode = requested()
    if mode != "auto":
        return f"{ENGINES[mode].describe()} ({ENV}={mode})"
    names = candidates()
    decided = {k: v for k, v in choice().items() if k != "requested"}
    text = "auto among " + ", ".join(ENGINES[n].describe() for n in names)
    if decided:
        text += "; chosen: " + ", ".join(f"{k}: {v}" for k, v in decided.items())
    return text


def _whole_size(a: np.ndarray) -> int:
    """Elements of the array ``a`` is a view of (the whole call's output when the stft writes in place)."""
    base = a
    while isinstance(base.base, np.ndarray):
        base = base.base
    return base.size


def _pick(direction: str, n: int, spectra: np.ndarray, real: np.ndarray) -> tuple[str, _Calibration | None]:
    """The engine for one block, and the calibration to report its time to (None: not timed).

    Called for every block, from two pool threads that share the GIL: Python work here slows the other
    thread too (in one interleaved run, about 3 us a block cost 0.5 to 0.8 ms of a 12 ms stft), so the
    common cases come first and take no locks, and the keys are plain strings (``np.dtype.name`` alone
    cost 5 us)."""
    raw = os.environ.get(ENV)
    if raw and raw != "auto":
        mode = requested()
        if mode != "auto":
            _forced(mode)
            return mode, None
    base = spectra.base
    if (spectra if base is None else base).size < LARGE and _whole_size(spectra) < LARGE:
        return "scipy", None
    key = (direction, n, real.dtype.char)
    cal = _calibrations.get(key)
    if cal is not None and cal.chosen is not None:  # chosen among candidates that stay (torch stays imported)
        return cal.chosen, None
    names = candidates()
    if len(names) == 1:
        return "scipy", None
    cal = _calibration(key, names)
    name = cal.next_engine()
    return name, (None if cal.chosen is not None else cal)


def rfft_into(
    frames: np.ndarray, out: np.ndarray, scipy_rfft: Callable[[np.ndarray, np.ndarray], None]
) -> None:
    """``out[...] = scipy.fft.rfft(frames, axis=-1)`` on the calling thread, by the engine chosen (see the
    module docstring); ``out`` has the complex dtype of ``frames``' precision. ``scipy_rfft(frames, out)`` is
    the scipy engine's code (:func:`specux._backends.cpu.stft._rfft_into` passes scipy's pocketfft)."""
    name, cal = _pick("rfft", frames.shape[-1], out, frames)
    if name == "scipy" and cal is None:
        scipy_rfft(frames, out)
        return
    t0 = time.perf_counter()
    if name == "scipy":
        scipy_rfft(frames, out)
    else:
        ENGINES[name].rfft(frames, out)
    if cal is not None:
        cal.record(name, (time.perf_counter() - t0) / max(1, frames.size // max(1, frames.shape[-1])))


def irfft_into(
    spectra: np.ndarray,
    n: int,
    out: np.ndarray,
    scipy_irfft: Callable[[np.ndarray, int, np.ndarray], None],
) -> None:
    """``out[...] = scipy.fft.irfft(spectra, n, axis=-1, norm="forward")`` (no scaling) on the calling
    thread, by the engine chosen; ``out`` has the real dtype of ``spectra``; ``scipy_irfft`` as in
    :func:`rfft_into`."""
    name, cal = _pick("irfft", n, spectra, out)
    if name == "scipy" and cal is None:
        scipy_irfft(spectra, n, out)
        return
    t0 = time.perf_counter()
    if name == "scipy":
        scipy_irfft(spectra, n, out)
    else:
        ENGINES[name].irfft(spectra, n, out)
    if cal is not None:
        cal.record(name, (time.perf_counter() - t0) / max(1, out.size // max(1, n)))
