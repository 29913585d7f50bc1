"""The cuda backend's whole host path, end to end, against an emulated CUDA driver: nothing runs on a GPU.

NVRTC really compiles every kernel to a cubin (for sm_90: the emulated device says 9.0). The driver API that
kernelkit's CUDA runtime calls (``cuda.bindings.driver``) is replaced by a small emulation whose "device
memory" is host memory and whose ``cuLaunchKernel`` decodes the ``kernelParams`` array as the driver does (an
array of pointers to each argument's bytes) and runs the OpenCL build of the same template on PoCL with those
arguments, over the same grid and blocks. This checks vidmag's and kernelkit's side of the launch path: the
pinned staging and the asynchronous copies, table uploads, scratch and stream-ordered allocation, the argument
array (order, pointer values, scalar types and sizes), the 2-D and 3-D grids, and the pipelines and streams
over the shared host code. It cannot check the real driver or the arithmetic of NVIDIA's compiler
(contractions into FMAs), which only ``scripts/dev/gpu_check.sh`` on a GPU can.
"""

# the emulation must use the driver API's own names (cuLaunchKernel, CUstream_flags, ...)
# ruff: noqa: N801, N802

from __future__ import annotations

import ctypes
import enum
import importlib.util
import struct
from pathlib import Path

import numpy as np
import pytest

import vidmag
from kernelkit import cuda as cuda_rt
from kernelkit.program import LaunchConfig
from vidmag import pipelines
from vidmag.backend import registry
from vidmag.backend.kernels.templates import GRID_KERNELS, GROUP, program

# the shared helpers (vidmag/tests/_backend_support.py), by path: pytest imports with --import-mode=importlib
_SUPPORT = Path(__file__).with_name("_backend_support.py")
_spec = importlib.util.spec_from_file_location("_backend_support", _SUPPORT)
support = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(support)

missing = cuda_rt.nvrtc_probe("sm_90")

pytestmark = pytest.mark.skipif(missing is not None, reason=f"NVRTC unavailable: {missing}")

PIPELINES = ("laplacian_iir", "laplacian_butterworth", "laplacian_ideal", "gaussian_ideal")
STREAMING = ("laplacian_iir", "laplacian_butterworth")
_FORMATS = {"int": "<i", "u32": "<I", "f32": "<f"}


class _Result(enum.Enum):
    CUDA_SUCCESS = 0


class _Function:
    def __init__(self, name: str):
        self.name = name


class _Driver:
    """Just the driver calls kernelkit's CUDA runtime and vidmag's device layer make, over host memory."""

    CUresult = _Result
    CUdeviceptr = int

    @staticmethod
    def CUstream(ptr):
        return f"caller-stream-{ptr}"

    class CUdevice_attribute:
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = "major"
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = "minor"

    class CUstream_flags:
        CU_STREAM_NON_BLOCKING = 1

    class CUevent_flags:
        CU_EVENT_DISABLE_TIMING = 2

    def __init__(self, opencl_rt):
        self.ok = _Result.CUDA_SUCCESS
        self.memory: dict[int, np.ndarray] = {}
        self.pinned: set[int] = set()
        self.cl = opencl_rt
        self.launches: dict[str, int] = {}
        self.streams: set = set()
        self.syncs = 0
        self.events: list[int] = []  # times each event was recorded
        self.depth = 0  # contexts pushed on this thread: allocations, copies and launches need one current
        self.copies = {"htod": 0, "dtoh": 0, "dtod": 0}
        self.released: list[str] = []

    def _new(self, nbytes):
        block = np.zeros(int(nbytes) + 64, np.uint8)
        address = block.ctypes.data
        self.memory[address] = block
        return address

    def _check_range(self, address, nbytes):
        # a copy must lie inside one allocation (device or pinned)
        for start, block in self.memory.items():
            if start <= address and address + nbytes <= start + block.nbytes:
                return
        raise AssertionError(f"copy of {nbytes} bytes at {address:#x} is outside every allocation")

    def cuGetErrorName(self, status):
        return self.ok, b"EMULATED_ERROR"

    def cuDeviceGet(self, ordinal):
        return self.ok, ordinal

    def cuDevicePrimaryCtxRetain(self, device):
        return self.ok, "context"

    def cuDeviceGetAttribute(self, attr, device):
        return self.ok, 9 if attr == "major" else 0

    def cuDeviceGetName(self, length, device):
        return self.ok, b"Emulated GPU\x00"

    def cuCtxPushCurrent(self, ctx):
        self.depth += 1
        return (self.ok,)

    def cuCtxPopCurrent(self):
        assert self.depth > 0
        self.depth -= 1
        return self.ok, "context"

    def _current(self, what):
        assert self.depth > 0, f"{what} with no current context (the driver API wants one)"

    def cuStreamCreate(self, flags):
        return self.ok, "stream"

    def cuStreamSynchronize(self, stream):
        self.syncs += 1
        return (self.ok,)

    def cuEventCreate(self, flags):
        self.events.append(0)
        return self.ok, len(self.events) - 1

    def cuEventRecord(self, event, stream):
        self.events[event] += 1
        return (self.ok,)

    def cuEventSynchronize(self, event):
        assert self.events[event], "an event waited on before it was recorded"
        return (self.ok,)

    def cuCtxSynchronize(self):
        return (self.ok,)

    def cuStreamDestroy(self, stream):
        self.released.append("stream")
        return (self.ok,)

    def cuDevicePrimaryCtxRelease(self, device):
        self.released.append("context")
        return (self.ok,)

    def cuMemAllocAsync(self, nbytes, stream):
        self._current("cuMemAllocAsync")
        return self.ok, self._new(nbytes)

    def cuMemFreeAsync(self, ptr, stream):
        self.memory.pop(int(ptr), None)
        return (self.ok,)

    def cuMemHostAlloc(self, nbytes, flags):
        address = self._new(nbytes)
        self.pinned.add(address)
        return self.ok, address

    def cuMemFreeHost(self, ptr):
        self.memory.pop(int(ptr), None)
        self.pinned.discard(int(ptr))
        return (self.ok,)

    def _copy(self, dst, src, nbytes, kind):
        self._current(f"a copy ({kind})")
        self._check_range(int(dst), int(nbytes))
        self._check_range(int(src), int(nbytes))
        ctypes.memmove(int(dst), int(src), int(nbytes))
        self.copies[kind] += 1
        return (self.ok,)

    def cuMemcpyHtoD(self, dst, src, nbytes):
        return (self.ok,) if not nbytes else self._copy(dst, src, nbytes, "htod")

    def cuMemcpyDtoH(self, dst, src, nbytes):
        return (self.ok,) if not nbytes else self._copy(dst, src, nbytes, "dtoh")

    def cuMemcpyHtoDAsync(self, dst, src, nbytes, stream):
        assert any(p <= int(src) < p + self.memory[p].nbytes for p in self.pinned), "uploads are staged"
        return self._copy(dst, src, nbytes, "htod")

    def cuMemcpyDtoHAsync(self, dst, src, nbytes, stream):
        assert any(p <= int(dst) < p + self.memory[p].nbytes for p in self.pinned), "downloads are staged"
        return self._copy(dst, src, nbytes, "dtoh")

    def cuMemcpyDtoDAsync(self, dst, src, nbytes, stream):
        self.streams.add(stream)
        return self._copy(dst, src, nbytes, "dtod")

    def cuModuleLoadData(self, image):
        assert bytes(image[:4]) == b"\x7fELF", "the runtime must load a cubin"
        return self.ok, object()

    def cuModuleGetFunction(self, module, name):
        return self.ok, _Function(name.decode())

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        import pyopencl as cl

        name = function.name
        prog = program(name, "opencl")
        signature = prog.signature(name)
        grid_kernel = name in GRID_KERNELS  # x along a row, y the row, z the frame
        assert (by, bz, shared, extra) == (1, 1, 0, 0) and bx == GROUP and (grid_kernel or gz == 1)
        self._current("cuLaunchKernel")
        self.streams.add(stream)
        n = len(signature.params)
        pointers = np.frombuffer((ctypes.c_uint64 * n).from_address(int(params)), np.uint64)
        args = []
        for p, where in zip(signature.params, pointers):
            if p.pointer:
                address = int(np.frombuffer((ctypes.c_uint64 * 1).from_address(int(where)), np.uint64)[0])
                block = self.memory[address]  # a pointer passed must be the start of an allocation
                args.append(cl.Buffer(self.cl.context, cl.mem_flags.USE_HOST_PTR, hostbuf=block))
            else:
                raw = bytes((ctypes.c_uint8 * 8).from_address(int(where)))
                args.append(struct.unpack_from(_FORMATS[p.kind], raw)[0])
        if grid_kernel:
            xs = args[-1]
            assert gx * GROUP >= xs > (gx - 1) * GROUP, "the grid covers a row's items, no more"
            config = LaunchConfig((gx, gy, gz), (bx, by, bz))
        else:
            total = args[-1]
            covered = gx * gy * GROUP >= total > (gx * gy - gx) * GROUP or gy == 1
            assert covered, "the grid covers total, no more"
            config = LaunchConfig((gx, gy), (bx, by))
        self.cl.launch(self.cl.kernel(prog, name), config, args)
        self.cl.synchronize()
        for a in args:
            if isinstance(a, cl.Buffer):
                a.release()
        self.launches[name] = self.launches.get(name, 0) + 1
        return (self.ok,)


@pytest.fixture
def emulated(require_backend, monkeypatch, tmp_path):
    """(the cuda backend over the emulated driver, the driver), registered as backend "cuda"."""
    import cuda.bindings

    from kernelkit import opencl
    from vidmag.backend import cuda as cuda_backend

    require_backend("opencl")
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    driver = _Driver(opencl.default_runtime())
    monkeypatch.setattr(cuda_rt, "cu", driver)
    monkeypatch.setattr(cuda.bindings, "driver", driver)
    runtimes: dict = {}
    monkeypatch.setattr(cuda_rt, "_runtimes", runtimes)
    monkeypatch.setattr(cuda_rt, "_verdict", [None])  # the emulated device passed the probe
    backend = cuda_backend.create()
    monkeypatch.setitem(registry._reasons, "cuda", None)
    monkeypatch.setitem(registry._instances, "cuda", backend)
    yield backend, driver
    # close the emulated runtimes while the emulation is still in place
    for rt in runtimes.values():
        rt.close()


_within_one = support.within_one


@pytest.mark.parametrize("compat", [None, "mit"])
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_whole_clip_and_stream_match_the_reference(pipeline, compat, emulated, make_clip, synthetic_params):
    _, driver = emulated
    clip = make_clip(T=12, H=24, W=32)
    params = synthetic_params[pipeline]
    expected = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend="cpu", compat=compat, **params)
    whole = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend="cuda", compat=compat, **params)
    _within_one(whole, expected)
    assert support.render_launches(driver) >= 1 and driver.copies["htod"] and driver.copies["dtoh"]
    if pipeline not in STREAMING:
        with pytest.raises(ValueError, match=rf"^{pipeline} cannot stream"):
            pipelines.open_stream(clip.shape[1:], fs=30.0, pipeline=pipeline, backend="cuda", compat=compat,
                                  **params)
        return
    renders = support.render_launches(driver)
    streamed, reference = (_stream(clip, pipeline, name, compat, params) for name in ("cuda", "cpu"))
    assert support.render_launches(driver) >= renders + len(clip) - 1  # a render per frame after the first
    _within_one(streamed, reference)
    # the MIT code's whole-clip run leaves an unread tail out; a live stream magnifies every frame
    assert len(streamed) == len(clip) and len(whole) <= len(clip)
    np.testing.assert_array_equal(streamed[: len(whole)], whole)


def _stream(clip, pipeline, backend, compat, params):
    """The clip pushed one frame at a time through a stream of ``backend``."""
    with pipelines.open_stream(clip.shape[1:], fs=30.0, pipeline=pipeline, backend=backend, compat=compat,
                               **params) as stream:
        return np.stack([stream.push(frame) for frame in clip])


def test_batches_carry_state_and_the_runtime_releases_everything(emulated, make_clip, synthetic_params,
                                                                  monkeypatch):
    """Batches of 5 frames (filter state and reused buffers carried across them), then the runtime closed:
    every allocation, pinned buffer, the stream and the context released."""
    from vidmag.backend.kernels import fused

    backend, driver = emulated
    clip = make_clip(T=12, H=24, W=32)
    monkeypatch.setattr(fused, "CHUNK_BYTES", 5 * clip[0].nbytes)
    params = synthetic_params["laplacian_iir"]
    syncs = driver.syncs
    got = vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="cuda", **params)
    _within_one(got, vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="cpu", **params))
    assert support.render_launches(driver) >= 3
    # uploads (frames, tables) take two staging buffers in turn, each waited on through its own event; the
    # host waits for the whole stream only to read the render's bytes (and once at the end of the run)
    assert len(driver.events) == 2 and min(driver.events) >= 2
    assert driver.syncs - syncs <= support.render_launches(driver) + 2
    rt = backend.operations.rt.runtime
    assert rt.sm == "sm_90" and driver.pinned
    backend.operations.rt._scratch.clear()
    backend.operations.rt._tables.clear()
    rt.close()
    assert driver.released == ["stream", "context"]
    assert not driver.pinned


def test_host_frames_only_and_frames_over_two_gib_refused(emulated, make_clip, synthetic_params, monkeypatch):
    backend, _ = emulated
    with pytest.raises(TypeError, match="the cuda backend takes host frames"):
        backend.fused.upload_frames(object())
    monkeypatch.setattr(backend.operations.rt, "max_bytes", 4096)
    clip = make_clip(T=4, H=24, W=32)
    with pytest.raises(ValueError, match="32-bit indices"):
        vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="cuda",
                       **synthetic_params["laplacian_iir"])


class _FakeCupy:
    """Just the cupy a caller's array needs here: arrays in the emulated device memory (host memory, so a
    numpy view of them is the test's window), ``empty``, the current device and stream."""

    def __init__(self, driver):
        self.driver = driver
        fake = self

        class ndarray:  # cupy's own name
            def __init__(self, host):
                self.host = host
                self.shape, self.dtype, self.size = host.shape, host.dtype, host.size
                self.flags = host.flags
                self.device = type("Device", (), {"id": 0})()

            @property
            def __cuda_array_interface__(self):
                return {"data": (self.host.ctypes.data, False), "shape": self.shape, "version": 3,
                        "typestr": self.dtype.str}

            def __getitem__(self, item):
                return ndarray(self.host[item])

            def __eq__(self, other):
                return self.host == other

        class _Device:
            def __init__(self, ordinal):
                assert ordinal == 0

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

        class _Stream:
            ptr = 1234

        self.ndarray = ndarray
        self.uint8 = np.uint8
        current = staticmethod(lambda: _Stream())
        self.cuda = type("cuda", (), {"Device": _Device, "get_current_stream": current})

        def empty(shape, dtype):
            nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
            block = fake.driver.memory[fake.driver._new(nbytes)]
            return ndarray(block[:nbytes].view(dtype).reshape(shape))

        self.empty = empty

    def asarray(self, host):
        out = self.empty(host.shape, host.dtype)
        out.host[...] = host
        return out


@pytest.mark.parametrize("pipeline", ["laplacian_iir", "gaussian_ideal"])
def test_cupy_arrays_in_and_out_on_the_callers_stream(pipeline, emulated, make_clip, synthetic_params,
                                                       monkeypatch):
    """A (fake) cupy clip goes to the cuda backend under backend="auto", is read and written on the device
    (device-to-device copies only, no download), on the caller's stream, and comes back a cupy array within
    1 of the reference; odd frame sizes (not whole 32-bit words) included."""
    import sys

    _, driver = emulated
    cupy = _FakeCupy(driver)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    clip = make_clip(T=12, H=24, W=37)
    params = synthetic_params[pipeline]
    expected = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend="cpu", **params)
    on_device = cupy.asarray(clip)
    assert registry.owner(on_device) == "cuda"
    downloads = driver.copies["dtoh"]
    driver.streams.clear()
    got = vidmag.magnify(on_device, fs=30.0, pipeline=pipeline, **params)
    assert isinstance(got, cupy.ndarray) and driver.copies["dtoh"] == downloads and driver.copies["dtod"]
    assert driver.streams == {"caller-stream-1234"}
    _within_one(got.host, expected)
    np.testing.assert_array_equal(on_device.host, clip)  # the input is left alone
    with pytest.raises(ValueError, match="would copy it through the host"):
        vidmag.magnify(on_device, fs=30.0, pipeline=pipeline, backend="cpu", **params)
