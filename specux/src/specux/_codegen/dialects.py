"""One table per target language: what differs between OpenCL C, CUDA C++ and Metal Shading Language.

Templates in :mod:`specux._codegen.fft_kernels` never ask which target they are written for; they ask the
dialect for a spelling (a pointer declaration, a barrier, a thread index, a complex constructor). Adding a
target therefore means adding one table here, and a template bug shows up on every target at once, which is
what lets the OpenCL run on PoCL vouch for the CUDA and Metal text as well.

Precisions are named ``"f16"`` (storage only: loaded and stored as half, computed in float32), ``"f32"`` and
``"f64"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: precision in which each storage format is computed
COMPUTE_OF = {"f16": "f32", "f32": "f32", "f64": "f64"}


@dataclass(frozen=True)
class Param:
    """One kernel argument: a global-memory pointer (``pointer=True``) or a scalar passed by value."""

    name: str
    #: element type by precision name (``"f16"``, ``"f32"``, ``"f64"``), ``"c32"`` / ``"c64"`` for complex
    #: tables, or ``"int"`` / ``"f32"`` / ``"f64"`` for scalars
    kind: str
    pointer: bool = False
    const: bool = False


# eq=False: dialects are singletons, hashed by identity (their dict fields are not hashable)
@dataclass(frozen=True, eq=False)
class Dialect:
    """Spellings of one target language.

    The ``*_fmt`` fields are ``str.format`` templates; the field names say which placeholders they take.
    """

    name: str
    #: text placed before everything else (includes, pragmas), by need: "base", "f64", "f16"
    preludes: dict[str, str]
    kernel_qualifier: str
    function_qualifier: str
    #: {const}{type} -> a pointer to global / device memory
    global_ptr_fmt: str
    #: {type} {name} {size} -> a block-shared array declaration
    shared_decl_fmt: str
    barrier: str
    local_id: str
    group_id: str
    #: {type} {name} {index} -> one kernel parameter (Metal binds by index; the others by position)
    param_ptr_fmt: str
    param_scalar_fmt: str
    #: extra kernel parameters carrying the thread position (Metal only)
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

    # -- spellings used by the templates -----------------------------------------------------------------

    def real(self, prec: str) -> str:
        return self.real_types[COMPUTE_OF[prec]]

    def cplx(self, prec: str) -> str:
        return self.complex_types[COMPUTE_OF[prec]]

    def make_complex(self, prec: str, re: str, im: str) -> str:
        return self.make_complex_fmt.format(ctype=self.cplx(prec), re=re, im=im)

    def global_ptr(self, type_: str, const: bool) -> str:
        return self.global_ptr_fmt.format(const="const " if const else "", type=type_)

    def shared(self, type_: str, name: str, size: int) -> str:
        return self.shared_decl_fmt.format(type=type_, name=name, size=size)

    def element_type(self, kind: str) -> str:
        """C type of a kernel parameter's element (pointers) or of the scalar itself."""
        if kind == "int":
            return "int"
        if kind in ("c32", "c64"):
            return self.complex_types["f32" if kind == "c32" else "f64"]
        return self.storage_types[kind]

    def load_real(self, storage: str, ptr: str, index: str) -> str:
        """Expression: element ``index`` of a global array of ``storage`` as its compute precision."""
        if storage == "f16":
            return self.load_half_fmt.format(ptr=ptr, index=index)
        return f"{ptr}[{index}]"

    def store_real(self, storage: str, ptr: str, index: str, value: str) -> str:
        """Statement: store the compute-precision ``value`` into element ``index`` of a ``storage`` array."""
        if storage == "f16":
            return self.store_half_fmt.format(ptr=ptr, index=index, value=value) + ";"
        return f"{ptr}[{index}] = ({self.storage_types[storage]})({value});"

    def signature(self, name: str, params: list[Param]) -> str:
        """The kernel's opening line(s), with parameters bound the way the target binds them."""
        parts = []
        for i, p in enumerate(params):
            type_ = self.element_type(p.kind)
            if p.pointer:
                parts.append(
                    self.param_ptr_fmt.format(
                        const="const " if p.const else "", type=type_, name=p.name, index=i
                    )
                )
            else:
                parts.append(self.param_scalar_fmt.format(type=type_, name=p.name, index=i))
        parts.extend(self.index_params)
        joined = ",\n    ".join(parts)
        return f"{self.kernel_qualifier} {name}(\n    {joined})"

    def prelude(self, precisions: set[str]) -> str:
        needs = ["base"] + [p for p in ("f64", "f16") if p in precisions]
        return "".join(self.preludes.get(k, "") for k in needs)


OPENCL = Dialect(
    name="opencl",
    preludes={
        "f64": "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
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

CUDA = Dialect(
    name="cuda",
    preludes={"f16": _CUDA_HALF},
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
)

DIALECTS = {d.name: d for d in (OPENCL, CUDA, METAL)}


def get(name: str) -> Dialect:
    """The dialect table called ``name`` (``"opencl"``, ``"cuda"`` or ``"metal"``)."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"target must be one of {sorted(DIALECTS)}; got {name!r}") from None
