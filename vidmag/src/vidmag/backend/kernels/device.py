"""What a device layer gives the shared host code: arrays, launches, scratch arrays and tables.

:class:`KernelDevice` holds everything that is the same on every kernelkit runtime (the kernels of
:mod:`vidmag.backend.kernels.templates` compiled once per device in its dialect, the launch over an exact
number of work items, scratch arrays kept between calls, the table cache); a device module
(``vulkan/device.py``, ``cuda/device.py``, ``metal/device.py``) subclasses it with the few things its runtime
does its own way: how a host array gets into a buffer and back, and whether launches are recorded into
batches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelkit.dialects import Dialect
from kernelkit.program import Kernel, LaunchConfig
from vidmag.backend.kernels.templates import MAX_GROUPS, cover, cover_grid, program

__all__ = ["TABLE_BYTES", "BatchedDevice", "DeviceArray", "KernelDevice"]

#: Bytes of tables (tap tables, band-pass bases) kept on the device.
TABLE_BYTES = 64 * 2**20


class DeviceArray:
    """A device array: a buffer of the device's runtime, a shape and a dtype (float32 or uint8, the bytes held
    four to a 32-bit word). Its buffer is its own; :meth:`reshape` shares it.

    ``get()`` copies it to the host (waiting for the launches recorded so far).
    """

    def __init__(self, device: KernelDevice, shape: tuple[int, ...], dtype: Any, buffer: Any = None) -> None:
        self.device = device
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.size = int(np.prod(self.shape))
        self.nbytes = self.size * self.dtype.itemsize
        self.buffer = buffer if buffer is not None else device.alloc(self.nbytes)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def reshape(self, *shape: int) -> DeviceArray:
        """The same buffer under another shape of the same size."""
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape
        if int(np.prod(shape)) != self.size:
            raise ValueError(f"cannot reshape an array of {self.size} values to {shape}")
        return type(self)(self.device, shape, self.dtype, self.buffer)

    def get(self) -> np.ndarray:
        return self.device.download(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.shape} {self.dtype} on {self.device.device_name}>"


class KernelDevice:
    """One device of a kernelkit runtime with vidmag's kernels on it.

    Subclasses set :attr:`dialect`, :attr:`array_type` and :attr:`limit`, and implement :meth:`_write` and
    :meth:`_read`; where the runtime records launches into batches they derive from
    :class:`BatchedDevice` instead.

    Parameters
    ----------
    runtime : kernelkit.runtime.DeviceRuntime
        The runtime whose device this is.
    max_bytes : int
        The largest buffer a kernel may bind (at most 2 GiB - 4, so 32-bit indices reach every value).
    """

    #: the dialect the kernels are emitted in
    dialect: Dialect
    #: the arrays this device makes
    array_type: type[DeviceArray] = DeviceArray
    #: what bounds :attr:`max_bytes`, for error messages
    limit = "32-bit indices"

    def __init__(self, runtime: Any, max_bytes: int) -> None:
        self.runtime = runtime
        self._kernels: dict[str, Kernel] = {}
        self._scratch: dict[str, DeviceArray] = {}
        self._tables: dict[tuple, Any] = {}
        self._table_bytes = 0
        self.max_bytes = min(int(max_bytes), 2**31 - 4)

    @property
    def device_name(self) -> str:
        return str(getattr(self.runtime, "device_name", self.runtime.name))

    # --- kernels ----------------------------------------------------------------------------------------
    def kernel(self, name: str) -> Kernel:
        """Kernel ``name`` of :data:`~vidmag.backend.kernels.templates.KERNELS`, compiled for this device."""
        kernel = self._kernels.get(name)
        if kernel is None:
            kernel = self._kernels[name] = self.runtime.kernel(program(name, self.dialect), name)
        return kernel

    def launch(self, name: str, total: int, *args: Any) -> None:
        """Launch kernel ``name`` over ``total`` work items (nothing when 0).

        ``args`` in parameter order, without the trailing ``total``: arrays or buffers for pointers, numbers
        for scalars.
        """
        if total <= 0:
            return
        kernel = self.kernel(name)
        bound = [a.buffer if isinstance(a, DeviceArray) else a for a in args]
        self._enqueue(kernel, cover(total), [*bound, int(total)])

    def launch_grid(self, name: str, xs: int, rows: int, frames: int, *args: Any) -> None:
        """Launch kernel ``name`` of :data:`~vidmag.backend.kernels.templates.GRID_KERNELS` over ``xs`` items
        along each of ``rows`` rows of ``frames`` frames (nothing when any is 0), in launches of at most
        :data:`~vidmag.backend.kernels.templates.MAX_GROUPS` frames.

        ``args`` in parameter order, without the trailing ``f0, xs``.
        """
        if xs <= 0 or rows <= 0 or frames <= 0:
            return
        kernel = self.kernel(name)
        bound = [a.buffer if isinstance(a, DeviceArray) else a for a in args]
        for f0 in range(0, frames, MAX_GROUPS):
            count = min(MAX_GROUPS, frames - f0)
            self._enqueue(kernel, cover_grid(xs, rows, count), [*bound, f0, int(xs)])

    def _enqueue(self, kernel: Kernel, config: LaunchConfig, args: list[Any]) -> None:
        kernel.launch(config, *args)

    def flush(self) -> None:
        """Send the launches recorded so far to the device (nothing to do where launches are not batched)."""

    def synchronize(self) -> None:
        """Wait for every launch so far (nothing to wait for once the runtime is closed)."""
        if self.runtime.closed:
            return
        self.flush()
        self.runtime.synchronize()

    # --- memory -----------------------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> Any:
        if nbytes > self.max_bytes:
            raise ValueError(
                f"an array of {nbytes} bytes does not fit one buffer of {self.device_name} "
                f"(at most {self.max_bytes} bytes, {self.limit}): use smaller frames or batches"
            )
        # whole 32-bit words: the kernels read and write bytes four at a time
        return self.runtime.alloc(-(-int(nbytes) // 4) * 4)

    def empty(self, shape: tuple[int, ...], dtype: Any = np.float32) -> DeviceArray:
        return self.array_type(self, shape, dtype)

    def to_device(self, host: np.ndarray) -> DeviceArray:
        host = np.ascontiguousarray(host)
        if host.dtype not in (np.float32, np.uint8):
            host = host.astype(np.float32)
        out = self.empty(host.shape, host.dtype)
        self.write(out, host)
        return out

    def write(self, array: DeviceArray, host: np.ndarray) -> None:
        """Copy contiguous host values into the start of ``array`` (after the launches recorded so far)."""
        self.flush()
        if host.nbytes:
            self._write(array.buffer, np.ascontiguousarray(host))

    def download(self, array: DeviceArray, out: np.ndarray | None = None) -> np.ndarray:
        """``array`` on the host (after the launches recorded so far): in ``out`` when given (a C-contiguous
        array of its shape and dtype), else in a fresh array."""
        self.flush()
        if out is None:
            out = np.empty(array.shape, array.dtype)
        if out.nbytes:
            self._read(array.buffer, out)
        return out

    def _write(self, buffer: Any, host: np.ndarray) -> None:
        raise NotImplementedError

    def _read(self, buffer: Any, out: np.ndarray) -> None:
        raise NotImplementedError

    def _fill_table(self, buffer: Any, host: np.ndarray) -> None:
        """Write a new table into its fresh buffer (a device may do it without ending a batch)."""
        self.write(self.array_type(self, (host.nbytes,), np.uint8, buffer), host)

    def scratch(self, key: str, shape: tuple[int, ...], dtype: Any = np.float32) -> DeviceArray:
        """An array kept between calls under ``key`` (made again when the shape or dtype changes).

        Reuse is safe: launches run in order (one stream, or a batch ordered by barriers), and a host write
        waits for the launches before it.
        """
        current = self._scratch.get(key)
        if current is None or current.shape != tuple(shape) or current.dtype != np.dtype(dtype):
            self._scratch.pop(key, None)
            current = self._scratch[key] = self.empty(tuple(shape), dtype)
        return current

    def constant(self, host: np.ndarray, dtype: Any) -> Any:
        """A small read-only table (tap indices and weights, band-pass bases) on the device, cached by
        content (the least recently used go first past :data:`TABLE_BYTES`)."""
        host = np.ascontiguousarray(host, dtype=dtype)
        key = (host.dtype.str, host.shape, host.tobytes())
        entry = self._tables.pop(key, None)
        if entry is None:
            buffer = self.alloc(host.nbytes)
            self._fill_table(buffer, host)
            entry = (buffer, host.nbytes)
            self._table_bytes += host.nbytes
            while self._tables and self._table_bytes > TABLE_BYTES:
                _, nbytes = self._tables.pop(next(iter(self._tables)))
                self._table_bytes -= nbytes
        self._tables[key] = entry  # most recently used last
        return entry[0]

    def dummy(self) -> Any:
        """A one-word buffer for a pointer parameter a launch does not read."""
        return self.constant(np.zeros(1, np.float32), np.float32)


class BatchedDevice(KernelDevice):
    """A :class:`KernelDevice` whose runtime records launches into batches (vulkan, metal): launches go into
    one open ``runtime.batch()``, sent when the host next needs a result (a download, a write into a buffer,
    :meth:`synchronize`).

    Parameters
    ----------
    runtime : kernelkit.runtime.DeviceRuntime
        The runtime whose device this is (with ``batch()``, a context manager that sends on exit).
    max_bytes : int
        The largest buffer a kernel may bind.

    See Also
    --------
    vidmag.backend.vulkan.device.Device, vidmag.backend.metal.device.MetalDevice

    Examples
    --------
    >>> from vidmag.backend.kernels.device import BatchedDevice
    >>> BatchedDevice.__name__
    'BatchedDevice'
    """

    #: whether leaving a batch already waits for its launches (Metal's committed command buffer does, so
    #: :meth:`synchronize` has no runtime queue left to wait on)
    flush_waits = False

    def __init__(self, runtime: Any, max_bytes: int) -> None:
        super().__init__(runtime, max_bytes)
        self._batch: Any = None

    def _enqueue(self, kernel: Kernel, config: LaunchConfig, args: list[Any]) -> None:
        if self._batch is None:
            self._batch = self.runtime.batch()
            self._batch.__enter__()
        try:
            kernel.launch(config, *args)
        except BaseException:
            # what this batch recorded before still runs (flush), so nothing in flight is left behind
            self.flush()
            raise

    def flush(self) -> None:
        """Send the launches recorded so far (submit / commit the batch) and wait for them."""
        batch, self._batch = self._batch, None
        if batch is not None:
            batch.__exit__(None, None, None)

    def synchronize(self) -> None:
        if self.runtime.closed:
            self._batch = None
            return
        if self.flush_waits:
            self.flush()
        else:
            super().synchronize()
