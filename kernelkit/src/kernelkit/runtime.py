"""What every device runtime provides, and the compile path they share.

A runtime compiles :class:`~kernelkit.program.Program` objects into :class:`~kernelkit.program.ObjectCode`
(through the memory and disk caches of :mod:`kernelkit.cache`), allocates device buffers, uploads constant
tables once, launches kernels with an explicit :class:`~kernelkit.program.LaunchConfig` and releases
everything in order on :meth:`DeviceRuntime.close`. Callers (specux's plan executor, vidmag's backends) talk
only to this interface, which is why one executor serves every device.

Subclasses implement the ``_``-prefixed methods and the memory / launch methods; the compile path (cache
look-ups, source dumps, the error with the compiler log) lives here once.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from kernelkit import cache
from kernelkit.dialects import Dialect
from kernelkit.program import Kernel, LaunchConfig, ObjectCode, Program


class ForkedProcessError(RuntimeError):
    """A runtime created in a parent process used in a child made by ``fork``: device contexts (CUDA's, PoCL's
    threads, Metal's and Vulkan's queues) do not survive fork, and using one hangs or crashes.

    Parameters
    ----------
    name : str
        The runtime (``"cuda"``, ``"opencl"``, ``"metal"``, ``"vulkan"``); the message names it and says to
        start workers with the ``spawn`` method.

    Examples
    --------
    >>> from kernelkit import ForkedProcessError
    >>> str(ForkedProcessError("opencl")).startswith("kernelkit: this process was forked")
    True
    """

    def __init__(self, name: str) -> None:
        api = {"cuda": "CUDA", "opencl": "OpenCL", "metal": "Metal", "vulkan": "Vulkan"}.get(name, name)
        super().__init__(
            f"kernelkit: this process was forked from one that had already initialised {api}, and a device "
            "context does not survive fork. Start the worker processes with the 'spawn' method "
            "(multiprocessing.set_start_method('spawn'), or torch's DataLoader(..., "
            "multiprocessing_context='spawn')), or use the device only in the workers, not before forking"
        )


#: compiled objects kept per device (an object is a few kB to a few hundred kB of binary)
MAX_OBJECTS = 512
#: device memory for constant tables (twiddles, filters, tap weights) per device; least recently used go first
MAX_TABLE_BYTES = 256 * 2**20

# Runtimes still open at exit are closed in reverse order of creation, before the interpreter tears down the
# device API's modules: a driver object released during module teardown is what crashes at exit.
_open: weakref.WeakValueDictionary[int, DeviceRuntime] = weakref.WeakValueDictionary()
_open_lock = threading.Lock()


@atexit.register
def _close_all() -> None:
    with _open_lock:
        runtimes = [_open[k] for k in sorted(_open.keys(), reverse=True) if k in _open]
    for rt in runtimes:
        if rt.pid != os.getpid():  # a forked child's copies of its parent's runtimes: waiting on them hangs
            continue
        try:
            rt.close()
        except Exception:  # never fail the interpreter's exit
            pass


def open_runtimes() -> list[DeviceRuntime]:
    """Every runtime of this process that is not closed, oldest first (e.g. to clear their caches)."""
    with _open_lock:
        runtimes = [_open.get(k) for k in sorted(_open.keys())]
    return [rt for rt in runtimes if rt is not None and not rt.closed]


class DeviceRuntime:
    """Base of the CUDA, OpenCL, Metal and Vulkan runtimes."""

    #: the source language this device compiles
    dialect: Dialect
    #: "cuda", "opencl", "metal" or "vulkan"
    name: str = ""
    #: compiler options every program gets (before the program's own); part of the cache key
    options: tuple[str, ...] = ()
    #: suffix of cached binaries on disk ("" disables the disk cache for this runtime)
    binary_suffix: str = ""

    _counter = 0

    def __init__(self) -> None:
        self._objects = cache.LRU(MAX_OBJECTS)
        self._tables = cache.LRU(1024, MAX_TABLE_BYTES)
        self.closed = False
        #: the process that created the device objects (a forked child must not use them)
        self.pid = os.getpid()
        with _open_lock:
            DeviceRuntime._counter += 1
            _open[DeviceRuntime._counter] = self

    # -- identification (part of the cache key) ---------------------------------------------------------

    def compiler_version(self) -> str:
        raise NotImplementedError

    def arch(self) -> str:
        raise NotImplementedError

    def max_block(self) -> int:
        """The most threads one block (work-group, threadgroup) may have on this device.

        1024 unless a runtime knows better: every CUDA GPU since compute capability 2.0 and every Apple GPU
        allow that; OpenCL and Vulkan devices report theirs. A kernel may be held to fewer by its registers
        (a launch then fails with the runtime's error).
        """
        return 1024

    # -- programs ----------------------------------------------------------------------------------------

    def compile(self, program: Program) -> ObjectCode:
        """The compiled object of ``program``, built at most once per process and read from disk when cached.

        Raises :class:`~kernelkit.cache.KernelCompileError` with the compiler's log and the path of the dumped
        source when the compiler rejects it.
        """
        self._check_open()
        if program.dialect is not self.dialect:
            raise ValueError(
                f"a {self.name} device compiles {self.dialect.name} source; program {program.name!r} is "
                f"written in {program.dialect.name}"
            )
        return self._objects.get_or_make(program, lambda: (self._compile(program), 0))

    def _compile(self, program: Program) -> ObjectCode:
        options = (*self.options, *program.options)
        key = cache.cache_key(program.source, options, self.compiler_version(), self.arch())
        suffix = self.dialect.suffix
        cache.dump_source(program.source, program.name, key, suffix)
        if self.binary_suffix:
            binary = cache.disk_get(key, self.binary_suffix)
            if binary is not None:
                try:
                    handles, module = self._load(binary, program)
                    return ObjectCode(self, program, handles, binary, module)
                except Exception:  # checksummed but refused (another driver build): rebuild, overwrite
                    cache.discard(key, self.binary_suffix)
        ok, result, log = self._build(program)
        if not ok:
            path = cache.dump_source(program.source, program.name, key, suffix, force=True)
            raise cache.KernelCompileError(self.dialect.name, program.name, log, path)
        handles, module, binary = result
        if self.binary_suffix and binary:
            cache.disk_put(key, self.binary_suffix, binary)
        return ObjectCode(self, program, handles, binary, module)

    def _build(self, program: Program) -> tuple[bool, Any, str]:
        """Compile from source: ``(True, (handles, module, binary or None), log)`` or ``(False, None, log)``.

        ``handles`` maps each kernel name of ``program.kernels`` to the device API's kernel handle.
        """
        raise NotImplementedError

    def _load(self, binary: bytes, program: Program) -> tuple[dict[str, Any], Any]:
        """``(handles, module)`` from a cached binary (raises when the driver refuses it)."""
        raise NotImplementedError

    def kernel(self, program: Program, name: str) -> Kernel:
        """Shorthand: kernel ``name`` of ``program``, compiled on first use."""
        return self.compile(program).kernel(name)

    # -- memory ------------------------------------------------------------------------------------------

    def table(self, key: Any, make: Callable[[], np.ndarray]) -> Any:
        """A constant host table on the device, uploaded once and kept while recently used."""

        def upload() -> tuple[Any, int]:
            host = np.ascontiguousarray(make())
            return self.upload(host), host.nbytes

        return self._tables.get_or_make(key, upload)

    def alloc(self, nbytes: int) -> Any:
        raise NotImplementedError

    def upload(self, host: np.ndarray) -> Any:
        raise NotImplementedError

    def download(self, buf: Any, out: np.ndarray) -> np.ndarray:
        """Copy a device buffer into ``out`` (blocking) and return ``out``."""
        raise NotImplementedError

    # -- execution ---------------------------------------------------------------------------------------

    def launch(self, kernel: Kernel, config: LaunchConfig, args: list[Any]) -> None:
        """Enqueue ``kernel`` over ``config`` with ``args`` in parameter order."""
        raise NotImplementedError

    def synchronize(self) -> None:
        """Wait until every launch enqueued so far has finished."""

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Group the launches inside into one submission, complete on exit where the device needs that
        (Metal, Vulkan).

        OpenCL's in-order queue and CUDA's stream already order launches, so the default does nothing.
        """
        yield

    # -- lifetime ----------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.pid != os.getpid():
            raise ForkedProcessError(self.name)
        if self.closed:
            raise RuntimeError(f"this {self.name} runtime was closed")

    def usable(self) -> DeviceRuntime:
        """``self`` after :meth:`_check_open` (the runtime accessors return through this, so a forked child
        gets :class:`ForkedProcessError` instead of a hang)."""
        self._check_open()
        return self

    def close(self) -> None:
        """Wait for the device to finish, then release compiled objects, tables and the device's own objects
        in that order. Idempotent; safe after an interrupted call (the queue is drained first)."""
        if self.closed:
            return
        self.closed = True
        if self.pid != os.getpid():  # the parent's objects: forget them, never wait on them
            return
        try:
            self.synchronize()
        finally:
            self._tables.clear()
            self._objects.clear()
            self._release()

    def _release(self) -> None:
        """Release the device API's objects (queues, contexts); called once by :meth:`close`."""

    def clear_caches(self) -> None:
        self._objects.clear()
        self._tables.clear()
