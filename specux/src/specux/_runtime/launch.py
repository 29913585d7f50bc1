"""Render, compile (through kernelkit's caches) and launch one generated kernel on any device runtime.

Every kernel family of specux (:mod:`specux._codegen.fft_kernels`, ``spectral_kernels``, ``feature_kernels``,
``convolve_kernels``) describes a kernel by a frozen, hashable *spec* and renders it with a pure function
``render(spec, dialect) -> KernelSource``. This module is the one place that turns such a pair into a
kernelkit :class:`~kernelkit.program.Program` (memoised: rendering is pure) and launches it, so each
``*_exec`` module only says which kernels run, in which order, on which buffers.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from kernelkit.dialects import Dialect
from kernelkit.program import KernelSignature, LaunchConfig, Program
from kernelkit.runtime import DeviceRuntime
from specux._codegen.fft_kernels import KernelSource

#: int32 indexing in the kernels: element offsets (in scalars) must stay below this
MAX_INDEX = 2**31 - 1

Render = Callable[[Any, Dialect], KernelSource]


def groups(count: int, per_group: int) -> int:
    """Blocks of ``per_group`` threads that cover ``count`` work items (at least one)."""
    return max(1, -(-int(count) // int(per_group)))


@lru_cache(maxsize=4096)
def program(render: Render, spec: Any, dialect: Dialect) -> Program:
    """The kernelkit program of ``render(spec, dialect)`` (memoised per spec and dialect)."""
    ks = render(spec, dialect)
    return Program(ks.source, dialect, (KernelSignature(ks.name, ks.params, (ks.block,)),), name=ks.name)


def run(rt: DeviceRuntime, prog: Program, n_groups: int, args: list[Any]) -> None:
    """Run ``n_groups`` blocks of the one kernel of ``prog`` (compiled on first use) with ``args`` in
    parameter order."""
    signature = prog.kernels[0]
    rt.launch(rt.kernel(prog, signature.name), LaunchConfig((int(n_groups),), signature.block), args)


def launch(rt: DeviceRuntime, render: Render, spec: Any, n_groups: int, args: list[Any]) -> None:
    """:func:`run` the program of ``render(spec, rt.dialect)``."""
    run(rt, program(render, spec, rt.dialect), n_groups, args)


def check_index(public: str, *counts: int) -> None:
    """Refuse work whose scalar counts would overflow the kernels' 32-bit indexing, naming the operation."""
    for count in counts:
        if count > MAX_INDEX:
            raise ValueError(
                f"{public}: {count} values exceed the generated kernels' 32-bit indexing "
                f"(at most {MAX_INDEX}); split the batch into smaller calls"
            )
