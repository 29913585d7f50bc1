"""The metal backend's whole host path against an emulated Metal framework: nothing runs on Apple hardware.

kernelkit's Metal runtime calls pyobjc's ``Metal`` module; here that module is a small emulation whose buffers
are host memory and whose command buffers, when committed, run each encoded dispatch as the OpenCL build of
the same template on PoCL, with the arguments bound at the same ``[[buffer(i)]]`` indices and the same grid of
threadgroups. This checks vidmag's and kernelkit's side: the MSL handed to the compiler, pipeline states,
argument binding (buffers and ``setBytes`` scalars by index), batching into one command buffer per batch of
frames, writes and reads through shared storage, and the pipelines and streams over the shared host code. It
cannot check Metal's compiler, its rules or its arithmetic: the backend has never run on a Mac.
"""

# the emulation must use the framework's own names (newBufferWithLength_options_, MTLSizeMake, ...)
# ruff: noqa: N802

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

import numpy as np
import pytest

import vidmag
from vidmag import pipelines
from vidmag.backend import registry
from vidmag.backend.kernels.templates import GRID_KERNELS, GROUP, program

# the shared helpers (vidmag/tests/_backend_support.py), by path: pytest imports with --import-mode=importlib
_SUPPORT = Path(__file__).with_name("_backend_support.py")
_spec = importlib.util.spec_from_file_location("_backend_support", _SUPPORT)
support = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(support)

PIPELINES = ("laplacian_iir", "laplacian_butterworth", "laplacian_ideal", "gaussian_ideal")
STREAMING = ("laplacian_iir", "laplacian_butterworth")
_FORMATS = {"int": "<i", "u32": "<I", "f32": "<f"}


class _Buffer:
    def __init__(self, nbytes: int):
        self.block = np.zeros(int(nbytes) + 64, np.uint8)
        self.nbytes = int(nbytes)

    def contents(self):
        return self

    def as_buffer(self, n: int):
        assert n <= self.nbytes
        return memoryview(self.block)[:n]

    def length(self) -> int:
        return self.nbytes


class _Pipeline:
    def __init__(self, name: str):
        self.name = name

    def maxTotalThreadsPerThreadgroup(self) -> int:
        return 1024


class _Library:
    def __init__(self, source: str):
        self.source = source

    def newFunctionWithName_(self, name: str):
        assert f"kernel void {name}(" in self.source and "[[buffer(0)]]" in self.source, "MSL expected"
        return name


class _Encoder:
    def __init__(self, command):
        self.command = command
        self.state: dict = {}

    def setComputePipelineState_(self, pipeline):
        self.state = {"pipeline": pipeline, "args": {}}

    def setBuffer_offset_atIndex_(self, buffer, offset, index):
        assert offset == 0 and isinstance(buffer, _Buffer)
        self.state["args"][index] = buffer

    def setBytes_length_atIndex_(self, value, length, index):
        assert len(value) == length
        self.state["args"][index] = bytes(value)

    def dispatchThreadgroups_threadsPerThreadgroup_(self, grid, block):
        self.command.dispatches.append((self.state["pipeline"].name, dict(self.state["args"]), grid, block))

    def endEncoding(self):
        self.command.ended = True


class _Command:
    def __init__(self, metal):
        self.metal = metal
        self.dispatches: list = []
        self.ended = False

    def computeCommandEncoder(self):
        return _Encoder(self)

    def commit(self):
        assert self.ended
        self.metal.commits.append(len(self.dispatches))
        for name, args, grid, block in self.dispatches:
            self.metal.run(name, args, grid, block)

    def waitUntilCompleted(self):
        pass

    def error(self):
        return None


class _Queue:
    def __init__(self, metal):
        self.metal = metal

    def commandBuffer(self):
        return _Command(self.metal)


class _Device:
    def __init__(self, metal):
        self.metal = metal

    def name(self):
        return "Emulated Apple GPU"

    def maxBufferLength(self):
        return 2**30

    def newCommandQueue(self):
        return _Queue(self.metal)

    def newLibraryWithSource_options_error_(self, source, options, error):
        return _Library(source), None

    def newComputePipelineStateWithFunction_error_(self, function, error):
        return _Pipeline(function), None

    def newBufferWithLength_options_(self, nbytes, mode):
        assert mode == self.metal.MTLResourceStorageModeShared
        return _Buffer(nbytes)

    def newBufferWithBytes_length_options_(self, data, nbytes, mode):
        buffer = self.newBufferWithLength_options_(nbytes, mode)
        buffer.block[:nbytes] = np.frombuffer(data, np.uint8)
        return buffer


class _Options:
    @classmethod
    def new(cls):
        return cls()

    def setFastMathEnabled_(self, value):
        assert value is False  # IEEE semantics, as kernelkit asks


class _Metal:
    """Just the part of pyobjc's Metal module kernelkit's runtime calls."""

    MTLResourceStorageModeShared = 0
    MTLCompileOptions = _Options

    def __init__(self, opencl_rt):
        self.cl = opencl_rt
        self.commits: list[int] = []
        self.launches: dict[str, int] = {}

    @staticmethod
    def MTLSizeMake(x, y, z):
        return (x, y, z)

    def MTLCreateSystemDefaultDevice(self):
        return _Device(self)

    def run(self, name, bound, grid, block):
        import pyopencl as cl

        from kernelkit.program import LaunchConfig

        prog = program(name, "opencl")
        params = prog.signature(name).params
        assert sorted(bound) == list(range(len(params))), "every parameter bound at its index"
        assert block == (GROUP, 1, 1) and (grid[2] == 1 or name in GRID_KERNELS)
        args = []
        for i, p in enumerate(params):
            if p.pointer:
                args.append(cl.Buffer(self.cl.context, cl.mem_flags.USE_HOST_PTR, hostbuf=bound[i].block))
            else:
                args.append(struct.unpack(_FORMATS[p.kind], bound[i])[0])
        dims = 3 if name in GRID_KERNELS else 2  # x along a row, y the row, z the frame
        self.cl.launch(self.cl.kernel(prog, name), LaunchConfig(grid[:dims], block[:dims]), args)
        self.cl.synchronize()
        for a in args:
            if isinstance(a, cl.Buffer):
                a.release()
        self.launches[name] = self.launches.get(name, 0) + 1


@pytest.fixture
def emulated(require_backend, monkeypatch):
    """(the metal backend over the emulated framework, the framework), registered as backend "metal"."""
    from kernelkit import metal as metal_rt
    from kernelkit import opencl
    from vidmag.backend import metal as metal_backend

    require_backend("opencl")
    fake = _Metal(opencl.default_runtime())
    monkeypatch.setattr(metal_rt, "Metal", fake)
    monkeypatch.setattr(metal_rt, "_IMPORT_ERROR", None)
    runtimes: dict = {}
    monkeypatch.setattr(metal_rt, "_runtimes", runtimes)
    monkeypatch.setattr(metal_rt, "_verdict", [None])  # the emulated device passed the probe
    backend = metal_backend.create()
    monkeypatch.setitem(registry._reasons, "metal", None)
    monkeypatch.setitem(registry._instances, "metal", backend)
    yield backend, fake
    for rt in runtimes.values():
        rt.close()


_within_one = support.within_one


# alike test_cuda_backend_emulated.py's test of the same name, kept apart: what each checks of its device
# differs (here launches batched into few command buffers; there host <-> device copies and the stream
# against the cpu stream), between the steps they share
@pytest.mark.parametrize("compat", [None, "mit"])
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_whole_clip_and_stream_match_the_reference(pipeline, compat, emulated, make_clip, synthetic_params):
    _, fake = emulated
    clip = make_clip(T=12, H=24, W=32)
    params = dict(synthetic_params[pipeline], compat=compat)
    expected = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend="cpu", **params)
    whole = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend="metal", **params)
    _within_one(whole, expected)
    # the launches of a batch go in few command buffers, not one each
    assert support.render_launches(fake) >= 1 and len(fake.commits) < sum(fake.launches.values())
    if pipeline not in STREAMING:
        with pytest.raises(ValueError, match=rf"^{pipeline} cannot stream"):
            pipelines.open_stream(clip.shape[1:], fs=30.0, pipeline=pipeline, backend="metal", **params)
        return
    renders = support.render_launches(fake)
    with pipelines.open_stream(clip.shape[1:], fs=30.0, pipeline=pipeline, backend="metal",
                               **params) as stream:
        streamed = np.stack([stream.push(frame) for frame in clip])
    assert support.render_launches(fake) >= renders + len(clip) - 1
    # the MIT code's whole-clip run leaves an unread tail out; a live stream magnifies every frame
    np.testing.assert_array_equal(streamed[: len(whole)], whole)
