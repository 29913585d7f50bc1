"""Threads per block of the one-thread-per-item kernels beyond the FFT: a plan choice, carried by the spec.

Most kernels of the families beyond the FFT (``spectral_kernels``, ``feature_kernels``, ``cq_kernels``,
``convolve_kernels``) give each thread one output item, found from the block index and the thread's index in
the block, and loop over nothing that depends on the block: their results do not depend on how many threads
a block has, so that number is a free choice of the plan (:mod:`specux._runtime.op_tuning` tunes it per
operation and problem size). Their specs derive from :class:`Blocked`; the default, :data:`DEFAULT_BLOCK`,
renders the same source as before the choice existed.

The tiled transposes (stft's ``frame``, istft's ``spectrum_t``) take any block of the choices too: a
32 x 32 tile moved in rows of ``block // 32`` threads, one block per tile whatever its size. Kernels that
assume their block keep a fixed one and do not derive from :class:`Blocked`: the shared-memory reductions
(``reduce_max``, ``reduce_clamped``: a tree over ``BLOCK`` slots, chunks of the input sized by it, and a
sum whose order would change with the block).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from kernelkit.dialects import Dialect

#: threads per block of every kernel beyond the FFT unless a plan chooses otherwise
DEFAULT_BLOCK = 256
#: the largest block any target allows (CUDA, Metal; OpenCL devices say theirs, at least this on GPUs)
MAX_BLOCK = 1024
#: the block sizes a plan may choose: powers of two, a warp / SIMD group at least
CHOICES = (32, 64, 128, 256, 512, 1024)


def check_block(block: object, name: str = "block") -> int:
    """``block`` as an int when it is one of :data:`CHOICES`, else ValueError naming ``name``."""
    if isinstance(block, bool) or not isinstance(block, int) or block not in CHOICES:
        raise ValueError(f"{name} must be one of {list(CHOICES)} (a power of two); got {block!r}")
    return block


@dataclass(frozen=True)
class Blocked:
    """Base of the specs whose kernels take any block of :data:`CHOICES` (a keyword-only field, last)."""

    block: int = field(default=DEFAULT_BLOCK, kw_only=True)

    def __post_init__(self) -> None:
        check_block(self.block, f"{type(self).__name__}.block")


def index(d: Dialect, block: int) -> str:
    """The global index of the calling thread, one item per thread, in blocks of ``block``."""
    return f"{d.group_id} * {block} + {d.local_id}"


def variants(specs: list[object], choices: tuple[int, ...] = (64, 1024)) -> list[object]:
    """The first spec of every :class:`Blocked` class in ``specs`` again with each non-default block of
    ``choices``: what a cover adds so that the compile checks see the tuned kernels too."""
    firsts: dict[type, object] = {}
    for spec in specs:
        if isinstance(spec, Blocked) and type(spec) not in firsts:
            firsts[type(spec)] = spec
    return [replace(s, block=b) for s in firsts.values() for b in choices if b != DEFAULT_BLOCK]
