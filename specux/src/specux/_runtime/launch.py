"""Render, compile (through kernelkit's caches) and launch one generated kernel on any device runtime.

Every kernel family of specux (:mod:`specux._codegen.fft_kernels`, ``spectral_kernels``, ``feature_kernels``,
``convolve_kernels``) describes a kernel by a frozen, hashable *spec* and renders it with a pure function
``render(spec, dialect) -> KernelSource``. This module is the one place that turns such a pair into a
kernelkit :class:`~kernelkit.program.Program` (memoised: rendering is pure) and launches it, so each
``*_exec`` module only says which kernels run, in which order, on which buffers.

The one-thread-per-item kernels (specs deriving from :class:`specux._codegen.blocks.Blocked`) run through
:func:`launch_items`, which applies the block of the operation's plan: :func:`using_block` sets it for the
calls inside (the op-level plans of :mod:`specux._runtime.op_tuning`, and autotune's candidates); without
one the spec's own (default) block is used.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import lru_cache
from typing import Any

from kernelkit.dialects import Dialect
from kernelkit.program import KernelSignature, LaunchConfig, Program
from kernelkit.runtime import DeviceRuntime
from specux._codegen.blocks import Blocked, check_block
from specux._codegen.fft_kernels import KernelSource

#: int32 indexing in the kernels: element offsets (in scalars) must stay below this
MAX_INDEX = 2**31 - 1

Render = Callable[[Any, Dialect], KernelSource]

#: the block the current operation's plan chose for its one-thread-per-item kernels (None: the default);
#: a context variable, so that threads and tasks running other operations keep their own
_BLOCK: contextvars.ContextVar[int | None] = contextvars.ContextVar("specux_block", default=None)


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


@contextlib.contextmanager
def using_block(block: int | None) -> Iterator[None]:
    """Run the one-thread-per-item kernels launched inside with ``block`` threads per block (None: their
    default)."""
    token = _BLOCK.set(None if block is None else check_block(block))
    try:
        yield
    finally:
        _BLOCK.reset(token)


def current_block() -> int | None:
    """The block set by the innermost :func:`using_block`, or None."""
    return _BLOCK.get()


def chosen(spec: Blocked) -> Blocked:
    """``spec`` with the block of the plan (:func:`using_block`), or as it is without one."""
    block = _BLOCK.get()
    return spec if block is None or block == spec.block else replace(spec, block=block)


def launch_items(rt: DeviceRuntime, render: Render, spec: Blocked, count: int, args: list[Any]) -> None:
    """:func:`launch` a one-thread-per-item kernel over ``count`` items, in blocks of the plan's choice
    (:func:`using_block`) or of the spec's own."""
    spec = chosen(spec)
    launch(rt, render, spec, groups(count, spec.block), args)


def check_index(public: str, *counts: int) -> None:
    """Refuse work whose scalar counts would overflow the kernels' 32-bit indexing, naming the operation."""
    for count in counts:
        if count > MAX_INDEX:
            raise ValueError(
                f"{public}: {count} values exceed the generated kernels' 32-bit indexing "
                f"(at most {MAX_INDEX}); split the batch into smaller calls"
            )
