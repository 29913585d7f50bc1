"""The vulkan backend's view of a kernelkit Vulkan runtime: arrays, launches in batches, scratch and tables.

kernelkit owns the device (its probe builds and runs a kernel; ``KERNELKIT_VULKAN_DEVICE`` pins one), the
compiler (GLSL -> SPIR-V with glslang, cached on disk), storage buffers, push constants and submissions. What
stays here is vidmag's: :class:`VkArray` (a buffer with a shape and a dtype: float32, or uint8 frames held
four bytes to a 32-bit word), launches of the kernels of :mod:`vidmag.backend.vulkan.kernels` over an exact
number of work items, and the batching: launches are recorded into one open ``runtime.batch()`` and submitted
together when the host next needs a result (a download, a write into a buffer, :meth:`Device.synchronize`),
so a batch of frames through a whole pipeline is one submission.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelkit.program import Kernel, LaunchConfig
from kernelkit.vulkan import VulkanBuffer, VulkanRuntime, default_runtime
from vidmag.backend.vulkan.kernels import GROUP, program

#: Bytes of tables (tap tables, band-pass bases) kept on the device.
TABLE_BYTES = 64 * 2**20

#: The most groups along one axis of a dispatch every Vulkan device takes (maxComputeWorkGroupCount).
MAX_GROUPS = 65535


def cover(total: int) -> LaunchConfig:
    """Groups of :data:`GROUP` covering ``total`` work items: along x up to 65,535 groups, then in y rows (the
    kernels index ``y * (groups along x) * GROUP + x`` and skip the items past ``total``)."""
    groups = max(1, -(-int(total) // GROUP))
    gx = min(groups, MAX_GROUPS)
    return LaunchConfig((gx, -(-groups // gx)), (GROUP, 1))


class VkArray:
    """A device array: a storage buffer, a shape and a dtype (float32 or uint8). Its buffer is its own.

    ``get()`` copies it to the host (waiting for the launches recorded so far).
    """

    def __init__(
        self, device: Device, shape: tuple[int, ...], dtype: Any, buffer: VulkanBuffer | None = None
    ) -> None:
        self.device = device
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.size = int(np.prod(self.shape))
        self.nbytes = self.size * self.dtype.itemsize
        self.buffer = buffer if buffer is not None else device.alloc(self.nbytes)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def reshape(self, *shape: int) -> VkArray:
        """The same buffer under another shape of the same size."""
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape
        if int(np.prod(shape)) != self.size:
            raise ValueError(f"cannot reshape an array of {self.size} values to {shape}")
        return VkArray(self.device, shape, self.dtype, self.buffer)

    def get(self) -> np.ndarray:
        return self.device.download(self)

    def __repr__(self) -> str:
        return f"<VkArray {self.shape} {self.dtype} on {self.device.runtime.device_name}>"


class Device:
    """One Vulkan device: vidmag's kernels on it, batched launches, arrays, scratch arrays and tables.

    Parameters
    ----------
    runtime : kernelkit.vulkan.VulkanRuntime, optional
        By default kernelkit's process-wide runtime on the device its probe chose.
    """

    def __init__(self, runtime: VulkanRuntime | None = None) -> None:
        self.runtime = runtime if runtime is not None else default_runtime()
        self._kernels: dict[str, Kernel] = {}
        self._batch: Any = None
        self._scratch: dict[str, VkArray] = {}
        self._tables: dict[tuple, VulkanBuffer] = {}
        self._table_bytes = 0
        #: the largest buffer a kernel may bind, in bytes: the device's maxStorageBufferRange (128 MiB on
        #: lavapipe), and under 2 GiB so that 32-bit indices reach every value
        self.max_bytes = min(int(self.runtime.max_buffer_range), 2**31 - 4)

    # --- kernels ----------------------------------------------------------------------------------------
    def launch(self, name: str, total: int, *args: Any) -> None:
        """Record kernel ``name`` over ``total`` work items (nothing when 0) into the open batch.

        ``args`` in parameter order, without the trailing ``total``: :class:`VkArray` or buffers for
        pointers, numbers for scalars.
        """
        if total <= 0:
            return
        kernel = self._kernels.get(name)
        if kernel is None:
            kernel = self._kernels[name] = self.runtime.kernel(program(name), name)
        bound = [a.buffer if isinstance(a, VkArray) else a for a in args]
        if self._batch is None:
            self._batch = self.runtime.batch()
            self._batch.__enter__()
        try:
            kernel.launch(cover(total), *bound, int(total))
        except BaseException:
            # what this batch recorded before still runs (flush), so nothing in flight is left behind
            self.flush()
            raise

    def flush(self) -> None:
        """Submit the launches recorded so far and wait for them."""
        batch, self._batch = self._batch, None
        if batch is not None:
            batch.__exit__(None, None, None)

    def synchronize(self) -> None:
        """Wait for every launch so far (nothing to wait for once the runtime is closed)."""
        if self.runtime.closed:
            self._batch = None
            return
        self.flush()
        self.runtime.synchronize()

    # --- memory -----------------------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> VulkanBuffer:
        if nbytes > self.max_bytes:
            raise ValueError(
                f"an array of {nbytes} bytes does not fit one storage buffer of {self.runtime.device_name} "
                f"(at most {self.max_bytes} bytes, maxStorageBufferRange): use smaller frames or batches"
            )
        return self.runtime.alloc(nbytes)

    def empty(self, shape: tuple[int, ...], dtype: Any = np.float32) -> VkArray:
        return VkArray(self, shape, dtype)

    def to_device(self, host: np.ndarray) -> VkArray:
        host = np.ascontiguousarray(host)
        if host.dtype not in (np.float32, np.uint8):
            host = host.astype(np.float32)
        out = self.empty(host.shape, host.dtype)
        self.write(out, host)
        return out

    def write(self, array: VkArray, host: np.ndarray) -> None:
        """Copy contiguous host values into the start of ``array`` (after the launches recorded so far)."""
        self.flush()
        if host.nbytes:
            self.runtime.write(array.buffer, host)

    def download(self, array: VkArray) -> np.ndarray:
        self.flush()
        out = np.empty(array.shape, array.dtype)
        if out.nbytes:
            self.runtime.download(array.buffer, out)
        return out

    def scratch(self, key: str, shape: tuple[int, ...], dtype: Any = np.float32) -> VkArray:
        """An array kept between calls under ``key`` (made again when the shape or dtype changes).

        Reuse is safe: consecutive launches of a batch are ordered by memory barriers, and a host write waits
        for the launches recorded before it.
        """
        current = self._scratch.get(key)
        if current is None or current.shape != tuple(shape) or current.dtype != np.dtype(dtype):
            self._scratch.pop(key, None)
            current = self._scratch[key] = self.empty(tuple(shape), dtype)
        return current

    def constant(self, host: np.ndarray, dtype: Any) -> VulkanBuffer:
        """A small read-only table (tap indices and weights, band-pass bases) on the device, cached by
        content (the least recently used go first past :data:`TABLE_BYTES`).

        A new table in host-visible memory is written through its mapping: a fresh buffer is used by nothing
        recorded, so the open batch goes on (the runtime's ``write`` would submit it first). Behind staging
        (a discrete GPU) the copy does submit the batch, once per table.
        """
        host = np.ascontiguousarray(host, dtype=dtype)
        key = (host.dtype.str, host.shape, host.tobytes())
        buffer = self._tables.pop(key, None)
        if buffer is None:
            buffer = self.runtime.alloc(host.nbytes)
            if buffer.mapped is not None:
                buffer.mapped[: host.nbytes] = host.reshape(-1).view(np.uint8)
            else:
                self.write(VkArray(self, (host.nbytes,), np.uint8, buffer), host)
            self._table_bytes += host.nbytes
            while self._tables and self._table_bytes > TABLE_BYTES:
                old = self._tables.pop(next(iter(self._tables)))
                self._table_bytes -= old.nbytes
        self._tables[key] = buffer  # most recently used last
        return buffer

    def dummy(self) -> VulkanBuffer:
        """A one-word buffer for a pointer parameter a launch does not read."""
        return self.constant(np.zeros(1, np.float32), np.float32)
