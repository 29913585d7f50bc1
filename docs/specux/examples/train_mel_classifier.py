"""Train a tiny classifier of synthetic tones on mel-spectrogram features, with gradients through specux.

Three classes of signals (a tone near 300, 700 or 1500 Hz, random phase, amplitude and noise) go through a
learnable FIR filter (``nn.Conv1d``), then :class:`specux.torch.MelSpectrogram`, a log, and a linear layer.
The filter learns through the mel spectrogram's analytic backward (``specux::melspectrogram_backward``), which
is what makes the example more than a fixed feature extractor.

Run: ``python docs/specux/examples/train_mel_classifier.py [--steps 25] [--compile]``. It prints the loss
every ten steps and the final accuracy; it takes a few seconds on a laptop CPU.
"""

from __future__ import annotations

import argparse
import math

import torch
from torch import nn

import specux
import specux.torch as st

SR = 8000
N = 4000  # half a second per example
CLASS_HZ = (300.0, 700.0, 1500.0)


def make_batch(batch: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(signals (batch, N), labels (batch,)): a jittered tone of each class plus white noise."""
    labels = torch.randint(len(CLASS_HZ), (batch,), generator=generator)
    base = torch.tensor(CLASS_HZ)[labels]
    freq = base * (1 + 0.05 * (torch.rand(batch, generator=generator) - 0.5))
    phase = 2 * math.pi * torch.rand(batch, 1, generator=generator)
    amp = 0.5 + torch.rand(batch, 1, generator=generator)
    t = torch.arange(N) / SR
    tone = amp * torch.sin(2 * math.pi * freq[:, None] * t + phase)
    return tone + 0.3 * torch.randn(batch, N, generator=generator), labels


class ToneClassifier(nn.Module):
    def __init__(self, n_mels: int = 32) -> None:
        super().__init__()
        self.fir = nn.Conv1d(1, 1, kernel_size=9, padding=4, bias=False)  # learnable front-end filter
        self.mel = st.MelSpectrogram(sr=SR, n_fft=256, hop_length=128, n_mels=n_mels)
        self.head = nn.Linear(n_mels, len(CLASS_HZ))

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        filtered = self.fir(y[:, None, :])[:, 0]
        logmel = torch.log(self.mel(filtered) + 1e-6)  # (batch, n_mels, frames)
        return self.head(logmel.mean(dim=-1))


def train(
    steps: int = 25, batch: int = 16, seed: int = 0, compile: bool = False
) -> tuple[list[float], float]:
    """Train and return (loss per step, accuracy on a fresh batch)."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    model = ToneClassifier()
    step_model = torch.compile(model, fullgraph=True) if compile else model
    optimiser = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    with specux.deterministic(True):  # bitwise-reproducible backward (see docs/specux/torch.md)
        for step in range(steps):
            y, labels = make_batch(batch, generator)
            loss = nn.functional.cross_entropy(step_model(y), labels)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
            if step % 10 == 0 or step == steps - 1:
                print(f"step {step:3d}  loss {loss.item():.4f}")
    with torch.no_grad():
        y, labels = make_batch(256, generator)
        accuracy = (model(y).argmax(dim=-1) == labels).float().mean().item()
    print(f"accuracy on 256 fresh examples: {accuracy:.3f}")
    return losses, accuracy


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--compile", action="store_true", help="torch.compile(fullgraph=True) the model")
    args = parser.parse_args()
    train(steps=args.steps, compile=args.compile)
