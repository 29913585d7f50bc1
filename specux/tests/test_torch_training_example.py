"""The PyTorch page's training example (docs/specux/examples/train_mel_classifier.py) runs and learns."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "specux" / "examples" / "train_mel_classifier.py"


def test_training_loop_example_loss_decreases() -> None:
    example = runpy.run_path(str(EXAMPLE))
    losses, accuracy = example["train"](steps=15, batch=12, seed=0)
    assert len(losses) == 15
    assert all(torch.isfinite(torch.tensor(losses)))
    start, end = losses[0], sum(losses[-3:]) / 3
    assert end < 0.5 * start, f"loss did not fall: first {start:.4f}, mean of last three {end:.4f}"
    assert accuracy > 0.8


def test_training_is_bitwise_reproducible() -> None:
    """The example trains under specux.deterministic(True): two runs give the same losses, bit for bit."""
    example = runpy.run_path(str(EXAMPLE))
    first, _ = example["train"](steps=4, batch=8, seed=1)
    second, _ = example["train"](steps=4, batch=8, seed=1)
    assert first == second
