#!/usr/bin/env python
"""specux.fft on every available backend against numpy.fft, scipy.fft and torch.fft, on the same data.

Cases (``--quick`` shrinks the batches): batched 1-D transforms over power-of-two lengths, lengths with only
small prime factors (mixed radix) and lengths with a large prime factor (Bluestein on the generated backends),
plus batched 2-D transforms; complex64 input (``fft``) and float32 input (``rfft``). Every case holds about
the same number of points so GB/s are comparable.

GB/s counts the bytes a transform must move at least once: input read plus output written. GPU backends fed
numpy arrays include the host <-> device copies; with a CUDA device and torch, the ``cuda`` backend is also
timed on resident torch tensors next to torch.fft (cuFFT) on the same tensors, which is the comparison that
matters there. Ratios are time / time of numpy: below 1 is faster than numpy.

    python bench/specux_fft.py [--quick] [--repeat 5] [--backends opencl,cpu] [--out results.json]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.fft
from _common import (
    best_of,
    command_line,
    finish_machine,
    fmt_ratio,
    fmt_seconds,
    machine,
    markdown_table,
    ratio,
    versions,
    write_json,
)

import specux
import specux.fft as sfft

POW2 = [256, 4096, 65536, 1 << 20]
SMOOTH = [360, 1000, 6000]
BLUESTEIN = [127, 1009, 4099, 100003]
TWO_D = [(256, 256), (240, 240), (127, 127)]


def _cases(quick: bool) -> list[dict[str, Any]]:
    points = 1 << (18 if quick else 21)
    cases = []
    for kind, sizes in (("pow2", POW2), ("smooth", SMOOTH), ("bluestein", BLUESTEIN)):
        for n in sizes:
            if quick and n > 1 << 16:
                continue
            cases.append({"kind": kind, "shape": (max(1, points // n), n), "axes": (-1,)})
    for shape in TWO_D:
        cases.append(
            {"kind": "2d", "shape": (max(1, points // (shape[0] * shape[1])), *shape), "axes": (-2, -1)}
        )
    return cases


def _peers(torch: Any) -> dict[str, dict[str, Callable]]:
    peers = {
        "numpy": {"fft": np.fft.fft, "rfft": np.fft.rfft, "fft2": np.fft.fft2, "rfft2": np.fft.rfft2},
        "scipy": {
            "fft": scipy.fft.fft,
            "rfft": scipy.fft.rfft,
            "fft2": scipy.fft.fft2,
            "rfft2": scipy.fft.rfft2,
        },
    }
    if torch is not None:

        def t(fn):
            return lambda a: fn(torch.from_numpy(a)).numpy()

        peers["torch-cpu"] = {
            "fft": t(torch.fft.fft),
            "rfft": t(torch.fft.rfft),
            "fft2": t(torch.fft.fft2),
            "rfft2": t(torch.fft.rfft2),
        }
    return peers


def _gbps(nbytes: int, seconds: float | None) -> float | None:
    return None if not seconds else nbytes / seconds / 1e9


def device_names(backends: list[str]) -> dict[str, str]:
    """What each device backend ran on, as its runtime names it (an OpenCL platform on a CPU is not a GPU)."""
    names = {}
    if "opencl" in backends:
        try:
            from kernelkit import opencl

            dev = opencl.default_runtime().device
            names["opencl"] = f"{dev.platform.name} / {dev.name}"
        except Exception as exc:  # a label only: the timings above already ran on it
            names["opencl"] = f"unknown ({type(exc).__name__})"
    if "cpu" in backends:
        names["cpu"] = "the host processor (specux's CPU backend)"
    return names


def table(records: list[dict[str, Any]]) -> str:
    """One row per case and transform, one column per implementation: ``time (time / numpy's)``.

    Parameters
    ----------
    records : list of dict
        The ``results`` of the JSON this script writes.

    Returns
    -------
    str
        A markdown table; the specux columns add the relative L2 error against numpy in float64.
    """
    impls = list(dict.fromkeys(k for r in records for k in r["seconds"]))
    rows = []
    for r in records:
        cells = [r["case"], r["op"], "x".join(map(str, r["shape"]))]
        for impl in impls:
            t = r["seconds"].get(impl)
            cell = "-" if t is None else f"{fmt_seconds(t)} ({fmt_ratio(r['ratio_vs_numpy'].get(impl))})"
            err = r["rel_l2_error"].get(impl)
            cells.append(cell + (f", err {err:.0e}" if err is not None else ""))
        rows.append(cells)
    return markdown_table(["case", "op", "shape", *impls], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller batches, no lengths above 65536")
    parser.add_argument("--repeat", type=int, default=5, help="timed calls per measurement (best is kept)")
    parser.add_argument(
        "--backends", default=None, help="comma-separated specux backends (default: all available)"
    )
    parser.add_argument("--out", default=None, help="write the results as JSON to this path")
    args = parser.parse_args(argv)

    where = machine()  # before the runs: its load average is the one they started under
    available = [b.name for b in specux.backends() if b.available and "fft" in b.ops]
    chosen = available if args.backends is None else [b for b in args.backends.split(",") if b]
    for name in chosen:
        if name not in available:
            reason = next(
                (b.unavailable_reason for b in specux.backends() if b.name == name), "unknown backend"
            )
            parser.error(f"backend {name!r} is not available here: {reason}")
    torch = sys.modules.get("torch")
    try:
        import torch
    except ImportError:
        torch = None
    peers = _peers(torch)
    rng = np.random.default_rng(0)
    rows, records = [], []
    for case in _cases(args.quick):
        shape, axes = case["shape"], case["axes"]
        x = rng.standard_normal(shape).astype(np.float32)
        z = (x + 1j * rng.standard_normal(shape)).astype(np.complex64)
        for op, data in (("fft", z), ("rfft", x)):
            name = op if len(axes) == 1 else op + "2"
            want = getattr(np.fft, name)(data.astype(np.complex128 if op == "fft" else np.float64))
            nbytes = data.nbytes + want.size * 8
            times: dict[str, float | None] = {}
            errors: dict[str, float] = {}
            for peer, fns in peers.items():
                times[peer] = best_of(lambda fns=fns, name=name, data=data: fns[name](data), args.repeat)[
                    "best"
                ]
            for backend in chosen:
                fn = getattr(sfft, name)
                timing = best_of(lambda fn=fn, b=backend, data=data: fn(data, backend=b), args.repeat)
                times[f"specux-{backend}"] = timing["best"]
                got = np.asarray(timing["result"], dtype=np.complex128)
                errors[f"specux-{backend}"] = float(np.linalg.norm(got - want) / np.linalg.norm(want))
            if torch is not None and torch.cuda.is_available() and "cuda" in chosen:
                dev = torch.from_numpy(data).cuda()
                tfn = getattr(torch.fft, name)

                def timed(fn, dev=dev):
                    fn(dev)
                    torch.cuda.synchronize()

                sfn = getattr(sfft, name)
                times["torch-cuda (cuFFT)"] = best_of(lambda tfn=tfn: timed(tfn), args.repeat)["best"]
                times["specux-cuda resident"] = best_of(
                    lambda sfn=sfn: timed(lambda d: sfn(d, backend="cuda")), args.repeat
                )["best"]
            base = times["numpy"]
            record = {
                "case": case["kind"],
                "op": name,
                "shape": list(shape),
                "bytes": nbytes,
                "seconds": times,
                "gbps": {k: _gbps(nbytes, v) for k, v in times.items()},
                "ratio_vs_numpy": {k: ratio(v, base) for k, v in times.items()},
                "rel_l2_error": errors,
            }
            records.append(record)
            for impl, t in times.items():
                rows.append(
                    [
                        case["kind"],
                        name,
                        "x".join(map(str, shape)),
                        impl,
                        fmt_seconds(t),
                        f"{_gbps(nbytes, t):.2f}" if t else "-",
                        fmt_ratio(ratio(t, base)),
                        f"{errors[impl]:.1e}" if impl in errors else "",
                    ]
                )
            print(
                f"{case['kind']:>9} {name:>5} {shape}: "
                + ", ".join(f"{k} {fmt_seconds(v)}" for k, v in times.items()),
                flush=True,
            )
    print()
    print(
        markdown_table(
            ["case", "op", "shape", "implementation", "time", "GB/s", "/ numpy", "rel L2 err"], rows
        )
    )
    print("\nbest wall time (time / numpy's; below 1 is faster than numpy), specux: rel. L2 error\n")
    print(table(records))
    if args.out:
        data = {"command": command_line(__file__, argv), "machine": finish_machine(where),
                "versions": versions(["specux", "numpy", "scipy", "torch", "pyopencl"]),
                "backends": chosen, "devices": device_names(chosen), "quick": args.quick,
                "repeat": args.repeat, "results": records}
        path = write_json(args.out, data)
        print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
