"""What every device runtime provides to the plan executor, and the caches they share.

A runtime compiles :class:`~specux._codegen.fft_kernels.KernelSource` objects (through the disk / memory cache
of :mod:`.cache`), allocates device buffers, uploads constant tables once and launches kernels with arguments
in parameter order. The plan executor (:mod:`.fft_exec`) only talks to this interface, which is why one
executor serves OpenCL, CUDA and Metal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import numpy as np

from specux._codegen import fft_kernels
from specux._codegen.dialects import Dialect
from specux._codegen.fft_kernels import KernelSource
from specux._runtime import cache

#: compiled kernels kept per device (a kernel is a few kB to a few hundred kB of binary)
MAX_KERNELS = 512
#: device memory for constant tables (twiddles, chirps, filters) per device, least recently used first out
MAX_TABLE_BYTES = 256 * 2**20


@lru_cache(maxsize=2048)
def render(spec: object, dialect: Dialect) -> KernelSource:
    """Generated source of ``spec`` (memoised: rendering is pure)."""
    return fft_kernels.render(spec, dialect)


class DeviceRuntime:
    """Base of the OpenCL, CUDA and Metal runtimes. Subclasses implement the ``_``-prefixed methods."""

    dialect: Dialect
    #: compiler options, part of the cache key
    options: tuple[str, ...] = ()
    #: suffix of cached binaries on disk ("" disables the disk cache for this runtime)
    binary_suffix: str = ""

    def __init__(self) -> None:
        self._kernels = cache.LRU(MAX_KERNELS)
        self._tables = cache.LRU(1024, MAX_TABLE_BYTES)

    # -- identification (part of the cache key) ---------------------------------------------------------

    def compiler_version(self) -> str:
        raise NotImplementedError

    def arch(self) -> str:
        raise NotImplementedError

    # -- kernels -----------------------------------------------------------------------------------------

    def kernel(self, spec: object) -> tuple[Any, KernelSource]:
        """(compiled kernel handle, its source) for a kernel spec, compiling at most once per process."""
        ks = render(spec, self.dialect)
        handle = self._kernels.get_or_make((spec, ks.source), lambda: (self.compile(ks), 0))
        return handle, ks

    def compile(self, ks: KernelSource) -> Any:
        key = cache.cache_key(ks.source, self.options, self.compiler_version(), self.arch())
        cache.dump_source(ks.source, ks.name, key, self.dialect.suffix)
        if self.binary_suffix:
            binary = cache.disk_get(key, self.binary_suffix)
            if binary is not None:
                try:
                    return self._load(binary, ks)
                except Exception:  # a damaged or foreign entry: rebuild and overwrite it
                    pass
        ok, result, log = self._build(ks)
        if not ok:
            path = cache.dump_source(ks.source, ks.name, key, self.dialect.suffix, force=True)
            raise cache.KernelCompileError(self.dialect.name, ks.name, log, path)
        handle, binary = result
        if self.binary_suffix and binary:
            cache.disk_put(key, self.binary_suffix, binary)
        return handle

    def _build(self, ks: KernelSource) -> tuple[bool, Any, str]:
        """Compile from source: (True, (handle, binary bytes or None), log) or (False, None, log)."""
        raise NotImplementedError

    def _load(self, binary: bytes, ks: KernelSource) -> Any:
        raise NotImplementedError

    # -- memory ------------------------------------------------------------------------------------------

    def table(self, key: tuple, make: Callable[[], np.ndarray]) -> Any:
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

    def synchronize(self) -> None:
        """Wait until every launch enqueued so far has finished."""

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Group the launches inside into one submission, complete on exit where the device needs that
        (Metal).

        OpenCL's in-order queue and CUDA's stream already order launches, so the default does nothing.
        """
        yield

    def launch(self, handle: Any, ks: KernelSource, groups: int, args: list[Any]) -> None:
        """Run ``groups`` blocks of ``ks.block`` threads with ``args`` in parameter order."""
        raise NotImplementedError

    def clear_caches(self) -> None:
        self._kernels.clear()
        self._tables.clear()
