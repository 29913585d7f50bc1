"""Distance of specux.cqt on a device backend from the CPU backend, for every resampler the device runs.

    python scripts/dev/cqt_device_accuracy.py                    # opencl (PoCL here), the table as text
    python scripts/dev/cqt_device_accuracy.py --backend cuda --json out.json --check   # gpu_check.sh's step

For each res_type, signal (music-like: a chord of decaying partials with clicks; white noise; 3 s at
22050 Hz, float32, two rows) and configuration, it prints max |device - cpu| / max |cpu| over the whole
output, the same past the first 16 frames, and the relative L2 distance. "polyphase" and None are the CPU's
own filters on the device (float rounding); the soxr qualities are the device's filters designed to
libsoxr's specification against libsoxr itself (docs/specux/constant-q.md, "On a device"). ``--check``
exits 1 when a row misses its bound (:func:`bound`), and on cuda also runs torch CUDA tensors and cupy
arrays (where they import) against the numpy path.
"""

from __future__ import annotations

import argparse
import importlib.util
import json

import numpy as np

import specux

SR = 22050
CONFIGS = {
    "84 bins, hop 512 (defaults; no early downsampling)": dict(),
    "7 octaves x 36 bins, hop 512": dict(n_bins=252, bins_per_octave=36),
    "48 bins, hop 256 (early downsampling by 8)": dict(n_bins=48, hop_length=256),
    "72 bins x 24 per octave, hop 256 (early by 16)": dict(n_bins=72, bins_per_octave=24, hop_length=256),
}
RES_TYPES = ("soxr_hq", "soxr_vhq", "soxr_mq", "soxr_lq", "polyphase", None)


def signals(seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = 3 * SR
    t = np.arange(n) / SR
    partials = (220.0, 277.18, 329.63, 440.0, 1320.0)
    music = sum(np.sin(2 * np.pi * f * t) * np.exp(-3.0 * (t % 0.5)) for f in partials)
    music = music + 0.3 * rng.standard_normal(n) * ((t % 0.25) < 0.005)
    noise = rng.standard_normal(n)
    pairs = (("music", music), ("noise", noise))
    return {name: np.stack([y, y[::-1]]).astype(np.float32) for name, y in pairs}


def measure(backend: str) -> list[dict]:
    rows = []
    for res_type in RES_TYPES:
        if str(res_type).startswith("soxr") and importlib.util.find_spec("soxr") is None:
            print(f"{res_type}: skipped (the CPU reference needs the soxr package, not installed here)")
            continue
        for name, y in signals().items():
            for config, kw in CONFIGS.items():
                args = dict(sr=SR, res_type=res_type, **kw)
                got = specux.cqt(y, backend=backend, **args)
                want = specux.cqt(y, backend="cpu", **args)
                peak = np.abs(want).max()
                diff = np.abs(got - want)
                rows.append(
                    dict(
                        res_type=str(res_type),
                        signal=name,
                        config=config,
                        max_rel=float(diff.max() / peak),
                        max_rel_past_16=float(diff[..., 16:].max() / np.abs(want[..., 16:]).max()),
                        rel_l2=float(np.linalg.norm(got - want) / np.linalg.norm(want)),
                    )
                )
                r = rows[-1]
                print(
                    f"{r['res_type']:>9}  {name:5}  {config:52}  max {r['max_rel']:.1e}  "
                    f"past 16 frames {r['max_rel_past_16']:.1e}  L2 {r['rel_l2']:.1e}",
                    flush=True,
                )
    return rows


def bound(row: dict) -> tuple[str, float]:
    """(the measure, its bound) of a row: float32 rounding for the CPU's own filters; the goal of 1e-3
    for the designed soxr filters (2e-3 for soxr_lq), past the first 16 frames where an early downsampling
    by 4 or more brings libsoxr's start-up transient."""
    if row["res_type"] in ("polyphase", "None"):
        return "max_rel", 2e-5
    goal = 2e-3 if row["res_type"] == "soxr_lq" else 1e-3
    return (
        "max_rel" if "no early" in row["config"] or "7 octaves" in row["config"] else "max_rel_past_16"
    ), goal


def device_inputs(backend: str) -> list[str]:
    """Failures of torch CUDA tensors and cupy arrays against the numpy path (cuda only; absent ones are
    said and skipped)."""
    failures = []
    if backend != "cuda":
        return failures
    y = signals()["music"]
    args = dict(sr=SR, n_bins=84, res_type="soxr_hq", backend="cuda")
    want = specux.cqt(y, **args)
    for kind in ("torch", "cupy"):
        try:
            if kind == "torch":
                import torch

                got = specux.cqt(torch.from_numpy(y).cuda(), **args)
                ok_type, host = got.is_cuda, got.cpu().numpy()
            else:
                import cupy

                got = specux.cqt(cupy.asarray(y), **args)
                ok_type, host = type(got).__module__.startswith("cupy"), got.get()
        except ImportError as exc:
            print(f"{kind} input: skipped ({exc})")
            continue
        err = float(np.abs(host - want).max() / np.abs(want).max())
        print(f"{kind} input: result on the device {ok_type}, max rel to the numpy path {err:.1e}")
        if not ok_type or err > 1e-6:
            failures.append(kind)
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="opencl", help="device backend to compare with cpu")
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--check", action="store_true", help="exit 1 when a row misses its bound")
    args = parser.parse_args()
    rows = measure(args.backend)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if not args.check:
        return 0
    missed = [r for r in rows if r[bound(r)[0]] > bound(r)[1]]
    for r in missed:
        print(f"MISSED {r['res_type']} {r['signal']} {r['config']}: {bound(r)[0]} > {bound(r)[1]:g}")
    failures = device_inputs(args.backend)
    print(f"{len(rows) - len(missed)} of {len(rows)} rows within their bounds; failing inputs: {failures}")
    return 1 if missed or failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
