"""What a runtime compiles and launches, independent of any device API.

The separation follows ``cuda.core``: a :class:`Program` (source text in one dialect, its entry points and
compiler options) is compiled by a device runtime into an :class:`ObjectCode` (one module / program /
library / shader module holding one or many kernels), from which a :class:`Kernel` is taken by name and
launched with an explicit :class:`LaunchConfig`. Nothing here imports a GPU library.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

from kernelkit.dialects import Dialect, Param


@dataclass(frozen=True)
class KernelSignature:
    """One entry point of a program: its name and its parameters in binding order.

    The parameters say how a launch binds its arguments: pointers are buffers (OpenCL / CUDA / Metal
    arguments, storage buffers in Vulkan), scalars are passed by value (push constants in Vulkan) and
    converted to the parameter's type (``int`` -> int32, ``i64`` -> int64, ``f32`` / ``f64``).

    Parameters
    ----------
    name : str
        The entry point's name in the source.
    params : tuple of Param
        Its parameters, in binding order.
    block : tuple of int or None
        A group size fixed in the source (GLSL's ``local_size``, CUDA's ``__launch_bounds__``), or None.

    Examples
    --------
    >>> from kernelkit import KernelSignature, Param
    >>> sig = KernelSignature("scale", (Param("x", "f32", pointer=True), Param("n", "int")))
    >>> [p.name for p in sig.params]
    ['x', 'n']
    """

    name: str
    params: tuple[Param, ...] = ()
    #: threads per group fixed by the source (GLSL's ``local_size``, a template's block); None: set at launch
    block: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Program:
    """Source text in one dialect, the kernels it defines and the options it is compiled with.

    ``name`` names the program in dumps and error messages. Programs are values: equal programs compile to
    the same object, which is what the cache relies on.

    Parameters
    ----------
    source : str
        The program's text in ``dialect``'s language.
    dialect : Dialect
        Its language (one of :data:`kernelkit.DIALECTS`).
    kernels : tuple of KernelSignature
        The entry points it defines.
    options : tuple of str
        Compiler options (part of the cache key).
    name : str
        Its name in dumps and error messages.

    Examples
    --------
    >>> from kernelkit import DIALECTS, KernelSignature, Param, Program
    >>> source = ("__kernel void twice(__global float* x, const int n) {"
    ...           " int i = get_global_id(0); if (i < n) x[i] *= 2; }")
    >>> sig = KernelSignature("twice", (Param("x", "f32", pointer=True), Param("n", "int")))
    >>> program = Program(source, DIALECTS["opencl"], (sig,), name="twice")
    >>> program == Program(source, DIALECTS["opencl"], (sig,), name="twice")   # a value
    True
    """

    source: str
    dialect: Dialect
    kernels: tuple[KernelSignature, ...]
    options: tuple[str, ...] = ()
    name: str = "program"

    def __hash__(self) -> int:
        # computed once: a program is looked up in the runtime's object cache at every launch
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.source, self.dialect, self.kernels, self.options, self.name))
            object.__setattr__(self, "_hash", cached)
        return cached

    def signature(self, kernel: str) -> KernelSignature:
        for k in self.kernels:
            if k.name == kernel:
                return k
        names = ", ".join(k.name for k in self.kernels)
        raise KeyError(f"program {self.name!r} has no kernel {kernel!r} (it defines: {names})")


def _dims(value: Any, what: str) -> tuple[int, ...]:
    """The 1 to 3 positive sizes of ``value`` (an int or a sequence of ints), as plain ints."""
    # the common forms first: a config is made at every launch
    if type(value) is int:
        if value >= 1:
            return (value,)
    elif type(value) is tuple and 1 <= len(value) <= 3 and all(type(d) is int and d >= 1 for d in value):
        return value
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an int or a tuple of 1 to 3 ints; got {value!r}")
    try:
        dims: tuple[Any, ...] = (operator.index(value),)
    except TypeError:
        try:
            dims = tuple(value)
        except TypeError:
            raise TypeError(
                f"{what} must be an int or a tuple of 1 to 3 ints; got {type(value).__name__}"
            ) from None
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"{what} must have 1 to 3 dimensions; got {value!r}")
    out = []
    for d in dims:
        if isinstance(d, bool):
            raise TypeError(f"{what} must be positive integers; got {value!r}")
        try:
            d = operator.index(d)
        except TypeError:
            raise TypeError(f"{what} must be positive integers; got {value!r}") from None
        if d < 1:
            raise ValueError(f"{what} must be positive integers; got {value!r}")
        out.append(d)
    return tuple(out)


_ONES = {1: (1, 1), 2: (1,), 3: ()}


@dataclass(frozen=True)
class LaunchConfig:
    """How many groups of how many threads run a kernel, and how much dynamic group-shared memory they get.

    ``grid`` counts groups (CUDA's blocks, OpenCL's work groups, Metal's threadgroups, Vulkan's workgroups)
    along 1 to 3 axes; ``block`` is the threads of one group. The global size along an axis is
    ``grid * block``.

    Parameters
    ----------
    grid : int or tuple of int
        Groups along each of 1 to 3 axes.
    block : int or tuple of int
        Threads per group along each axis (no more axes than ``grid``).
    shared_mem : int
        Bytes of dynamic group-shared memory per group.

    Examples
    --------
    >>> from kernelkit import LaunchConfig
    >>> LaunchConfig(4, 256)              # 4 groups of 256 threads: 1024 threads in all
    LaunchConfig(grid=4, block=256, shared_mem=0)
    >>> LaunchConfig((8, 8), (16, 16)).grid
    (8, 8)
    """

    grid: tuple[int, ...] | int
    block: tuple[int, ...] | int = 1
    shared_mem: int = 0
    #: the normalised (x, y, z) forms
    grid3: tuple[int, int, int] = field(init=False, repr=False)
    block3: tuple[int, int, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        ndims = []
        for name in ("grid", "block"):
            value = getattr(self, name)
            dims = _dims(value, name)
            # sequences become tuples of ints (hashable, comparable); a single int stays an int
            scalar = not isinstance(value, bool) and hasattr(value, "__index__")
            object.__setattr__(self, name, dims[0] if scalar else dims)
            object.__setattr__(self, f"{name}3", dims + _ONES[len(dims)])
            ndims.append(len(dims))
        if ndims[1] > ndims[0]:  # the axes past the grid's would be silently dropped from the launch
            raise ValueError(f"block {self.block!r} has more dimensions than grid {self.grid!r}")
        if isinstance(self.shared_mem, bool) or not isinstance(self.shared_mem, int) or self.shared_mem < 0:
            raise ValueError(f"shared_mem must be a non-negative integer; got {self.shared_mem!r}")

    @property
    def ndim(self) -> int:
        g = self.grid if isinstance(self.grid, tuple) else (self.grid,)
        return len(g)

    @property
    def global_size(self) -> tuple[int, ...]:
        """Threads along each of the ``ndim`` axes (OpenCL's global work size)."""
        return tuple(g * b for g, b in zip(self.grid3, self.block3))[: self.ndim]

    @property
    def local_size(self) -> tuple[int, ...]:
        return self.block3[: self.ndim]


class ObjectCode:
    """A compiled program on one device: its kernels by name, and the bytes the cache stores.

    Made by a runtime's ``compile``; ``handles`` maps each kernel name to the device API's handle.
    """

    def __init__(self, runtime: Any, program: Program, handles: dict[str, Any], binary: bytes | None = None,
                 module: Any = None):
        self.runtime = runtime
        self.program = program
        self.binary = binary
        #: the device API's module / program / library object, kept alive as long as the kernels are
        self.module = module
        self._kernels = {
            name: Kernel(self, program.signature(name), handle) for name, handle in handles.items()
        }

    def kernel(self, name: str) -> Kernel:
        try:
            return self._kernels[name]
        except KeyError:
            raise KeyError(
                f"program {self.program.name!r} compiled no kernel {name!r} (it has: {sorted(self._kernels)})"
            ) from None

    @property
    def kernels(self) -> dict[str, Kernel]:
        return dict(self._kernels)


class Kernel:
    """One entry point of an :class:`ObjectCode`, launched by its runtime."""

    def __init__(self, code: ObjectCode, signature: KernelSignature, handle: Any):
        self.code = code
        self.signature = signature
        self.handle = handle

    @property
    def name(self) -> str:
        return self.signature.name

    @property
    def params(self) -> tuple[Param, ...]:
        return self.signature.params

    def launch(self, config: LaunchConfig, *args: Any) -> None:
        """Enqueue one run with ``args`` in parameter order (device buffers for pointers, numbers for
        scalars)."""
        if len(args) != len(self.params):
            raise TypeError(f"kernel {self.name!r} takes {len(self.params)} arguments; got {len(args)}")
        self.code.runtime.launch(self, config, list(args))


def exact_cover(global_size: tuple[int, ...] | int, max_group: int) -> LaunchConfig:
    """A launch of exactly ``global_size`` threads: groups span the largest divisor of the first axis that is
    at most ``max_group``, and one thread along the other axes.

    For kernels written without bounds checks (one thread per element), so no thread falls outside the data.
    """
    size = (global_size,) if isinstance(global_size, int) else tuple(global_size)
    first = size[0]
    block = next(d for d in range(max(1, min(first, max_group)), 0, -1) if first % d == 0)
    blocks = (block,) + (1,) * (len(size) - 1)
    return LaunchConfig(tuple(s // b for s, b in zip(size, blocks)), blocks)
