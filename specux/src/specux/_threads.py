"""Threads of the CPU backend: limiting BLAS to one thread around small matrix products (through
threadpoolctl, when it is installed), and one shared pool for work split into independent blocks.

BLAS thread counts are process-wide. Calls that overlap in several threads share one limit: the first to enter
sets it, the last to leave restores the original count, so concurrent callers never leave the process limited.
While a limit is active, BLAS calls made by other threads of the process also run on one thread (slower for
them, never different results).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import os
import threading
from collections.abc import Callable, Hashable, Iterator
from typing import Any

_lock = threading.Lock()
_active = 0
_limiter: Any = None


@functools.lru_cache(maxsize=1)
def _controller() -> Any:
    try:
        import threadpoolctl
    except ImportError:
        return None
    return threadpoolctl.ThreadpoolController()


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the enclosed matrix products on one BLAS thread; does nothing without ``threadpoolctl``.

    Results are the same either way; only the time changes.
    """
    global _active, _limiter
    controller = _controller()
    if controller is None:
        yield
        return
    with _lock:
        if _active == 0:
            _limiter = controller.limit(limits=1, user_api="blas")
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                _limiter.restore_original_limits()
                _limiter = None


_POOL_PREFIX = "specux-cpu"


@functools.cache
def pool() -> concurrent.futures.ThreadPoolExecutor:
    """One worker per core, shared by the CPU kernels that split their work into independent blocks."""
    return concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix=_POOL_PREFIX)


def in_pool() -> bool:
    """Whether this thread is a worker of :func:`pool`: work it hands to the pool and waits for could wait for
    a worker forever (all of them waiting likewise), so such work runs on this thread instead."""
    return threading.current_thread().name.startswith(_POOL_PREFIX)


def can_fan_out() -> bool:
    """Whether work may be handed to :func:`pool` and waited for: there are several cores, and this thread is
    not one of the pool's own workers (see :func:`in_pool`)."""
    return (os.cpu_count() or 1) > 1 and not in_pool()


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
