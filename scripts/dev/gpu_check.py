#!/usr/bin/env python
"""The steps of scripts/dev/gpu_check.sh: ``env``, ``conformance`` and ``timing`` (each writes JSON to --out).

- ``env``: versions, ``specux.backends()``; fails when the ``cuda`` backend is unavailable (with its reason).
- ``conformance``: ``specux.fft.*`` with ``backend="cuda"`` against numpy in float64 on the same data: sizes
  1..128, powers of two to 2**20, primes to 100003, products of small primes; numpy inputs in float32,
  float64 and float16 (rfft), torch CUDA tensors (complex64, complex128, complex32) and cupy arrays, checking
  that results stay in the caller's library and device. Relative L2 bounds: 1e-5 (float32), 1e-12 (float64),
  2e-3 (half output).
- ``autograd``: the FFT family's torch ops on CUDA tensors (their CUDA kernels): forward and gradients of a
  few losses against the same losses on CPU tensors (relative error 1e-4 in float32, 1e-10 in float64), and
  one ``torch.compile(fullgraph=True)`` step.
- ``timing``: batched 1-D and 2-D transforms on resident torch tensors, specux cuda vs torch.fft (cuFFT),
  timed with CUDA events; ratios specux / cuFFT (below 1: specux faster).
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
            print(
                f"{kind:>9} {name:>5} {shape}: specux {t_specux * 1e3:.3f} ms, cuFFT {t_cufft * 1e3:.3f} ms, "
                f"ratio {row['ratio_specux_over_cufft']:.2f}",
                flush=True,
            )
    _write(out, "timing.json", rows)
    return 0


def step_autograd(out: Path) -> int:
    import torch

    import specux

    losses = {
        "rfft": lambda x: specux.fft.rfft(x, norm="ortho").abs().sum(),
        "fft": lambda x: specux.fft.fft(x, n=1000).abs().pow(2).mean(),
        "irfft": lambda x: specux.fft.irfft(specux.fft.rfft(x) * 0.5, n=3999).pow(2).sum(),
        "rfft2": lambda x: specux.fft.rfft2(x.reshape(2, 40, 100)).abs().sum(),
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
    try:
        fn = torch.compile(lambda x: specux.fft.rfft(x).abs().sum(), fullgraph=True, backend="aot_eager")
        x = torch.randn(4, 256, device="cuda", requires_grad=True)
        fn(x).backward()
        rows.append({"compile_fullgraph": "ok", "grad_device": str(x.grad.device)})
    except Exception:
        failed += 1
        rows.append({"compile_fullgraph": traceback.format_exc(limit=3)})
    print(rows[-1], flush=True)
    _write(out, "autograd.json", rows)
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("step", choices=["env", "conformance", "autograd", "timing"])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    steps = {
        "env": step_env,
        "conformance": step_conformance,
        "autograd": step_autograd,
        "timing": step_timing,
    }
    return steps[args.step](out)


if __name__ == "__main__":
    raise SystemExit(main())
