#!/usr/bin/env python
"""specux on a device backend (cuda, opencl, metal) against the GPU peers on this machine, in one run.

Workloads (``--quick`` and ``--smoke`` shrink them; the parameters stay):

- ``batch``: 64 clips of 10 s at 16 kHz, float32 (64, 160000); n_fft 512, hop 160, 80 mel bands.
- ``clip``: one 3-minute clip at 22.05 kHz, float32 (3969000,); n_fft 2048, hop 512, 128 mel bands.

Operations: stft (complex output), stft power (``output="power"``), istft, melspectrogram, mfcc (20
coefficients), cqt_84 (84 bins, 12 per octave from C1, the defaults) and cqt_252 (7 octaves x 36 bins); each
forward, and forward + backward (a scalar loss of the output, gradient of the input) for
the torch peers and for specux where it can take gradients on that device (``n/a`` where it cannot).

Peers, each only where it imports: torch.stft / torch.istft and torchaudio's MelSpectrogram / MFCC on the
device of the specux backend when torch has it (``cuda``, ``mps``), else on the CPU (labelled ``cpu``);
nnAudio's STFT / MelSpectrogram / MFCC / CQT2010v2 / CQT1992v2 on the same device; ``cupyx.scipy.signal``
stft / istft on CUDA. For the cqt rows the nnAudio peers' magnitudes are also compared with specux's CPU
backend (librosa's numbers to float rounding): ``err`` in their cells and ``peer_rel_err_vs_cpu`` in the JSON.
Peers run on data resident on their device. specux runs on device arrays where the backend accepts them
(cupy arrays or torch tensors on CUDA, torch MPS tensors on Metal: tried per operation, the first one that
works is used) and otherwise on numpy arrays, host <-> device transfers included in its time (printed per
row). When specux runs on numpy inputs but the torch peer on a device, the torch peer is also timed with the
same numpy round trip (``+io`` column), which is the like-for-like comparison then.

Every specux result is checked once per operation against ``backend="cpu"`` on the same data (``err vs cpu``:
max |a - b| / max |b|), so the times are of a correct computation. GB/s counts an operation's least traffic
(input read once, output written once) over its time (the faster of one synchronised call and calls queued
behind one synchronisation, so that per-call overhead does not hide the device's rate); the device's peak
comes from the CUDA driver (memory clock x bus width) or a table of known GPUs, and on OpenCL / Metal it is
unknown, so a measured device-to-device copy stands in as a proxy. Timings take turns call by call
(``--repeat`` rounds after ``--warmup``), each call ending in a device synchronisation; the fastest call is
kept. Ratios are specux / peer: below 1 means specux is faster.

    python bench/specux_gpu.py [--backend cuda|opencl|metal] [--quick | --smoke] [--repeat 5] [--warmup 1]
                               [--ops stft,mfcc] [--data batch,clip] [--out FILE]
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    command_line,
    finish_machine,
    fmt_ratio,
    fmt_seconds,
    interleaved,
    machine,
    markdown_table,
    ratio,
    versions,
    write_json,
)

import specux

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench" / "results" / "specux_gpu.json"
OPS = ("stft", "stft_power", "istft", "melspectrogram", "mfcc", "cqt_84", "cqt_252")
#: the constant-Q rows: (n_bins, bins_per_octave) from C1 at the workload's hop
CQT_BINS = {"cqt_84": (84, 12), "cqt_252": (252, 36)}
#: these operations are memory-bound on a GPU: their GB/s is printed next to the device's peak (cqt's work
#: is its products with the basis, not its traffic)
MEMORY_BOUND = frozenset(OPS) - frozenset(CQT_BINS)
PASSES = ("forward", "forward+backward")
PEERS = ("torch", "torch+io", "torchaudio", "torchaudio+io", "nnAudio", "nnAudio CQT2010v2",
         "nnAudio CQT1992v2", "cupyx")
N_MFCC = 20
#: calls queued behind one synchronisation for the sustained rate behind the GB/s column
QUEUED_CALLS = 10
#: peak memory bandwidth (bytes/s) of GPUs by a substring of their name, for drivers that do not report the
#: memory clock (checked in order: the more specific names first); from the vendors' data sheets
KNOWN_PEAKS = (
    ("H200", 4.8e12),
    ("H100 NVL", 3.9e12),
    ("H100 PCIe", 2.0e12),
    ("H100", 3.35e12),
    ("GH200", 4.0e12),
    ("B200", 8.0e12),
    ("A100-SXM4-80GB", 2.039e12),
    ("A100 80GB PCIe", 1.935e12),
    ("A100", 1.555e12),
    ("L40S", 0.864e12),
    ("L4", 0.3e12),
    ("A10G", 0.6e12),
    ("RTX 4090", 1.008e12),
)
#: the issue's goals on an H100/H200-class GPU (CUDA only)
GOAL_STFT_VS_TORCH = 1.0
GOAL_FEATURES_VS_TORCHAUDIO = 0.5
GOAL_PEAK_FRACTION = 0.7
#: issue 14: cqt at least 5 times nnAudio's CQT2010v2 (at better accuracy against librosa)
GOAL_CQT_VS_NNAUDIO = 0.2


@dataclass(frozen=True)
class Workload:
    """One input and the transform parameters used on it."""

    name: str
    x: np.ndarray
    sr: int
    n_fft: int
    hop: int
    n_mels: int

    def describe(self) -> str:
        return (f"{self.name} {tuple(self.x.shape)} {self.x.dtype} @ {self.sr} Hz, n_fft {self.n_fft}, "
                f"hop {self.hop}, {self.n_mels} mels")


def make_workloads(size: str) -> list[Workload]:
    """The two workloads at ``size`` "full", "quick" (a PoCL run of a few minutes at most) or "smoke"."""
    rng = np.random.default_rng(0)
    n_batch, secs_batch, secs_clip = {"full": (64, 10, 180), "quick": (8, 4, 30), "smoke": (2, 0.25, 1)}[size]

    def audio(shape: tuple[int, ...], sr: int) -> np.ndarray:
        t = np.arange(shape[-1]) / sr
        tone = 0.3 * np.sin(2 * np.pi * 440.0 * t) + 0.2 * np.sin(2 * np.pi * 1234.5 * t)
        return (tone + 0.05 * rng.standard_normal(shape)).astype(np.float32)

    return [
        Workload("batch", audio((n_batch, int(16000 * secs_batch)), 16000), 16000, 512, 160, 80),
        Workload("clip", audio((int(22050 * secs_clip),), 22050), 22050, 2048, 512, 128),
    ]


# --- the libraries on this machine ------------------------------------------------------------------------


def _try_import(name: str) -> Any:
    try:
        return __import__(name, fromlist=["_"])
    except Exception:  # a peer that fails to import, whatever the reason, is absent
        return None


class Libs:
    """The peers that import here, the torch device that matches the specux backend, and how to wait for
    each device."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.torch = _try_import("torch")
        self.torchaudio = _try_import("torchaudio") if self.torch is not None else None
        self.nnaudio = _try_import("nnAudio.features") if self.torch is not None else None
        self.cupy = _try_import("cupy") if backend == "cuda" else None
        self.cupyx_signal = _try_import("cupyx.scipy.signal") if self.cupy is not None else None
        if self.cupy is not None:
            try:
                self.cupy.cuda.runtime.getDeviceCount()
            except Exception:  # cupy without a usable device is no peer
                self.cupy = self.cupyx_signal = None
        if self.cupyx_signal is not None and not hasattr(self.cupyx_signal, "stft"):
            self.cupyx_signal = None  # cupy before 13 has no stft
        self.device = "cpu"
        t = self.torch
        if t is not None:
            if backend == "cuda" and t.cuda.is_available():
                self.device = "cuda"
            elif backend == "metal" and getattr(t.backends, "mps", None) and t.backends.mps.is_available():
                self.device = "mps"

    def sync(self) -> None:
        """Wait for every device this benchmark uses."""
        if self.device == "cuda":
            self.torch.cuda.synchronize()
        elif self.device == "mps":
            self.torch.mps.synchronize()
        if self.cupy is not None:
            self.cupy.cuda.Device().synchronize()

    def specux_inputs(self) -> list[tuple[str, Callable[[np.ndarray], Any]]]:
        """Device input kinds to try for specux on this backend, best first (numpy is the fallback)."""
        kinds: list[tuple[str, Callable[[np.ndarray], Any]]] = []
        if self.cupy is not None:
            kinds.append(("cupy", self.cupy.asarray))
        if self.device != "cpu":
            kinds.append((f"torch-{self.device}", self.to_torch))
        return kinds

    def to_torch(self, a: np.ndarray, grad: bool = False) -> Any:
        t = self.torch.from_numpy(np.ascontiguousarray(a)).to(self.device)
        return t.requires_grad_() if grad else t


def to_numpy(a: Any) -> np.ndarray:
    """Any result (numpy, cupy, torch on any device) as a numpy array."""
    if hasattr(a, "detach"):
        return a.detach().cpu().numpy()
    if type(a).__module__.startswith("cupy"):
        return a.get()
    return np.asarray(a)


def same_library(result: Any, kind: str) -> bool:
    """Whether ``result`` came back as input kind ``kind`` (a device input must not come back as numpy)."""
    if kind == "cupy":
        return type(result).__module__.startswith("cupy")
    if kind.startswith("torch-"):
        return hasattr(result, "device") and result.device.type == kind.split("-", 1)[1]
    return isinstance(result, np.ndarray)


# --- the device: its peak and a measured copy -------------------------------------------------------------


def _cuda_driver_peak() -> tuple[str | None, float | None, str]:
    """(device name, peak bytes/s or None, how it was found) from libcuda's cuDeviceGetAttribute."""
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return None, None, f"libcuda not loadable: {exc}"
    dev, value = ctypes.c_int(), ctypes.c_int()
    if cu.cuInit(0) != 0 or cu.cuDeviceGet(ctypes.byref(dev), 0) != 0:
        return None, None, "cuInit / cuDeviceGet failed"
    buf = ctypes.create_string_buffer(256)
    name = buf.value.decode() if cu.cuDeviceGetName(buf, 256, dev) == 0 else None
    attrs = {}
    for key, code in (("memory_clock_khz", 36), ("bus_width_bits", 37)):  # CU_DEVICE_ATTRIBUTE_*
        rc = cu.cuDeviceGetAttribute(ctypes.byref(value), code, dev)
        attrs[key] = value.value if rc == 0 and value.value > 0 else None
    if attrs["memory_clock_khz"] and attrs["bus_width_bits"]:
        # double data rate: two transfers per clock over the whole bus
        peak = 2.0 * attrs["memory_clock_khz"] * 1e3 * attrs["bus_width_bits"] / 8
        return name, peak, (f"cuDeviceGetAttribute: memory clock {attrs['memory_clock_khz'] / 1e3:.0f} MHz x "
                            f"{attrs['bus_width_bits']}-bit bus x 2")
    return name, None, "cuDeviceGetAttribute gave no memory clock / bus width"


def _known_peak(name: str | None) -> float | None:
    for key, peak in KNOWN_PEAKS:
        if name and key.lower() in name.lower():
            return peak
    return None


def _copy_bandwidth_torch(torch: Any, device: str, nbytes: int) -> float:
    a = torch.empty(nbytes // 4, dtype=torch.float32, device=device)
    b = torch.empty_like(a)
    sync = torch.cuda.synchronize if device == "cuda" else torch.mps.synchronize
    b.copy_(a)
    sync()
    best = float("inf")
    for _ in range(10):
        t0 = time.perf_counter()
        b.copy_(a)
        sync()
        best = min(best, time.perf_counter() - t0)
    return 2 * a.numel() * 4 / best


def _copy_bandwidth_opencl(nbytes: int) -> float:
    import pyopencl as cl

    from kernelkit import opencl

    rt = opencl.default_runtime()
    src, dst = rt.alloc(nbytes), rt.alloc(nbytes)
    cl.enqueue_copy(rt.queue, dst, src).wait()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        cl.enqueue_copy(rt.queue, dst, src).wait()
        best = min(best, time.perf_counter() - t0)
    return 2 * nbytes / best


def device_info(libs: Libs, size: str) -> dict[str, Any]:
    """The device's name, its peak memory bandwidth (or "unknown") and a measured device-to-device copy."""
    nbytes = (256 if libs.device == "cuda" else 32 if size == "full" else 8) << 20
    info: dict[str, Any] = {"backend": libs.backend, "torch_device": libs.device, "name": None,
                            "peak_bytes_per_s": None, "peak_source": "unknown", "copy_bytes_per_s": None,
                            "copy_source": None}
    if libs.backend == "cuda":
        name, peak, how = _cuda_driver_peak()
        if name is None and libs.device == "cuda":
            name = libs.torch.cuda.get_device_name(0)
        if peak is None and _known_peak(name) is not None:
            peak, how = _known_peak(name), f"table of known GPUs ({how})"
        info.update(name=name, peak_bytes_per_s=peak, peak_source=how if peak else f"unknown ({how})")
    elif libs.backend == "opencl":
        try:
            from kernelkit import opencl

            dev = opencl.default_runtime().device
            info["name"] = f"{dev.platform.name} / {dev.name}"
        except Exception as exc:  # the name is a label only
            info["name"] = f"unknown ({type(exc).__name__})"
        info["peak_source"] = "unknown (OpenCL reports no memory bandwidth)"
    elif libs.backend == "metal":
        info["peak_source"] = "unknown (Metal reports no memory bandwidth)"
    try:
        if libs.device in ("cuda", "mps"):
            info["copy_bytes_per_s"] = _copy_bandwidth_torch(libs.torch, libs.device, nbytes)
            info["copy_source"] = f"torch {libs.device} tensor copy_ of {nbytes >> 20} MiB"
        elif libs.backend == "cuda" and libs.cupy is not None:
            a = libs.cupy.empty(nbytes // 4, dtype=np.float32)
            best = min(_timed(lambda a=a: a.copy(), libs) for _ in range(10))
            info["copy_bytes_per_s"] = 2 * nbytes / best
            info["copy_source"] = f"cupy copy of {nbytes >> 20} MiB"
        elif libs.backend == "opencl":
            info["copy_bytes_per_s"] = _copy_bandwidth_opencl(nbytes)
            info["copy_source"] = f"clEnqueueCopyBuffer of {nbytes >> 20} MiB"
    except Exception as exc:  # the copy is a proxy for the peak: report why it is missing, run on
        info["copy_source"] = f"failed: {type(exc).__name__}: {exc}"
    return info


def queued_time(fn: Callable[[], Any], libs: Libs, calls: int = QUEUED_CALLS) -> float:
    """Seconds per call of ``calls`` calls of ``fn`` issued back to back, with one synchronisation at the end
    (best of two such runs)."""
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        libs.sync()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def _timed(fn: Callable[[], Any], libs: Libs) -> float:
    t0 = time.perf_counter()
    fn()
    libs.sync()
    return time.perf_counter() - t0


# --- the operations: specux's call and the peers' on one workload -----------------------------------------


def specux_call(op: str, w: Workload, backend: str) -> Callable[[Any], Any]:
    """specux's ``op`` on ``w``'s parameters as a function of its array argument (signal, or spectrum)."""
    n_fft, hop, sr, n_mels = w.n_fft, w.hop, w.sr, w.n_mels
    if op == "stft":
        return lambda x: specux.stft(x, n_fft=n_fft, hop_length=hop, backend=backend)
    if op == "stft_power":
        return lambda x: specux.stft(x, n_fft=n_fft, hop_length=hop, output="power", backend=backend)
    if op == "istft":
        n = w.x.shape[-1]
        return lambda d: specux.istft(d, hop_length=hop, n_fft=n_fft, length=n, backend=backend)
    if op == "melspectrogram":
        return lambda x: specux.melspectrogram(x, sr=sr, n_fft=n_fft, hop_length=hop, n_mels=n_mels,
                                               backend=backend)
    if op == "mfcc":
        return lambda x: specux.mfcc(x, sr=sr, n_mfcc=N_MFCC, n_fft=n_fft, hop_length=hop, n_mels=n_mels,
                                     backend=backend)
    if op in CQT_BINS:
        n_bins, bpo = CQT_BINS[op]
        return lambda x: specux.cqt(x, sr=sr, hop_length=hop, n_bins=n_bins, bins_per_octave=bpo,
                                    backend=backend)
    raise ValueError(f"op: unknown {op!r}; choose from {', '.join(OPS)}")


def _torchaudio_mel_kwargs(w: Workload) -> dict[str, Any]:
    """torchaudio MelSpectrogram arguments that compute specux's (librosa's) default mel spectrogram."""
    return dict(sample_rate=w.sr, n_fft=w.n_fft, hop_length=w.hop, f_min=0.0, f_max=w.sr / 2, n_mels=w.n_mels,
                power=2.0, center=True, pad_mode="constant", norm="slaney", mel_scale="slaney")


def torch_peers(op: str, w: Workload, libs: Libs) -> dict[str, Callable[[Any], Any]]:
    """The torch-side peers of ``op`` as functions of a tensor on ``libs.device``."""
    torch, dev, out = libs.torch, libs.device, {}
    if torch is None:
        return out
    win = torch.hann_window(w.n_fft, periodic=True, device=dev)

    def stft(x: Any) -> Any:
        return torch.stft(x, w.n_fft, hop_length=w.hop, window=win, center=True, pad_mode="constant",
                          return_complex=True)

    if op == "stft":
        out["torch"] = stft
    elif op == "stft_power":
        out["torch"] = lambda x: stft(x).abs().square()
    elif op == "istft":
        n = w.x.shape[-1]
        out["torch"] = lambda d: torch.istft(d, w.n_fft, hop_length=w.hop, window=win, center=True, length=n)
    elif libs.torchaudio is not None and op == "melspectrogram":
        out["torchaudio"] = libs.torchaudio.transforms.MelSpectrogram(**_torchaudio_mel_kwargs(w)).to(dev)
    elif libs.torchaudio is not None and op == "mfcc":
        melkw = {k: v for k, v in _torchaudio_mel_kwargs(w).items() if k != "sample_rate"}
        out["torchaudio"] = libs.torchaudio.transforms.MFCC(sample_rate=w.sr, n_mfcc=N_MFCC, log_mels=False,
                                                            melkwargs=melkw).to(dev)
    if libs.nnaudio is not None and op in CQT_BINS:
        for name in ("CQT2010v2", "CQT1992v2"):
            try:
                out[f"nnAudio {name}"] = _nnaudio_cqt(name, op, w, libs)
            except Exception as exc:  # an nnAudio whose API differs is reported, not fatal
                print(f"  nnAudio {name} {op}: not constructed ({type(exc).__name__}: {exc})",
                      file=sys.stderr)
    elif libs.nnaudio is not None and op != "istft":
        try:
            out["nnAudio"] = _nnaudio(op, w, libs)
        except Exception as exc:  # an nnAudio whose API differs is reported, not fatal
            print(f"  nnAudio {op}: not constructed ({type(exc).__name__}: {exc})", file=sys.stderr)
    return out


def _nnaudio_cqt(name: str, op: str, w: Workload, libs: Libs) -> Callable[[Any], Any]:
    """nnAudio's constant-Q layer ``name`` with specux's (librosa's) parameters, magnitude output."""
    n_bins, bpo = CQT_BINS[op]
    layer = getattr(libs.nnaudio, name)(sr=w.sr, hop_length=w.hop, fmin=32.70319566257483, n_bins=n_bins,
                                        bins_per_octave=bpo, output_format="Magnitude", verbose=False)
    return layer.to(libs.device)


def _nnaudio(op: str, w: Workload, libs: Libs) -> Callable[[Any], Any]:
    f, dev = libs.nnaudio, libs.device
    common = dict(n_fft=w.n_fft, hop_length=w.hop, window="hann", center=True, pad_mode="constant",
                  verbose=False)
    if op in ("stft", "stft_power"):
        layer = f.STFT(**common, freq_scale="no", sr=w.sr,
                       output_format="Complex" if op == "stft" else "Magnitude").to(dev)
        return layer if op == "stft" else (lambda x: layer(x).square())
    if op in CQT_BINS:
        raise ValueError("the constant-Q peers are built by _nnaudio_cqt")
    mel = dict(sr=w.sr, n_mels=w.n_mels, fmin=0.0, fmax=w.sr / 2, power=2.0, htk=False, norm=1, **common)
    if op == "melspectrogram":
        return f.MelSpectrogram(**mel).to(dev)
    mel.pop("sr")
    return f.MFCC(sr=w.sr, n_mfcc=N_MFCC, norm="ortho", **mel).to(dev)


def cupyx_peers(op: str, w: Workload, libs: Libs) -> dict[str, Callable[[Any], Any]]:
    """cupyx.scipy.signal's stft / istft (scipy's scaling and framing: timed, not compared)."""
    sig = libs.cupyx_signal
    if sig is None or op not in ("stft", "stft_power", "istft"):
        return {}
    kw = dict(fs=w.sr, window="hann", nperseg=w.n_fft, noverlap=w.n_fft - w.hop)
    if op == "stft":
        return {"cupyx": lambda x: sig.stft(x, boundary="zeros", padded=False, **kw)[2]}
    if op == "stft_power":
        return {"cupyx": lambda x: libs.cupy.abs(sig.stft(x, boundary="zeros", padded=False, **kw)[2]) ** 2}
    return {"cupyx": lambda d: sig.istft(d, boundary=True, **kw)[1]}


def scalar_loss(out: Any) -> Any:
    """A scalar of an output, for the backward pass: sum of magnitudes (complex) or of values (real)."""
    return out.abs().sum() if out.is_complex() else out.sum()


# --- running one (workload, op) ---------------------------------------------------------------------------


def rel_err(a: Any, b: Any) -> float | None:
    """max |a - b| / max |b| (None when the shapes differ)."""
    a, b = to_numpy(a), to_numpy(b)
    if a.shape != b.shape:
        return None
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    diff = float(np.max(np.abs(a.astype(np.complex128) - b))) if b.size else 0.0
    return diff / scale if scale > 0 else diff


def choose_specux_input(fn: Callable[[Any], Any], host: np.ndarray, libs: Libs) -> tuple[str, Any, str]:
    """(kind, the input in that kind, why the better kinds were not taken): the first device kind whose call
    works and returns the same kind, else numpy."""
    why = []
    for kind, convert in libs.specux_inputs():
        try:
            arg = convert(host)
            result = fn(arg)
            libs.sync()
            if same_library(result, kind):
                return kind, arg, "; ".join(why)
            why.append(f"{kind}: came back as {type(result).__module__}.{type(result).__name__}")
        except Exception as exc:
            why.append(f"{kind}: {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}")
    return "numpy", host, "; ".join(why)


def specux_backward(
    op: str, w: Workload, libs: Libs, host: np.ndarray
) -> tuple[Callable[[], Any] | None, str]:
    """A forward+backward call of specux on a torch tensor of the backend's device, or None and why not."""
    wanted = {"cuda": "cuda", "metal": "mps"}.get(libs.backend)
    if libs.torch is None:
        return None, "torch is not installed"
    if wanted is None:
        return None, f"torch has no {libs.backend} device, so no gradients reach the {libs.backend} backend"
    if libs.device != wanted:
        return None, f"torch here has no {wanted} device"
    fn = specux_call(op, w, libs.backend)
    x = libs.to_torch(host, grad=True)

    def step() -> None:
        x.grad = None
        scalar_loss(fn(x)).backward()

    try:
        step()
        libs.sync()
        if x.grad is None or x.grad.device.type != wanted:
            return None, "no gradient on the device came back"
    except Exception as exc:
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    return step, ""


def run_case(w: Workload, op: str, libs: Libs, repeat: int, warmup: int, passes: tuple[str, ...],
             peak: float | None) -> list[dict[str, Any]]:
    """Time ``op`` on ``w``: specux and every peer, each pass; check specux against the cpu backend."""
    if op == "istft":  # the input is the spectrum of the workload's signal
        host = specux.stft(w.x, n_fft=w.n_fft, hop_length=w.hop, backend="cpu")
    else:
        host = w.x
    fn = specux_call(op, w, libs.backend)
    reference = specux_call(op, w, "cpu")(host)
    kind, arg, why = choose_specux_input(fn, host, libs)
    got = fn(arg)
    libs.sync()
    err = rel_err(got, reference)
    nbytes = host.nbytes + reference.nbytes
    dev_peers = {**torch_peers(op, w, libs), **cupyx_peers(op, w, libs)}
    peer_err = {}
    if op in CQT_BINS:  # how close each constant-Q peer's magnitudes are to librosa's (specux's cpu)
        for name, peer in dev_peers.items():
            try:
                mag = to_numpy(peer(libs.to_torch(host)))
                frames = min(mag.shape[-1], reference.shape[-1])
                peer_err[name] = rel_err(mag[..., :frames], np.abs(reference[..., :frames]))
            except Exception as exc:
                print(f"  {name} {op}: not compared ({type(exc).__name__}: {exc})", file=sys.stderr)
    rows = []
    for p in passes:
        fns: dict[str, Callable[[], Any]] = {}
        na: dict[str, str] = {}
        used = kind  # what specux was given in this pass
        if p == "forward":
            fns["specux"] = lambda: (fn(arg), libs.sync())
            for name, peer in dev_peers.items():
                dev_in = libs.cupy.asarray(host) if name == "cupyx" else libs.to_torch(host)
                fns[name] = lambda peer=peer, dev_in=dev_in: (peer(dev_in), libs.sync())
                if kind == "numpy" and name in ("torch", "torchaudio") and libs.device != "cpu":
                    # the like-for-like comparison when specux itself pays for the copies
                    fns[name + "+io"] = lambda peer=peer: to_numpy(peer(libs.to_torch(host)))
        else:
            step, reason = specux_backward(op, w, libs, host)
            used = f"torch-{libs.device}" if step is not None else "-"
            if step is None:
                na["specux"] = reason
            else:
                fns["specux"] = lambda step=step: (step(), libs.sync())
            for name, peer in dev_peers.items():
                if name == "cupyx":
                    na[name] = "no autograd"
                    continue
                x = libs.to_torch(host, grad=True)

                def fwd_bwd(peer=peer, x=x) -> None:
                    x.grad = None
                    scalar_loss(peer(x)).backward()
                    libs.sync()

                fns[name] = fwd_bwd
        try:
            times = interleaved(fns, repeat=repeat, warmup=warmup) if fns else {}
        except Exception:
            traceback.print_exc()
            times = {}
            na.setdefault("specux", "failed: see the traceback above")
        best = {name: t["best"] for name, t in times.items()}
        mine = best.get("specux")
        peers = {k: v for k, v in best.items() if k != "specux"}
        fastest = min(peers, key=peers.get) if peers else None
        queued = None
        if mine and op in MEMORY_BOUND and p == "forward":
            # a call's own overhead (Python, launches) can exceed what a fast device spends on it: calls
            # queued behind one synchronisation show the rate the device sustains; the faster counts
            queued = queued_time(lambda: fn(arg), libs)
        gbps = nbytes / min(mine, queued) / 1e9 if queued is not None else None
        row = {
            "data": w.name, "shape": list(w.x.shape), "sr": w.sr, "n_fft": w.n_fft, "hop_length": w.hop,
            "n_mels": w.n_mels, "op": op, "pass": p, "specux_input": used,
            "specux_input_fallback_reason": why,
            "bytes": nbytes, "seconds": best, "specux_queued_seconds_per_call": queued,
            "not_applicable": na,
            "ratio_specux_over": {k: ratio(mine, v) for k, v in peers.items()},
            "fastest_peer": fastest, "ratio_to_fastest": ratio(mine, peers.get(fastest)) if fastest else None,
            "gbps": gbps, "peak_fraction": gbps * 1e9 / peak if gbps and peak else None,
            "rel_err_vs_cpu": err if p == "forward" else None,
            "peer_rel_err_vs_cpu": peer_err if p == "forward" else {},
        }
        rows.append(row)
        print(f"  {w.name:5s} {op:14s} {p:16s} " + ", ".join(f"{k} {fmt_seconds(v)}" for k, v in best.items())
              + (f", specux n/a ({na['specux']})" if "specux" in na else ""), file=sys.stderr, flush=True)
    return rows


# --- reporting --------------------------------------------------------------------------------------------


def peer_label(name: str, device: str) -> str:
    """A peer's column heading: its name and the torch device it ran on."""
    return "cupyx (cuda)" if name == "cupyx" else f"{name} ({device})"


def _peak_cell(r: dict[str, Any], copy: float | None) -> str:
    """% of the peak; where the peak is unknown, "unknown" and the % of the measured copy (the proxy)."""
    if not r["gbps"]:
        return "-"
    if r["peak_fraction"]:
        return f"{100 * r['peak_fraction']:.2g} %"
    return f"unknown ({100 * r['gbps'] * 1e9 / copy:.2g} % of copy)" if copy else "unknown"


def table(rows: list[dict[str, Any]], device: str, copy: float | None) -> str:
    """The markdown table of ``rows`` (the JSON's ``results``); ``device``: the torch peers' device.

    ``copy`` is the measured device-to-device copy in bytes/s (the proxy for an unknown peak), or None.
    """
    present = [p for p in PEERS if any(p in r["seconds"] for r in rows)]
    header = ["data", "op", "pass", "specux input", "specux", "GB/s", "% of peak", "err vs cpu",
              *(peer_label(p, device) for p in present), "fastest peer", "specux / fastest"]
    body = []
    for r in rows:
        mine = r["seconds"].get("specux")
        cells = [r["data"], r["op"], r["pass"], r["specux_input"], fmt_seconds(mine) if mine else "n/a",
                 f"{r['gbps']:.3g}" if r["gbps"] else "-", _peak_cell(r, copy),
                 f"{r['rel_err_vs_cpu']:.1e}" if r["rel_err_vs_cpu"] is not None else "-"]
        for p in present:
            t = r["seconds"].get(p)
            if t is None:
                cells.append("n/a" if p in r["not_applicable"] else "-")
            else:
                cell = f"{fmt_seconds(t)} ({fmt_ratio(r['ratio_specux_over'].get(p))})"
                e = r.get("peer_rel_err_vs_cpu", {}).get(p)
                cells.append(cell + (f", err {e:.1e}" if e is not None else ""))
        cells += [r["fastest_peer"] or "-", fmt_ratio(r["ratio_to_fastest"])]
        body.append(cells)
    return markdown_table(header, body)


def goals(rows: list[dict[str, Any]], backend: str) -> list[dict[str, Any]]:
    """The issue's goals on an H100/H200-class GPU, row by row (evaluated on CUDA only)."""
    out = []
    for r in rows:
        mine = r["seconds"].get("specux")
        checks = []
        if r["op"] == "stft" and r["pass"] == "forward":
            checks.append(("torch", GOAL_STFT_VS_TORCH, f"specux / torch.stft <= {GOAL_STFT_VS_TORCH:g}"))
        if r["op"] in ("melspectrogram", "mfcc"):
            checks.append(("torchaudio", GOAL_FEATURES_VS_TORCHAUDIO,
                           f"specux / torchaudio <= {GOAL_FEATURES_VS_TORCHAUDIO:g}"))
        if r["op"] in CQT_BINS and r["pass"] == "forward":
            checks.append(("nnAudio CQT2010v2", GOAL_CQT_VS_NNAUDIO,
                           f"specux / nnAudio CQT2010v2 <= {GOAL_CQT_VS_NNAUDIO:g}"))
        for peer, bound, text in checks:
            q = ratio(mine, r["seconds"].get(peer))
            out.append({"data": r["data"], "op": r["op"], "pass": r["pass"], "goal": text,
                        "value": None if q is None else round(q, 3),
                        "met": None if q is None or backend != "cuda" else q <= bound})
        if r["gbps"] is not None:
            f = r["peak_fraction"]
            out.append({"data": r["data"], "op": r["op"], "pass": r["pass"],
                        "goal": f">= {100 * GOAL_PEAK_FRACTION:.0f} % of peak bandwidth",
                        "value": None if f is None else round(f, 3),
                        "met": None if f is None or backend != "cuda" else f >= GOAL_PEAK_FRACTION})
    return out


def default_backend() -> str:
    """cuda when it can run here, else opencl."""
    cuda = next((b for b in specux.backends() if b.name == "cuda"), None)
    return "cuda" if cuda is not None and cuda.available else "opencl"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=("cuda", "opencl", "metal"), default=None,
                    help="specux device backend (default: cuda when it can run here, else opencl)")
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help="small workloads (8 x 4 s, 30 s clip): a PoCL run of a minute or two")
    size.add_argument("--smoke", action="store_true",
                      help="tiny workloads, 1 timed call: checks that everything runs (seconds)")
    ap.add_argument("--repeat", type=int, default=None, help="timed rounds (default 5; --smoke 1)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed calls of each before timing")
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated subset of: " + ", ".join(OPS))
    ap.add_argument("--data", default="batch,clip", help="subset of: batch, clip")
    ap.add_argument("--passes", default=",".join(PASSES), help="subset of: " + ", ".join(PASSES))
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON file to write")
    args = ap.parse_args(argv)
    ops = [o for o in args.ops.split(",") if o]
    if set(ops) - set(OPS):
        ap.error(f"--ops: unknown {sorted(set(ops) - set(OPS))}; choose from {', '.join(OPS)}")
    passes = tuple(p for p in PASSES if p in args.passes.split(","))
    if not passes or set(args.passes.split(",")) - set(PASSES):
        ap.error(f"--passes: choose from {', '.join(PASSES)}")
    wanted = set(args.data.split(","))
    if not wanted or wanted - {"batch", "clip"}:
        ap.error("--data: choose from batch, clip")
    size_name = "smoke" if args.smoke else "quick" if args.quick else "full"
    repeat = args.repeat if args.repeat is not None else (1 if args.smoke else 5)
    backend = args.backend or default_backend()
    info = next((b for b in specux.backends() if b.name == backend), None)
    if info is None or not info.available:
        ap.error(f"--backend {backend}: not available here: {info.unavailable_reason if info else 'unknown'}")
    missing = [o for o in ops if o.split("_")[0] not in info.ops]
    if missing:
        ap.error(f"--backend {backend} does not serve {', '.join(missing)} (it serves {', '.join(info.ops)})")

    libs = Libs(backend)
    dev = device_info(libs, size_name)
    peak = dev["peak_bytes_per_s"]
    meta = {"machine": machine(), "versions": versions(("specux", "numpy", "torch", "torchaudio", "nnAudio",
                                                          "cupy")),
            "device": dev, "size": size_name, "repeat": repeat, "warmup": args.warmup}
    print(f"# specux {backend} on {dev['name']}; torch peers on {libs.device}", file=sys.stderr, flush=True)
    rows = []
    for w in make_workloads(size_name):
        if w.name not in wanted:
            continue
        print(f"# {w.describe()}", file=sys.stderr, flush=True)
        for op in ops:
            rows += run_case(w, op, libs, repeat, args.warmup, passes, peak)
    finish_machine(meta["machine"])
    goal = goals(rows, backend)
    write_json(args.out, {"command": command_line(__file__, argv), "meta": meta, "results": rows,
                          "goals": goal})

    m = meta["machine"]
    print(f"specux GPU benchmark, {m['date_utc']}: backend {backend} on {dev['name']} (host {m['cpu']}, "
          f"{m['usable_cores']} cores); {size_name} workloads")
    print(f"peak memory bandwidth: {peak / 1e9:.0f} GB/s ({dev['peak_source']})" if peak
          else f"peak memory bandwidth: {dev['peak_source']}")
    if dev["copy_bytes_per_s"]:
        copy = dev["copy_bytes_per_s"] / 1e9
        print(f"measured device-to-device copy: {copy:.1f} GB/s ({dev['copy_source']})"
              + ("" if peak else ": the proxy for the peak"))
    elif dev["copy_source"]:
        print(f"measured device-to-device copy: {dev['copy_source']}")
    print(f"peers: torch / torchaudio / nnAudio on {libs.device}"
          + (" (torch has no device for this backend: the peers run on the CPU)"
             if libs.device == "cpu" else "")
          + f"; nnAudio {'present' if libs.nnaudio else 'not installed'}; "
          + f"cupyx.scipy.signal {'present' if libs.cupyx_signal else 'not available'}")
    for op in ops:
        r = next((r for r in rows if r["op"] == op and r["pass"] == "forward"), None)
        if r is None:
            continue
        if r["specux_input"] == "numpy":
            print(f"specux input for {op}: numpy in / numpy out, host <-> device transfers included in the "
                  "time"
                  + (f" (device inputs not accepted: {r['specux_input_fallback_reason']})"
                     if r["specux_input_fallback_reason"] else " (this backend takes host arrays only)"))
        else:
            print(f"specux input for {op}: {r['specux_input']} (resident on the device)")
    print(f"fastest of {repeat} calls taking turns, after {args.warmup} warm-up, each call synchronised; "
          "cells: time (specux / peer), below 1: specux is faster; GB/s: input read + output written once, "
          f"over the faster of specux's synchronised call and {QUEUED_CALLS} calls queued behind one "
          "synchronisation (JSON: specux_queued_seconds_per_call)\n")
    print(table(rows, libs.device, dev["copy_bytes_per_s"]))
    na = sorted({f"{r['op']} {r['pass']}: {v}" for r in rows for k, v in r["not_applicable"].items()
                 if k == "specux"})
    if na:
        print("\nspecux n/a:")
        for line in na:
            print(f"  {line}")
    print("\ngoals (issues 13 and 14, on an H100/H200-class GPU"
          + ("" if backend == "cuda" else "; no goal on this backend") + "):")
    for g in goal:
        if g["value"] is None and "peak" in g["goal"] and backend != "cuda":
            continue  # no peak known here: nothing to say about it
        verdict = {True: "MET", False: "NOT MET", None: "n/a"}[g["met"]]
        value = "-" if g["value"] is None else f"{g['value']:.2f}"
        print(f"  {verdict:7s} {g['data']:5s} {g['op']:14s} {g['pass']:16s} {g['goal']}: {value}")
    print(f"\nJSON: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
