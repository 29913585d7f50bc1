"""One table per target language: what differs between OpenCL C, CUDA C++, Metal Shading Language and GLSL.

Kernel templates (specux's FFTs, vidmag's pipelines, the probes here) never ask which target they are written
for; they ask the dialect for a spelling (a pointer declaration, a barrier, a thread index, a complex
constructor). Adding a target therefore means adding one table here, and a template bug shows up on every
target at once, which is what lets the OpenCL run on PoCL vouch for the CUDA and Metal text as well.

Names
-----
Precisions are named ``"f16"`` (storage only: loaded and stored as half, computed in float32), ``"f32"`` and
``"f64"``. Parameter kinds (:class:`Param`) are those precisions, ``"c32"`` / ``"c64"`` (complex tables),
``"int"`` (int32), ``"i64"``, ``"u32"`` and ``"u64"``; a pointer may also be ``"f32x4"`` or ``"u32x4"`` (a
buffer read and written four lanes at a time: one 16-byte load where a compiler would otherwise issue four,
which is what a CPU device such as lavapipe gains most from; components ``.x .y .z .w`` on every target). A
spelling a target lacks (double precision in Metal, ``exp`` of a double in GLSL, a pointer to pass to a helper
in GLSL) raises :class:`UnsupportedError` when a template asks for it, so the gap shows when the source is
generated, not as a compiler error.

What a source needs beyond the base language is named by *needs* (pass them to :meth:`Dialect.prelude`,
together with the precisions): ``"f64"``, ``"f16"``, ``"i64"``, ``"subgroup"`` and ``"atomic_float"``.
:func:`needs_of` derives the ones a parameter list implies.

Two ways to open a kernel
-------------------------
:meth:`Dialect.signature` is the original form (thread and group index along x only, through ``local_id``
and ``group_id``; group-shared arrays declared by the template inside the body with :meth:`Dialect.shared`).
specux's FFT templates use it and its output is fixed. New templates use :meth:`Emitter.kernel
<kernelkit.emitter.Emitter.kernel>` (or :meth:`Dialect.kernel_parts`): it declares group-shared arrays where
the target wants them and makes the x/y/z indices, group sizes and subgroup lane of :meth:`local_index` and
friends available on every target, including Metal, whose positions are kernel parameters.

Writing templates that also compile as GLSL 4.50
------------------------------------------------
GLSL has no pointers and is stricter than C. A template that should run on Vulkan must:

- never pass a buffer to a function (:meth:`Dialect.global_ptr` raises for GLSL): index the kernel's buffers
  by name in the kernel body, or in a ``#define`` macro;
- declare group-shared arrays through :meth:`Emitter.kernel <kernelkit.emitter.Emitter.kernel>`'s ``shared=``
  (GLSL wants them at global scope; the C family inside the kernel);
- hold one kernel per program (a GLSL compute shader has one ``main``; the kernel's name is kept by the
  runtime, not by the source);
- convert with :meth:`Dialect.cast` (GLSL has constructors, not C casts) and spell literals with
  :meth:`Dialect.literal` (an unsuffixed literal is a float in GLSL; doubles take ``lf``);
- test ``bool`` conditions only: ``if (n)``, ``int b = x < y`` and ``c ? a : b`` with an ``int`` ``c`` are
  errors; no ``unsigned``, ``static``, ``inline``, ``restrict`` locals, ``goto``, recursion or ``#pragma
  unroll``;
- avoid names GLSL reserves: ``input``, ``output``, ``filter``, ``sample``, ``buffer``, ``shared``,
  ``common``, ``partition``, ``active``, ``in``, ``out``, ``gl_*``, anything with ``__`` (a parameter so named
  raises when the kernel opens), and the ``kk_`` prefix this module uses for its own names;
- do arithmetic on vectors component-wise when it must also be CUDA (CUDA's ``float2`` has no operators),
  and use only 2- and 4-wide vectors (a 3-wide one has a 16-byte stride in a GLSL storage buffer).

Scalar parameters become members of one push-constant block with explicit std430 offsets
(:meth:`Dialect.scalar_layout`, which the Vulkan runtime also uses to pack them), so a template reads them by
the same name on every target.

Half storage in GLSL uses ``GL_EXT_shader_16bit_storage`` (``float16_t`` elements converted to float on load
and store) rather than ``packHalf2x16`` on ``uint`` words: storing one half into a shared 32-bit word races
with the thread storing its neighbour, so every half store would need an atomic. lavapipe, Mesa's GPU
drivers, NVIDIA, AMD and Intel expose ``storageBuffer16BitAccess``; the Vulkan runtime enables it where the
device has it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: precision in which each storage format is computed
COMPUTE_OF = {"f16": "f32", "f32": "f32", "f64": "f64"}

#: bytes of each scalar kind (push-constant and argument packing)
SCALAR_BYTES = {"int": 4, "u32": 4, "i64": 8, "u64": 8, "f32": 4, "f64": 8}

#: pointer kinds whose elements are four-wide vectors, and the kind of their lanes
VECTOR_POINTER_KINDS = {"f32x4": "f32", "u32x4": "u32"}

#: needs that :meth:`Dialect.prelude` knows, in the order their text is placed
NEEDS = ("f64", "f16", "i64", "subgroup", "atomic_float")

_AXES = "xyz"


class UnsupportedError(ValueError):
    """The target language has no spelling for what a template asked (the message says what and where)."""


@dataclass(frozen=True)
class Param:
    """One kernel argument: a global-memory pointer (``pointer=True``) or a scalar passed by value.

    Parameters
    ----------
    name : str
        The argument's name in the source.
    kind : str
        Its scalar type: ``"int"``, ``"i64"``, ``"u32"``, ``"u64"``, ``"f16"``, ``"f32"`` or ``"f64"``.
    pointer : bool
        A pointer to global memory of that type (a buffer), rather than a scalar.
    const : bool
        A read-only pointer.

    Examples
    --------
    >>> from kernelkit import Param
    >>> Param("x", "f32", pointer=True, const=True)
    Param(name='x', kind='f32', pointer=True, const=True)
    """

    name: str
    #: element type by precision name (``"f16"``, ``"f32"``, ``"f64"``), ``"c32"`` / ``"c64"`` for complex
    #: tables, an integer kind (``"int"``, ``"i64"``, ``"u32"``, ``"u64"``) or, for pointers, a four-wide
    #: vector kind (``"f32x4"``, ``"u32x4"``: :data:`VECTOR_POINTER_KINDS`); scalars are ``"int"``,
    #: ``"i64"``, ``"u32"``, ``"u64"``, ``"f32"`` or ``"f64"``
    kind: str
    pointer: bool = False
    const: bool = False


def needs_of(params: list[Param] | tuple[Param, ...]) -> set[str]:
    """The needs (see :meth:`Dialect.prelude`) that a kernel with these parameters has in any case."""
    found: set[str] = set()
    for p in params:
        if p.kind in ("f64", "c64"):
            found.add("f64")
        elif p.kind == "f16":
            found.add("f16")
        elif p.kind in ("i64", "u64"):
            found.add("i64")
    return found


@dataclass(frozen=True)
class ScalarSlot:
    """Where one scalar parameter lives in the packed argument block (push constants in Vulkan)."""

    param: Param
    offset: int
    size: int


def scalar_layout(params: list[Param] | tuple[Param, ...]) -> tuple[tuple[ScalarSlot, ...], int]:
    """std430 offsets of the scalar parameters in order, and the block's size rounded up to 4 bytes.

    Each scalar is aligned to its own size (std430's rule for scalars); the Vulkan runtime packs push
    constants with exactly these offsets and the GLSL dialect declares them, so the two cannot disagree.
    """
    slots = []
    offset = 0
    for p in params:
        if p.pointer:
            continue
        try:
            size = SCALAR_BYTES[p.kind]
        except KeyError:
            raise ValueError(
                f"scalar parameter {p.name!r} has kind {p.kind!r}; scalars are one of {sorted(SCALAR_BYTES)}"
            ) from None
        offset = -(-offset // size) * size
        slots.append(ScalarSlot(p, offset, size))
        offset += size
    return tuple(slots), -(-offset // 4) * 4


def _math(fmts: dict[str, str | None], prec: str) -> dict[tuple[str, str], str | None]:
    return {(name, prec): fmt for name, fmt in fmts.items()}


def _calls(names: dict[str, str | None], arity: dict[str, int]) -> dict[str, str | None]:
    """``{"sqrt": "sqrtf"}`` -> ``{"sqrt": "sqrtf({0})"}`` (None stays None: no such function)."""
    out: dict[str, str | None] = {}
    for name, fn in names.items():
        out[name] = None if fn is None else fn + "(" + ", ".join(f"{{{i}}}" for i in range(arity[name])) + ")"
    return out


#: arguments of each portable math function
MATH_ARITY = {
    "sqrt": 1, "rsqrt": 1, "exp": 1, "log": 1, "sin": 1, "cos": 1, "tanh": 1, "pow": 2, "fma": 3,
    "min": 2, "max": 2, "abs": 1, "floor": 1, "ceil": 1,
}


# eq=False: dialects are singletons, hashed by identity (their dict fields are not hashable)
@dataclass(frozen=True, eq=False)
class Dialect:
    """Spellings of one target language.

    The ``*_fmt`` fields are ``str.format`` templates; the field names and the comments say which
    placeholders they take. A ``None`` spelling means the language has none (asking for it raises
    :class:`UnsupportedError`). The four tables are ``kernelkit.DIALECTS``; a new target is one more instance.

    Parameters
    ----------
    name : str
        The target: ``"opencl"``, ``"cuda"``, ``"metal"`` or ``"glsl"``.
    preludes : dict of str to str
        Text placed before everything else, by need (``"base"``, ``"f64"``, ``"f16"``, ``"i64"``,
        ``"subgroup"``, ``"atomic_float"``): version lines, includes, pragmas, helpers.
    kernel_qualifier, function_qualifier : str
        The words that open a kernel and a device helper function.
    global_ptr_fmt : str or None
        ``{const}{type}``: a pointer to global memory; None where the language cannot pass one (GLSL).
    shared_decl_fmt, barrier : str
        A group-shared array declaration (``{type} {name} {size}``) and the group barrier statement.
    local_id, group_id : str
        Thread index in the group and group index along x, as int (the original one-axis form).
    param_ptr_fmt, param_scalar_fmt : str
        One pointer parameter (``{const}{type} {name} {index} {binding}``) and one scalar parameter
        (``""`` where scalars live in a block).
    index_params : tuple of str
        Extra kernel parameters carrying the thread position in the original form (Metal only).
    real_types, complex_types, storage_types : dict of str to str
        Type names by compute precision (real, complex) and by storage format in global memory.
    make_complex_fmt, load_half_fmt, store_half_fmt : str
        A complex value from ``{re}`` ``{im}``; a half loaded as a float and a float stored as a half.
    compute_precisions : frozenset of str
        Precisions the language can compute in.
    suffix : str
        Source file suffix for dumps.
    const_qualifier, signature_fmt, param_sep, scalar_block_fmt, scalar_member_fmt : str
        The extended form's kernel opening: the read-only word, the signature, the parameter separator and
        the block holding every scalar parameter (with one member's spelling and std430 offset).
    shared_scope : str
        Where group-shared arrays go: ``"body"`` (first lines of the kernel) or ``"global"`` (before it).
    group_size_fixed_fmt, group_size_launch : str
        The group size fixed by the source (``{x} {y} {z}``), and the same when chosen at launch.
    index_params_nd, prologue_nd : tuple of str
        Kernel parameters and first body lines of the extended form (Metal's positions).
    local_index_fmt, group_index_fmt, group_dim_fmt, num_groups_fmt, global_index_fmt : str
        Per axis (``{axis}``, ``{c}``): thread index in the group, group index, group size, group count and
        the global index (as ``{type}``).
    global_barrier : str
        A barrier ordering both group-shared and global memory within a group.
    scalar_types : dict of str to str
        The type of each integer / scalar kind (``"int"``, ``"i64"``, ``"u32"``, ``"u64"``, ``"f32"``,
        ``"f64"``).
    cast_fmt, make_vector_fmt : str
        A conversion (``{type} {value}``) and a vector value (``{vtype} {args}``).
    literal_suffixes : dict of str to str
        The floating literal suffix by compute precision.
    vector_types : dict
        ``(kind, width)`` to a vector type; kinds ``"f32"``, ``"f64"``, ``"int"``, ``"u32"``, widths 2 and 4.
    math_fmts, atomic_add_fmts : dict
        ``(function, kind)`` to a call with positional placeholders; kind to an atomic add (None: none).
    subgroup_size, subgroup_lane, subgroup_sum_fmt, subgroup_shuffle_xor_fmt : str
        The subgroup (warp, SIMD group) size and lane, a sum over it and a lane-XOR shuffle.
    reserved_words, reserved_prefixes, reserved_infixes : frozenset or tuple of str
        What a parameter may not be named, start with or contain (checked when a kernel opens).

    Examples
    --------
    >>> from kernelkit import DIALECTS
    >>> opencl, cuda = DIALECTS["opencl"], DIALECTS["cuda"]
    >>> opencl.global_index(0), opencl.literal(1.0, "f32")
    ('(int)get_global_id(0)', '1.0f')
    >>> cuda.name
    'cuda'
    """

    name: str
    #: text placed before everything else (version, includes, pragmas, helpers), by need: "base", "f64",
    #: "f16", "i64", "subgroup", "atomic_float"
    preludes: dict[str, str]
    kernel_qualifier: str
    function_qualifier: str
    #: {const}{type} -> a pointer to global / device memory (None: the language cannot pass one)
    global_ptr_fmt: str | None
    #: {type} {name} {size} -> a block-shared array declaration
    shared_decl_fmt: str
    #: block-shared memory barrier (a statement)
    barrier: str
    #: thread index in the group and group index along x, as int (the original one-axis spellings)
    local_id: str
    group_id: str
    #: {const}{type} {name} {index} (position among all parameters) {binding} (among pointers) -> one pointer
    #: parameter; {type} {name} {index} -> one scalar parameter ("" where scalars live in a block instead)
    param_ptr_fmt: str
    param_scalar_fmt: str
    #: extra kernel parameters carrying the thread position in the original form (Metal only)
    index_params: tuple[str, ...]
    #: names of the real and complex types by compute precision
    real_types: dict[str, str]
    complex_types: dict[str, str]
    #: {ctype} {re} {im} -> a complex value
    make_complex_fmt: str
    #: type of each storage format in global memory
    storage_types: dict[str, str]
    #: {ptr} {index} -> the half at ``ptr[index]`` as a float; {ptr} {index} {value} -> store a float as half
    load_half_fmt: str
    store_half_fmt: str
    #: precisions the language can compute in
    compute_precisions: frozenset[str] = field(default_factory=lambda: frozenset({"f32", "f64"}))
    #: source file suffix for dumps
    suffix: str = ".txt"

    # -- what the extended tables add (defaults are the C family's) ------------------------------------

    #: the word a read-only pointer parameter gets ({const} above)
    const_qualifier: str = "const "
    #: {qualifier} {name} {params} {scalars} {shared} {group_size} -> the opening of a kernel
    signature_fmt: str = "{qualifier} {name}(\n    {params})"
    #: between the parameters in {params}
    param_sep: str = ",\n    "
    #: {members} -> the one block holding every scalar parameter ("": scalars are parameters)
    scalar_block_fmt: str = ""
    #: {type} {name} {offset} -> one member of that block
    scalar_member_fmt: str = ""
    #: where group-shared arrays are declared: "body" (first lines of the kernel) or "global" (before it)
    shared_scope: str = "body"
    #: {x} {y} {z} -> group size fixed by the source; the same when it is chosen at launch (no placeholders)
    group_size_fixed_fmt: str = ""
    group_size_launch: str = ""
    #: kernel parameters and first body lines of the extended form (Metal's positions; the original
    #: ``local_id`` / ``group_id`` names stay valid through the prologue)
    index_params_nd: tuple[str, ...] = ()
    prologue_nd: tuple[str, ...] = ()
    #: {axis} (0, 1, 2) {c} (x, y, z) -> int thread index in the group, group index, group size, group count;
    #: {type} as well -> the global thread index as that integer type
    local_index_fmt: str = ""
    group_index_fmt: str = ""
    group_dim_fmt: str = ""
    num_groups_fmt: str = ""
    global_index_fmt: str = ""
    #: barrier ordering both block-shared and global memory within a group
    global_barrier: str = ""
    #: C type of each integer / scalar kind ("int", "i64", "u32", "u64", "f32", "f64")
    scalar_types: dict[str, str] = field(default_factory=dict)
    #: {type} {value} -> ``value`` converted to ``type``
    cast_fmt: str = "({type})({value})"
    #: floating literal suffix by compute precision
    literal_suffixes: dict[str, str] = field(default_factory=lambda: {"f32": "f", "f64": ""})
    #: (kind, width) -> vector type, kind "f32" / "f64" / "int" / "u32", width 2 or 4
    vector_types: dict[tuple[str, int], str] = field(default_factory=dict)
    #: {vtype} {args} -> a vector value
    make_vector_fmt: str = ""
    #: (function, "f32" / "f64" / "int") -> a call with positional placeholders {0} {1} {2}
    math_fmts: dict[tuple[str, str], str | None] = field(default_factory=dict)
    #: kind -> {ptr} {index} {value}: atomically add to ``ptr[index]`` (the old value, usable as statement)
    atomic_add_fmts: dict[str, str | None] = field(default_factory=dict)
    #: the subgroup (warp, SIMD group) size and this thread's lane, as int
    subgroup_size: str = ""
    subgroup_lane: str = ""
    #: {value} -> sum over the subgroup; {value} {mask} -> the value of lane ``lane ^ mask``
    subgroup_sum_fmt: str = ""
    subgroup_shuffle_xor_fmt: str = ""
    #: what a parameter may not be named, be in, start with or contain (checked when a kernel opens)
    reserved_words: frozenset[str] = frozenset()
    reserved_prefixes: tuple[str, ...] = ()
    reserved_infixes: tuple[str, ...] = ()

    # -- spellings used by the templates -----------------------------------------------------------------

    def _unsupported(self, what: str) -> UnsupportedError:
        return UnsupportedError(f"the {self.name} dialect has no spelling for {what}")

    def real(self, prec: str) -> str:
        try:
            return self.real_types[COMPUTE_OF[prec]]
        except KeyError:
            raise self._unsupported(f"real numbers of precision {prec!r}") from None

    def cplx(self, prec: str) -> str:
        try:
            return self.complex_types[COMPUTE_OF[prec]]
        except KeyError:
            raise self._unsupported(f"complex numbers of precision {prec!r}") from None

    def make_complex(self, prec: str, re: str, im: str) -> str:
        return self.make_complex_fmt.format(ctype=self.cplx(prec), re=re, im=im)

    def global_ptr(self, type_: str, const: bool) -> str:
        """The type of a pointer to global memory, for a helper function's parameter."""
        if self.global_ptr_fmt is None:
            raise self._unsupported("a pointer to pass to a function (index the kernel's buffer by name)")
        return self.global_ptr_fmt.format(const="const " if const else "", type=type_)

    def shared(self, type_: str, name: str, size: int) -> str:
        return self.shared_decl_fmt.format(type=type_, name=name, size=size)

    def element_type(self, kind: str) -> str:
        """C type of a kernel parameter's element (pointers) or of the scalar itself."""
        if kind == "int":
            return "int"
        if kind in ("c32", "c64"):
            return self.cplx("f32" if kind == "c32" else "f64")
        if kind in VECTOR_POINTER_KINDS:
            return self.vector(VECTOR_POINTER_KINDS[kind], 4)
        if kind in self.storage_types:
            return self.storage_types[kind]
        if kind in self.scalar_types:
            return self.scalar_types[kind]
        raise self._unsupported(f"parameters of kind {kind!r}")

    def scalar(self, kind: str) -> str:
        """The type of a scalar kind ("int", "i64", "u32", "u64", "f32", "f64")."""
        try:
            return self.scalar_types[kind]
        except KeyError:
            raise self._unsupported(f"scalars of kind {kind!r}") from None

    def cast(self, type_: str, value: str) -> str:
        """Expression: ``value`` converted to ``type_``."""
        return self.cast_fmt.format(type=type_, value=value)

    def literal(self, value: float, prec: str) -> str:
        """A floating literal of the compute precision of ``prec`` (no silent double in float32 code, and
        no silent float in double code)."""
        text = repr(float(value))
        if "e" not in text and "." not in text and "inf" not in text:
            text += ".0"
        return text + self.literal_suffixes[COMPUTE_OF[prec]]

    def load_real(self, storage: str, ptr: str, index: str) -> str:
        """Expression: element ``index`` of a global array of ``storage`` as its compute precision."""
        if storage == "f16":
            return self.load_half_fmt.format(ptr=ptr, index=index)
        return f"{ptr}[{index}]"

    def store_real(self, storage: str, ptr: str, index: str, value: str) -> str:
        """Statement: store the compute-precision ``value`` into element ``index`` of a ``storage`` array."""
        if storage == "f16":
            return self.store_half_fmt.format(ptr=ptr, index=index, value=value) + ";"
        return f"{ptr}[{index}] = {self.cast(self.element_type(storage), value)};"

    # -- indices (the extended form: see the module docstring) -------------------------------------------

    def _index(self, fmt: str, axis: int, what: str, type_: str = "int") -> str:
        if axis not in (0, 1, 2):
            raise ValueError(f"axis must be 0, 1 or 2; got {axis!r}")
        if not fmt:
            raise self._unsupported(what)
        return fmt.format(axis=axis, c=_AXES[axis], type=type_)

    def local_index(self, axis: int = 0) -> str:
        """This thread's index in its group along ``axis``, as int."""
        return self._index(self.local_index_fmt, axis, "the thread index in a group")

    def group_index(self, axis: int = 0) -> str:
        """This group's index in the grid along ``axis``, as int."""
        return self._index(self.group_index_fmt, axis, "the group index")

    def group_dim(self, axis: int = 0) -> str:
        """Threads per group along ``axis``, as int."""
        return self._index(self.group_dim_fmt, axis, "the group size")

    def num_groups(self, axis: int = 0) -> str:
        """Groups in the grid along ``axis``, as int."""
        return self._index(self.num_groups_fmt, axis, "the number of groups")

    def global_index(self, axis: int = 0, kind: str = "int") -> str:
        """This thread's index in the whole grid along ``axis``, as ``kind`` ("int" or "i64": use "i64"
        where the grid can exceed 2**31 threads)."""
        return self._index(self.global_index_fmt, axis, "the global thread index", self.scalar(kind))

    # -- vectors, math, atomics, subgroups ---------------------------------------------------------------

    def vector(self, kind: str, width: int) -> str:
        """The ``width``-wide vector type of ``kind`` ("f32", "f64", "int", "u32"; width 2 or 4)."""
        try:
            return self.vector_types[(kind, width)]
        except KeyError:
            raise self._unsupported(f"{width}-wide vectors of {kind!r}") from None

    def make_vector(self, kind: str, *components: str) -> str:
        vtype = self.vector(kind, len(components))
        return self.make_vector_fmt.format(vtype=vtype, args=", ".join(components))

    def math(self, function: str, kind: str, *args: str) -> str:
        """A call of ``function`` (see :data:`MATH_ARITY`) on values of ``kind`` ("f32", "f64" or "int")."""
        if function not in MATH_ARITY:
            raise ValueError(f"function must be one of {sorted(MATH_ARITY)}; got {function!r}")
        if len(args) != MATH_ARITY[function]:
            raise TypeError(f"{function} takes {MATH_ARITY[function]} arguments; got {len(args)}")
        fmt = self.math_fmts.get((function, COMPUTE_OF.get(kind, kind)))
        if fmt is None:
            raise self._unsupported(f"{function} of {kind!r}")
        return fmt.format(*args)

    def atomic_add(self, kind: str, ptr: str, index: str, value: str) -> str:
        """Expression: atomically add ``value`` to ``ptr[index]`` (a buffer of ``kind``); its value is the
        old one.

        ``"f32"`` needs ``"atomic_float"`` in the prelude (OpenCL gets a compare-and-swap loop, GLSL
        ``GL_EXT_shader_atomic_float``, Metal 3.0's ``atomic_float``)."""
        fmt = self.atomic_add_fmts.get(kind)
        if fmt is None:
            raise self._unsupported(f"atomic addition on {kind!r}")
        return fmt.format(ptr=ptr, index=index, value=value)

    def subgroup_sum(self, value: str) -> str:
        """Expression: the sum of ``value`` over this thread's subgroup (needs ``"subgroup"``)."""
        if not self.subgroup_sum_fmt:
            raise self._unsupported("a subgroup sum")
        return self.subgroup_sum_fmt.format(value=value)

    def subgroup_shuffle_xor(self, value: str, mask: str) -> str:
        """Expression: ``value`` of the lane ``lane ^ mask`` of this subgroup (needs ``"subgroup"``)."""
        if not self.subgroup_shuffle_xor_fmt:
            raise self._unsupported("a subgroup shuffle")
        return self.subgroup_shuffle_xor_fmt.format(value=value, mask=mask)

    # -- kernels -----------------------------------------------------------------------------------------

    def _check_name(self, name: str) -> None:
        reserved = (
            name in self.reserved_words
            or name.startswith(self.reserved_prefixes)
            or any(part in name for part in self.reserved_infixes)
        )
        if reserved:
            raise UnsupportedError(f"{name!r} is reserved in {self.name}; name the parameter otherwise")

    def scalar_layout(self, params: list[Param] | tuple[Param, ...]) -> tuple[tuple[ScalarSlot, ...], int]:
        """See :func:`scalar_layout` (the same for every dialect)."""
        return scalar_layout(params)

    def _head(self, name: str, params: list[Param], index_params: tuple[str, ...],
              block: tuple[int, ...] | None, shared: str) -> str:
        parts = []
        binding = 0
        for i, p in enumerate(params):
            self._check_name(p.name)
            type_ = self.element_type(p.kind)
            if p.pointer:
                const = self.const_qualifier if p.const else ""
                parts.append(self.param_ptr_fmt.format(const=const, type=type_, name=p.name, index=i,
                                                       binding=binding))
                binding += 1
            else:
                text = self.param_scalar_fmt.format(type=type_, name=p.name, index=i)
                if text:
                    parts.append(text)
        parts.extend(index_params)
        scalars = ""
        if self.scalar_block_fmt:
            slots, _ = scalar_layout(params)
            members = "".join(
                self.scalar_member_fmt.format(type=self.element_type(s.param.kind), name=s.param.name,
                                              offset=s.offset)
                for s in slots
            )
            scalars = self.scalar_block_fmt.format(members=members) if members else ""
        if block is None:
            group_size = self.group_size_launch
        else:
            x, y, z = (*block, 1, 1)[:3]
            group_size = self.group_size_fixed_fmt.format(x=x, y=y, z=z)
        return self.signature_fmt.format(
            qualifier=self.kernel_qualifier, name=name, params=self.param_sep.join(parts), scalars=scalars,
            shared=shared, group_size=group_size,
        )

    def signature(self, name: str, params: list[Param], block: tuple[int, ...] | None = None) -> str:
        """The kernel's opening line(s), with parameters bound the way the target binds them (the original
        form: see the module docstring). ``block`` fixes the group size where the source must say it
        (GLSL); None leaves it to the launch."""
        return self._head(name, list(params), self.index_params, block, "")

    def kernel_parts(self, name: str, params: list[Param], block: tuple[int, ...] | None = None,
                     shared: tuple[tuple[str, str, int], ...] = ()) -> tuple[str, list[str]]:
        """The extended form: ``(head, first body lines)`` of a kernel with group-shared arrays ``shared``
        (``(type, name, size)`` each) declared where the target wants them."""
        decls = [self.shared(t, n, s) for t, n, s in shared]
        if self.shared_scope == "global":
            globals_ = "".join(d + "\n" for d in decls)
            head = self._head(name, list(params), self.index_params_nd, block, globals_)
            return head, list(self.prologue_nd)
        head = self._head(name, list(params), self.index_params_nd, block, "")
        return head, [*self.prologue_nd, *decls]

    def prelude(self, precisions: set[str]) -> str:
        """Text before everything else, for the precisions and needs (see :data:`NEEDS`) in ``precisions``."""
        needs = ["base"] + [p for p in NEEDS if p in precisions]
        return "".join(self.preludes.get(k, "") for k in needs)



# C99 / OpenCL / Metal spellings of the float functions (overloaded on float and double where both exist)
_C_FLOAT = {
    "sqrt": "sqrt", "rsqrt": "rsqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos", "tanh": "tanh",
    "pow": "pow", "fma": "fma", "min": "fmin", "max": "fmax", "abs": "fabs", "floor": "floor", "ceil": "ceil",
}
_C_INT = {"min": "min", "max": "max"}

_OPENCL_ATOMIC_FLOAT = """\
static inline float kk_atomic_add_f32(volatile __global float* p, float v) {
    /* OpenCL 1.2 has no float atomics: retry a compare-and-swap on the bits until no other thread
       changed the value in between */
    union { unsigned int u; float f; } seen, next;
    do {
        seen.f = *p;
        next.f = seen.f + v;
    } while (atomic_cmpxchg((volatile __global unsigned int*)p, seen.u, next.u) != seen.u);
    return seen.f;
}
"""

OPENCL = Dialect(
    name="opencl",
    preludes={
        "f64": "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
        "subgroup": "#pragma OPENCL EXTENSION cl_khr_subgroups : enable\n"
        "#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable\n",
        "atomic_float": _OPENCL_ATOMIC_FLOAT,
    },
    kernel_qualifier="__kernel void",
    function_qualifier="static inline",
    global_ptr_fmt="__global {const}{type}*",
    shared_decl_fmt="__local {type} {name}[{size}];",
    barrier="barrier(CLK_LOCAL_MEM_FENCE);",
    local_id="(int)get_local_id(0)",
    group_id="(int)get_group_id(0)",
    param_ptr_fmt="__global {const}{type}* restrict {name}",
    param_scalar_fmt="const {type} {name}",
    index_params=(),
    real_types={"f32": "float", "f64": "double"},
    complex_types={"f32": "float2", "f64": "double2"},
    make_complex_fmt="(({ctype})({re}, {im}))",
    # half may only be loaded and stored (vload_half / vstore_half) without cl_khr_fp16, which is all we need
    storage_types={"f16": "half", "f32": "float", "f64": "double"},
    load_half_fmt="vload_half({index}, {ptr})",
    store_half_fmt="vstore_half({value}, {index}, {ptr})",
    suffix=".cl",
    local_index_fmt="(int)get_local_id({axis})",
    group_index_fmt="(int)get_group_id({axis})",
    group_dim_fmt="(int)get_local_size({axis})",
    num_groups_fmt="(int)get_num_groups({axis})",
    global_index_fmt="({type})get_global_id({axis})",
    global_barrier="barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);",
    scalar_types={
        "int": "int", "i64": "long", "u32": "uint", "u64": "ulong", "f32": "float", "f64": "double",
    },
    vector_types={
        ("f32", 2): "float2", ("f32", 4): "float4", ("f64", 2): "double2", ("f64", 4): "double4",
        ("int", 2): "int2", ("int", 4): "int4", ("u32", 2): "uint2", ("u32", 4): "uint4",
    },
    make_vector_fmt="(({vtype})({args}))",
    math_fmts={
        **_math(_calls(_C_FLOAT, MATH_ARITY), "f32"),
        **_math(_calls(_C_FLOAT, MATH_ARITY), "f64"),
        **_math(_calls(_C_INT, MATH_ARITY), "int"),
        # abs of an int is unsigned in OpenCL C
        ("abs", "int"): "((int)abs({0}))",
    },
    atomic_add_fmts={
        "int": "atomic_add(&{ptr}[{index}], {value})",
        "u32": "atomic_add(&{ptr}[{index}], {value})",
        "f32": "kk_atomic_add_f32(&{ptr}[{index}], {value})",
    },
    subgroup_size="(int)get_sub_group_size()",
    subgroup_lane="(int)get_sub_group_local_id()",
    subgroup_sum_fmt="sub_group_reduce_add({value})",
    subgroup_shuffle_xor_fmt="sub_group_shuffle_xor({value}, (uint)({mask}))",
)

# Half storage in CUDA goes through two PTX conversions instead of cuda_fp16.h: NVRTC then needs no include
# path, so the same source compiles from a toolkit, from torch's bundled NVRTC or from the pip wheel.
_CUDA_HALF = """\
__device__ __forceinline__ float spx_h2f(unsigned short h) {
    float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
__device__ __forceinline__ unsigned short spx_f2h(float f) {
    unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
"""

# a warp sum by butterfly shuffles: every lane ends with the total (CUDA has no float reduction intrinsic)
_CUDA_SUBGROUP = """\
template <typename T> __device__ __forceinline__ T kk_warp_sum(T v) {
    for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
"""

_CUDA_F32 = {
    "sqrt": "sqrtf", "rsqrt": "rsqrtf", "exp": "expf", "log": "logf", "sin": "sinf", "cos": "cosf",
    "tanh": "tanhf", "pow": "powf", "fma": "fmaf", "min": "fminf", "max": "fmaxf", "abs": "fabsf",
    "floor": "floorf", "ceil": "ceilf",
}
_CUDA_F64 = {k: v[:-1] for k, v in _CUDA_F32.items()}

_C_ATOMIC = "atomicAdd(&{ptr}[{index}], {value})"

CUDA = Dialect(
    name="cuda",
    preludes={"f16": _CUDA_HALF, "subgroup": _CUDA_SUBGROUP},
    kernel_qualifier='extern "C" __global__ void',
    function_qualifier="__device__ __forceinline__",
    global_ptr_fmt="{const}{type}*",
    shared_decl_fmt="__shared__ {type} {name}[{size}];",
    barrier="__syncthreads();",
    local_id="(int)threadIdx.x",
    group_id="(int)blockIdx.x",
    param_ptr_fmt="{const}{type}* __restrict__ {name}",
    param_scalar_fmt="const {type} {name}",
    index_params=(),
    real_types={"f32": "float", "f64": "double"},
    complex_types={"f32": "float2", "f64": "double2"},
    make_complex_fmt="make_{ctype}({re}, {im})",
    storage_types={"f16": "unsigned short", "f32": "float", "f64": "double"},
    load_half_fmt="spx_h2f({ptr}[{index}])",
    store_half_fmt="{ptr}[{index}] = spx_f2h({value})",
    suffix=".cu",
    local_index_fmt="(int)threadIdx.{c}",
    group_index_fmt="(int)blockIdx.{c}",
    group_dim_fmt="(int)blockDim.{c}",
    num_groups_fmt="(int)gridDim.{c}",
    global_index_fmt="(({type})blockIdx.{c} * ({type})blockDim.{c} + ({type})threadIdx.{c})",
    global_barrier="__syncthreads();",
    scalar_types={
        "int": "int", "i64": "long long", "u32": "unsigned int", "u64": "unsigned long long", "f32": "float",
        "f64": "double",
    },
    vector_types={
        ("f32", 2): "float2", ("f32", 4): "float4", ("f64", 2): "double2", ("f64", 4): "double4",
        ("int", 2): "int2", ("int", 4): "int4", ("u32", 2): "uint2", ("u32", 4): "uint4",
    },
    make_vector_fmt="make_{vtype}({args})",
    math_fmts={
        **_math(_calls(_CUDA_F32, MATH_ARITY), "f32"),
        **_math(_calls(_CUDA_F64, MATH_ARITY), "f64"),
        **_math(_calls({"min": "min", "max": "max", "abs": "abs"}, MATH_ARITY), "int"),
    },
    atomic_add_fmts={"int": _C_ATOMIC, "u32": _C_ATOMIC, "f32": _C_ATOMIC, "f64": _C_ATOMIC},
    subgroup_size="warpSize",
    subgroup_lane="((int)(((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x) % warpSize))",
    subgroup_sum_fmt="kk_warp_sum({value})",
    subgroup_shuffle_xor_fmt="__shfl_xor_sync(0xffffffffu, {value}, {mask})",
)

_METAL_ATOMIC = (
    "atomic_fetch_add_explicit((device {atype}*)&{{ptr}}[{{index}}], {{value}}, memory_order_relaxed)"
)

METAL = Dialect(
    name="metal",
    preludes={"base": "#include <metal_stdlib>\nusing namespace metal;\n"},
    kernel_qualifier="kernel void",
    function_qualifier="inline",
    global_ptr_fmt="device {const}{type}*",
    shared_decl_fmt="threadgroup {type} {name}[{size}];",
    barrier="threadgroup_barrier(mem_flags::mem_threadgroup);",
    local_id="(int)spx_lid",
    group_id="(int)spx_gid",
    # Metal binds arguments by index: buffers and small constants share the [[buffer(i)]] table
    param_ptr_fmt="device {const}{type}* {name} [[buffer({index})]]",
    param_scalar_fmt="constant {type}& {name} [[buffer({index})]]",
    index_params=(
        "uint spx_lid [[thread_position_in_threadgroup]]",
        "uint spx_gid [[threadgroup_position_in_grid]]",
    ),
    real_types={"f32": "float"},
    complex_types={"f32": "float2"},
    make_complex_fmt="{ctype}({re}, {im})",
    storage_types={"f16": "half", "f32": "float"},
    load_half_fmt="float({ptr}[{index}])",
    store_half_fmt="{ptr}[{index}] = half({value})",
    # Apple GPUs have no double precision
    compute_precisions=frozenset({"f32"}),
    suffix=".metal",
    # positions are kernel parameters; all of one kind are uint3 (Metal wants them of one dimensionality)
    index_params_nd=(
        "uint3 kk_lid [[thread_position_in_threadgroup]]",
        "uint3 kk_gid [[threadgroup_position_in_grid]]",
        "uint3 kk_lsize [[threads_per_threadgroup]]",
        "uint3 kk_ngroups [[threadgroups_per_grid]]",
        "uint kk_lane [[thread_index_in_simdgroup]]",
        "uint kk_simd_size [[threads_per_simdgroup]]",
    ),
    prologue_nd=("const uint spx_lid = kk_lid.x;", "const uint spx_gid = kk_gid.x;"),
    local_index_fmt="(int)kk_lid.{c}",
    group_index_fmt="(int)kk_gid.{c}",
    group_dim_fmt="(int)kk_lsize.{c}",
    num_groups_fmt="(int)kk_ngroups.{c}",
    global_index_fmt="(({type})kk_gid.{c} * ({type})kk_lsize.{c} + ({type})kk_lid.{c})",
    global_barrier="threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);",
    scalar_types={"int": "int", "i64": "long", "u32": "uint", "u64": "ulong", "f32": "float"},
    vector_types={
        ("f32", 2): "float2", ("f32", 4): "float4", ("int", 2): "int2", ("int", 4): "int4",
        ("u32", 2): "uint2", ("u32", 4): "uint4",
    },
    make_vector_fmt="{vtype}({args})",
    math_fmts={
        **_math(_calls(_C_FLOAT, MATH_ARITY), "f32"),
        **_math(_calls({"min": "min", "max": "max", "abs": "abs"}, MATH_ARITY), "int"),
    },
    atomic_add_fmts={
        "int": _METAL_ATOMIC.format(atype="atomic_int"),
        "u32": _METAL_ATOMIC.format(atype="atomic_uint"),
        # device-memory float atomics need MSL 3.0 (macOS 13 / iOS 16 on Apple7+ GPUs)
        "f32": _METAL_ATOMIC.format(atype="atomic_float"),
    },
    subgroup_size="(int)kk_simd_size",
    subgroup_lane="(int)kk_lane",
    subgroup_sum_fmt="simd_sum({value})",
    subgroup_shuffle_xor_fmt="simd_shuffle_xor({value}, (ushort)({mask}))",
)

# GLSL.std.450 defines exp, log, sin, cos, tanh and pow for 16- and 32-bit floats only
_GLSL_F32 = {**_C_FLOAT, "rsqrt": "inversesqrt", "min": "min", "max": "max", "abs": "abs"}
_GLSL_F64 = {**_GLSL_F32, "exp": None, "log": None, "sin": None, "cos": None, "tanh": None, "pow": None}
_GLSL_ATOMIC = "atomicAdd({ptr}[{index}], {value})"

GLSL = Dialect(
    name="glsl",
    preludes={
        "base": "#version 450\n",
        # double is core GLSL 4.50 (the device needs shaderFloat64)
        "f16": "#extension GL_EXT_shader_16bit_storage : require\n",
        "i64": "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n",
        "subgroup": "#extension GL_KHR_shader_subgroup_basic : require\n"
        "#extension GL_KHR_shader_subgroup_arithmetic : require\n"
        "#extension GL_KHR_shader_subgroup_shuffle : require\n",
        "atomic_float": "#extension GL_EXT_shader_atomic_float : require\n",
    },
    kernel_qualifier="void",
    function_qualifier="",
    global_ptr_fmt=None,
    shared_decl_fmt="shared {type} {name}[{size}];",
    # barrier() orders execution; the memory barrier makes the group's shared writes visible to it
    barrier="memoryBarrierShared(); barrier();",
    local_id="int(gl_LocalInvocationID.x)",
    group_id="int(gl_WorkGroupID.x)",
    # one storage buffer per pointer, bound in order; the anonymous block makes the array visible by its name
    param_ptr_fmt=(
        "layout(std430, binding = {binding}) restrict {const}buffer kk_buf_{name} {{ {type} {name}[]; }};"
    ),
    param_scalar_fmt="",
    index_params=(),
    real_types={"f32": "float", "f64": "double"},
    complex_types={"f32": "vec2", "f64": "dvec2"},
    make_complex_fmt="{ctype}({re}, {im})",
    storage_types={"f16": "float16_t", "f32": "float", "f64": "double"},
    load_half_fmt="float({ptr}[{index}])",
    store_half_fmt="{ptr}[{index}] = float16_t({value})",
    suffix=".comp",
    const_qualifier="readonly ",
    # GLSL compute: resources at global scope, the group size as a layout, then main
    signature_fmt="{params}\n{scalars}{shared}{group_size}{qualifier} main()",
    param_sep="\n",
    # an anonymous block: members are read by their own names, as parameters are elsewhere
    scalar_block_fmt="layout(push_constant, std430) uniform kk_scalars {{\n{members}}};\n",
    scalar_member_fmt="    layout(offset = {offset}) {type} {name};\n",
    shared_scope="global",
    group_size_fixed_fmt="layout(local_size_x = {x}, local_size_y = {y}, local_size_z = {z}) in;\n",
    # specialization constants 0, 1, 2: the runtime sets the group size of each pipeline at launch
    group_size_launch="layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;\n",
    local_index_fmt="int(gl_LocalInvocationID.{c})",
    group_index_fmt="int(gl_WorkGroupID.{c})",
    group_dim_fmt="int(gl_WorkGroupSize.{c})",
    num_groups_fmt="int(gl_NumWorkGroups.{c})",
    global_index_fmt="{type}(gl_GlobalInvocationID.{c})",
    global_barrier="memoryBarrier(); barrier();",
    scalar_types={
        "int": "int", "i64": "int64_t", "u32": "uint", "u64": "uint64_t", "f32": "float", "f64": "double",
    },
    cast_fmt="{type}({value})",
    literal_suffixes={"f32": "f", "f64": "lf"},
    vector_types={
        ("f32", 2): "vec2", ("f32", 4): "vec4", ("f64", 2): "dvec2", ("f64", 4): "dvec4",
        ("int", 2): "ivec2", ("int", 4): "ivec4", ("u32", 2): "uvec2", ("u32", 4): "uvec4",
    },
    make_vector_fmt="{vtype}({args})",
    math_fmts={
        **_math(_calls(_GLSL_F32, MATH_ARITY), "f32"),
        **_math(_calls(_GLSL_F64, MATH_ARITY), "f64"),
        **_math(_calls({"min": "min", "max": "max", "abs": "abs"}, MATH_ARITY), "int"),
    },
    atomic_add_fmts={"int": _GLSL_ATOMIC, "u32": _GLSL_ATOMIC, "f32": _GLSL_ATOMIC},
    subgroup_size="int(gl_SubgroupSize)",
    subgroup_lane="int(gl_SubgroupInvocationID)",
    subgroup_sum_fmt="subgroupAdd({value})",
    subgroup_shuffle_xor_fmt="subgroupShuffleXor({value}, uint({mask}))",
    reserved_words=frozenset(
        "in out inout input output filter sample buffer shared common partition active uniform attribute"
        " varying layout centroid flat smooth noperspective patch precision coherent volatile restrict"
        " readonly writeonly subroutine invariant precise highp mediump lowp discard texture image sampler"
        " main const struct switch case default void bool true false int uint float double half long short"
        " unsigned fixed superp inline noinline static extern external interface namespace using class"
        " template this union enum typedef goto asm sizeof cast resource".split()
    ),
    reserved_prefixes=("gl_",),
    reserved_infixes=("__",),
)

DIALECTS = {d.name: d for d in (OPENCL, CUDA, METAL, GLSL)}


def get(name: str) -> Dialect:
    """The dialect table called ``name`` (``"opencl"``, ``"cuda"``, ``"metal"`` or ``"glsl"``)."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"target must be one of {sorted(DIALECTS)}; got {name!r}") from None
