#!/usr/bin/env python
"""specux on the CPU against librosa, torch / torchaudio and scipy, on the same data in one run.

Data sets (``--quick`` shrinks them for a short check):

- ``batch``: 16 clips of 10 s at 16 kHz, float32 (16, 160000); n_fft 512, hop 128, 80 mel bands.
- ``issue19``: the same clips with n_fft 512, hop 160 (10 ms), stft only: the case of issue 19 (specux
  at least as fast as the fastest of torch.stft and librosa.stft).
- ``clip``: one 3-minute clip at 22.05 kHz, float32 (3969000,); n_fft 2048, hop 512, 128 mel bands.
- ``images``: 8 images of 512 x 512, float32, for the 2-D fftconvolve (33 x 33 kernel, mode "same").

Operations: stft, istft, melspectrogram, mfcc, cqt, chroma_stft, fftconvolve. Every implementation gets the
same parameters (periodic Hann window, centred frames padded with zeros, the same mel bank type); specux runs
with ``backend="cpu"``. The implementations of one operation are timed one after the other, with a pause
between them (``--warmup`` untimed calls, then ``--repeat`` timed calls in a row), and the fastest call of
each is kept. ``--rounds N`` has the implementations take turns N times (A B A B ...), so that a slow spell of
a shared machine does not fall on one implementation's only block; ``--turns`` has them take turns call by
call instead (``repeat x rounds`` rounds, no pauses).

The table gives times and ratios specux / peer: a ratio below 1 means specux is faster. The last column is the
ratio to the fastest peer of that row. Each peer's output is also compared with specux's (largest difference
relative to the peer's largest value) as a check that the same thing was computed; the JSON keeps it.

    python bench/specux_cpu.py [--quick] [--repeat 3] [--rounds 1] [--turns] [--ops stft,cqt] [--data batch]
                               [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.fft
import scipy.signal
from _common import (
    fmt_ratio,
    fmt_seconds,
    in_blocks,
    interleaved,
    machine,
    markdown_table,
    ratio,
    threadpools,
    versions,
    write_json,
)

import specux

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench" / "results" / "specux_cpu.json"
PEERS = ("librosa", "torch", "torchaudio", "scipy", "scipy[workers]")
#: which ops count against which target: specux must be at least as fast as the fastest of these peers
TARGET_FASTEST = {"stft": ("librosa", "torch", "torchaudio"), "istft": ("librosa", "torch", "torchaudio"),
                  "melspectrogram": ("librosa", "torch", "torchaudio")}
#: cqt: specux at least this many times faster than librosa
CQT_SPEEDUP = 5.0
#: griffinlim (issue 14): specux at least this many times faster than librosa
GRIFFINLIM_SPEEDUP = 2.0


@dataclass(frozen=True)
class Data:
    """One input set and the transform parameters used on it."""

    name: str
    x: np.ndarray
    sr: int
    n_fft: int = 2048
    hop: int = 512
    n_mels: int = 128
    ops: tuple[str, ...] = ("stft", "istft", "melspectrogram", "mfcc", "cqt", "chroma_stft", "fftconvolve")
    extra: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        return f"{self.name} {tuple(self.x.shape)} {self.x.dtype} @ {self.sr} Hz"


def make_data(quick: bool) -> list[Data]:
    rng = np.random.default_rng(0)

    def audio(shape: tuple[int, ...], sr: int) -> np.ndarray:
        t = np.arange(shape[-1]) / sr
        tone = 0.3 * np.sin(2 * np.pi * 440.0 * t) + 0.2 * np.sin(2 * np.pi * 1234.5 * t)
        return (tone + 0.05 * rng.standard_normal(shape)).astype(np.float32)

    n_batch, secs_batch, secs_clip, side, n_img = (4, 2, 10, 128, 2) if quick else (16, 10, 180, 512, 8)
    batch = audio((n_batch, 16000 * secs_batch), 16000)
    return [
        Data("batch", batch, 16000, n_fft=512, hop=128, n_mels=80),
        Data("issue19", batch, 16000, n_fft=512, hop=160, ops=("stft",)),
        Data("clip", audio((22050 * secs_clip,), 22050), 22050),
        # the inverses: 32 Griffin-Lim iterations, and mel_to_audio's NNLS (librosa's L-BFGS) before them;
        # icqt of 84 bins, and griffinlim_cqt's 32 rounds of icqt and cqt
        Data("inverse", audio((22050 * (2 if quick else 5),), 22050), 22050,
             ops=("griffinlim", "mel_to_audio", "icqt", "griffinlim_cqt")),
        Data("images", rng.standard_normal((n_img, side, side)).astype(np.float32), 0, ops=("fftconvolve",),
             extra={"kernel": rng.standard_normal((1, 33, 33)).astype(np.float32)}),
    ]


def _torch() -> Any:
    import torch

    return torch


# --- one function per operation: each returns {implementation: zero-argument callable} -------------------


def bench_stft(d: Data) -> dict[str, Callable[[], Any]]:
    import librosa
    import torchaudio

    torch = _torch()
    xt = torch.from_numpy(d.x)
    win = torch.hann_window(d.n_fft, periodic=True)
    spec = torchaudio.transforms.Spectrogram(n_fft=d.n_fft, hop_length=d.hop, power=None, center=True,
                                             pad_mode="constant")
    return {
        "specux": lambda: specux.stft(d.x, n_fft=d.n_fft, hop_length=d.hop, backend="cpu"),
        "librosa": lambda: librosa.stft(d.x, n_fft=d.n_fft, hop_length=d.hop),
        "torch": lambda: torch.stft(xt, d.n_fft, hop_length=d.hop, window=win, center=True,
                                    pad_mode="constant", return_complex=True),
        "torchaudio": lambda: spec(xt),
    }


def bench_istft(d: Data) -> dict[str, Callable[[], Any]]:
    import librosa
    import torchaudio

    torch = _torch()
    D = specux.stft(d.x, n_fft=d.n_fft, hop_length=d.hop, backend="cpu")
    Dt = torch.from_numpy(D)
    win = torch.hann_window(d.n_fft, periodic=True)
    n = d.x.shape[-1]
    inv = torchaudio.transforms.InverseSpectrogram(n_fft=d.n_fft, hop_length=d.hop, center=True)
    return {
        "specux": lambda: specux.istft(D, hop_length=d.hop, n_fft=d.n_fft, length=n, backend="cpu"),
        "librosa": lambda: librosa.istft(D, hop_length=d.hop, n_fft=d.n_fft, length=n),
        "torch": lambda: torch.istft(Dt, d.n_fft, hop_length=d.hop, window=win, center=True, length=n),
        "torchaudio": lambda: inv(Dt, length=n),
    }


def _torchaudio_mel_kwargs(d: Data) -> dict[str, Any]:
    """torchaudio.transforms.MelSpectrogram arguments that compute librosa's default mel spectrogram."""
    return dict(sample_rate=d.sr, n_fft=d.n_fft, hop_length=d.hop, f_min=0.0, f_max=d.sr / 2, n_mels=d.n_mels,
                power=2.0, center=True, pad_mode="constant", norm="slaney", mel_scale="slaney")


def bench_melspectrogram(d: Data) -> dict[str, Callable[[], Any]]:
    import librosa
    import torchaudio

    xt = _torch().from_numpy(d.x)
    mel = torchaudio.transforms.MelSpectrogram(**_torchaudio_mel_kwargs(d))
    kw = dict(sr=d.sr, n_fft=d.n_fft, hop_length=d.hop, n_mels=d.n_mels)
    return {
        "specux": lambda: specux.melspectrogram(d.x, **kw, backend="cpu"),
        "librosa": lambda: librosa.feature.melspectrogram(y=d.x, **kw),
        "torchaudio": lambda: mel(xt),
    }


def bench_mfcc(d: Data) -> dict[str, Callable[[], Any]]:
    import librosa
    import torchaudio

    xt = _torch().from_numpy(d.x)
    mfcc = torchaudio.transforms.MFCC(sample_rate=d.sr, n_mfcc=20, log_mels=False,
                                      melkwargs={k: v for k, v in _torchaudio_mel_kwargs(d).items()
                                                 if k != "sample_rate"})
    kw = dict(sr=d.sr, n_mfcc=20, n_fft=d.n_fft, hop_length=d.hop, n_mels=d.n_mels)
    return {
        "specux": lambda: specux.mfcc(d.x, **kw, backend="cpu"),
        "librosa": lambda: librosa.feature.mfcc(y=d.x, **kw),
        "torchaudio": lambda: mfcc(xt),
    }


def bench_cqt(d: Data) -> dict[str, Callable[[], Any]]:
    import librosa

    kw = dict(sr=d.sr, hop_length=512, n_bins=84, bins_per_octave=12)
    return {
        "specux": lambda: specux.cqt(d.x, **kw, backend="cpu"),
        "librosa": lambda: librosa.cqt(d.x, **kw),
    }


def bench_chroma_stft(d: Data) -> dict[str, Callable[[], Any]]:
    import librosa

    # a fixed tuning: both libraries estimate it otherwise, and that estimate is a different computation
    kw = dict(sr=d.sr, n_fft=d.n_fft, hop_length=d.hop, tuning=0.0)
    return {
        "specux": lambda: specux.chroma_stft(y=d.x, **kw, backend="cpu"),
        "librosa": lambda: librosa.feature.chroma_stft(y=d.x, **kw),
    }


def bench_fftconvolve(d: Data) -> dict[str, Callable[[], Any]]:
    import torchaudio

    torch = _torch()
    if "kernel" in d.extra:  # 2-D: every image with one kernel
        h, axes, mode = d.extra["kernel"], (-2, -1), "same"
    else:  # 1-D: every clip with one 4096-tap filter
        h, axes, mode = np.hanning(4096).astype(np.float32).reshape((1,) * (d.x.ndim - 1) + (-1,)), -1, "full"

    def scipy_workers() -> np.ndarray:
        with scipy.fft.set_workers(-1):
            return scipy.signal.fftconvolve(d.x, h, mode=mode, axes=axes)

    impls = {
        "specux": lambda: specux.fftconvolve(d.x, h, mode=mode, axes=axes, backend="cpu"),
        "scipy": lambda: scipy.signal.fftconvolve(d.x, h, mode=mode, axes=axes),
        "scipy[workers]": scipy_workers,
    }
    if axes == -1:  # torchaudio convolves along the last axis only
        xt, ht = torch.from_numpy(d.x), torch.from_numpy(np.ascontiguousarray(h))
        impls["torchaudio"] = lambda: torchaudio.functional.fftconvolve(xt, ht, mode=mode)
    return impls


def bench_griffinlim(d: Data) -> dict[str, Callable[[], Any]]:
    import librosa

    S = np.abs(librosa.stft(d.x, n_fft=d.n_fft, hop_length=d.hop))
    kw = dict(n_fft=d.n_fft, hop_length=d.hop, random_state=0)  # the same start: the same result
    return {
        "specux": lambda: specux.griffinlim(S, **kw, backend="cpu"),
        "librosa": lambda: librosa.griffinlim(S, **kw),
    }


def bench_mel_to_audio(d: Data) -> dict[str, Callable[[], Any]]:
    import librosa

    M = librosa.feature.melspectrogram(y=d.x, sr=d.sr, n_fft=d.n_fft, hop_length=d.hop, n_mels=d.n_mels)
    kw = dict(sr=d.sr, n_fft=d.n_fft, hop_length=d.hop)
    # both start Griffin-Lim from unseeded random phases: rel_diff compares two random starts
    return {
        "specux": lambda: specux.mel_to_audio(M, **kw, backend="cpu"),
        "librosa": lambda: librosa.feature.inverse.mel_to_audio(M, **kw),
    }


def bench_icqt(d: Data) -> dict[str, Callable[[], Any]]:
    import librosa

    kw = dict(sr=d.sr, hop_length=512, bins_per_octave=12)
    C = librosa.cqt(d.x, n_bins=84, **kw)
    return {
        "specux": lambda: specux.icqt(C, **kw, backend="cpu"),
        "librosa": lambda: librosa.icqt(C, **kw),
    }


def bench_griffinlim_cqt(d: Data) -> dict[str, Callable[[], Any]]:
    import librosa

    kw = dict(sr=d.sr, hop_length=512, bins_per_octave=12)
    S = np.abs(librosa.cqt(d.x, n_bins=84, **kw))
    kw["random_state"] = 0  # the same start: the same result within rounding
    return {
        "specux": lambda: specux.griffinlim_cqt(S, **kw, backend="cpu"),
        "librosa": lambda: librosa.griffinlim_cqt(S, **kw),
    }


OPS: dict[str, Callable[[Data], dict[str, Callable[[], Any]]]] = {
    "stft": bench_stft,
    "istft": bench_istft,
    "melspectrogram": bench_melspectrogram,
    "mfcc": bench_mfcc,
    "cqt": bench_cqt,
    "chroma_stft": bench_chroma_stft,
    "fftconvolve": bench_fftconvolve,
    "griffinlim": bench_griffinlim,
    "mel_to_audio": bench_mel_to_audio,
    "icqt": bench_icqt,
    "griffinlim_cqt": bench_griffinlim_cqt,
}


# --- running, checking, reporting -------------------------------------------------------------------------


def rel_diff(a: Any, b: Any) -> float | None:
    """max |a - b| / max |b| over the common shape (None when the shapes differ)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return None
    scale = float(np.max(np.abs(b))) or 1.0
    return float(np.max(np.abs(a.astype(np.complex128) - b))) / scale


def run_case(
    d: Data, op: str, repeat: int, warmup: int, rounds: int = 1, turns: bool = False
) -> dict[str, Any]:
    if turns:  # call by call: each round calls every implementation once
        times = interleaved(OPS[op](d), repeat=repeat * rounds, warmup=warmup)
    else:
        times = in_blocks(OPS[op](d), repeat=repeat, warmup=warmup, rounds=rounds)
    outs = {name: t.pop("result") for name, t in times.items()}
    outs = {name: out.numpy() if hasattr(out, "numpy") else out for name, out in outs.items()}
    diffs = {name: rel_diff(outs["specux"], out) for name, out in outs.items() if name != "specux"}
    for name, t in times.items():
        print(f"  {d.name:7s} {op:15s} {name:15s} {fmt_seconds(t['best']):>10s}", file=sys.stderr, flush=True)
    row = {"data": d.name, "shape": list(d.x.shape), "sr": d.sr, "n_fft": d.n_fft, "hop_length": d.hop,
           "op": op, "times": times, "rel_diff": diffs}
    for key, suffix in (("best", ""), ("cpu_best", "_cpu")):
        ratios, fastest, to_fastest = compare(times, key)
        row.update({f"ratios{suffix}": ratios, f"fastest_peer{suffix}": fastest,
                    f"ratio_to_fastest{suffix}": to_fastest})
    return row


def compare(times: dict[str, dict[str, float]], key: str) -> tuple[dict[str, Any], str, float | None]:
    """Ratios specux / peer of ``times[...][key]``, the fastest peer, and the ratio to it."""
    peers = {k: v[key] for k, v in times.items() if k != "specux"}
    fastest = min(peers, key=peers.get)
    mine = times["specux"][key]
    return {k: ratio(mine, v) for k, v in peers.items()}, fastest, ratio(mine, peers[fastest])


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's speed targets, evaluated row by row."""
    out = []
    for r in rows:
        if r["op"] in TARGET_FASTEST:
            group = {k: r["times"][k]["best"] for k in TARGET_FASTEST[r["op"]] if k in r["times"]}
            best = min(group, key=group.get)
            q = ratio(r["times"]["specux"]["best"], group[best])
            out.append({"data": r["data"], "op": r["op"],
                        "target": f"specux <= fastest of {', '.join(group)}",
                        "value": f"specux / {best} = {q:.2f}", "met": q <= 1.0})
        elif r["op"] == "cqt":
            q = ratio(r["times"]["librosa"]["best"], r["times"]["specux"]["best"])
            out.append({"data": r["data"], "op": "cqt", "target": f"librosa / specux >= {CQT_SPEEDUP:g}",
                        "value": f"librosa / specux = {q:.2f}", "met": q >= CQT_SPEEDUP})
        elif r["op"] == "griffinlim":
            q = ratio(r["times"]["librosa"]["best"], r["times"]["specux"]["best"])
            out.append({"data": r["data"], "op": "griffinlim",
                        "target": f"librosa / specux >= {GRIFFINLIM_SPEEDUP:g}",
                        "value": f"librosa / specux = {q:.2f}", "met": q >= GRIFFINLIM_SPEEDUP})
        elif r["op"] in ("icqt", "griffinlim_cqt"):  # issue 14: the same 2x goal as griffinlim
            q = ratio(r["times"]["librosa"]["best"], r["times"]["specux"]["best"])
            out.append({"data": r["data"], "op": r["op"],
                        "target": f"librosa / specux >= {GRIFFINLIM_SPEEDUP:g}",
                        "value": f"librosa / specux = {q:.2f}", "met": q >= GRIFFINLIM_SPEEDUP})
    return out


def table(rows: list[dict[str, Any]], key: str = "best") -> str:
    """Markdown table of ``key`` ("best": wall time; "cpu_best": process CPU time), with specux / peer."""
    header = ["data", "op", "specux", *PEERS, "fastest peer", "specux / fastest"]
    body = []
    for r in rows:
        ratios, fastest, to_fastest = compare(r["times"], key)
        cells = [r["data"], r["op"], fmt_seconds(r["times"]["specux"][key])]
        for p in PEERS:
            t = r["times"].get(p)
            cells.append("-" if t is None else f"{fmt_seconds(t[key])} ({fmt_ratio(ratios[p])})")
        cells += [fastest, fmt_ratio(to_fastest)]
        body.append(cells)
    return markdown_table(header, body)


def fft_libraries() -> dict[str, str]:
    """The FFT library behind each implementation's stft on this machine."""
    import librosa.core.fft
    import torch

    lib = librosa.core.fft.get_fftlib().__name__
    pocketfft = {"scipy.fft": f"scipy's pocketfft (scipy {scipy.__version__}, one thread)",
                 "numpy.fft": f"numpy's pocketfft (numpy {np.__version__})"}
    mkl = torch.backends.mkl.is_available()
    torch_fft = "MKL" if mkl else "pocketfft (torch built without MKL)"
    return {
        "specux": specux_fft(),
        "librosa": pocketfft.get(lib, lib),
        "torch": f"{torch_fft} (torch.backends.mkl.is_available() = {mkl}), torch's threads",
        "torchaudio": f"torch.stft: {torch_fft}",
    }


def specux_fft() -> str:
    """The real-FFT engine(s) specux's CPU stft used in this process (after the runs: "auto" decides on the
    first large calls, see specux/_cpu_fft.py)."""
    try:
        from specux import _cpu_fft
    except ImportError:  # versions before the engine choice: scipy's pocketfft always
        return f"scipy's pocketfft (scipy {scipy.__version__}), one thread per block"
    return _cpu_fft.describe() + ", one thread per block"


def thread_settings() -> dict[str, Any]:
    torch = _torch()
    return {"torch.get_num_threads": torch.get_num_threads(),
            "torch.get_num_interop_threads": torch.get_num_interop_threads(),
            "scipy.fft default workers": scipy.fft.get_workers(),
            "scipy[workers] column": "scipy.fft.set_workers(-1) around scipy.signal.fftconvolve",
            "specux cpu": "blocks of frames on a pool of one thread per core, each block's FFT on one thread",
            "librosa fft": "librosa.core.fft.get_fftlib(), default workers (1)"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small inputs: a short check that everything runs")
    ap.add_argument("--repeat", type=int, default=3, help="timed calls per implementation (best is kept)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed calls before timing")
    ap.add_argument("--rounds", type=int, default=1,
                    help="blocks of --repeat calls per implementation, taking turns (best over all is kept)")
    ap.add_argument("--turns", action="store_true",
                    help="take turns call by call (--repeat x --rounds rounds), not in blocks: steadier on "
                         "a busy machine for ops without BLAS (stft); unfair to whoever runs after OpenBLAS")
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated subset of: " + ", ".join(OPS))
    ap.add_argument("--data", default="batch,issue19,clip,inverse,images",
                    help="subset of: batch, issue19, clip, inverse, images")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON file to write")
    args = ap.parse_args(argv)
    ops = [o for o in args.ops.split(",") if o]
    unknown = set(ops) - set(OPS)
    if unknown:
        ap.error(f"--ops: unknown {sorted(unknown)}; choose from {', '.join(OPS)}")
    wanted = set(args.data.split(","))

    meta = {"machine": machine(), "versions": versions(("specux", "numpy", "scipy", "librosa", "torch",
                                                          "torchaudio", "soxr")),
            "threads": thread_settings(), "fft": fft_libraries(), "quick": args.quick, "repeat": args.repeat,
            "warmup": args.warmup, "rounds": args.rounds, "turns": args.turns}
    rows = []
    for d in make_data(args.quick):
        if d.name not in wanted:
            continue
        print(f"# {d.describe()}", file=sys.stderr)
        rows += [run_case(d, op, args.repeat, args.warmup, args.rounds, args.turns)
                 for op in ops if op in d.ops]
    meta["machine"]["loadavg_end"] = list(os.getloadavg())
    meta["fft"]["specux"] = specux_fft()  # what "auto" chose during the runs
    meta["threads"]["native pools"] = threadpools()
    goal = targets(rows)
    for r in rows:
        for t in r["times"].values():
            t.pop("runs", None)
    write_json(args.out, {"meta": meta, "results": rows, "targets": goal})

    m = meta["machine"]
    print(f"specux CPU benchmark, {m['date_utc']}, {m['cpu']} ({m['usable_cores']} cores usable), "
          f"load average {m['loadavg_start'][0]:.1f} -> {m['loadavg_end'][0]:.1f}")
    print("FFT libraries: " + "; ".join(f"{k}: {v}" for k, v in meta["fft"].items()))
    how = (f"fastest of {args.repeat * args.rounds} calls, taking turns call by call" if args.turns
           else f"fastest of {args.repeat} calls in a row")
    print(f"{how}, after {args.warmup} warm-up; cells: time "
          "(specux / peer); a ratio below 1 means specux is faster\n")
    print(table(rows))
    print("\nThe same runs in process CPU time (all threads added up; steadier than wall time on a loaded "
          "machine):\n")
    print(table(rows, "cpu_best"))
    print()
    for g in goal:
        verdict = "MET" if g["met"] else "NOT MET"
        print(f"{verdict:7s} {g['data']:6s} {g['op']:15s} {g['target']}: {g['value']}")
    print(f"\nJSON: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
