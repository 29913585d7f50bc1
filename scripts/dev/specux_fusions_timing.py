"""Time specux's device fusions on one backend, before / after, interleaved (docs/specux/gpu.md, "Fusions").

Runs the exec functions on device-resident inputs, synchronised around each call, toggling the module flags
that keep the unfused routes: ``feature_exec.FUSED`` (the bank reading the stft's complex spectrum; also the
changed stage alone: complex spectrum to mel bands) and ``spectral_exec.FRAMES_TRANSPOSED`` (istft's frames
laid out (B, T, n_fft)). 16 x 160,000 float32, n_fft 512, hop 160, 80 mels. Prints medians and minima; the
machine may be shared, so only interleaved medians mean anything.

    python scripts/dev/specux_fusions_timing.py [--backend opencl] [--runs 9]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import specux
from specux._backends import generated
from specux._runtime import device_array as da
from specux._runtime import feature_exec as fx
from specux._runtime import spectral_exec as sx


def _captured(call):
    """(runtime, params) of the generated op that ``call()`` runs."""
    seen = {}
    real = generated.host_call

    def capture(rt, op, x, params):
        seen.update(rt=rt, p=params)
        return real(rt, op, x, params)

    generated.host_call = capture
    try:
        call()
    finally:
        generated.host_call = real
    return seen["rt"], seen["p"]


def _interleaved(runs, variants):
    times = {name: [] for name in variants}
    for _ in range(runs):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    for name, ts in times.items():
        print(f"  {name}: median {statistics.median(ts) * 1e3:.1f} ms, min {min(ts) * 1e3:.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="opencl")
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    y = np.random.default_rng(0).standard_normal((16, 160_000)).astype(np.float32)
    kw = dict(sr=16000, n_fft=512, hop_length=160, n_mels=80, backend=args.backend)
    rt, p = _captured(lambda: specux.melspectrogram(y=y, **kw))
    x = da.upload(rt, y)

    def mel(fused):
        def run():
            fx.FUSED = fused
            fx.melspectrogram(rt, (x,), p)
            rt.synchronize()

        return run

    for fused in (True, False):  # build every kernel and table first
        mel(fused)()
    print("melspectrogram (exec function)")
    _interleaved(args.runs, {"fused": mel(True), "unfused": mel(False)})
    fx.FUSED = True

    batch, X = sx._spectrum(rt, x, p.stft)
    X = X.reshape(*batch, p.stft.n_fft // 2 + 1, p.stft.n_frames)
    mat = fx.sparse(rt, p.basis, "f32")

    def stage(fused):
        def run():
            if fused:
                fx.apply(rt, X, mat, modulus=1, power=2.0)
            else:
                fx.apply(rt, sx._modulus(rt, X, 1), mat)
            rt.synchronize()

        return run

    stage(True)(), stage(False)()
    print("complex spectrum to mel bands")
    _interleaved(args.runs, {"fused": stage(True), "modulus + bank": stage(False)})

    D = specux.stft(y, n_fft=512, hop_length=160, backend="cpu")
    rt, q = _captured(lambda: specux.istft(D, n_fft=512, hop_length=160, backend=args.backend))
    xd = da.upload(rt, D)

    def inverse(transposed):
        def run():
            sx.FRAMES_TRANSPOSED = transposed
            sx.istft(rt, (xd,), q)
            rt.synchronize()

        return run

    inverse(True)(), inverse(False)()
    print("istft (exec function)")
    _interleaved(args.runs, {"frames (B, T, n_fft)": inverse(True), "frames (B, n_fft, T)": inverse(False)})
    sx.FRAMES_TRANSPOSED = True


if __name__ == "__main__":
    main()
