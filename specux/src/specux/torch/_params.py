"""From a custom op's arguments to the frozen parameter objects of :mod:`specux._validate`.

The ops take the public arguments (``None`` meaning "derived", as in the functional API) in a form a
``torch.library`` schema can hold, plus optional tensors for precomputed windows and filter banks (the
``nn.Module`` wrappers pass their buffers). Validation runs inside the op (its real kernel and its fake
kernel), never in traced Python, so ``torch.compile`` sees one call; the checks and defaults are the
functional API's own.

Window and norm specifications that a schema cannot hold (tuples like ``("kaiser", 8.0)``, numbers) travel as
their ``repr``; :func:`decode_spec` turns them back.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

import numpy as np
import torch

from specux import _validate
from specux._filters.windows import pad_center
from specux._validate import StftParams
from specux.torch._convert import dtype_name, numpy_of


def decode_spec(spec: str | None) -> Any:
    """``"hann"`` -> ``"hann"``; ``"('kaiser', 8.0)"`` -> the tuple; ``"2.0"`` -> 2.0; None -> None."""
    if spec is None:
        return None
    try:
        value = ast.literal_eval(spec)
    except (ValueError, SyntaxError):
        return spec
    return value if isinstance(value, (tuple, int, float)) else spec


def encode_spec(value: Any) -> str | None:
    """Inverse of :func:`decode_spec` for strings, numbers, tuples and None."""
    if value is None or isinstance(value, str):
        return value
    return repr(value)


def is_fake(t: torch.Tensor) -> bool:
    return isinstance(t, torch._subclasses.fake_tensor.FakeTensor) or t.device.type == "meta"


def window_array(window: torch.Tensor | None, win_length: int, n_fft: int, public: str) -> np.ndarray | None:
    """A window tensor as the float64 ``n_fft``-long array the kernels use (``win_length`` long: centred)."""
    if window is None:
        return None
    if window.dim() != 1 or window.shape[0] not in (n_fft, win_length):
        raise ValueError(
            f"{public}: window tensor must have shape ({n_fft},) or ({win_length},); got "
            f"{tuple(window.shape)}"
        )
    if is_fake(window):
        return np.ones(n_fft)
    w = np.asarray(numpy_of(window), dtype=np.float64)
    return pad_center(w, n_fft) if w.shape[0] != n_fft else w


def stft_params(
    y: torch.Tensor,
    window: torch.Tensor | None,
    window_spec: str,
    n_fft: int,
    hop_length: int | None,
    win_length: int | None,
    center: bool,
    pad_mode: str,
    output: str,
    public: str = "stft",
) -> StftParams:
    """stft's parameters for input ``y`` (real tensor, possibly fake); a window tensor replaces
    ``window_spec``."""
    precision = _validate.real_dtype(y, public, "y")
    spec = "boxcar" if window is not None else decode_spec(window_spec)
    p = _validate.stft_params(
        tuple(int(s) for s in y.shape),
        precision,
        n_fft=n_fft,
        hop_length=hop_length,
        win_length=win_length,
        window=spec,
        center=center,
        pad_mode=pad_mode,
        output=output,
        public=public,
    )
    w = window_array(window, p.win_length, p.n_fft, public)
    return p if w is None else dataclasses.replace(p, window=w)


def stft_out_shape(y: torch.Tensor, p: StftParams) -> tuple[tuple[int, ...], torch.dtype]:
    batch = tuple(int(s) for s in y.shape[:-1])
    F = p.n_fft // 2 + 1
    if p.output == "complex":
        return (*batch, F, p.n_frames), {torch.float32: torch.complex64}.get(y.dtype, torch.complex128)
    if p.output == "real_imag":
        return (*batch, F, p.n_frames, 2), y.dtype
    return (*batch, F, p.n_frames), y.dtype


def stft_frames_shape(shape: tuple[int, ...], output: str) -> tuple[int, ...]:
    """The shape of specux::stft_frames' output for specux::stft's ``shape``: frames before bins."""
    if output == "real_imag":
        return (*shape[:-3], shape[-2], shape[-3], 2)
    return (*shape[:-2], shape[-1], shape[-2])


def same_dtype(a: torch.Tensor, b: torch.Tensor | None, public: str, what: str) -> None:
    """A precomputed tensor of lower precision than the input would silently round the computation: refuse it.

    (A float64 window or bank with a float32 input is fine: the kernels cast it to the computing precision.)
    """
    if b is not None and b.dtype.is_floating_point and b.dtype != torch.float64 and a.dtype == torch.float64:
        raise TypeError(
            f"{public}: {what} has dtype {dtype_name(b)} but the input is {dtype_name(a)}; cast one of them "
            "(module buffers follow module.to(dtype))"
        )
