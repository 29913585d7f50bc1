"""specux's torch path against torch / torchaudio: forward, and forward + backward (a training step's share).

Each case times ``transform(x).sum()`` on a CPU tensor, and ``transform(x).sum().backward()`` on one that
requires grad, for specux (the ``torch.ops.specux`` custom ops, which ``specux.<op>(tensor)`` and the
``specux.torch`` modules run) and for the peer that a torch user would otherwise call, with the same
parameters. The last column is specux's time divided by the peer's: below 1, specux is faster.

    python bench/specux_torch.py [--repeat 7] [--out bench/results/specux_torch.json]

Data: a batch of 8 signals of 32768 samples (about 2 s at 16 kHz), float32. Cases: stft (power, n_fft 1024,
hop 256) against ``torch.stft``; melspectrogram (80 mels) against ``torchaudio.transforms.MelSpectrogram``;
mfcc (40 coefficients) against ``torchaudio.transforms.MFCC``; the same melspectrogram as a trainable
``specux.torch.MelSpectrogram(trainable=True)`` (window and bank get gradients too) against torchaudio's with
its bank as a parameter. ``cqt`` (84 bins, default soxr resampler) has no torch peer and is timed alone.

A second table (issue 19) gives what a torch CPU tensor costs over a numpy array of the same data, for
``specux.stft`` of a 16 x 160,000 float32 batch (n_fft 512, hop 160, complex output): the forward on the
tensor against the forward on the array, and a training step on the tensor (forward, then ``backward`` with a
given complex gradient) against the numpy forward plus the adjoint's own cost
(``specux._backends.cpu.adjoint_stft.stft_backward`` on the same gradient, the spectrogram kept meanwhile,
as a training step keeps it). The four are timed in turns, call by
call (``--overhead-repeat`` rounds); the goal is both ratios at most 1.10, judged on the best wall time and,
steadier on a shared machine, on the least process CPU time (no thread of either path spins while waiting).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    command_line,
    finish_machine,
    fmt_ratio,
    fmt_seconds,
    in_blocks,
    interleaved,
    machine,
    markdown_table,
    versions,
    write_json,
)

SR = 16000
N_FFT, HOP, N_MELS = 1024, 256, 80


def cases(torch: Any) -> dict[str, dict[str, Any]]:
    import torchaudio

    import specux
    import specux.torch as st

    window = torch.hann_window(N_FFT)
    mel_kw = dict(sr=SR, n_fft=N_FFT, hop_length=HOP, n_mels=N_MELS, htk=True, norm=None, pad_mode="reflect")
    ta_mel = torchaudio.transforms.MelSpectrogram(sample_rate=SR, n_fft=N_FFT, hop_length=HOP, n_mels=N_MELS)
    ta_mfcc = torchaudio.transforms.MFCC(
        sample_rate=SR, n_mfcc=40, melkwargs=dict(n_fft=N_FFT, hop_length=HOP, n_mels=N_MELS)
    )
    ta_trainable = torchaudio.transforms.MelSpectrogram(
        sample_rate=SR, n_fft=N_FFT, hop_length=HOP, n_mels=N_MELS
    )
    ta_trainable.mel_scale.fb = torch.nn.Parameter(ta_trainable.mel_scale.fb)
    return {
        "stft (power)": {
            "specux": lambda x: specux.stft(x, n_fft=N_FFT, hop_length=HOP, output="power"),
            "torch": lambda x: torch.stft(x, N_FFT, HOP, window=window, return_complex=True).abs().pow(2),
        },
        "melspectrogram": {
            "specux": lambda x: specux.melspectrogram(x, **mel_kw),
            "torchaudio": ta_mel,
        },
        "mfcc": {
            "specux": lambda x: specux.mfcc(
                x, sr=SR, n_fft=N_FFT, hop_length=HOP, n_mels=N_MELS, compat="torchaudio"
            ),
            "torchaudio": ta_mfcc,
        },
        "melspectrogram, trainable bank": {
            "specux": st.MelSpectrogram(**mel_kw, trainable=["mel_basis"]),
            "torchaudio": ta_trainable,
        },
        "cqt (84 bins)": {"specux": lambda x: specux.cqt(x, sr=SR).abs()},
    }


#: the issue's case: 16 clips of 10 s at 16 kHz, n_fft 512, hop 160
OVERHEAD_SHAPE, OVERHEAD_N_FFT, OVERHEAD_HOP = (16, 160000), 512, 160
#: a torch tensor may cost at most this much over a numpy array (forward, and training step)
OVERHEAD_GOAL = 1.10


def tensor_overhead(torch: Any, repeat: int) -> list[dict[str, Any]]:
    """The torch-tensor rows: (forward | training step) on a tensor against numpy, timed in turns."""
    import numpy as np

    import specux
    from specux._backends.cpu import adjoint_stft as _adjoint_stft
    from specux._spec.stft import stft_validate

    rng = np.random.default_rng(0)
    x = rng.standard_normal(OVERHEAD_SHAPE).astype(np.float32)
    xt = torch.from_numpy(x)
    kw = dict(n_fft=OVERHEAD_N_FFT, hop_length=OVERHEAD_HOP)
    p = stft_validate(x, **kw)
    F = OVERHEAD_N_FFT // 2 + 1
    g = (rng.standard_normal((*OVERHEAD_SHAPE[:-1], F, p.n_frames))
         + 1j * rng.standard_normal((*OVERHEAD_SHAPE[:-1], F, p.n_frames))).astype(np.complex64)
    gt = torch.from_numpy(g)

    def tensor_forward():
        with torch.no_grad():
            return specux.stft(xt, **kw)

    def tensor_step():
        y = xt.detach().requires_grad_()
        specux.stft(y, **kw).backward(gt)
        return y.grad

    def numpy_step():
        # the spectrogram is kept while the gradient is computed, as a training step keeps its output
        D = specux.stft(x, **kw)
        grad = _adjoint_stft.stft_backward(g, None, p, OVERHEAD_SHAPE[:-1])
        del D
        return grad

    t = interleaved({"numpy forward": lambda: specux.stft(x, **kw), "tensor forward": tensor_forward,
                     "numpy forward + adjoint": numpy_step, "tensor forward + backward": tensor_step},
                    repeat=repeat, warmup=2)
    grad = t["tensor forward + backward"]["result"].numpy()
    want = t["numpy forward + adjoint"]["result"]
    assert np.allclose(grad, want, rtol=1e-5, atol=1e-4 * float(np.abs(want).max())), "gradients differ"
    rows = []
    for mode, mine, base in (("forward", "tensor forward", "numpy forward"),
                             ("forward + backward", "tensor forward + backward", "numpy forward + adjoint")):
        rows.append({"mode": mode, "tensor": t[mine]["best"], "numpy": t[base]["best"],
                     "ratio": t[mine]["best"] / t[base]["best"],
                     "ratio_median": t[mine]["median"] / t[base]["median"],
                     "ratio_cpu": t[mine]["cpu_best"] / t[base]["cpu_best"]})
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The markdown table of the cases (the JSON's ``rows``): specux's time, the peer's and their ratio."""
    body = [[r["case"], r["mode"], fmt_seconds(r["specux"]),
             f"{r['peer']}: {fmt_seconds(r['peer_time'])}" if r["peer"] else "-", fmt_ratio(r["ratio"])]
            for r in rows]
    return markdown_table(["case", "mode", "specux", "peer", "specux / peer"], body)


def overhead_table(overhead: list[dict[str, Any]]) -> str:
    """The markdown table of the torch-tensor overhead (the JSON's ``tensor_overhead``), with the goal."""
    return markdown_table(
        ["mode", "torch tensor", "numpy array", "tensor / numpy", "(median)", "(CPU time)",
         "goal (best wall / CPU)"],
        [[r["mode"], fmt_seconds(r["tensor"]), fmt_seconds(r["numpy"]), fmt_ratio(r["ratio"]),
          fmt_ratio(r["ratio_median"]), fmt_ratio(r["ratio_cpu"]),
          " / ".join("met" if q <= OVERHEAD_GOAL else "NOT MET" for q in (r["ratio"], r["ratio_cpu"]))]
         for r in overhead],
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--overhead-repeat", type=int, default=30,
                    help="rounds of the torch-tensor overhead timing (one call of each per round)")
    ap.add_argument("--only-overhead", action="store_true", help="time the torch-tensor overhead rows only")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "specux_torch.json"))
    args = ap.parse_args(argv)
    import torch

    m = machine()  # before the runs: its load average is the one they started under
    x = torch.randn(8, 32768, generator=torch.Generator().manual_seed(0))
    out = []
    for name, impls in ({} if args.only_overhead else cases(torch)).items():
        for mode in ("forward", "forward + backward"):
            def run(f, mode=mode):
                if mode == "forward":
                    with torch.no_grad():
                        return f(x).sum()
                y = x.detach().requires_grad_()
                f(y).sum().backward()
                return None

            times = in_blocks({k: (lambda f=f: run(f)) for k, f in impls.items()}, repeat=args.repeat)
            spec = times["specux"]["best"]
            peer = next((k for k in impls if k != "specux"), None)
            ratio = spec / times[peer]["best"] if peer else None
            out.append({"case": name, "mode": mode, "specux": spec, "peer": peer,
                        "peer_time": times[peer]["best"] if peer else None, "ratio": ratio})
    if out:
        print(table(out))
    overhead = tensor_overhead(torch, args.overhead_repeat)
    finish_machine(m)
    print(f"\nspecux.stft of a {OVERHEAD_SHAPE[0]} x {OVERHEAD_SHAPE[1]:,} float32 batch "
          f"(n_fft {OVERHEAD_N_FFT}, hop {OVERHEAD_HOP}): a torch CPU tensor against a numpy array of the "
          f"same data, on {m['cpu']} "
          f"({m['usable_cores']} cores), best of {args.overhead_repeat} calls in turns; goal: tensor / numpy "
          f"<= {OVERHEAD_GOAL:.2f}\n")
    print(overhead_table(overhead))
    meta = {"machine": m, "versions": versions(["specux", "torch", "torchaudio", "numpy", "scipy"]),
            "threads": torch.get_num_threads(), "repeat": args.repeat,
            "overhead_repeat": args.overhead_repeat, "only_overhead": args.only_overhead}
    data = {"command": command_line(__file__, argv), "meta": meta, "rows": out, "tensor_overhead": overhead}
    print(f"\nJSON: {write_json(args.out, data)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
