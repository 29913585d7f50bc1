"""Threads of the CPU backend: limiting BLAS to one thread around small matrix products (through
threadpoolctl, when it is installed), and one shared pool for work split into independent blocks.

BLAS thread counts are process-wide. Calls that overlap in several threads share one limit: the first to enter
sets it, the last to leave restores the original count, so concurrent callers never leave the process limited.
While a limit is active, BLAS calls made by other threads of the process also run on one thread (slower for
them, and their bits can change: see :func:`single_threaded_blas`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import os
import sys
import threading
from collections.abc import Callable, Hashable, Iterator
from typing import Any

_lock = threading.Lock()
_active = 0
_limiter: Any = None


_controller_of: tuple[int, Any] | None = None


def _controller() -> Any:
    """threadpoolctl's controller of the BLAS libraries loaded now, or None without threadpoolctl.

    A controller knows the libraries loaded when it was made: one made before an import that brings its own
    BLAS (OpenCV's wheel bundles an OpenBLAS) would leave that one on all its threads. Building a controller
    costs about a millisecond (it walks the loaded libraries), so it is rebuilt only when the set of imported
    modules has grown, which is how a Python process loads a native library.
    """
    global _controller_of
    modules = len(sys.modules)
    if _controller_of is None or _controller_of[0] != modules:
        try:
            import threadpoolctl
        except ImportError:
            _controller_of = (len(sys.modules), None)
        else:
            _controller_of = (len(sys.modules), threadpoolctl.ThreadpoolController())
    return _controller_of[1]


def _release_blas_control() -> None:
    """Drop threadpoolctl's claim on OpenBLAS's thread count, whichever thread holds it.

    For an OpenBLAS with its own (pthreads) thread pool, threadpoolctl 3.8 lets one thread change the count:
    the first to set a limit, until it ends or leaves a ``with`` block; the calls of every other thread
    silently do nothing. :func:`single_threaded_blas` sets and restores the count outside any ``with`` block,
    often from two different threads: without this, its first caller (the main thread, say, which never ends)
    kept the claim, the limit did nothing on every other thread (pool workers included), and there the
    products ran on several threads and rounded differently. Dropped before each change, so that the change
    takes effect, and after it, so that no thread keeps the claim from other code of the process.
    """
    import threadpoolctl

    # before threadpoolctl 3.8 there is no claim (and no function to drop it)
    clear = getattr(getattr(threadpoolctl, "OpenBLASController", None), "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the enclosed matrix products on one BLAS thread; does nothing without ``threadpoolctl``.

    The bits can differ from those of a product on several threads (OpenBLAS runs other kernels or splits the
    work otherwise), so code whose results must not depend on the calling thread runs every one of its
    products under this limit. The limit holds whichever thread enters, for libraries whose count is
    process-wide (OpenBLAS's own thread pool, MKL, BLIS); for an OpenBLAS on OpenMP, whose count is the
    calling thread's, it holds on the entering thread only.
    """
    global _active, _limiter
    controller = _controller()
    if controller is None:
        yield
        return
    with _lock:
        if _active == 0:
            _release_blas_control()
            try:
                _limiter = controller.limit(limits=1, user_api="blas")
            finally:
                _release_blas_control()
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                _release_blas_control()
                try:
                    _limiter.restore_original_limits()
                finally:
                    _limiter = None
                    _release_blas_control()


_POOL_PREFIX = "specux-cpu"


@functools.cache
def cores() -> int:
    """Cores of this machine (``os.cpu_count()``, once: it reads the system each time, which the size
    estimates of every call would otherwise pay)."""
    return os.cpu_count() or 1


@functools.cache
def pool() -> concurrent.futures.ThreadPoolExecutor:
    """One worker per core, shared by the CPU kernels that split their work into independent blocks."""
    return concurrent.futures.ThreadPoolExecutor(cores(), thread_name_prefix=_POOL_PREFIX)


def _after_fork_in_child() -> None:
    """A forked child (a data loader's worker, say) has none of the parent's threads: the parent's pool would
    take its work and never run it (its dead workers count as present), and a lock some other thread held at
    the fork would stay held. The child starts a pool of its own on first use, with a fresh lock."""
    global _lock
    _lock = threading.Lock()
    pool.cache_clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def in_pool() -> bool:
    """Whether this thread is a worker of :func:`pool`: work it hands to the pool and waits for could wait for
    a worker forever (all of them waiting likewise), so such work runs on this thread instead."""
    return threading.current_thread().name.startswith(_POOL_PREFIX)


def can_fan_out() -> bool:
    """Whether work may be handed to :func:`pool` and waited for: there are several cores, and this thread is
    not one of the pool's own workers (see :func:`in_pool`)."""
    return cores() > 1 and not in_pool()


_local = threading.local()


def per_thread(key: Hashable, make: Callable[[], Any]) -> Any:
    """This thread's object for ``key``, made by ``make()`` on its first use in the thread (for stateful
    objects that threads must not share, such as resampler streams)."""
    objects = getattr(_local, "objects", None)
    if objects is None:
        objects = _local.objects = {}
    if key not in objects:
        objects[key] = make()
    return objects[key]


def for_each(fn, jobs: list) -> None:
    """``fn(job)`` for every job, on the shared pool when there are several jobs and cores, else in turn."""
    if len(jobs) > 1 and can_fan_out():
        for _ in pool().map(fn, jobs):
            pass
    else:
        for job in jobs:
            fn(job)
