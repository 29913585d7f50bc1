"""Windows and filter banks (pure NumPy / SciPy, memoised with bounded caches).

- :func:`get_window`: scipy-style window specifications (names, ``("kaiser", beta)`` tuples, callables,
  arrays);
- :func:`mel`: librosa's mel bank (Slaney or HTK); :func:`mel_torchaudio`: torchaudio's variant;
  :func:`mel_frequencies`;
- :func:`linear`: torchaudio's linear-frequency triangular bank (used by :func:`specux.lfcc`);
- :func:`chroma`, :func:`constant_q`, :func:`constant_q_lengths` and the other constant-Q helpers.

Cached banks are returned read-only; copy them before writing.
"""

from specux._filters import constant_q as _constant_q
from specux._filters.chroma import chroma
from specux._filters.constant_q import *  # noqa: F403  (the constant-Q module's public names, per its __all__)
from specux._filters.linear import linear
from specux._filters.mel import mel, mel_frequencies, mel_torchaudio
from specux._filters.windows import get_window, pad_center

__all__ = [
    "chroma",
    "get_window",
    "linear",
    "mel",
    "mel_frequencies",
    "mel_torchaudio",
    "pad_center",
    *_constant_q.__all__,
]
