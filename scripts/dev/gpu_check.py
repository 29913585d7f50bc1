#!/usr/bin/env python
"""The steps of scripts/dev/gpu_check.sh: ``env``, ``conformance``, ``autograd``, ``timing``, ``ops`` and
``bench`` (each writes JSON to --out).

- ``env``: versions, ``specux.backends()``; fails when the ``cuda`` backend is unavailable (with its reason).
- ``conformance``: ``specux.fft.*`` with ``backend="cuda"`` against numpy in float64 on the same data: sizes
  1..128, powers of two to 2**20, primes to 100003, products of small primes; numpy inputs in float32,
  float64 and float16 (rfft), torch CUDA tensors (complex64, complex128, complex32) and cupy arrays, checking
  that results stay in the caller's library and device. Relative L2 bounds: 1e-5 (float32), 1e-12 (float64),
  2e-3 (half output).
- ``autograd``: the FFT family's torch ops and the device ops (stft, istft, mel, mfcc, lfcc, cqt,
  chroma_stft, chroma_cqt, icqt, fftconvolve) on CUDA tensors (their CUDA kernels): forward and gradients of
  a few losses against the same losses on CPU tensors (relative error 1e-4 in float32, 1e-10 in float64),
  and one ``torch.compile(fullgraph=True)`` step.
- ``timing``: batched 1-D and 2-D transforms on resident torch tensors, specux cuda vs torch.fft (cuFFT),
  timed with CUDA events; ratios specux / cuFFT (below 1: specux faster).
- ``ops``: the generated ops (stft in all output modes, istft, melspectrogram, mfcc, lfcc, chroma_stft,
  fftconvolve, and with res_type="polyphase" cqt, vqt, chroma_cqt, icqt, griffinlim_cqt;
  1-D, batched, leading axes, non-contiguous) with ``backend=--backend`` against ``backend="cpu"``
  on the same data, at the bounds of specux/tests/conftest.py: numpy inputs in float32, float64 and float16
  storage (the CPU computes the same half values widened to float32), then cupy arrays and torch CUDA tensors,
  which count as failures only when accepted and wrong (rejections are reported, with the reason). One log
  line per case; ops.json.
- ``bench``: ``bench/specux_gpu.py --backend <backend> --quick --out <out>/specux_gpu.json``.

``--backend opencl`` (or ``SPECUX_GPU_CHECK_BACKEND=opencl``) runs the ops and bench steps on PoCL, so their
code runs before it meets a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

TOL = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3}


def _write(out: Path, name: str, data) -> None:
    tmp = out / (name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    os.replace(tmp, out / name)


def step_env(out: Path) -> int:
    import specux

    info = {"python": sys.version, "numpy": np.__version__}
    for mod in ("torch", "cupy", "cuda.bindings", "scipy"):
        try:
            m = __import__(mod, fromlist=["_"])
            info[mod] = getattr(m, "__version__", "present")
        except Exception as exc:
            info[mod] = f"missing: {exc}"
    rows = [vars(b) for b in specux.backends()]
    info["backends"] = rows
    try:
        import kernelkit
        from kernelkit import cuda as rt

        info["kernelkit_devices"] = [vars(d) for d in kernelkit.devices()]
        info["nvrtc"] = rt.nvrtc_version()
        info["nvrtc_probe"] = {arch: rt.nvrtc_probe(arch) for arch in ("sm_80", "sm_90", "sm_100")}
        r = rt.runtime(0)
        info["device"] = {"name": r.device_name, "arch": r.sm}
    except Exception as exc:
        info["cuda_runtime_error"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(info, indent=2, default=str))
    _write(out, "env.json", info)
    cuda = next(b for b in specux.backends() if b.name == "cuda")
    return 0 if cuda.available else 1


def _l2(got, want) -> float:
    got = np.asarray(got, dtype=np.complex128)
    want = np.asarray(want, dtype=np.complex128)
    scale = np.linalg.norm(want)
    return float(np.linalg.norm(got - want) / scale) if scale > 0 else float(np.linalg.norm(got))


def step_conformance(out: Path) -> int:
    import specux.fft as sf

    rng = np.random.default_rng(7)
    sizes = (
        list(range(1, 129))
        + [2**k for k in range(8, 21)]
        + [131, 509, 4099, 65537, 100003]
        + [360, 1000, 2310, 3003, 6000, 30030, 194481]
    )
    results, failures = [], []
    t0 = time.time()

    def record(what, n, dtype, err):
        ok = err <= TOL[dtype]
        results.append({"what": what, "n": n, "dtype": dtype, "rel_l2": err, "ok": ok})
        if not ok:
            failures.append(results[-1])
            print(f"FAIL {what} n={n} {dtype}: {err:.2e}", flush=True)

    for dtype in ("float32", "float64"):
        for n in sizes:
            batch = max(1, min(8, 2**16 // n))
            x = rng.standard_normal((batch, n)).astype(dtype)
            z = (x + 1j * rng.standard_normal((batch, n))).astype(np.result_type(dtype, np.complex64))
            wide_x, wide_z = x.astype(np.float64), z.astype(np.complex128)
            try:
                record("fft", n, dtype, _l2(sf.fft(z, backend="cuda"), np.fft.fft(wide_z)))
                record(
                    "ifft",
                    n,
                    dtype,
                    _l2(sf.ifft(z, backend="cuda", norm="ortho"), np.fft.ifft(wide_z, norm="ortho")),
                )
                record("rfft", n, dtype, _l2(sf.rfft(x, backend="cuda"), np.fft.rfft(wide_x)))
                h = np.fft.rfft(wide_x).astype(z.dtype)
                record(
                    "irfft",
                    n,
                    dtype,
                    _l2(sf.irfft(h, n, backend="cuda"), np.fft.irfft(h.astype(np.complex128), n)),
                )
            except Exception as exc:
                failures.append({"what": "exception", "n": n, "dtype": dtype, "error": repr(exc)})
                traceback.print_exc()
        print(
            f"numpy {dtype}: {len(results)} checks, {len(failures)} failures, {time.time() - t0:.1f} s",
            flush=True,
        )
        # what ran so far survives the step's time limit
        _write(out, "conformance.json", {"partial": True, "failures": failures, "results": results})
    for n in (16, 60, 17, 5000, 100003):
        x = rng.standard_normal((2, n)).astype(np.float16)
        record(
            "rfft-half-in", n, "float32", _l2(sf.rfft(x, backend="cuda"), np.fft.rfft(x.astype(np.float64)))
        )
    try:
        import torch

        for n in (64, 60, 17, 4096, 2**20, 100003):
            for tdt, name in ((torch.complex64, "float32"), (torch.complex128, "float64")):
                zt = torch.randn(3, n, dtype=tdt, device="cuda")
                got = sf.fft(zt, backend="auto")
                assert got.is_cuda and got.dtype == tdt, (got.device, got.dtype)
                record(
                    "torch-fft",
                    n,
                    name,
                    _l2(got.cpu().numpy(), np.fft.fft(zt.cpu().numpy().astype(np.complex128))),
                )
            zh = torch.randn(3, n, dtype=torch.complex64, device="cuda").to(torch.complex32)
            got = sf.fft(zh, backend="cuda")
            assert got.dtype == torch.complex32 and got.is_cuda
            ref = np.fft.fft(zh.to(torch.complex64).cpu().numpy().astype(np.complex128))
            record("torch-fft-complex32", n, "float16", _l2(got.to(torch.complex64).cpu().numpy(), ref))
            xt = torch.randn(2, 5, n, device="cuda")
            got = sf.irfft(sf.rfft(xt, axis=1), n=5, axis=1)
            assert got.is_cuda
            record("torch-rfft-irfft-axis1", n, "float32", _l2(got.cpu().numpy(), xt.cpu().numpy()))
    except ImportError as exc:
        print(f"torch not available: {exc}")
    except Exception as exc:
        failures.append({"what": "torch", "error": repr(exc)})
        traceback.print_exc()
    try:
        import cupy as cp

        for n in (64, 60, 17, 4096, 100003):
            zc = (cp.random.standard_normal((3, n)) + 1j * cp.random.standard_normal((3, n))).astype(
                cp.complex64
            )
            got = sf.fft(zc)
            assert isinstance(got, cp.ndarray)
            record(
                "cupy-fft",
                n,
                "float32",
                _l2(cp.asnumpy(got), np.fft.fft(cp.asnumpy(zc).astype(np.complex128))),
            )
    except ImportError as exc:
        print(f"cupy not available: {exc}")
    except Exception as exc:
        failures.append({"what": "cupy", "error": repr(exc)})
        traceback.print_exc()
    summary = {
        "checks": len(results),
        "failures": failures,
        "seconds": time.time() - t0,
        "worst": max(results, key=lambda r: r["rel_l2"] / TOL[r["dtype"]]) if results else None,
    }
    print(json.dumps(summary, indent=2, default=str))
    _write(out, "conformance.json", {"summary": summary, "results": results})
    return 0 if not failures else 1


def step_timing(out: Path) -> int:
    import torch

    import specux.fft as sf

    cases = [
        ("pow2", (2048, 1024)),
        ("pow2", (512, 4096)),
        ("pow2", (32, 65536)),
        ("pow2", (2, 2**20)),
        ("smooth", (2048, 1000)),
        ("smooth", (256, 6000)),
        ("bluestein", (2048, 1009)),
        ("bluestein", (512, 4099)),
        ("bluestein", (16, 100003)),
        ("2d", (64, 256, 256)),
        ("2d", (64, 240, 240)),
    ]
    rows = []

    def timed(fn, repeat=20):
        fn()
        torch.cuda.synchronize()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        best = float("inf")
        for _ in range(repeat):
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            best = min(best, start.elapsed_time(stop) / 1e3)
        return best

    for kind, shape in cases:
        z = torch.randn(*shape, dtype=torch.complex64, device="cuda")
        x = torch.randn(*shape, device="cuda")
        ops = (
            [("fft2", z, torch.fft.fft2, sf.fft2), ("rfft2", x, torch.fft.rfft2, sf.rfft2)]
            if kind == "2d"
            else [("fft", z, torch.fft.fft, sf.fft), ("rfft", x, torch.fft.rfft, sf.rfft)]
        )
        for name, data, tfn, sfn in ops:
            t_cufft = timed(lambda tfn=tfn, data=data: tfn(data))
            t_specux = timed(lambda sfn=sfn, data=data: sfn(data, backend="cuda"))
            nbytes = data.numel() * data.element_size() * 2
            row = {
                "case": kind,
                "op": name,
                "shape": list(shape),
                "cufft_s": t_cufft,
                "specux_s": t_specux,
                "ratio_specux_over_cufft": t_specux / t_cufft,
                "specux_gbps": nbytes / t_specux / 1e9,
                "cufft_gbps": nbytes / t_cufft / 1e9,
            }
            rows.append(row)
            _write(out, "timing.json", rows)  # what ran so far survives the step's time limit
            print(
                f"{kind:>9} {name:>5} {shape}: specux {t_specux * 1e3:.3f} ms, cuFFT {t_cufft * 1e3:.3f} ms, "
                f"ratio {row['ratio_specux_over_cufft']:.2f}",
                flush=True,
            )
    _write(out, "timing.json", rows)
    return 0


def _mel_module(device):
    import specux.torch as st

    return st.MelSpectrogram(sr=16000, n_fft=512, n_mels=40).to(device)


def step_autograd(out: Path) -> int:
    import torch

    import specux

    losses = {
        "rfft": lambda x: specux.fft.rfft(x, norm="ortho").abs().sum(),
        "fft": lambda x: specux.fft.fft(x, n=1000).abs().pow(2).mean(),
        "irfft": lambda x: specux.fft.irfft(specux.fft.rfft(x) * 0.5, n=3999).pow(2).sum(),
        "rfft2": lambda x: specux.fft.rfft2(x.reshape(2, 40, 100)).abs().sum(),
        # the device ops (specux.torch._device_op) on CUDA tensors: forward kernels, adjoint kernels, in place
        "stft": lambda x: specux.stft(x, n_fft=512, hop_length=128).abs().pow(2).sum(),
        "stft_magnitude": lambda x: specux.stft(x, n_fft=400, hop_length=100, output="magnitude").sum(),
        "istft": lambda x: specux.istft(specux.stft(x, n_fft=256, hop_length=64), hop_length=64).pow(2).sum(),
        "melspectrogram": lambda x: specux.melspectrogram(x, sr=16000, n_fft=512, n_mels=40).log1p().sum(),
        "mfcc": lambda x: specux.mfcc(x, sr=16000, n_fft=512, n_mels=40).sum(),
        "lfcc": lambda x: specux.lfcc(x, sample_rate=16000).sum(),
        "cqt": lambda x: specux.cqt(x, sr=16000, fmin=110.0, n_bins=24, res_type=None).abs().sum(),
        # responses from the signal through the device cqt, back through the device icqt (its adjoint kernels)
        "icqt": lambda x: specux.icqt(
            specux.cqt(x, sr=16000, fmin=110.0, n_bins=36, res_type="polyphase"),
            sr=16000, fmin=110.0, res_type="polyphase", length=4000,
        ).pow(2).sum(),
        # chroma: tuning=None estimates the tuning from the device's power spectrogram (downloaded)
        "chroma_stft": lambda x: specux.chroma_stft(x, sr=16000, n_fft=512, norm=2).pow(2).sum(),
        "chroma_cqt": lambda x: specux.chroma_cqt(
            x, sr=16000, hop_length=128, fmin=110.0, n_octaves=2, tuning=0.0, threshold=0.01,
            res_type="polyphase",
        ).pow(2).sum(),
        "fftconvolve": lambda x: specux.fftconvolve(x, x[..., :64], mode="same", axes=-1).pow(2).sum(),
        # a module's buffers follow .to(device) and are the device op's constants
        "MelSpectrogram": lambda x: _mel_module(x.device)(x).log1p().sum(),
    }
    rows, failed = [], 0
    for dtype, tol in ((torch.float32, 1e-4), (torch.float64, 1e-10)):
        base = torch.randn(2, 4000, dtype=dtype, generator=torch.Generator().manual_seed(0))
        for name, loss in losses.items():
            try:
                xc = base.clone().requires_grad_()
                lc = loss(xc)
                lc.backward()
                xg = base.cuda().requires_grad_()
                lg = loss(xg)
                lg.backward()
                err_f = abs(lg.item() - lc.item()) / abs(lc.item())
                err_g = ((xg.grad.cpu() - xc.grad).norm() / xc.grad.norm()).item()
                ok = err_f < tol and err_g < tol and xg.grad.device.type == "cuda"
                rows.append({"loss": name, "dtype": str(dtype), "forward": err_f, "grad": err_g, "ok": ok})
            except Exception:
                ok = False
                rows.append({"loss": name, "dtype": str(dtype), "error": traceback.format_exc(limit=3)})
            failed += not ok
            print(rows[-1], flush=True)
    compiled = {
        "rfft": lambda x: specux.fft.rfft(x).abs().sum(),
        "melspectrogram": lambda x: specux.melspectrogram(x, sr=16000, n_fft=512, n_mels=40).sum(),
    }
    for name, loss in compiled.items():
        try:
            fn = torch.compile(loss, fullgraph=True, backend="aot_eager")
            x = torch.randn(4, 4096, device="cuda", requires_grad=True)
            fn(x).backward()
            rows.append({"compile_fullgraph": name, "grad_device": str(x.grad.device)})
        except Exception:
            failed += 1
            rows.append({"compile_fullgraph": name, "error": traceback.format_exc(limit=3)})
        print(rows[-1], flush=True)
    # the device adjoints gather (no atomics): two backward passes must agree bit for bit
    try:
        grads = []
        for _ in range(2):
            x = torch.sin(torch.arange(16000, device="cuda") * 0.01).repeat(8, 1).requires_grad_()
            specux.melspectrogram(x, sr=16000, n_fft=512, hop_length=160, n_mels=80).log1p().sum().backward()
            grads.append(x.grad)
        same = bool(torch.equal(grads[0], grads[1]))
        rows.append({"deterministic_backward": same})
        failed += not same
    except Exception:
        failed += 1
        rows.append({"deterministic_backward": traceback.format_exc(limit=3)})
    print(rows[-1], flush=True)
    _write(out, "autograd.json", rows)
    return 1 if failed else 0


#: relative error (max |a - b| / max |b|) allowed per (operation, real precision) in the ``ops`` step: the
#: values of specux/tests/conftest.py's table (not imported: pytest need not be on a lent machine); float16
#: storage is checked against the CPU on the same half values widened to float32, at float32's bound
OPS_TOL = {
    ("stft", "float32"): 1e-5, ("stft", "float64"): 1e-12,
    ("istft", "float32"): 1e-5, ("istft", "float64"): 1e-11,
    ("melspectrogram", "float32"): 1e-5, ("melspectrogram", "float64"): 1e-10,
    ("mfcc", "float32"): 1e-4, ("mfcc", "float64"): 1e-9,
    ("lfcc", "float32"): 1e-4, ("lfcc", "float64"): 1e-9,
    ("fftconvolve", "float32"): 1e-5, ("fftconvolve", "float64"): 1e-12,
    ("chroma_stft", "float32"): 1e-5, ("chroma_stft", "float64"): 1e-10,
    # the constant-Q family with res_type="polyphase" (the resampler the device computes as the CPU does;
    # the soxr qualities are the cqt step's, scripts/dev/cqt_device_accuracy.py)
    ("cqt", "float32"): 2e-5, ("cqt", "float64"): 1e-12,
    ("vqt", "float32"): 2e-5, ("vqt", "float64"): 1e-12,
    ("chroma_cqt", "float32"): 2e-5, ("chroma_cqt", "float64"): 1e-12,
    ("icqt", "float32"): 2e-6, ("icqt", "float64"): 1e-12,
    ("griffinlim_cqt", "float32"): 1e-4, ("griffinlim_cqt", "float64"): 1e-12,
    # the dB conversions at the features' bound (test_db_device_route.py)
    ("power_to_db", "float32"): 1e-5, ("power_to_db", "float64"): 1e-10,
    ("amplitude_to_db", "float32"): 1e-5, ("amplitude_to_db", "float64"): 1e-10,
}


def _max_rel(got, want) -> float:
    """max |got - want| / max |want| (conftest's rel_err without its asserts: a mismatch is reported)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return float("inf")
    if not np.array_equal(np.isnan(got), np.isnan(want)):
        return float("inf")
    got, want = np.nan_to_num(got), np.nan_to_num(want)
    scale = float(np.abs(want).max()) if want.size else 0.0
    diff = float(np.abs(got.astype(np.complex128) - want.astype(np.complex128)).max()) if want.size else 0.0
    return diff / scale if scale > 0 else diff


def _ops_cases(rng) -> list[dict]:
    """Every generated operation in several shapes and options: each a callable of (arrays, backend)."""
    import specux

    def sig(*shape):
        return rng.standard_normal(shape)

    spec = specux.stft(sig(3, 16000), n_fft=512, hop_length=160, backend="cpu")
    C = specux.cqt(sig(2, 44100), sr=22050, tuning=0.0, res_type="polyphase", backend="cpu")
    spec_odd = specux.stft(sig(2, 6000), n_fft=400, hop_length=100, win_length=320, backend="cpu")
    cases = [
        ("stft", "n_fft=512 hop=160 complex", (sig(3, 16000),),
         lambda a, b: specux.stft(a[0], n_fft=512, hop_length=160, backend=b)),
        ("stft", "n_fft=400 win=320 magnitude", (sig(2, 8000),),
         lambda a, b: specux.stft(a[0], n_fft=400, hop_length=100, win_length=320, output="magnitude",
                                  backend=b)),
        ("stft", "n_fft=1024 power center=False 1-D", (sig(16000),),
         lambda a, b: specux.stft(a[0], n_fft=1024, hop_length=256, center=False, output="power", backend=b)),
        ("stft", "n_fft=192 reflect, leading axes (2, 3)", (sig(2, 3, 3000),),
         lambda a, b: specux.stft(a[0], n_fft=192, hop_length=48, pad_mode="reflect", backend=b)),
        ("stft", "n_fft=256 non-contiguous", (sig(4, 9000)[:, ::2],),
         lambda a, b: specux.stft(a[0], n_fft=256, hop_length=64, backend=b)),
        ("istft", "n_fft=512 hop=160 length", (spec,),
         lambda a, b: specux.istft(a[0], hop_length=160, n_fft=512, length=16000, backend=b)),
        ("istft", "n_fft=400 win=320", (spec_odd,),
         lambda a, b: specux.istft(a[0], hop_length=100, n_fft=400, win_length=320, backend=b)),
        ("melspectrogram", "16 kHz n_fft=512 hop=160 80 mels", (sig(3, 16000),),
         lambda a, b: specux.melspectrogram(a[0], sr=16000, n_fft=512, hop_length=160, n_mels=80, backend=b)),
        ("melspectrogram", "22.05 kHz defaults 1-D", (sig(44100),),
         lambda a, b: specux.melspectrogram(a[0], sr=22050, backend=b)),
        ("melspectrogram", "n_fft=400 power=1 htk", (sig(2, 8000),),
         lambda a, b: specux.melspectrogram(a[0], sr=16000, n_fft=400, hop_length=160, n_mels=64, power=1.0,
                                            htk=True, backend=b)),
        ("mfcc", "16 kHz 20 coefficients 40 mels", (sig(3, 16000),),
         lambda a, b: specux.mfcc(a[0], sr=16000, n_mfcc=20, n_fft=512, hop_length=160, n_mels=40,
                                  backend=b)),
        ("mfcc", "22.05 kHz defaults 1-D", (sig(44100),),
         lambda a, b: specux.mfcc(a[0], sr=22050, backend=b)),
        ("lfcc", "defaults", (sig(3, 16000),), lambda a, b: specux.lfcc(a[0], backend=b)),
        ("lfcc", "log_lf n_fft=512", (sig(2, 8000),),
         lambda a, b: specux.lfcc(a[0], n_fft=512, hop_length=160, log_lf=True, backend=b)),
        ("chroma_stft", "22.05 kHz n_fft=2048 tuning given", (sig(2, 44100),),
         lambda a, b: specux.chroma_stft(a[0], sr=22050, tuning=0.0, backend=b)),
        ("chroma_stft", "16 kHz n_fft=512 tuning estimated, norm 2", (sig(3, 16000),),
         lambda a, b: specux.chroma_stft(a[0], sr=16000, n_fft=512, hop_length=160, norm=2, backend=b)),
        ("fftconvolve", "1-D full, broadcast filter", (sig(3, 5000), sig(1, 64)),
         lambda a, b: specux.fftconvolve(a[0], a[1], mode="full", backend=b)),
        ("fftconvolve", "1-D same", (sig(4000), sig(301)),
         lambda a, b: specux.fftconvolve(a[0], a[1], mode="same", backend=b)),
        ("fftconvolve", "1-D valid long (overlap-save)", (sig(200000), sig(513)),
         lambda a, b: specux.fftconvolve(a[0], a[1], mode="valid", backend=b)),
        ("fftconvolve", "2-D same axes (-2, -1)", (sig(2, 64, 64), sig(1, 9, 9)),
         lambda a, b: specux.fftconvolve(a[0], a[1], mode="same", axes=(-2, -1), backend=b)),
        ("cqt", "22.05 kHz 84 bins polyphase", (sig(2, 44100),),
         lambda a, b: specux.cqt(a[0], sr=22050, tuning=0.0, res_type="polyphase", backend=b)),
        ("vqt", "16 kHz 7 x 36 bins gamma 5 polyphase", (sig(2, 32000),),
         lambda a, b: specux.vqt(a[0], sr=16000, n_bins=252, bins_per_octave=36, gamma=5.0, tuning=0.0,
                                 res_type="polyphase", backend=b)),
        ("chroma_cqt", "22.05 kHz polyphase", (sig(2, 44100),),
         lambda a, b: specux.chroma_cqt(y=a[0], sr=22050, tuning=0.0, res_type="polyphase", backend=b)),
        ("icqt", "22.05 kHz 84 bins polyphase", (C,),
         lambda a, b: specux.icqt(a[0], sr=22050, res_type="polyphase", backend=b)),
        ("griffinlim_cqt", "22.05 kHz 84 bins polyphase, 4 iterations", (np.abs(C),),
         lambda a, b: specux.griffinlim_cqt(a[0], sr=22050, n_iter=4, res_type="polyphase", random_state=0,
                                            backend=b)),
        ("power_to_db", "ref=np.max top_db=80 (a power spectrogram)", (np.abs(spec) ** 2,),
         lambda a, b: specux.power_to_db(a[0], ref=np.max, backend=b)),
        ("amplitude_to_db", "ref=1 top_db=None", (np.abs(spec_odd),),
         lambda a, b: specux.amplitude_to_db(a[0], top_db=None, backend=b)),
    ]
    return [{"op": op, "what": what, "arrays": arrays, "call": call} for op, what, arrays, call in cases]


def _input_kinds(backend: str) -> list[tuple[str, object, object]]:
    """(name, to-device conversion, type check) of the device input kinds to try besides numpy on
    ``backend``: cupy arrays and torch CUDA tensors on cuda; none elsewhere (numpy only)."""
    kinds = []
    if backend != "cuda":
        return kinds
    try:
        import cupy as cp

        cp.cuda.runtime.getDeviceCount()
        kinds.append(("cupy", cp.asarray, lambda r: isinstance(r, cp.ndarray)))
    except Exception as exc:
        print(f"cupy inputs not tried: {type(exc).__name__}: {exc}", flush=True)
    try:
        import torch

        if torch.cuda.is_available():
            kinds.append(("torch", lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda(),
                          lambda r: isinstance(r, torch.Tensor) and r.is_cuda))
        else:
            print("torch inputs not tried: torch.cuda.is_available() is False", flush=True)
    except ImportError as exc:
        print(f"torch inputs not tried: {exc}", flush=True)
    return kinds


def _host(r) -> np.ndarray:
    if hasattr(r, "detach"):
        return r.detach().cpu().numpy()
    if hasattr(r, "get") and type(r).__module__.startswith("cupy"):
        return r.get()
    return np.asarray(r)


def step_ops(out: Path, backend: str = "cuda") -> int:
    """Every generated operation on ``backend`` against ``backend="cpu"``: numpy inputs in float32, float64
    and float16 storage (the CPU computes the same half values widened to float32, at float32's bound), and
    cupy / torch CUDA inputs where the backend accepts them (reported either way). One log line per case;
    ops.json holds them all."""
    import specux

    info = next(b for b in specux.backends() if b.name == backend)
    if not info.available:
        print(f"backend {backend} unavailable: {info.unavailable_reason}", flush=True)
        _write(out, "ops.json", {"backend": backend, "unavailable": info.unavailable_reason})
        return 1
    generated = ("stft", "istft", "melspectrogram", "mfcc", "lfcc", "chroma_stft", "fftconvolve", "cqt",
                 "vqt", "chroma_cqt", "icqt", "griffinlim_cqt", "power_to_db", "amplitude_to_db")
    missing = [op for op in generated if op not in info.ops]
    print(f"backend {backend} serves {', '.join(info.ops)}; not served: {', '.join(missing) or 'none'}",
          flush=True)
    rng = np.random.default_rng(11)
    kinds = _input_kinds(backend)
    results, accepted = [], {}
    t0 = time.time()

    def log(row):
        results.append(row)
        err = row.get("rel_err")
        detail = f"{err:.1e} <= {row['tol']:.0e}" if err is not None else row.get("reason", "")
        print(f"{row['status']:8s} {row['op']:14s} {row['what']:40s} {row['dtype']:7s} {row['input']:6s} "
              f"{detail}", flush=True)

    for case in _ops_cases(rng):
        op = case["op"]
        if op in missing:
            log({**_row(case, "-", "-"), "status": "missing", "reason": f"{backend} does not serve {op}"})
            continue
        for dtype in ("float32", "float64", "float16"):
            arrays = tuple(_as_dtype(a, dtype) for a in case["arrays"])
            ref_dtype = "float32" if dtype == "float16" else dtype
            if any(a is None for a in arrays):
                log({**_row(case, dtype, "numpy"), "status": "n/a", "reason": "numpy has no complex half"})
                continue
            try:
                want = case["call"](tuple(_widen(a) for a in arrays), "cpu")
            except Exception as exc:
                log({**_row(case, dtype, "numpy"), "status": "FAIL", "reason": f"cpu reference: {exc!r}"})
                continue
            tol = OPS_TOL[(op, ref_dtype)]
            numpy_kind = ("numpy", np.asarray, lambda r: isinstance(r, np.ndarray))
            for kind, convert, is_kind in [numpy_kind, *kinds]:
                row = {**_row(case, dtype, kind), "tol": tol}
                # refusals: TypeError, ValueError (UnsupportedOperationError is one), NotImplementedError
                try:
                    got = case["call"](tuple(convert(a) for a in arrays), backend)
                except (TypeError, ValueError, NotImplementedError) as exc:
                    if kind == "numpy" and dtype != "float16":
                        log({**row, "status": "FAIL", "reason": f"{type(exc).__name__}: {exc}"})
                    else:  # a device kind or half storage this backend does not take: reported, not failed
                        log({**row, "status": "rejected", "reason": f"{type(exc).__name__}: {exc}"[:200]})
                        accepted.setdefault(f"{kind} {dtype}", {})[f"{op} {case['what']}"] = False
                    continue
                except Exception as exc:
                    traceback.print_exc()
                    log({**row, "status": "FAIL", "reason": f"{type(exc).__name__}: {exc}"})
                    continue
                accepted.setdefault(f"{kind} {dtype}", {})[f"{op} {case['what']}"] = True
                host = _host(got)
                err = _max_rel(host, want)
                dtype_ok = host.dtype == np.asarray(want).dtype
                ok = is_kind(got) and dtype_ok and err <= tol
                row.update(rel_err=err, out_dtype=str(host.dtype), same_library=bool(is_kind(got)))
                if not ok:
                    row["reason"] = (f"rel_err {err:.2e}, dtype {host.dtype} "
                                     f"(want {np.asarray(want).dtype}), same library {is_kind(got)}")
                log({**row, "status": "ok" if ok else "FAIL"})
        _write(out, "ops.json", {"backend": backend, "results": results, "partial": True})
    failures = [r for r in results if r["status"] == "FAIL"]
    summary = {
        "backend": backend,
        "cases": len(results),
        "ok": sum(r["status"] == "ok" for r in results),
        "failures": len(failures),
        "rejected": sum(r["status"] == "rejected" for r in results),
        "accepted_inputs": {k: f"{sum(v.values())}/{len(v)} accepted" for k, v in accepted.items()},
        "seconds": time.time() - t0,
    }
    print(json.dumps(summary, indent=2), flush=True)
    _write(out, "ops.json", {"summary": summary, "results": results})
    return 1 if failures else 0


def _row(case: dict, dtype: str, kind: str) -> dict:
    shapes = " * ".join("x".join(map(str, a.shape)) for a in case["arrays"])
    return {"op": case["op"], "what": case["what"], "shapes": shapes, "dtype": dtype, "input": kind}


def _as_dtype(a: np.ndarray, dtype: str):
    """``a`` stored in ``dtype`` (complex stays complex of that precision; None for complex half), keeping
    the non-contiguous layout of a strided view."""
    if np.iscomplexobj(a):
        if dtype == "float16":
            return None
        target = np.complex64 if dtype == "float32" else np.complex128
    else:
        target = np.dtype(dtype)
    if a.flags.c_contiguous:
        return a.astype(target)
    base = np.empty((*a.shape[:-1], 2 * a.shape[-1]), target)  # the same stride pattern, new dtype
    view = base[..., ::2]
    view[...] = a
    return view


def _widen(a: np.ndarray) -> np.ndarray:
    """The CPU reference's input: half storage widened to float32 (the same values)."""
    return a.astype(np.float32) if a.dtype == np.float16 else a


def step_bench(out: Path, backend: str = "cuda") -> int:
    """bench/specux_gpu.py --quick on ``backend``, its JSON next to the other results."""
    import subprocess

    script = Path(__file__).resolve().parents[2] / "bench" / "specux_gpu.py"
    cmd = [sys.executable, str(script), "--backend", backend, "--quick",
           "--out", str(out / "specux_gpu.json")]
    print(" ".join(cmd), flush=True)
    return subprocess.call(cmd)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("step", choices=["env", "conformance", "autograd", "timing", "ops", "bench"])
    parser.add_argument("--out", required=True)
    parser.add_argument(
        "--backend",
        default=os.environ.get("SPECUX_GPU_CHECK_BACKEND", "cuda"),
        choices=["cuda", "opencl", "metal"],
        help="device backend of the ops and bench steps (default cuda, or $SPECUX_GPU_CHECK_BACKEND): "
        "opencl runs them on PoCL, to try the code before it meets a GPU",
    )
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    steps = {
        "env": step_env,
        "conformance": step_conformance,
        "autograd": step_autograd,
        "timing": step_timing,
    }
    if args.step in ("ops", "bench"):
        return {"ops": step_ops, "bench": step_bench}[args.step](out, args.backend)
    return steps[args.step](out)


if __name__ == "__main__":
    raise SystemExit(main())
