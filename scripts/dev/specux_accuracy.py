#!/usr/bin/env python
"""Worst relative error of specux against its peers, per operation, in float32 and float64.

Each case runs specux (``backend="cpu"``) and a peer (librosa, torch / torchaudio, scipy or numpy) on the same
input with the same parameters, in the same precision, and measures

    err = max |specux - peer| / max |peer|        (over every output element of that case)

The table keeps, per operation and peer, the largest ``err`` over all cases and names that case. Inputs: a
sine, a chirp and white noise (and a batch of them); parameter grids cover odd n_fft, hops that are not
powers of two, center on and off, pad modes, htk and Slaney mel scales, lifter, the constant-Q resamplers, and
for the FFT family every size 1..64, primes, powers of two, every norm and several axes.

By default the table replaces the text between the markers of ``docs/specux/accuracy.md``:

    python scripts/dev/specux_accuracy.py [--only stft,cqt] [--print-only] [--docs PATH]
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import scipy.signal

import specux

ROOT = Path(__file__).resolve().parents[2]
DOCS_PAGE = ROOT / "docs" / "specux" / "accuracy.md"
MARK_START, MARK_END = "<!-- accuracy:start -->", "<!-- accuracy:end -->"
DTYPES = (np.float32, np.float64)
SR = 22050
N_SAMPLES = 12345  # not a multiple of any hop below, so the last frame is partial


def signals(dtype: Any, n: int = N_SAMPLES, sr: int = SR) -> dict[str, np.ndarray]:
    """Named test signals of ``n`` samples: a sine, a chirp, noise and a (2, n) batch of the first two."""
    t = np.arange(n) / sr
    sine = 0.5 * np.sin(2 * np.pi * 440.0 * t)
    chirp = 0.5 * scipy.signal.chirp(t, f0=60.0, t1=t[-1], f1=0.45 * sr, method="logarithmic")
    noise = 0.1 * np.random.default_rng(1).standard_normal(n)
    sigs = {"sine": sine, "chirp": chirp, "noise": noise, "batch": np.stack([sine, chirp])}
    return {k: v.astype(dtype) for k, v in sigs.items()}


def rel_err(a: Any, b: Any) -> float:
    """max |a - b| / max |b|; shapes must agree (a shape mismatch is an error, not a number)."""
    a = a.numpy() if hasattr(a, "numpy") else np.asarray(a)
    b = b.numpy() if hasattr(b, "numpy") else np.asarray(b)
    if a.shape != b.shape:
        raise AssertionError(f"shape {a.shape} (specux) != {b.shape} (peer)")
    if a.size == 0:
        return 0.0
    a, b = a.astype(np.complex128), b.astype(np.complex128)
    scale = float(np.max(np.abs(b)))
    diff = float(np.max(np.abs(a - b)))
    return diff / scale if scale > 0 else diff


def label(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "defaults"


def dtype_name(dtype: Any) -> str:
    return np.dtype(dtype).name


# --- case generators: each yields (operation, peer, dtype, case label, specux thunk, peer thunk) ------------

Case = tuple[str, str, Any, str, Callable[[], Any], Callable[[], Any]]

STFT_GRID = (
    dict(n_fft=2048, hop_length=512),
    dict(n_fft=1023, hop_length=250),
    dict(n_fft=512, win_length=400, hop_length=160),
    dict(n_fft=512, hop_length=128, center=False),
    dict(n_fft=256, hop_length=100, pad_mode="reflect"),
    dict(n_fft=300, hop_length=75, window="hamming"),
)
#: numpy.pad mode -> torch.stft pad_mode
TORCH_PAD = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}


def _torch_stft_args(p: dict[str, Any], dtype: Any) -> dict[str, Any]:
    import torch

    win_length = p.get("win_length", p["n_fft"])
    window = specux.filters.get_window(p.get("window", "hann"), win_length, fftbins=True)
    return dict(n_fft=p["n_fft"], hop_length=p["hop_length"], win_length=win_length,
                window=torch.from_numpy(np.asarray(window, dtype=dtype)), center=p.get("center", True))


def cases_stft() -> Iterator[Case]:
    import librosa
    import torch

    for dtype in DTYPES:
        for name, y in signals(dtype).items():
            for p in STFT_GRID:
                case = f"{name}; {label(p)}"
                yield ("stft", "librosa", dtype, case, lambda y=y, p=p: specux.stft(y, **p, backend="cpu"),
                       lambda y=y, p=p: librosa.stft(y, **p))
                targs = _torch_stft_args(p, dtype)
                yield ("stft", "torch", dtype, case, lambda y=y, p=p: specux.stft(y, **p, backend="cpu"),
                       lambda y=y, p=p, targs=targs: torch.stft(
                           torch.from_numpy(y), **targs, pad_mode=TORCH_PAD[p.get("pad_mode", "constant")],
                           return_complex=True))


def cases_istft() -> Iterator[Case]:
    import librosa
    import torch

    for dtype in DTYPES:
        for name, y in signals(dtype).items():
            for p in STFT_GRID:
                D = librosa.stft(y, **p)
                q = {k: v for k, v in p.items() if k != "pad_mode"}
                n = y.shape[-1]
                case = f"{name}; {label(q)}"
                yield ("istft", "librosa", dtype, case,
                       lambda D=D, q=q, n=n: specux.istft(D, **q, length=n, backend="cpu"),
                       lambda D=D, q=q, n=n: librosa.istft(D, **q, length=n))
                # torch.istft refuses center=False with windows that vanish at the ends
                if q.get("center", True):
                    targs = _torch_stft_args(p, dtype)
                    yield ("istft", "torch", dtype, case,
                           lambda D=D, q=q, n=n: specux.istft(D, **q, length=n, backend="cpu"),
                           lambda D=D, n=n, targs=targs: torch.istft(torch.from_numpy(D), **targs, length=n))


MEL_GRID = (
    dict(n_fft=2048, hop_length=512, n_mels=128),
    dict(n_fft=1023, hop_length=250, n_mels=64, htk=True),
    dict(n_fft=512, hop_length=160, n_mels=40, fmin=50.0, fmax=8000.0, norm=None),
    dict(n_fft=512, hop_length=128, n_mels=80, power=1.0, center=False),
    dict(n_fft=256, hop_length=100, n_mels=32, pad_mode="reflect", htk=True, norm=None),
)


def cases_melspectrogram() -> Iterator[Case]:
    import librosa

    for dtype in DTYPES:
        for name, y in signals(dtype).items():
            for p in MEL_GRID:
                yield ("melspectrogram", "librosa", dtype, f"{name}; {label(p)}",
                       lambda y=y, p=p: specux.melspectrogram(y, sr=SR, **p, backend="cpu"),
                       lambda y=y, p=p: librosa.feature.melspectrogram(y=y, sr=SR, **p))


MFCC_GRID = (
    dict(n_mfcc=20),
    dict(n_mfcc=13, lifter=22, n_fft=1023, hop_length=250),
    dict(n_mfcc=40, n_mels=64, htk=True, dct_type=3),
    dict(n_mfcc=20, norm=None, lifter=10, center=False, n_fft=512, hop_length=128),
    dict(n_mfcc=24, dct_type=1, norm=None, n_fft=256, hop_length=100, n_mels=32, pad_mode="reflect"),
)


def cases_mfcc() -> Iterator[Case]:
    import librosa

    for dtype in DTYPES:
        for name, y in signals(dtype).items():
            for p in MFCC_GRID:
                yield ("mfcc", "librosa", dtype, f"{name}; {label(p)}",
                       lambda y=y, p=p: specux.mfcc(y, sr=SR, **p, backend="cpu"),
                       lambda y=y, p=p: librosa.feature.mfcc(y=y, sr=SR, **p))


def _torchaudio(transform: Any, dtype: Any) -> Any:
    """A torchaudio transform with its buffers (window, filter bank) in ``dtype``."""
    import torch

    return transform.to(torch.float64 if dtype == np.float64 else torch.float32)


def cases_torchaudio() -> Iterator[Case]:
    """The compat="torchaudio" presets and lfcc against torchaudio's transforms."""
    import torch
    import torchaudio.transforms as T  # noqa: N812 (torchaudio's own alias)

    grid = ({"sr": 16000}, {"sr": 22050, "n_fft": 1024, "hop_length": 256, "n_mels": 64})
    for dtype in DTYPES:
        for name, y in signals(dtype).items():
            yt = torch.from_numpy(y)
            for p in grid:
                ta = {"sample_rate": p["sr"], **{k: v for k, v in p.items() if k != "sr"}}
                case = f"{name}; {label(p)}"
                mel = _torchaudio(T.MelSpectrogram(**ta), dtype)
                yield ("melspectrogram (compat='torchaudio')", "torchaudio", dtype, case,
                       lambda y=y, p=p: specux.melspectrogram(y, **p, compat="torchaudio", backend="cpu"),
                       lambda yt=yt, mel=mel: mel(yt))
                melkw = {k: v for k, v in ta.items() if k != "sample_rate"}
                mfcc = _torchaudio(T.MFCC(sample_rate=p["sr"], melkwargs=melkw), dtype)
                yield ("mfcc (compat='torchaudio')", "torchaudio", dtype, case,
                       lambda y=y, p=p: specux.mfcc(y, **p, compat="torchaudio", backend="cpu"),
                       lambda yt=yt, mfcc=mfcc: mfcc(yt))
            for p in ({}, {"sample_rate": 22050, "n_filter": 64, "n_lfcc": 20, "log_lf": True, "n_fft": 512},
                      {"n_filter": 40, "n_lfcc": 13, "f_min": 100.0, "f_max": 6000.0, "center": False}):
                spec = {k: p[k] for k in ("n_fft", "center") if k in p}
                rest = {k: v for k, v in p.items() if k not in spec}
                lf = _torchaudio(T.LFCC(**rest, speckwargs=spec), dtype)
                yield ("lfcc", "torchaudio", dtype, f"{name}; {label(p)}",
                       lambda y=y, p=p: specux.lfcc(y, **p, backend="cpu"),
                       lambda yt=yt, lf=lf: lf(yt))


CQT_GRID = (
    dict(),
    dict(hop_length=256, fmin=55.0, n_bins=72, bins_per_octave=24),
    dict(hop_length=300, fmin=65.4, n_bins=60),
    dict(hop_length=128, n_bins=48, filter_scale=0.8, sparsity=0.0, norm=2),
)
VQT_GRID = (dict(), dict(gamma=20.0, hop_length=128, n_bins=96, bins_per_octave=24))
#: (specux res_type, librosa res_type): same resampler where librosa has it; librosa's default otherwise
RESAMPLERS = (("soxr_hq", "soxr_hq"), ("polyphase", "polyphase"), ("polyphase", "soxr_hq"), (None, "soxr_hq"))


def cases_cqt() -> Iterator[Case]:
    import librosa

    for dtype in DTYPES:
        for name, y in signals(dtype, n=2 * SR).items():
            for fn, grid in (("cqt", CQT_GRID), ("vqt", VQT_GRID)):
                mine, theirs = getattr(specux, fn), getattr(librosa, fn)
                for p in grid:
                    for res_mine, res_peer in RESAMPLERS:
                        kw_mine = dict(sr=SR, **p, res_type=res_mine, backend="cpu")
                        kw_peer = dict(sr=SR, **p, res_type=res_peer)
                        # librosa rescales octaves for L1 filters; other norms get their own row (see docs)
                        norm = "" if p.get("norm", 1) == 1 else f", norm={p['norm']}"
                        op = f"{fn} (res_type={res_mine!r}{norm})"
                        yield (op, f"librosa (res_type={res_peer!r})", dtype, f"{name}; {label(p)}",
                               lambda y=y, f=mine, kw=kw_mine: f(y, **kw),
                               lambda y=y, f=theirs, kw=kw_peer: f(y, **kw))


def cases_chroma() -> Iterator[Case]:
    import librosa

    stft_grid = (dict(tuning=0.0), dict(), dict(n_fft=1023, hop_length=250, n_chroma=24, norm=2, tuning=0.1),
                 dict(n_fft=4096, hop_length=1024, norm=None, octwidth=None, base_c=False))
    cqt_grid = (dict(tuning=0.0), dict(), dict(bins_per_octave=24, n_octaves=6, norm=2, threshold=0.1),
                dict(hop_length=256, fmin=65.4, n_chroma=24, bins_per_octave=48))
    for dtype in DTYPES:
        for name, y in signals(dtype, n=2 * SR).items():
            for p in stft_grid:
                yield ("chroma_stft", "librosa", dtype, f"{name}; {label(p)}",
                       lambda y=y, p=p: specux.chroma_stft(y=y, sr=SR, **p, backend="cpu"),
                       lambda y=y, p=p: librosa.feature.chroma_stft(y=y, sr=SR, **p))
            for p in cqt_grid:
                yield ("chroma_cqt", "librosa", dtype, f"{name}; {label(p)}",
                       lambda y=y, p=p: specux.chroma_cqt(y=y, sr=SR, **p, backend="cpu"),
                       lambda y=y, p=p: librosa.feature.chroma_cqt(y=y, sr=SR, **p))


def cases_fftconvolve() -> Iterator[Case]:
    rng = np.random.default_rng(2)
    shapes = (  # (in1 shape, in2 shape, axes, complex?)
        ((1000,), (37,), None, False),
        ((37,), (1000,), None, False),
        ((513,), (64,), None, True),
        ((64, 48), (7, 5), None, False),
        ((4, 1, 300), (1, 3, 31), -1, False),
        ((2, 40, 30), (2, 9, 4), (1, 2), True),
        ((5, 200), (5, 1), 1, False),
    )
    for dtype in DTYPES:
        for s1, s2, axes, cplx in shapes:
            a, b = rng.standard_normal(s1), rng.standard_normal(s2)
            if cplx:
                a, b = a + 1j * rng.standard_normal(s1), b + 1j * rng.standard_normal(s2)
            ctype = np.result_type(dtype, np.complex64) if cplx else dtype
            a, b = a.astype(ctype), b.astype(ctype)
            for mode in ("full", "same", "valid"):
                case = f"{s1} * {s2}, axes={axes}, {mode}{', complex' if cplx else ''}"
                yield ("fftconvolve", "scipy", dtype, case,
                       lambda a=a, b=b, m=mode, x=axes: specux.fftconvolve(a, b, m, x, backend="cpu"),
                       lambda a=a, b=b, m=mode, x=axes: scipy.signal.fftconvolve(a, b, mode=m, axes=x))


#: every size to 64, primes, powers of two, and two composite sizes
FFT_SIZES = (*range(1, 65), 67, 97, 101, 127, 257, 509, 1009, 2053, 128, 256, 512, 1024, 4096, 16384,
             1000, 4000)
NORMS = (None, "ortho", "forward")


def _fft_inputs(n: int, dtype: Any, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """For length ``n``: a real and a complex (3, n) array, and (3, n // 2 + 1) half-spectra for c2r."""
    ctype = np.result_type(dtype, np.complex64)
    real = rng.standard_normal((3, n)).astype(dtype)
    cplx = (rng.standard_normal((3, n)) + 1j * rng.standard_normal((3, n))).astype(ctype)
    half = cplx[:, : n // 2 + 1].copy()
    return {"real": real, "complex": cplx, "half": half}


def cases_fft() -> Iterator[Case]:
    rng = np.random.default_rng(3)
    one_d = (("fft", "complex"), ("ifft", "complex"), ("rfft", "real"), ("irfft", "half"), ("hfft", "half"),
             ("ihfft", "real"))
    for dtype in DTYPES:
        for n in FFT_SIZES:
            x = _fft_inputs(n, dtype, rng)
            for fn, kind in one_d:
                for norm in NORMS:
                    # along the last axis, and (transposed input) along axis 0; c2r gets its output length n
                    for axis in (-1, 0):
                        a = x[kind] if axis == -1 else np.ascontiguousarray(x[kind].T)
                        kw = dict(n=n, axis=axis, norm=norm)
                        yield (f"fft.{fn}", "numpy", dtype, f"n={n}, axis={axis}, norm={norm}",
                               lambda f=fn, a=a, kw=kw: getattr(specux.fft, f)(a, **kw, backend="cpu"),
                               lambda f=fn, a=a, kw=kw: getattr(np.fft, f)(a, **kw))
        shapes = (((8, 8), None, None), ((5, 7), None, None), ((16, 9, 3), None, None), ((1, 13), None, None),
                  ((6, 10, 4), (0, 2), None), ((12, 7, 5), (1, 2), (9, 6)), ((3, 17, 11), None, (3, 16, 12)))
        for shape, axes, s in shapes:
            real = rng.standard_normal(shape).astype(dtype)
            cplx = (real + 1j * rng.standard_normal(shape)).astype(np.result_type(dtype, np.complex64))
            for fn in ("fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"):
                is2 = fn.endswith("2")
                if is2 and axes is not None:
                    continue  # the 2-D forms are checked on their default axes only
                kw: dict[str, Any] = {"axes": axes if axes is not None else ((-2, -1) if is2 else None)}
                if s is not None:
                    kw["s"] = s[-2:] if is2 else s
                    if kw["axes"] is None:  # numpy requires axes with s of fewer dims than the array
                        kw["axes"] = tuple(range(-len(kw["s"]), 0))
                a = real if fn.startswith("r") else cplx
                # c2r: give the output shape, or odd sizes come back one shorter
                if fn.startswith("irfft") and "s" not in kw:
                    ax = kw["axes"] if kw["axes"] is not None else tuple(range(len(shape)))
                    kw["s"] = tuple(shape[i] for i in ax)
                for norm in NORMS:
                    yield (f"fft.{fn}", "numpy", dtype, f"shape={shape}, {label(kw)}, norm={norm}",
                           lambda f=fn, a=a, kw=kw, nm=norm: getattr(specux.fft, f)(a, **kw, norm=nm,
                                                                                     backend="cpu"),
                           lambda f=fn, a=a, kw=kw, nm=norm: getattr(np.fft, f)(a, **kw, norm=nm))


GROUPS: dict[str, Callable[[], Iterator[Case]]] = {
    "stft": cases_stft,
    "istft": cases_istft,
    "melspectrogram": cases_melspectrogram,
    "mfcc": cases_mfcc,
    "torchaudio": cases_torchaudio,
    "cqt": cases_cqt,
    "chroma": cases_chroma,
    "fftconvolve": cases_fftconvolve,
    "fft": cases_fft,
}


# --- running and reporting --------------------------------------------------------------------------------


def run(groups: list[str]) -> tuple[dict[tuple[str, str], dict[str, Any]], list[str]]:
    """Every case of ``groups``: the worst error per (operation, peer) and dtype, and any failures."""
    worst: dict[tuple[str, str], dict[str, Any]] = {}
    failures = []
    for g in groups:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # empty mel filters, non-writable tensors, peers' deprecations
            for op, peer, dtype, case, mine, theirs in GROUPS[g]():
                entry = worst.setdefault((op, peer), {"cases": 0})
                try:
                    err = rel_err(mine(), theirs())
                except Exception as exc:  # recorded and reported; one failing case must not hide the others
                    where = f"{op} vs {peer}, {dtype_name(dtype)}, {case}"
                    failures.append(f"{where}: {type(exc).__name__}: {exc}")
                    continue
                entry["cases"] += 1
                key = dtype_name(dtype)
                if key not in entry or err > entry[key][0] or np.isnan(err):
                    entry[key] = (err, case)
        print(f"  {g}: done", file=sys.stderr, flush=True)
    return worst, failures


def fmt_err(e: tuple[float, str] | None) -> str:
    return "-" if e is None else f"{e[0]:.1e}"


def fmt_case(e: tuple[float, str] | None) -> str:
    if e is None:
        return "-"
    return "(all cases identical)" if e[0] == 0 else e[1]


def render(worst: dict[tuple[str, str], dict[str, Any]], failures: list[str]) -> str:
    vers = []
    for m in ("specux", "numpy", "scipy", "librosa", "torch", "torchaudio", "soxr"):
        try:
            vers.append(f"{m} {importlib.import_module(m).__version__}")
        except ImportError:
            vers.append(f"{m} absent")
    lines = [
        f"Generated by `scripts/dev/specux_accuracy.py` on {dt.date.today().isoformat()} "
        f"({', '.join(vers)}).",
        "Error of one case: `max |specux - peer| / max |peer|` over all output elements; "
        "each cell is the worst case of its row. Both sides compute in the precision named by the column.",
        "",
        "| operation | peer | cases | float32 | float64 | worst case (float32) | worst case (float64) |",
        "|---|---|---|---|---|---|---|",
    ]
    for (op, peer), e in worst.items():
        f32, f64 = e.get("float32"), e.get("float64")
        lines.append(f"| {op} | {peer} | {e['cases']} | {fmt_err(f32)} | {fmt_err(f64)} | "
                     f"{fmt_case(f32)} | {fmt_case(f64)} |")
    if failures:
        lines += ["", f"{len(failures)} case(s) failed to run:", ""]
        lines += [f"- {f}" for f in failures]
    return "\n".join(lines)


def update_docs(page: Path, text: str) -> None:
    body = page.read_text() if page.exists() else f"# Accuracy\n\n{MARK_START}\n{MARK_END}\n"
    if MARK_START not in body or MARK_END not in body:
        raise SystemExit(f"{page}: the markers {MARK_START} and {MARK_END} are missing")
    pattern = re.compile(re.escape(MARK_START) + ".*?" + re.escape(MARK_END), re.S)
    page.write_text(pattern.sub(lambda _: f"{MARK_START}\n{text}\n{MARK_END}", body))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(GROUPS), help="subset of: " + ", ".join(GROUPS))
    ap.add_argument("--print-only", action="store_true", help="print the table, leave the docs page alone")
    ap.add_argument("--docs", type=Path, default=DOCS_PAGE, help="page whose marked table is replaced")
    args = ap.parse_args(argv)
    groups = [g for g in args.only.split(",") if g]
    unknown = set(groups) - set(GROUPS)
    if unknown:
        ap.error(f"--only: unknown {sorted(unknown)}; choose from {', '.join(GROUPS)}")
    worst, failures = run(groups)
    text = render(worst, failures)
    print(text)
    if not args.print_only:
        update_docs(args.docs, text)
        print(f"\nupdated {args.docs}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
