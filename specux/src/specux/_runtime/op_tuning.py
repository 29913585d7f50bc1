"""Op-level plans of the operations beyond the FFT: the block of their one-thread-per-item kernels, tuned per
operation, problem, dtype and device, persisted in kernelkit's tuning store.

The results are the ``"specux.ops"`` section of ``<KERNELKIT_CACHE_DIR>/tuning.json``, keyed by
``op|target|device|shape|dtype``, each entry ``{"block": int}``:

``shape``
    the shapes of the operation's array arguments (``16x160000``; fftconvolve's two joined by ``,``), then
    ``@`` and 16 hex digits digesting its resolved parameters (every scalar, and the shape of every table
    such as a window or a filter bank, not its values): the parameters that change the kernels' geometry
    (``n_fft``, ``hop_length``, ``n_mels``, ``mode`` ...). The same call on the same device finds the plan
    again, in this process and later ones.
``dtype``
    the dtype of the (first) array argument as the device holds it (``float32``, ``complex64`` ...).

An entry whose key or block is not of this shape (a block outside
:data:`specux._codegen.blocks.CHOICES`, an operation that is not tunable) is ignored with a
:class:`kernelkit.tuning.TuningFileWarning` naming the file, and so is a block past the device's own limit
(:meth:`kernelkit.runtime.DeviceRuntime.max_block`) when it is looked up: the default plan is used, a bad
file never breaks an operation. A block never changes a result (each thread computes its own items, in a
fixed order): a plan is a matter of speed only.

The plans looked up are kept in a least-recently-used cache of :data:`MAX_PLANS` entries
(:func:`plans`, :func:`clear`); :func:`planned` wraps an operation's exec function so that its kernels run
with its plan's block. The torch device ops call the exec functions directly and run the default plan.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import hashlib
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from kernelkit import tuning as kk_tuning
from kernelkit.cache import LRU
from kernelkit.tuning import TuningFileWarning, TuningStore
from specux._codegen.blocks import CHOICES, DEFAULT_BLOCK
from specux._runtime import launch

SECTION = "specux.ops"
#: the operations whose plans may be tuned (iterative ones with random starts are not)
TUNABLE = (
    "stft",
    "istft",
    "melspectrogram",
    "mfcc",
    "lfcc",
    "chroma_stft",
    "power_to_db",
    "amplitude_to_db",
    "cqt",
    "vqt",
    "chroma_cqt",
    "icqt",
    "fftconvolve",
)
#: plans kept in memory (as many as the FFT's)
MAX_PLANS = 512
#: the dtypes a device array may hold (the last field of a key)
_DTYPES = ("float16", "float32", "float64", "complex32", "complex64", "complex128")
_SHAPE = re.compile(r"^\d+(x\d+)*(,\d+(x\d+)*)*@[0-9a-f]{16}$")


@dataclasses.dataclass(frozen=True)
class OpPlan:
    """How one operation runs on one device for one problem: ``block`` threads per block of its
    one-thread-per-item kernels; ``tuned`` when that came from the tuning store."""

    op: str
    target: str
    device: str
    shape: str
    dtype: str
    block: int
    tuned: bool


def _split(key: str) -> tuple[str, str, str, str, str]:
    """(op, target, device, shape, dtype) of a key; the device name may itself contain ``|``."""
    parts = key.split("|")
    if len(parts) < 5:
        raise ValueError("the key is not op|target|device|shape|dtype")
    return parts[0], parts[1], "|".join(parts[2:-2]), parts[-2], parts[-1]


def validate(key: str, entry: dict[str, Any]) -> None:
    """Raise ValueError when ``entry`` is not an op plan or ``key`` not ``op|target|device|shape|dtype``."""
    op, _, _, shape, dtype = _split(key)
    if op not in TUNABLE:
        raise ValueError(f"op must be one of {list(TUNABLE)}; got {op!r}")
    if not _SHAPE.match(shape):
        raise ValueError(f"shape must look like 16x160000@<16 hex digits>; got {shape!r}")
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {list(_DTYPES)}; got {dtype!r}")
    block = entry.get("block")
    if isinstance(block, bool) or not isinstance(block, int) or block not in CHOICES:
        raise ValueError(f"block must be one of {list(CHOICES)}; got {block!r}")


STORE = TuningStore(SECTION, validate)
_PLANS = LRU(MAX_PLANS)


def _feed(h: Any, value: Any) -> None:
    """Feed ``value``'s geometry into the hash ``h``: scalars by repr, arrays by shape and dtype."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        h.update(type(value).__name__.encode())
        for f in dataclasses.fields(value):
            h.update(f.name.encode())
            _feed(h, getattr(value, f.name))
    elif isinstance(value, np.ndarray):
        # the values of a table (a window, a bank) change no kernel's geometry: its shape does
        h.update(f"array{value.shape}{value.dtype}".encode())
    elif isinstance(value, (tuple, list)):
        h.update(b"(")
        for v in value:
            _feed(h, v)
        h.update(b")")
    else:
        h.update(repr(value).encode())
    h.update(b";")


def shape_class(inputs: tuple[Any, ...], params: Any) -> str:
    """The ``shape`` field of a key: the inputs' shapes and a digest of the parameters' geometry."""
    h = hashlib.blake2b(digest_size=8)
    _feed(h, params)
    shapes = ",".join("x".join(str(int(s)) for s in a.shape) or "1" for a in inputs)
    return f"{shapes}@{h.hexdigest()}"


def key(rt: Any, op: str, shape: str, dtype: str) -> str:
    return f"{op}|{rt.dialect.name}|{rt.arch()}|{shape}|{dtype}"


def plan(rt: Any, op: str, shape: str, dtype: str) -> OpPlan:
    """The plan of ``op`` for this problem on ``rt``'s device: the stored block, else the default."""
    k = key(rt, op, shape, dtype)
    found = _PLANS.get(k)
    if found is not None:
        return found
    entry = STORE.lookup(k)
    block, tuned = DEFAULT_BLOCK, False
    if entry is not None:
        limit = rt.max_block()
        if entry["block"] <= limit:
            block, tuned = entry["block"], True
        else:
            where = kk_tuning.path()
            warnings.warn(
                f"tuning file {where}: entry {k!r} has block {entry['block']}, more than this device allows "
                f"({limit}); the default plan is used",
                TuningFileWarning,
                stacklevel=3,
            )
    found = OpPlan(op, rt.dialect.name, rt.arch(), shape, dtype, block, tuned)
    _PLANS.put(k, found)
    return found


def store(rt: Any, op: str, shape: str, dtype: str, block: int) -> None:
    """Remember ``block`` for this problem on ``rt``'s device (in memory; on disk too with a cache dir)."""
    k = key(rt, op, shape, dtype)
    STORE.store(k, {"block": int(block)})
    _PLANS.clear()  # the next lookup of any plan sees the store as it is now


def plans() -> list[OpPlan]:
    """The plans in memory, least recently used first."""
    return list(_PLANS.values())


def clear() -> None:
    """Forget the plans in memory and the store's copy of the file (both are reread on next use)."""
    _PLANS.clear()
    STORE.forget()


#: (op, rt, raw exec function, inputs, params, shape, dtype) of each planned call, while :func:`capture` runs
_CAPTURE: contextvars.ContextVar[list[tuple[Any, ...]] | None] = contextvars.ContextVar(
    "specux_op_capture", default=None
)


@contextlib.contextmanager
def capture() -> Iterator[list[tuple[Any, ...]]]:
    """Record the planned calls made inside (autotune finds the parameters and device inputs this way)."""
    seen: list[tuple[Any, ...]] = []
    token = _CAPTURE.set(seen)
    try:
        yield seen
    finally:
        _CAPTURE.reset(token)


def planned(op: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn(rt, inputs, params)`` running with the block of its plan (``fn`` itself when ``op`` is not
    tunable)."""
    if op not in TUNABLE:
        return fn

    @functools.wraps(fn)
    def run(rt: Any, inputs: tuple[Any, ...], params: Any) -> Any:
        shape, dtype = shape_class(inputs, params), inputs[0].dtype
        seen = _CAPTURE.get()
        if seen is not None:
            seen.append((op, rt, fn, inputs, params, shape, dtype))
        with launch.using_block(plan(rt, op, shape, dtype).block):
            return fn(rt, inputs, params)

    return run
