"""OpenCL through pyopencl: device choice by a probe that runs a kernel, one context and in-order queue per
device, programs built from source and cached on disk as the device's program binaries.

Why a probe that runs something: an OpenCL platform can list a device that builds nothing. The PoCL inside the
pyopencl / pocl-binary-distribution wheels (3.0-rc2, LLVM 14) lists the processor on an AMD Zen 5 and then
fails every build with ``unknown target CPU 'generic'``. A device is therefore usable only once a tiny kernel
has been built and run on it and its result checked (once per process and device, a few milliseconds on a
warm compiler).

Environment variables:

``KERNELKIT_OPENCL_DEVICE``
    ``PLATFORM:DEVICE`` indices (as ``clinfo -l`` lists them) of the one device to use. A value that names no
    device, or a device that fails the probe, makes OpenCL unavailable with that reason: it never silently
    moves to another device.
``KERNELKIT_OPENCL_OPTIONS``
    Extra build options for every program (part of the cache key). ``-cl-opt-disable`` makes PoCL's first
    launch of a kernel several times cheaper at the price of slower kernels, which suits test sweeps.

Earlier builds read ``SPECUX_OPENCL_OPTIONS`` (and the cache's ``SPECUX_CACHE_DIR`` / ``SPECUX_DUMP_SOURCE``):
one still set, unless to what its new name gives, makes :func:`default_runtime` raise
:class:`~kernelkit.cache.RenamedVariableError` naming it and the new name (:data:`RENAMED`).
"""

from __future__ import annotations

import os
import re
import shlex
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernelkit import cache
from kernelkit.dialects import OPENCL, Param
from kernelkit.program import Kernel, KernelSignature, LaunchConfig, Program, exact_cover
from kernelkit.runtime import DeviceRuntime

DEVICE_ENV = "KERNELKIT_OPENCL_DEVICE"
OPTIONS_ENV = "KERNELKIT_OPENCL_OPTIONS"


def _options_meaning(value: str | None) -> object:
    try:
        return tuple(shlex.split(value or ""))
    except ValueError:  # unbalanced quotes: compared as written
        return (value or "").strip()


#: the variables of earlier builds that OpenCL programs depend on: the cache's and the build options
RENAMED: tuple[cache.RenamedVariable, ...] = (
    *cache.RENAMED,
    cache.RenamedVariable("SPECUX_OPENCL_OPTIONS", OPTIONS_ENV, _options_meaning),
)

#: what to do when no device passes the probe (Debian's PoCL picks its kernel library by CPU features)
REMEDY = (
    "for OpenCL on the processor install Debian/Ubuntu's PoCL (apt-get install pocl-opencl-icd) "
    "or a GPU vendor's OpenCL driver"
)

_SCALARS = {"int": np.int32, "i64": np.int64, "u32": np.uint32, "u64": np.uint64, "f16": np.float16,
            "f32": np.float32, "f64": np.float64}

_PROBE_SOURCE = """\
__kernel void kk_probe(__global const float* x, __global float* y, const int n) {
    int i = (int)get_global_id(0);
    if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}
"""
_PROBE = Program(
    _PROBE_SOURCE,
    OPENCL,
    (
        KernelSignature(
            "kk_probe", (Param("x", "f32", True, True), Param("y", "f32", True), Param("n", "int"))
        ),
    ),
    name="kk_probe",
)


def _import_cl():
    import pyopencl as cl

    return cl


# -- kernel signatures from OpenCL C source ---------------------------------------------------------------

#: scalar parameter types a launch converts its arguments to (see _SCALARS)
_SCALAR_KINDS = {"int": "int", "uint": "u32", "long": "i64", "ulong": "u64", "float": "f32", "double": "f64",
                 "half": "f16"}
#: element types of pointer parameters (informational: a launch passes the buffer as it is)
_ELEMENT_KINDS = {**_SCALAR_KINDS, "char": "i8", "uchar": "u8", "short": "i16", "ushort": "u16"}
_UNSIGNED = {"char": "uchar", "short": "ushort", "int": "uint", "long": "ulong"}
_IGNORED = {"const", "restrict", "__restrict", "volatile", "signed", "__private", "private", "struct",
            "union"}
_GLOBAL = {"__global", "global"}
_CONSTANT = {"__constant", "constant"}
_LOCAL = {"__local", "local"}
_VECTOR = re.compile(r"([a-z]+?)(2|3|4|8|16)\Z")


def kernel_signatures(source: str, options: tuple[str, ...] | list[str] = ()) -> tuple[KernelSignature, ...]:
    """The entry points of OpenCL C ``source``: every ``__kernel void name(...)``, in source order.

    The source is preprocessed first (macros that generate kernels are expanded; ``-D`` entries of
    ``options`` are defined), so that a ``.cl`` file becomes a :class:`~kernelkit.program.Program` without a
    hand-written parameter list::

        Program(source, OPENCL, kernel_signatures(source), name="resample")

    Parameters
    ----------
    source : str
        OpenCL C text.
    options : sequence of str, optional
        Build options; only ``-DNAME[=VALUE]`` matters here.

    Returns
    -------
    tuple of KernelSignature
        Pointers (``__global`` or ``__constant``) have ``pointer=True``, ``const`` when the pointee is const
        or constant, and the element type as ``kind`` (``"f32"``, ``"u8"``, ``"int"``, vectors as
        ``"f32x4"``). Scalars are ``int``, ``uint``, ``long``, ``ulong``, ``float``, ``double`` or ``half``
        (kinds ``"int"``, ``"u32"``, ``"i64"``, ``"u64"``, ``"f32"``, ``"f64"``, ``"f16"``).
        ``__attribute__((reqd_work_group_size(x, y, z)))`` sets ``block``.

    Raises
    ------
    ValueError
        A parameter this reader cannot bind (``__local`` pointers, images, samplers, vector or struct
        scalars, pointers to pointers), a kernel declared twice with different parameters, an ``#include``,
        or a malformed directive; the message names the kernel and the parameter.
    """
    from kernelkit import _preprocessor

    tokens = [t for t in _preprocessor.preprocess(source, _preprocessor.defines_from_options(options))
              if not t.isspace()]
    found: dict[str, KernelSignature] = {}
    i = 0
    while i < len(tokens):
        if tokens[i] not in ("__kernel", "kernel"):
            i += 1
            continue
        i += 1
        block = None
        while i < len(tokens) and tokens[i] in ("__attribute__", "void"):
            if tokens[i] == "__attribute__":
                close = _closing(tokens, i + 1)
                block = _required_group(tokens[i + 1:close + 1]) or block
                i = close
            i += 1
        if i + 1 >= len(tokens) or tokens[i + 1] != "(":
            near = " ".join(tokens[max(0, i - 2):i + 3])
            raise ValueError(f"a kernel declaration must read `__kernel void NAME(...)`; near {near!r}")
        name, close = tokens[i], _closing(tokens, i + 1)
        params = _parameters(name, tokens[i + 2:close])
        signature = KernelSignature(name, params, block)
        if name in found and found[name] != signature:
            raise ValueError(f"kernel {name!r} is declared twice with different parameters")
        found[name] = signature
        i = close + 1
    return tuple(found.values())


def _closing(tokens: list[str], open_index: int) -> int:
    """Index of the ``)`` matching the ``(`` at ``open_index``."""
    if open_index >= len(tokens) or tokens[open_index] != "(":
        raise ValueError("expected '(' in a kernel declaration")
    depth = 0
    for j in range(open_index, len(tokens)):
        depth += {"(": 1, ")": -1}.get(tokens[j], 0)
        if depth == 0:
            return j
    raise ValueError("unbalanced parentheses in a kernel declaration")


def _required_group(attribute: list[str]) -> tuple[int, ...] | None:
    if "reqd_work_group_size" not in attribute:
        return None
    start = attribute.index("reqd_work_group_size") + 1
    numbers = attribute[start + 1:_closing(attribute, start)]
    return tuple(int(t.rstrip("uU"), 0) for t in numbers if t != ",")


def _parameters(kernel: str, tokens: list[str]) -> tuple[Param, ...]:
    if tokens in ([], ["void"]):
        return ()
    pieces: list[list[str]] = [[]]
    depth = 0
    for t in tokens:
        depth += {"(": 1, ")": -1}.get(t, 0)
        if t == "," and depth == 0:
            pieces.append([])
        else:
            pieces[-1].append(t)
    return tuple(_parameter(kernel, piece) for piece in pieces)


def _parameter(kernel: str, tokens: list[str]) -> Param:
    text = " ".join(tokens)
    if len(tokens) < 2 or not re.fullmatch(r"[A-Za-z_]\w*", tokens[-1]):
        raise ValueError(f"kernel {kernel!r}: cannot read the parameter {text!r}")
    name, words = tokens[-1], tokens[:-1]
    where = f"kernel {kernel!r}, parameter {name!r} ({text})"
    if any(w in _LOCAL for w in words):
        raise ValueError(f"{where}: __local pointer parameters are not supported; declare the array inside")
    if any((w.startswith("image") and w.endswith("_t")) or w in ("sampler_t", "pipe") for w in words):
        raise ValueError(f"{where}: images, samplers and pipes are not supported")
    stars = words.count("*")
    if stars > 1:
        raise ValueError(f"{where}: pointers to pointers cannot be kernel arguments here")
    pointer = stars == 1 or any(w in _GLOBAL | _CONSTANT for w in words)
    if pointer and stars == 0:
        raise ValueError(f"{where}: an address space qualifier needs a pointer")
    before = words[: words.index("*")] if stars else words
    const = pointer and ("const" in before or any(w in _CONSTANT for w in words))
    types = [w for w in before if w not in _IGNORED | _GLOBAL | _CONSTANT | {"*"}]
    if types[:1] == ["unsigned"]:
        types = [_UNSIGNED.get(types[1], "") if len(types) > 1 else "uint"]
    if len(types) != 1:
        raise ValueError(f"{where}: cannot read the type")
    type_ = types[0]
    if not pointer:
        if type_ not in _SCALAR_KINDS:
            allowed = ", ".join(_SCALAR_KINDS)
            raise ValueError(f"{where}: scalar parameters must be one of {allowed}; got {type_!r}")
        return Param(name, _SCALAR_KINDS[type_])
    vector = _VECTOR.match(type_)
    if type_ in _ELEMENT_KINDS:
        kind = _ELEMENT_KINDS[type_]
    elif vector and vector.group(1) in _ELEMENT_KINDS:
        kind = f"{_ELEMENT_KINDS[vector.group(1)]}x{vector.group(2)}"
    else:  # a struct or typedef: the buffer is passed as it is
        kind = type_
    return Param(name, kind, True, const)


@dataclass(frozen=True)
class OffsetLaunch(LaunchConfig):
    """A :class:`~kernelkit.program.LaunchConfig` whose work-item ids start at ``offset`` along each axis.

    OpenCL's global work offset, which only the OpenCL runtime has: made by :meth:`OpenCLRuntime.cover`.
    """

    offset: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.offset) != self.ndim or any(
            not isinstance(o, int) or isinstance(o, bool) or o < 0 for o in self.offset
        ):
            raise ValueError(f"offset must be {self.ndim} non-negative integers; got {self.offset!r}")


class OpenCLRuntime(DeviceRuntime):
    """Programs, buffers and launches on one OpenCL device.

    Buffers are ``pyopencl.Buffer`` objects; launches also take ``pyopencl.array.Array`` arguments (their
    ``data``) so that callers working with pyopencl arrays need no unwrapping.
    """

    dialect = OPENCL
    name = "opencl"
    binary_suffix = ".clbin"

    def __init__(self, device: Any, options: tuple[str, ...] = ()):
        super().__init__()
        cl = _import_cl()
        self._cl = cl
        self.options = ("-cl-std=CL1.2", *options)
        self.device = device
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(self.context)
        self.fp64 = "cl_khr_fp64" in device.extensions
        self.on_cpu = bool(device.type & cl.device_type.CPU)
        self._launch_lock = threading.Lock()
        self._group_limits: dict[tuple[int, str], int] = {}

    def compiler_version(self) -> str:
        p = self.device.platform
        return f"{p.name} | {p.version} | {self.device.driver_version}"

    def arch(self) -> str:
        return f"{self.device.name} | {self.device.version}"

    def max_block(self) -> int:
        return int(self.device.max_work_group_size)

    def _build(self, program: Program) -> tuple[bool, Any, str]:
        cl = self._cl
        options = [*self.options, *program.options]
        try:
            # cache_dir=False: kernelkit's checksummed cache is the only one (pyopencl's own would keep a
            # second copy of every binary, and its store, interrupted while opening, fails in its finaliser)
            built = cl.Program(self.context, program.source).build(
                options=options, devices=[self.device], cache_dir=False
            )
        except cl.RuntimeError as exc:  # BUILD_PROGRAM_FAILURE carries the build log in its message
            return False, None, str(exc)
        binary = bytes(built.get_info(cl.program_info.BINARIES)[0])
        return True, (self._handles(built, program), built, binary), ""

    def _load(self, binary: bytes, program: Program) -> tuple[dict[str, Any], Any]:
        cl = self._cl
        built = cl.Program(self.context, [self.device], [binary])
        built.build(options=[*self.options, *program.options], devices=[self.device])
        return self._handles(built, program), built

    @staticmethod
    def _handles(built: Any, program: Program) -> dict[str, Any]:
        return {k.name: getattr(built, k.name) for k in program.kernels}

    # -- memory ------------------------------------------------------------------------------------------

    def alloc(self, nbytes: int) -> Any:
        self._check_open()
        cl = self._cl
        return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=max(int(nbytes), 1))

    def upload(self, host: np.ndarray) -> Any:
        self._check_open()
        cl = self._cl
        host = np.ascontiguousarray(host)
        if host.nbytes == 0:
            return self.alloc(1)
        return cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)

    def download(self, buf: Any, out: np.ndarray) -> np.ndarray:
        self._check_open()
        if out.nbytes:
            self._cl.enqueue_copy(self.queue, out, getattr(buf, "data", buf))
        return out

    # -- execution ---------------------------------------------------------------------------------------

    def group_limit(self, kernel: Kernel) -> int:
        """The most work items one group of ``kernel`` may have on this device."""
        key = (id(kernel.code), kernel.name)
        if key not in self._group_limits:
            info = self._cl.kernel_work_group_info.WORK_GROUP_SIZE
            self._group_limits[key] = int(kernel.handle.get_work_group_info(info, self.device))
        return self._group_limits[key]

    def cover(self, kernel: Kernel, global_size: tuple[int, ...], max_group: int = 512, *,
              offset: tuple[int, ...] | None = None) -> LaunchConfig:
        """A launch of exactly ``global_size`` work items in groups as long as divides the first axis.

        PoCL, left to choose, often picks small groups, and each group costs a fixed overhead on a processor:
        whole-row groups ran vidmag's kernels 1.5 to 3 times faster. GPUs get the same rule capped at 256.
        ``offset`` starts the work-item ids there (OpenCL's global work offset; an :class:`OffsetLaunch`), for
        a kernel without bounds checks run on the tail of an array.
        """
        cap = min(max_group if self.on_cpu else 256, self.group_limit(kernel))
        config = exact_cover(global_size, cap)
        if offset is None:
            return config
        start = tuple(int(o) for o in offset)
        return OffsetLaunch(config.grid, config.block, config.shared_mem, offset=start)

    def launch(self, kernel: Kernel, config: LaunchConfig, args: list[Any]) -> None:
        self._check_open()
        values = [
            getattr(a, "data", a) if p.pointer else _SCALARS[p.kind](a) for p, a in zip(kernel.params, args)
        ]
        # a cl.Kernel holds its arguments: setting and enqueueing must not interleave between threads
        with self._launch_lock:
            kernel.handle.set_args(*values)
            self._cl.enqueue_nd_range_kernel(
                self.queue, kernel.handle, config.global_size, config.local_size,
                global_work_offset=getattr(config, "offset", None) or None,
            )

    def synchronize(self) -> None:
        self.queue.finish()

    def _release(self) -> None:
        # dropping the last references releases the queue, then the context, in that order
        self._group_limits.clear()
        self.queue = None
        self.context = None


# -- devices and the probe --------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceReport:
    """One OpenCL device as the probe saw it: ``reason`` is None when it built and ran the probe kernel."""

    platform_index: int
    device_index: int
    platform: str
    name: str
    kind: str
    reason: str | None

    @property
    def label(self) -> str:
        return f"{self.platform_index}:{self.device_index} {self.platform} / {self.name} ({self.kind})"


_lock = threading.RLock()
_reports: list[DeviceReport] | None = None
_probe_failure: str | None = None
_devices: dict[tuple[int, int], Any] = {}
_runtimes: dict[tuple[tuple[int, int], tuple[str, ...]], OpenCLRuntime] = {}


def _kind(cl: Any, device: Any) -> str:
    for flag, name in ((cl.device_type.GPU, "gpu"), (cl.device_type.ACCELERATOR, "accelerator"),
                       (cl.device_type.CPU, "cpu")):
        if device.type & flag:
            return name
    return "other"


def _run_probe(device: Any) -> str | None:
    """None when ``device`` builds and runs the probe kernel correctly, else what went wrong."""
    rt = None
    try:
        rt = OpenCLRuntime(device, build_options())
        kernel = rt.kernel(_PROBE, "kk_probe")
        x = np.arange(64, dtype=np.float32)
        xb, yb = rt.upload(x), rt.alloc(x.nbytes)
        kernel.launch(LaunchConfig(4, 16), xb, yb, 64)
        y = rt.download(yb, np.empty_like(x))
        if not np.array_equal(y, 2 * x + 1):
            return "the probe kernel ran but returned wrong values"
        return None
    except Exception as exc:  # any failure makes the device unusable, with the driver's own words
        text = str(exc).strip().splitlines()
        detail = next((line.strip() for line in text if "error" in line.lower()), text[0] if text else "")
        return f"building or running a probe kernel failed: {type(exc).__name__}: {detail[:300]}"
    finally:
        if rt is not None:
            rt.close()


def reports() -> list[DeviceReport]:
    """Every OpenCL device of every platform with the probe's verdict (probed once per process)."""
    global _reports, _probe_failure
    with _lock:
        if _reports is not None:
            return list(_reports)
        found: list[DeviceReport] = []
        try:
            cl = _import_cl()
            platforms = cl.get_platforms()
        except ImportError as exc:
            _probe_failure = f"pyopencl is not installed ({exc}); pip install pyopencl"
            platforms = []
        except Exception as exc:  # LogicError PLATFORM_NOT_FOUND_KHR: no ICD registered at all
            _probe_failure = f"no OpenCL platform found ({type(exc).__name__}: {exc}); {REMEDY}"
            platforms = []
        for p_index, platform in enumerate(platforms):
            try:
                devices = platform.get_devices()
            except Exception:  # a platform with no device of any kind raises DEVICE_NOT_FOUND
                continue
            for d_index, device in enumerate(devices):
                _devices[(p_index, d_index)] = device
                found.append(
                    DeviceReport(p_index, d_index, platform.name.strip(), device.name.strip(),
                                 _kind(cl, device), _run_probe(device))
                )
        if not platforms and _probe_failure is None:  # an ICD loader that lists nothing
            _probe_failure = f"no OpenCL platform found; {REMEDY}"
        if platforms and not found and _probe_failure is None:
            names = ", ".join(p.name for p in platforms)
            _probe_failure = f"no OpenCL device on the installed platform(s) {names}; {REMEDY}"
        _reports = found
        return list(found)


_PREFERENCE = {"gpu": 0, "accelerator": 1, "cpu": 2, "other": 3}


def choose() -> tuple[DeviceReport | None, str | None]:
    """The device to use (GPUs first, then accelerators, then processors, each passing the probe) or None
    and the reason there is none."""
    found = reports()
    wanted = os.environ.get(DEVICE_ENV, "").strip()
    if wanted:
        try:
            p, d = (int(part) for part in wanted.split(":"))
        except ValueError:
            return None, f"{DEVICE_ENV}={wanted!r} is not PLATFORM:DEVICE indices (e.g. 0:0)"
        match = [r for r in found if (r.platform_index, r.device_index) == (p, d)]
        if not match:
            listed = "; ".join(r.label for r in found) or "none"
            return None, f"{DEVICE_ENV}={wanted!r} names no OpenCL device (devices: {listed})"
        if match[0].reason:
            label, why = match[0].label, match[0].reason
            return None, f"{DEVICE_ENV}={wanted!r} names {label}, which cannot run: {why}"
        return match[0], None
    usable = [r for r in found if r.reason is None]
    if usable:
        return min(usable, key=lambda r: _PREFERENCE[r.kind]), None
    if not found:
        return None, _probe_failure or f"no OpenCL device found; {REMEDY}"
    failures = "; ".join(f"{r.label}: {r.reason}" for r in found)
    return None, f"no OpenCL device passed the probe ({failures}); {REMEDY}"


def probe() -> str | None:
    """None when an OpenCL device passes the probe, else why none does (never raises)."""
    try:
        return choose()[1]
    except Exception as exc:  # a broken install (missing shared library, ...)
        return f"OpenCL could not be queried: {type(exc).__name__}: {exc}"


def build_options() -> tuple[str, ...]:
    """Extra build options from ``KERNELKIT_OPENCL_OPTIONS`` (read at every call; part of the cache key)."""
    return tuple(shlex.split(os.environ.get(OPTIONS_ENV, "")))


def default_runtime() -> OpenCLRuntime:
    """The runtime of the chosen device for the current build options (raises RuntimeError with the reason
    when no device can run, :class:`~kernelkit.cache.RenamedVariableError` while a variable of
    :data:`RENAMED` is still set)."""
    cache.check_renamed(RENAMED)
    report, reason = choose()
    if report is None:
        raise RuntimeError(f"OpenCL cannot run here: {reason}")
    options = build_options()
    key = ((report.platform_index, report.device_index), options)
    with _lock:
        rt = _runtimes.get(key)
        if rt is None or rt.closed:
            rt = _runtimes[key] = OpenCLRuntime(_devices[key[0]], options)
        return rt.usable()


def forget() -> None:
    """Forget the probe's verdicts and close the runtimes (tests that change the environment use this)."""
    global _reports, _probe_failure
    with _lock:
        for rt in _runtimes.values():
            rt.close()
        _runtimes.clear()
        _devices.clear()
        _reports = None
        _probe_failure = None
