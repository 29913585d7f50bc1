"""Applying a small matrix (a filter bank, a DCT) along the second-to-last axis of a batch.

``np.matmul(M, x)`` with a batched ``x`` of shape (..., F, T) runs one small GEMM per batch item, and
OpenBLAS gives each of them its thread pool: on a busy machine the threads' hand-offs cost far more than the
arithmetic (measured: 245 ms against 1.3 ms for a 20 x 80 DCT over 16 x 80 x 1251). One GEMM over all batch
items together does the same arithmetic in one call.
"""

from __future__ import annotations

import numpy as np


def apply_along_rows(M: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``M @ x`` for ``M`` (K, F) and ``x`` (..., F, T), as a C-contiguous (..., K, T) array."""
    if x.ndim <= 2:
        return np.matmul(M, x)
    batch = x.shape[:-2]
    F, T = x.shape[-2:]
    rows = np.moveaxis(x, -2, 0).reshape(F, -1)  # (F, batch * T), one copy
    out = (M @ rows).reshape((M.shape[0], *batch, T))
    return np.ascontiguousarray(np.moveaxis(out, 0, -2))
