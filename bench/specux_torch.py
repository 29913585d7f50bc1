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
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import fmt_ratio, fmt_seconds, in_blocks, machine, markdown_table, versions, write_json

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "specux_torch.json"))
    args = ap.parse_args(argv)
    import torch

    x = torch.randn(8, 32768, generator=torch.Generator().manual_seed(0))
    rows, out = [], []
    for name, impls in cases(torch).items():
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
            peer_cell = f"{peer}: {fmt_seconds(times[peer]['best'])}" if peer else "-"
            rows.append([name, mode, fmt_seconds(spec), peer_cell, fmt_ratio(ratio)])
            out.append({"case": name, "mode": mode, "specux": spec, "peer": peer,
                        "peer_time": times[peer]["best"] if peer else None, "ratio": ratio})
    print(markdown_table(["case", "mode", "specux", "peer", "specux / peer"], rows))
    meta = {"machine": machine(), "versions": versions(["specux", "torch", "torchaudio", "numpy", "scipy"]),
            "threads": torch.get_num_threads(), "repeat": args.repeat}
    print(f"\nJSON: {write_json(args.out, {'meta': meta, 'rows': out})}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
