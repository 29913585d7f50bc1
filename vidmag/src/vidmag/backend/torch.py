"""The ``torch`` backend: PyTorch tensor operations, float32, on CUDA or Apple's MPS when torch has them, else
the CPU.

Importing this module does not import torch (the registry imports it to probe); torch is imported when the
backend is created or a function here is called. Its distinguishing use is that results can stay tensors:
:func:`magnify_tensor` takes a (T, H, W, 3) tensor on any device and returns one on the same device, with no
trip through the host, so magnification can sit inside a larger tensor computation.

The primitives (:class:`TorchOperations`) follow :class:`vidmag.backend.operations.Operations`: the spatial
filters are strided sums and gathers (:mod:`vidmag.backend.spatial_taps` for the bicubic resize) and the ideal
band-pass is two matrix products with the tables of :mod:`vidmag.backend.bandpass_basis`. The fused tier
(:class:`TorchFused`) is what the backend's pipelines run on: tap maps as one gather per tap, the matrix
apply as a matmul, the scan and the render as a few tensor operations each. ``owns``, ``magnify_owned``,
``to_host`` and ``count_clipped`` are how the registry routes tensors given to ``vidmag.magnify`` here.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from vidmag._reference.colour import RGB_TO_YIQ, YIQ_TO_RGB_EXACT, YIQ_TO_RGB_MIT
from vidmag._reference.pyramid import BINOM5, GAUSS5
from vidmag.backend import spatial_taps
from vidmag.backend.bandpass_basis import bandpass_basis
from vidmag.backend.stages import contiguous_span

if TYPE_CHECKING:
    import torch as torch_module

    from vidmag.params import Plan

__all__ = ["TorchFused", "TorchOperations", "create", "magnify_tensor", "owns", "probe"]

#: Environment variable naming the torch device to use ("cpu", "cuda", "cuda:1", "mps").
DEVICE_ENV = "VIDMAG_TORCH_DEVICE"


def _torch():
    import torch

    return torch


def default_device() -> str:
    """The device the backend uses: ``$VIDMAG_TORCH_DEVICE``, else CUDA, else MPS, else the CPU."""
    torch = _torch()
    wanted = os.environ.get(DEVICE_ENV)
    if wanted:
        return wanted
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def probe() -> str | None:
    """Why the torch backend cannot run here, or None. Looks for torch without importing it when absent."""
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed (pip install torch)"
    try:
        torch = _torch()
        device = default_device()
        torch.zeros(1, device=device)
    except Exception as error:  # a broken install, or a device named in the environment that is not there
        return f"torch cannot run here: {type(error).__name__}: {error}"
    return None


class TorchOperations:
    """The primitives on torch tensors (float32 for everything but the bytes) on one device.

    Parameters
    ----------
    device : str or torch.device, optional
        Where the tensors live; :func:`default_device` when omitted.
    """

    #: Float values per batch of frames (16 MiB of float32): big enough for few launches, small enough that
    #: the allocator reuses its blocks instead of mapping fresh memory for every temporary.
    batch_values = 2**22

    def __init__(self, device: Any = None) -> None:
        torch = _torch()
        self.torch = torch
        self.device = torch.device(device if device is not None else default_device())
        self._tables: dict[Any, Any] = {}

    # --- tables -------------------------------------------------------------------------------------------
    def _table(self, key: Any, make: Callable[[], np.ndarray], dtype) -> Any:
        if key not in self._tables:
            self._tables[key] = self.torch.as_tensor(make(), dtype=dtype, device=self.device)
        return self._tables[key]

    def _taps(self, taps: spatial_taps.Taps) -> tuple[Any, Any]:
        key = (taps.n_in, taps.index.tobytes(), taps.weight.tobytes())
        index = self._table(("index", *key), lambda: taps.index.astype(np.int64), self.torch.int64)
        weight = self._table(("weight", *key), lambda: taps.weight, self.torch.float32)
        return index, weight

    def _matrix(self, m: np.ndarray) -> Any:
        return self._table(("matrix", np.asarray(m).tobytes()), lambda: np.asarray(m), self.torch.float32)

    def map_axis(self, x: Any, taps: spatial_taps.Taps, dim: int) -> Any:
        """Apply a one-axis tap table along dimension ``dim`` of a float tensor (one gather, one sum)."""
        if x.shape[dim] != taps.n_in:
            raise ValueError(f"map of {taps.n_in} samples applied to a side of {x.shape[dim]}")
        index, weight = self._taps(taps)
        n_out, k = index.shape
        gathered = x.index_select(dim, index.reshape(-1))
        shape = list(x.shape)
        shape[dim : dim + 1] = [n_out, k]
        w_shape = [1] * len(shape)
        w_shape[dim], w_shape[dim + 1] = n_out, k
        return (gathered.reshape(shape) * weight.reshape(w_shape)).sum(dim + 1)

    def _mirror2(self, x: Any, dim: int) -> Any:
        """``x`` with two samples mirrored on each side along ``dim`` (reflect1: the edge is not repeated)."""
        n = x.shape[dim]
        index = [2 % n, 1 % n, *range(n), (n - 2) % n, (n - 3) % n] if n > 2 else None
        if index is None:  # too short to mirror twice: fall back to the general reflection of the tables
            index = [spatial_taps.reflect1(i, n) for i in range(-2, n + 2)]
        key = ("mirror2", n)
        return x.index_select(dim, self._table(key, lambda: np.array(index), self.torch.int64))

    @staticmethod
    def _slice(x: Any, dim: int, start: int, length: int, step: int) -> Any:
        index = [slice(None)] * x.dim()
        index[dim] = slice(start, start + length, step)
        return x[tuple(index)]

    def _reduce_axis(self, x: Any, kernel: np.ndarray, dim: int) -> Any:
        """Filter with a 5-tap kernel (reflect1) and keep samples 0, 2, 4, ... along ``dim``."""
        m = (x.shape[dim] + 1) // 2
        padded = self._mirror2(x, dim)
        out = None
        for t in range(5):
            term = self._slice(padded, dim, t, 2 * m - 1, 2) * float(kernel[t])
            out = term if out is None else out.add_(term)
        return out

    def _expand_axis(self, x: Any, n: int, dim: int) -> Any:
        """matlabPyrTools' upConv with binom5 along ``dim`` to ``n`` samples (the n = 5 quirk included)."""
        shape = list(x.shape)
        shape[dim] = n
        stuffed = x.new_zeros(shape)
        self._slice(stuffed, dim, 0, n, 2).copy_(x)
        padded = self._mirror2(stuffed, dim)
        out = None
        for t in range(5):
            term = self._slice(padded, dim, t, n, 1) * float(BINOM5[t])
            out = term if out is None else out.add_(term)
        if n == 5:  # the compiled upConv drops the mirrored tap of the last output: f4 * y1
            self._slice(out, dim, 4, 1, 1).sub_(self._slice(x, dim, 1, 1, 1) * float(BINOM5[4]))
        return out

    def apply_matrix(self, frames: Any, m: np.ndarray) -> Any:
        """Each pixel of a (..., 3) tensor times a 3 x 3 matrix, in float32."""
        return self.torch.matmul(frames.to(self.torch.float32), self._matrix(m).T)

    # --- host <-> device ----------------------------------------------------------------------------------
    def upload(self, frames: Any) -> Any:
        if isinstance(frames, np.ndarray):
            frames = self.torch.from_numpy(np.ascontiguousarray(frames, dtype=np.uint8))
        return frames.to(self.device)

    def download(self, frames: Any) -> np.ndarray:
        return frames.cpu().numpy()

    # --- colour -------------------------------------------------------------------------------------------
    def rgb_to_yiq(self, frames: Any) -> Any:
        return self.apply_matrix(frames, RGB_TO_YIQ / 255.0)

    def yiq_to_rgb_uint8(self, frames: Any, *, mit: bool) -> Any:
        rgb = self.apply_matrix(frames, YIQ_TO_RGB_MIT if mit else YIQ_TO_RGB_EXACT)
        return self.to_bytes(rgb)

    def to_bytes(self, rgb: Any) -> Any:
        """The MIT output handling of RGB floats (..., 3): clamp, hue-keeping normalisation, rounding."""
        torch = self.torch
        rgb = rgb.clamp_min(0.0)
        peak = rgb.amax(dim=-1, keepdim=True)
        rgb = torch.where(peak > 1.0, rgb / torch.where(peak > 1.0, peak, torch.ones_like(peak)), rgb)
        v = (rgb * 255.0).clamp_(0.0, 255.0)
        whole = torch.floor(v)
        return (whole + (v - whole >= 0.5)).to(torch.uint8)  # half away from zero, as MATLAB's uint8()

    # --- space --------------------------------------------------------------------------------------------
    def pyramid_reduce(self, frames: Any) -> Any:
        return self._reduce_axis(self._reduce_axis(frames, BINOM5, 2), BINOM5, 1)

    def pyramid_expand(self, frames: Any, size: tuple[int, int]) -> Any:
        if frames.shape[1] != (size[0] + 1) // 2 or frames.shape[2] != (size[1] + 1) // 2:
            raise ValueError(f"cannot expand {tuple(frames.shape[1:3])} to {tuple(size)}")
        return self._expand_axis(self._expand_axis(frames, size[0], 1), size[1], 2)

    def gaussian_reduce(self, frames: Any) -> Any:
        return self._reduce_axis(self._reduce_axis(frames, GAUSS5, 1), GAUSS5, 2)

    def resize_bicubic(self, frames: Any, size: tuple[int, int]) -> Any:
        h, w = frames.shape[1:3]
        cols = self.map_axis(frames, spatial_taps.bicubic(h, size[0]), 1)
        return self.map_axis(cols, spatial_taps.bicubic(w, size[1]), 2)

    # --- arithmetic ---------------------------------------------------------------------------------------
    def add(self, a: Any, b: Any) -> Any:
        return a + b

    def subtract(self, a: Any, b: Any) -> Any:
        return a - b

    def scale(self, frames: Any, luma: float, chroma: float) -> Any:
        gains = self.torch.tensor([luma, chroma, chroma], dtype=frames.dtype, device=frames.device)
        return frames * gains

    # --- time ---------------------------------------------------------------------------------------------
    def concat_frames(self, batches: list[Any]) -> Any:
        stack = self.torch.cat(batches, dim=0)
        batches.clear()
        return stack

    def take_frames(self, stack: Any, start: int, stop: int) -> Any:
        return stack[start:stop]

    def ideal_bandpass(self, stack: Any, fl: float, fh: float, fs: float, *, mit: bool) -> Any:
        n = stack.shape[0]
        basis = bandpass_basis(n, float(fl), float(fh), float(fs), bool(mit))
        key = ("bandpass", n, float(fl), float(fh), float(fs), bool(mit))
        x = stack.reshape(n, -1)
        x0 = x[:1]
        d = x - x0
        out = d * basis.identity + x0 * basis.keeps_dc
        if basis.analysis.shape[1]:
            analysis = self._table((*key, "a"), lambda: basis.analysis, self.torch.float32)
            synthesis = self._table((*key, "s"), lambda: basis.synthesis, self.torch.float32)
            out = out + synthesis @ (analysis.T @ d)
        return out.reshape(stack.shape)

    def _first_order(self, state: Any, frames: Any, c1: tuple, c2: tuple) -> tuple[Any, Any]:
        out = self.torch.empty_like(frames)
        for i in range(frames.shape[0]):
            x = frames[i]
            if state is None:  # the first frame starts every state; its output is 0
                state = (x, x, x)
                out[i] = 0.0
                continue
            lp1, lp2, prev = state
            lp1 = c1[0] * lp1 + c1[1] * x + c1[2] * prev
            lp2 = c2[0] * lp2 + c2[1] * x + c2[2] * prev
            state = (lp1, lp2, x)
            out[i] = lp1 - lp2
        return out, state

    def butterworth_step(self, state: Any, frames: Any, high: tuple, low: tuple) -> tuple[Any, Any]:
        def coefficients(b0, b1, a0, a1):
            return (-a1 / a0, b0 / a0, b1 / a0)

        return self._first_order(state, frames, coefficients(*high), coefficients(*low))

    def iir_step(self, state: Any, frames: Any, r1: float, r2: float) -> tuple[Any, Any]:
        return self._first_order(state, frames, (1.0 - r1, r1, 0.0), (1.0 - r2, r2, 0.0))


class TorchFused:
    """The fused tier (:class:`vidmag.backend.operations.FusedOperations`) on torch tensors, over a
    :class:`TorchOperations` (its device and tables).

    Frames pushed or given as tensors stay tensors: :meth:`upload_frames` takes a uint8 tensor as it is, and
    :meth:`render` returns one on the device.
    """

    def __init__(self, ops: TorchOperations) -> None:
        self.ops = ops
        self.torch = ops.torch
        self._columns: dict[Any, tuple[Any, Any]] = {}

    def batch_frames(self, plan: Plan) -> int:
        return max(1, self.ops.batch_values // (plan.height * plan.width * 3))

    def upload_frames(self, frames: Any) -> Any:
        torch = self.torch
        if isinstance(frames, torch.Tensor):
            if frames.dtype != torch.uint8 or frames.dim() != 4:
                raise ValueError(f"frames: a tensor batch must be uint8 (n, H, W, 3), got {frames.dtype} "
                                 f"{tuple(frames.shape)}")
            return frames.to(self.ops.device)
        if isinstance(frames, np.ndarray):
            batch = frames if frames.ndim == 4 else frames[None]
        else:  # frames that lie one after another in memory are read where they are, not stacked first
            span = contiguous_span(frames)
            batch = span if span is not None else np.stack(frames)
        return self.ops.upload(batch)

    def download(self, frames: Any) -> np.ndarray:
        return frames if isinstance(frames, np.ndarray) else self.ops.download(frames)

    def _taps_by_column(self, taps: spatial_taps.Taps) -> tuple[Any, Any]:
        """The table as k columns of (n_out,) indices and weights, one per tap."""
        key = (taps.n_in, taps.index.tobytes(), taps.weight.tobytes())
        if key not in self._columns:
            torch, device = self.torch, self.ops.device
            index = torch.as_tensor(np.ascontiguousarray(taps.index.T, dtype=np.int64), device=device)
            weight = torch.as_tensor(np.ascontiguousarray(taps.weight.T), dtype=torch.float32, device=device)
            self._columns[key] = (index, weight)
        return self._columns[key]

    def map_axis(self, frames: Any, taps: spatial_taps.Taps, axis: int, *, other: Any = None, sign: int = 1,
                 scratch: str | None = None) -> Any:
        if axis not in (1, 2):
            raise ValueError(f"axis must be 1 (height) or 2 (width), got {axis!r}")
        x = frames if frames.is_floating_point() else frames.to(self.torch.float32)
        if x.shape[axis] != taps.n_in:
            raise ValueError(f"map of {taps.n_in} samples applied to a side of {x.shape[axis]}")
        index, weight = self._taps_by_column(taps)
        shape = [1] * x.dim()
        shape[axis] = taps.n_out
        out = None
        # one gather per tap, accumulated: no (n_out, k) intermediate k times the output's size
        for t in range(index.shape[0]):
            term, w = x.index_select(axis, index[t]), weight[t].reshape(shape)
            out = term.mul_(w) if out is None else out.addcmul_(term, w)
        if other is not None:
            out = other + out if sign > 0 else other - out
        return out

    def apply_matrix(self, frames: Any, matrix: np.ndarray) -> Any:
        return self.ops.apply_matrix(frames, matrix)

    def concat_frames(self, batches: list[Any]) -> Any:
        return self.ops.concat_frames(batches)

    def take_frames(self, stack: Any, start: int, stop: int) -> Any:
        return self.ops.take_frames(stack, start, stop)

    def bandpass(self, stack: Any, fl: float, fh: float, fs: float, *, mit: bool,
                 gains: tuple[float, float, float]) -> Any:
        out = self.ops.ideal_bandpass(stack, fl, fh, fs, mit=mit)
        if tuple(gains) != (1.0, 1.0, 1.0):
            out = out * self.torch.tensor([float(g) for g in gains], dtype=out.dtype, device=out.device)
        return out

    def scan_state(self, first: Any) -> list:
        return [first[0], first[0].clone(), first[0].clone()]

    def first_order_scan(self, state: list, frames: Any, c1: tuple, c2: tuple, gain: float) -> Any:
        lp1, lp2, prev = state
        out = self.torch.empty_like(frames)
        for i in range(frames.shape[0]):
            x = frames[i]
            lp1 = c1[0] * lp1 + c1[1] * x + c1[2] * prev
            lp2 = c2[0] * lp2 + c2[1] * x + c2[2] * prev
            prev = x
            self.torch.sub(lp1, lp2, out=out[i]).mul_(gain)
        state[:] = [lp1, lp2, prev]
        return out

    def render(self, frames: Any, signal: Any, taps: spatial_taps.Taps | None, c: np.ndarray,
               e: np.ndarray) -> Any:
        rgb = self.ops.apply_matrix(frames, c)
        if signal is not None:
            rgb = rgb + self.ops.apply_matrix(self.map_axis(signal, taps, 1), e)
        return self.ops.to_bytes(rgb)


def _as_uint8_tensor(ops: TorchOperations, frames: Any) -> Any:
    torch = ops.torch
    if frames.dim() != 4 or frames.shape[-1] != 3:
        raise ValueError(f"frames must have shape (T, H, W, 3), got {tuple(frames.shape)}")
    if frames.dtype == torch.uint8:
        return frames
    if not frames.is_floating_point():
        raise ValueError(f"frames must be uint8 or float in [0, 1], got dtype {frames.dtype}")
    if frames.numel() and not (
        bool(torch.isfinite(frames).all()) and frames.min() >= 0 and frames.max() <= 1
    ):
        raise ValueError("frames: float frames must be finite and within [0, 1]")
    return _quantise(ops, frames)


def _quantise(ops: TorchOperations, frames: Any) -> Any:
    # round(x * 255) half away from zero, as vidmag.magnify quantises float frames
    torch = ops.torch
    wide = torch.float32 if frames.device.type == "mps" else torch.float64  # MPS has no float64
    v = (frames.to(wide) * 255.0).clamp_(0.0, 255.0)
    whole = torch.floor(v)
    return (whole + (v - whole >= 0.5)).to(torch.uint8)


def magnify_tensor(
    frames: torch_module.Tensor,
    *,
    fs: float,
    pipeline: str,
    compat: str | None = None,
    **params: Any,
) -> torch_module.Tensor:
    """Magnify a clip held in a torch tensor; the result is a tensor on the same device.

    The same computation as :func:`vidmag.magnify` with ``backend="torch"``, but tensor in, tensor out, with
    no copy through the host when the tensor lives on a GPU.

    Parameters
    ----------
    frames : torch.Tensor, shape (T, H, W, 3)
        RGB frames, uint8, or float in [0, 1] (quantised to 8 bits, ``round(x * 255)``), on any device torch
        supports.
    fs, pipeline, compat, **params
        As :func:`vidmag.magnify`.

    Returns
    -------
    torch.Tensor, uint8, shape (T', H, W, 3), on ``frames.device``
        T' = T under the default semantics; T - 10 under ``compat="mit"`` (T - 11 for laplacian_ideal).

    Raises
    ------
    TypeError, ValueError
        As :func:`vidmag.magnify`.

    Notes
    -----
    Backends: torch only. Not differentiable (the output is rounded to bytes).
    """
    from vidmag.backend.generic import PIPELINES
    from vidmag.backend.stages import FusedStages
    from vidmag.params import make_plan

    torch = _torch()
    if not isinstance(frames, torch.Tensor):
        raise TypeError(f"frames must be a torch.Tensor, got {type(frames).__name__}")
    ops = TorchOperations(frames.device)
    clip = _as_uint8_tensor(ops, frames)
    T = clip.shape[0]
    if T == 0:
        raise ValueError("frames: the clip is empty (T = 0)")
    plan = make_plan(
        pipeline, fs=fs, compat=compat, params=params, frame_shape=tuple(clip.shape[1:]), n_frames=T
    )
    if plan.mit:
        from vidmag._reference.pipelines import MIT_UNREAD_TAIL

        clip = clip[: T - MIT_UNREAD_TAIL]
    stages = FusedStages(TorchFused(ops))
    size = stages.batch_frames(plan)

    def groups(skip: int) -> Iterator[Any]:
        return (clip[s : s + size] for s in range(skip, clip.shape[0], size))

    with torch.no_grad():
        outputs = list(PIPELINES[plan.pipeline](stages, plan, groups))
    return torch.cat(outputs, dim=0)


def create():
    """The backend: the pipelines over the fused tier (:class:`TorchFused`), :class:`TorchOperations` as its
    primitives; the Riesz pipelines from :mod:`vidmag.backend.torch_riesz`, steerable_ideal from
    :mod:`vidmag.backend.torch_steerable`."""
    from vidmag.backend import torch_riesz, torch_steerable
    from vidmag.backend.generic import bind
    from vidmag.backend.phase import PhaseBackend

    def phase_frames(plan: Plan, source: Callable[[], Iterator[np.ndarray]]) -> Iterator[np.ndarray]:
        module = torch_steerable if plan.pipeline in torch_steerable.PIPELINES else torch_riesz
        return module.frames(ops, plan, source)

    ops = TorchOperations()
    return PhaseBackend(
        bind(ops, name="torch", fused=TorchFused(ops)),
        pipelines=torch_riesz.PIPELINES + torch_steerable.PIPELINES,
        frames=phase_frames,
        stream=lambda plan: torch_riesz.TorchRieszStream(ops, plan),
        steps=lambda plan: (torch_steerable if plan.pipeline in torch_steerable.PIPELINES
                            else torch_riesz).IdealSteps(ops, plan),
        bounded=("riesz_ideal", "steerable_ideal"),
    )


# --- routing of tensors (see vidmag.backend.registry) -------------------------------------------------------


def owns(frames: Any) -> bool:
    """Whether ``frames`` is a torch tensor, decided without importing torch (``sys.modules``)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(frames, torch.Tensor)


def magnify_owned(frames: Any, *, fs: float, pipeline: str, compat: str | None = None, **params: Any) -> Any:
    """:func:`magnify_tensor` (the registry's name for it)."""
    return magnify_tensor(frames, fs=fs, pipeline=pipeline, compat=compat, **params)


def to_host(frames: Any, *, backend: str) -> np.ndarray:
    """A CPU tensor as a NumPy array (shared memory) for another backend; a ``ValueError`` for a tensor on a
    device, which would have to be copied through the host."""
    if frames.device.type != "cpu":
        raise ValueError(
            f"frames: a torch tensor on {frames.device} runs only on backend='torch' (or 'auto'); "
            f"backend={backend!r} would copy it through the host; move it yourself with .cpu() if you "
            "mean that"
        )
    return frames.detach().numpy()


def count_clipped(frames: Any, row_step: int) -> tuple[int, int]:
    """(bytes at 0 or 255, bytes looked at) in every ``row_step``-th row of a (T, H, W, 3) tensor; float
    frames count the levels that round to 0 or 255 (as :func:`magnify_tensor` quantises them)."""
    rows = frames[:, ::row_step]
    if rows.dtype.is_floating_point:
        clipped = int(((rows < 0.5 / 255) | (rows >= 254.5 / 255)).sum())
    else:
        clipped = int(((rows == 0) | (rows == 255)).sum())
    return clipped, rows.numel()
