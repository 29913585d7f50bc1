"""A small progress bar on stderr (frames done, frames/s, time left), with no dependency."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """Callable with the number of frames done so far; redraws at most a few times a second.

    Parameters
    ----------
    total : int, optional
        Expected frame count (``None``: unknown, no bar or time left shown).
    label : str
        Text before the bar.
    stream : file, optional
        Where to draw (default ``sys.stderr``).
    """

    def __init__(self, total: int | None = None, label: str = "magnify", stream: TextIO | None = None):
        self.total = total
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.perf_counter()
        self._last_draw = 0.0
        self.done = 0

    def __call__(self, done: int) -> None:
        if self.stream is None:  # closed
            return
        self.done = done
        now = time.perf_counter()
        finished = self.total is not None and done >= self.total
        if finished or now - self._last_draw >= 0.2:
            self._last_draw = now
            self._draw(now)
            if finished:
                self.close()

    def _draw(self, now: float) -> None:
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        if self.total:
            width = 30
            filled = min(width, int(width * self.done / self.total))
            left = (self.total - self.done) / rate if rate > 0 else float("inf")
            eta = f"{left:5.0f} s left" if left != float("inf") else ""
            text = f"{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
            text += f"{rate:6.1f} frames/s {eta}"
        else:
            text = f"{self.label} {self.done} frames {rate:6.1f} frames/s"
        self.stream.write("\r" + text)
        self.stream.flush()

    def close(self) -> None:
        """Draw the final state and end the line (idempotent)."""
        if self.stream is not None:
            self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()
            self.stream = None  # type: ignore[assignment]
