"""The dialect tables: spellings of each target, the original form's output unchanged, and one template that
compiles in every language with a compiler here (GLSL with glslang, CUDA with NVRTC, OpenCL on PoCL)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kernelkit import dialects
from kernelkit.dialects import (
    CUDA,
    DIALECTS,
    GLSL,
    METAL,
    OPENCL,
    Param,
    UnsupportedError,
    needs_of,
    scalar_layout,
)
from kernelkit.emitter import Emitter, complex_helpers, literal

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "specux" / "tests" / "codegen_golden.json"

C_FAMILY = (OPENCL, CUDA, METAL)


# -- the original form: specux's FFT kernels render exactly as with specux's own tables --------------------


def _specux():
    pytest.importorskip("specux")
    from specux._codegen import fft_kernels

    return fft_kernels


def _golden_kernels():
    if not GOLDEN.is_file():
        pytest.skip(f"{GOLDEN} is not in this checkout")
    return json.loads(GOLDEN.read_text())["kernels"]


def test_specux_fft_kernels_render_as_recorded_with_specuxs_own_tables():
    """Hashes recorded with specux's own tables before specux moved onto these (272 kernels: every kind,
    storage and dialect); while specux still had its copy, every planned kernel also rendered the same text
    with both."""
    fft_kernels = _specux()
    kernels = _golden_kernels()
    assert len(kernels) > 200
    wrong = []
    for k in kernels:
        spec_class = getattr(fft_kernels, k["spec"])
        fields = {f: tuple(v) if isinstance(v, list) else v for f, v in k["fields"].items()}
        src = fft_kernels.render(spec_class(**fields), DIALECTS[k["dialect"]])
        digest = hashlib.sha256(src.source.encode()).hexdigest()
        if (digest, src.name, src.block) != (k["sha256"], k["name"], k["block"]):
            wrong.append((k["dialect"], k["name"], k["fields"]))
    assert not wrong, f"{len(wrong)} kernels render differently, e.g. {wrong[:3]}"


def test_the_original_signatures_are_spelled_as_before():
    params = [Param("src", "f16", True, True), Param("dst", "c32", True), Param("n", "int"),
              Param("s", "f32")]
    assert OPENCL.signature("k", params) == (
        "__kernel void k(\n    __global const half* restrict src,\n    __global float2* restrict dst,\n"
        "    const int n,\n    const float s)"
    )
    assert CUDA.signature("k", params) == (
        'extern "C" __global__ void k(\n    const unsigned short* __restrict__ src,\n'
        "    float2* __restrict__ dst,\n    const int n,\n    const float s)"
    )
    assert METAL.signature("k", params) == (
        "kernel void k(\n    device const half* src [[buffer(0)]],\n    device float2* dst [[buffer(1)]],\n"
        "    constant int& n [[buffer(2)]],\n    constant float& s [[buffer(3)]],\n"
        "    uint spx_lid [[thread_position_in_threadgroup]],\n"
        "    uint spx_gid [[threadgroup_position_in_grid]])"
    )
    assert OPENCL.store_real("f32", "p", "i", "v.x") == "p[i] = (float)(v.x);"
    assert CUDA.store_real("f16", "p", "i", "v.x") == "p[i] = spx_f2h(v.x);"
    assert literal(0.5, "f32") == "0.5f" and literal(2.0, "f64") == "2.0"
    assert OPENCL.prelude({"f32", "f64", "f16"}) == "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"


# -- GLSL ---------------------------------------------------------------------------------------------------


def test_glsl_binds_pointers_in_order_and_scalars_in_one_push_constant_block():
    params = [Param("x", "f32", True, True), Param("n", "int"), Param("y", "c64", True), Param("big", "i64"),
              Param("s", "f32"), Param("d", "f64"), Param("u", "u32")]
    head = GLSL.signature("ignored_name", params)
    assert "layout(std430, binding = 0) restrict readonly buffer kk_buf_x { float x[]; };" in head
    assert "layout(std430, binding = 1) restrict buffer kk_buf_y { dvec2 y[]; };" in head
    # std430: each scalar aligned to its own size
    members = ("layout(offset = 0) int n;", "layout(offset = 8) int64_t big;", "layout(offset = 16) float s;",
               "layout(offset = 24) double d;", "layout(offset = 32) uint u;")
    for member in members:
        assert member in head
    assert head.index("kk_scalars") < head.index("local_size_x_id = 0") < head.index("void main()")
    assert head.endswith("void main()")
    slots, size = scalar_layout(params)
    assert [(s.param.name, s.offset, s.size) for s in slots] == [
        ("n", 0, 4), ("big", 8, 8), ("s", 16, 4), ("d", 24, 8), ("u", 32, 4)
    ]
    assert size == 36


def test_glsl_without_scalars_has_no_block_and_a_fixed_group_size_when_asked():
    head = GLSL.signature("k", [Param("y", "f32", True)], block=(64, 2))
    assert "push_constant" not in head
    assert "layout(local_size_x = 64, local_size_y = 2, local_size_z = 1) in;" in head


def test_shared_arrays_go_where_each_target_declares_them():
    params = [Param("y", "f32", True), Param("n", "int")]
    for d in DIALECTS.values():
        e = Emitter(d)
        with e.kernel("k", params, shared=(("float", "tile", 64),)):
            e.line("/* body */")
        text = e.text()
        decl = d.shared("float", "tile", 64)
        opening = text.index("main()" if d is GLSL else "k(")
        body = text.index("/* body */")
        if d is GLSL:
            assert text.index(decl) < opening  # GLSL: at global scope
        else:
            assert opening < text.index(decl) < body  # the C family: first lines of the kernel


def test_metal_extended_form_has_three_axis_positions_and_keeps_the_original_names():
    head, first = METAL.kernel_parts("k", [Param("y", "f32", True)])
    assert "uint3 kk_lid [[thread_position_in_threadgroup]]" in head
    assert "uint spx_lid" not in head
    assert first[:2] == ["const uint spx_lid = kk_lid.x;", "const uint spx_gid = kk_gid.x;"]
    assert METAL.local_index(2) == "(int)kk_lid.z" and METAL.subgroup_lane == "(int)kk_lane"


def test_indices_along_each_axis():
    assert [OPENCL.local_index(a) for a in range(3)] == [f"(int)get_local_id({a})" for a in range(3)]
    assert CUDA.group_index(1) == "(int)blockIdx.y" and CUDA.group_dim(2) == "(int)blockDim.z"
    assert GLSL.num_groups(2) == "int(gl_NumWorkGroups.z)"
    assert GLSL.global_index(1, "i64") == "int64_t(gl_GlobalInvocationID.y)"
    wide = "((long long)blockIdx.x * (long long)blockDim.x + (long long)threadIdx.x)"
    assert CUDA.global_index(0, "i64") == wide
    assert OPENCL.global_index(0) == "(int)get_global_id(0)"
    with pytest.raises(ValueError, match="axis"):
        GLSL.local_index(3)


def test_types_casts_literals_and_vectors():
    assert GLSL.cast("float", "n") == "float(n)" and OPENCL.cast("float", "n") == "(float)(n)"
    assert GLSL.literal(0.5, "f64") == "0.5lf" and GLSL.literal(1, "f32") == "1.0f"
    assert CUDA.literal(0.5, "f64") == "0.5" and literal(0.5, "f64", GLSL) == "0.5lf"
    assert [d.scalar("i64") for d in (OPENCL, CUDA, METAL, GLSL)] == ["long", "long long", "long", "int64_t"]
    assert [d.scalar("u32") for d in (OPENCL, CUDA, METAL, GLSL)] == ["uint", "unsigned int", "uint", "uint"]
    assert [d.vector("f32", 4) for d in (OPENCL, CUDA, METAL, GLSL)] == ["float4", "float4", "float4", "vec4"]
    assert GLSL.vector("int", 2) == "ivec2" and GLSL.vector("u32", 4) == "uvec4"
    assert CUDA.make_vector("f32", "a", "b") == "make_float2(a, b)"
    assert OPENCL.make_vector("int", "1", "2", "3", "4") == "((int4)(1, 2, 3, 4))"
    assert GLSL.make_vector("f64", "a", "b") == "dvec2(a, b)"
    assert GLSL.store_real("f16", "p", "i", "v") == "p[i] = float16_t(v);"
    assert GLSL.load_real("f16", "p", "i") == "float(p[i])"
    assert GLSL.store_real("f32", "p", "i", "v") == "p[i] = float(v);"


def test_math_atomics_and_subgroups():
    assert GLSL.math("rsqrt", "f32", "x") == "inversesqrt(x)"
    assert CUDA.math("rsqrt", "f32", "x") == "rsqrtf(x)" and CUDA.math("rsqrt", "f64", "x") == "rsqrt(x)"
    assert OPENCL.math("fma", "f32", "a", "b", "c") == "fma(a, b, c)"
    assert CUDA.math("max", "f16", "a", "b") == "fmaxf(a, b)"  # half computes in float32
    assert OPENCL.math("abs", "int", "k") == "((int)abs(k))"
    assert GLSL.atomic_add("int", "hist", "b", "1") == "atomicAdd(hist[b], 1)"
    assert CUDA.atomic_add("f32", "acc", "0", "v") == "atomicAdd(&acc[0], v)"
    metal = METAL.atomic_add("u32", "c", "i", "1")
    assert metal.startswith("atomic_fetch_add_explicit((device atomic_uint*)&c[i]")
    assert [d.subgroup_sum("v") for d in (OPENCL, CUDA, METAL, GLSL)] == [
        "sub_group_reduce_add(v)", "kk_warp_sum(v)", "simd_sum(v)", "subgroupAdd(v)"
    ]
    assert CUDA.subgroup_shuffle_xor("v", "m") == "__shfl_xor_sync(0xffffffffu, v, m)"
    assert "GL_KHR_shader_subgroup_shuffle" in GLSL.prelude({"subgroup"})
    assert "kk_warp_sum" in CUDA.prelude({"subgroup"})
    with pytest.raises(TypeError, match="takes 3"):
        GLSL.math("fma", "f32", "a")
    with pytest.raises(ValueError, match="function must be one of"):
        GLSL.math("erf", "f32", "a")


def test_what_a_target_lacks_raises_naming_it():
    with pytest.raises(UnsupportedError, match=r"glsl.*exp of 'f64'"):
        GLSL.math("exp", "f64", "x")
    with pytest.raises(UnsupportedError, match=r"glsl.*pointer"):
        GLSL.global_ptr("float", const=True)
    with pytest.raises(UnsupportedError, match=r"metal.*'f64'"):
        METAL.signature("k", [Param("x", "f64", True)])
    with pytest.raises(UnsupportedError, match=r"metal.*atomic addition on 'f64'"):
        METAL.atomic_add("f64", "p", "i", "v")
    with pytest.raises(ValueError, match="scalars are one of"):
        scalar_layout([Param("h", "f16")])
    with pytest.raises(ValueError, match="target must be one of"):
        dialects.get("hlsl")
    for name in ("out", "gl_x", "a__b"):
        with pytest.raises(UnsupportedError, match=f"{name!r} is reserved in glsl"):
            GLSL.signature("k", [Param(name, "f32", True)])
    assert "out" in OPENCL.signature("k", [Param("out", "f32", True)])


def test_needs_of_parameters_and_prelude_order():
    params = [Param("x", "f16", True), Param("y", "c64", True), Param("k", "i64")]
    assert needs_of(params) == {"f16", "f64", "i64"}
    text = GLSL.prelude({"atomic_float", "i64", "f16"})
    assert text.startswith("#version 450\n")
    assert text.index("16bit_storage") < text.index("int64") < text.index("atomic_float")


def test_complex_helpers_need_no_qualifier_in_glsl():
    e = Emitter(GLSL)
    complex_helpers(e, "f64")
    assert e.text().startswith("dvec2 cadd(dvec2 a, dvec2 b) { return dvec2(a.x + b.x, a.y + b.y); }")


# -- one template, every language with a compiler here ----------------------------------------------------


def portable_kernel(d, *, f64: bool, subgroup: bool, atomic_float: bool, f16: bool = True):
    """Source and parameters of a kernel in the extended spellings; it never asks which target it is for."""
    params = [Param("x", "f32", True, True), Param("y", "f32", True), Param("counts", "int", True),
              Param("n", "int"), Param("scale", "f32")]
    if f16:
        params.append(Param("h", "f16", True))
    if atomic_float:
        params.append(Param("total", "f32", True))
    if f64:
        params += [Param("z", "f64", True), Param("dscale", "f64")]
    extra = {"subgroup": subgroup, "atomic_float": atomic_float}
    needs = needs_of(params) | {name for name, on in extra.items() if on}
    e = Emitter(d)
    e.line(d.prelude(needs))
    with e.kernel("kk_portable", params, shared=(("float", "tile", 64),)):
        e.line(f"const int w = {d.group_dim(0)} * {d.num_groups(0)};")
        e.line(f"const int hgt = {d.group_dim(1)} * {d.num_groups(1)};")
        e.line(f"const int i = ({d.global_index(2)} * hgt + {d.global_index(1)}) * w + {d.global_index(0)};")
        e.line(f"const int lid = {d.local_index(0)} + {d.group_dim(0)} * "
               f"({d.local_index(1)} + {d.group_dim(1)} * {d.local_index(2)});")
        e.line(f"float v = {e.literal(0.0, 'f32')};")
        with e.block("if (i < n)"):
            e.line("v = x[i];")
        e.line("tile[lid] = v;")
        e.line(d.barrier)
        e.line(f"{d.vector('f32', 2)} pair = {d.make_vector('f32', 'v', 'tile[(lid + 1) % 64]')};")
        e.line(f"float r = {d.math('fma', 'f32', 'pair.x', 'scale', 'pair.y')};")
        e.line(f"r = {d.math('max', 'f32', 'r', d.math('sqrt', 'f32', d.math('abs', 'f32', 'v')))};")
        if subgroup:
            e.line(f"r = r + {e.literal(0.0, 'f32')} * ({d.subgroup_sum('v')} + "
                   f"{d.subgroup_shuffle_xor('v', '1')} + {d.cast('float', d.subgroup_lane)});")
        with e.block("if (i < n)"):
            e.line(d.store_real("f32", "y", "i", "r"))
            e.line(d.atomic_add("int", "counts", "0", "1") + ";")
            if f16:
                e.line(d.store_real("f16", "h", "i", d.load_real("f32", "x", "i")))
            if atomic_float:
                e.line(d.atomic_add("f32", "total", "0", "v") + ";")
            if f64:
                value = f"{d.cast('double', 'v')} * dscale + {e.literal(0.5, 'f64')}"
                e.line(d.store_real("f64", "z", "i", value))
    return e.text(), tuple(params)


def test_the_portable_template_compiles_as_glsl():
    from kernelkit import glsl_compiler

    compiler = glsl_compiler.find()
    if compiler is None:
        pytest.skip(glsl_compiler.missing_reason())
    for flags in ({"f64": True, "subgroup": True, "atomic_float": True},
                  {"f64": False, "subgroup": False, "atomic_float": False, "f16": False}):
        source, _ = portable_kernel(GLSL, **flags)
        ok, spirv, log = compiler.compile(source, "vulkan1.1")
        assert ok, f"{log}\n{source}"
        assert glsl_compiler.is_spirv(spirv)


def test_glsl_compile_errors_come_back_with_the_log():
    from kernelkit import glsl_compiler

    compiler = glsl_compiler.find()
    if compiler is None:
        pytest.skip(glsl_compiler.missing_reason())
    ok, spirv, log = compiler.compile("#version 450\nvoid main() { undefined_thing = 1; }\n")
    assert not ok and spirv is None and "undefined_thing" in log


def test_the_portable_template_compiles_as_cuda_with_nvrtc(require):
    from kernelkit import cuda

    reason = cuda.nvrtc_probe("sm_80")
    if reason:
        require("nvrtc", reason)
    source, _ = portable_kernel(CUDA, f64=True, subgroup=True, atomic_float=True)
    ok, _, log = cuda.compile_cubin(source, "kk_portable", "sm_80", ("-default-device",))
    assert ok, log + "\n" + source


def test_the_portable_template_builds_and_runs_as_opencl(require):
    import numpy as np

    from kernelkit import opencl
    from kernelkit.program import KernelSignature, LaunchConfig, Program

    require("opencl", opencl.probe())
    rt = opencl.default_runtime()
    # PoCL has no cl_khr_subgroups: the subgroup spellings are checked by the GLSL and CUDA compiles
    source, params = portable_kernel(OPENCL, f64=rt.fp64, subgroup=False, atomic_float=True)
    program = Program(source, OPENCL, (KernelSignature("kk_portable", params),), name="kk_portable")
    kernel = rt.kernel(program, "kk_portable")
    n = 4 * 4 * 2 * 2 * 2 * 2
    x = np.linspace(-1, 3, n).astype(np.float32)
    bufs = {"x": rt.upload(x), "y": rt.alloc(4 * n), "counts": rt.upload(np.zeros(1, np.int32)),
            "h": rt.alloc(2 * n), "total": rt.upload(np.zeros(1, np.float32)), "z": rt.alloc(8 * n)}
    values = {"n": n, "scale": 2.0, "dscale": 4.0}
    args = [bufs[p.name] if p.pointer else values[p.name] for p in params]
    kernel.launch(LaunchConfig((2, 2, 2), (4, 4, 4)), *args)
    counts = rt.download(bufs["counts"], np.zeros(1, np.int32))
    total = rt.download(bufs["total"], np.zeros(1, np.float32))
    h = rt.download(bufs["h"], np.zeros(n, np.float16))
    assert counts[0] == n
    np.testing.assert_allclose(total[0], x.sum(), rtol=1e-5)
    np.testing.assert_array_equal(h, x.astype(np.float16))
    if rt.fp64:
        z = rt.download(bufs["z"], np.zeros(n, np.float64))
        np.testing.assert_allclose(z, x.astype(np.float64) * 4.0 + 0.5, rtol=1e-15)


def _vector_kernel(d):
    """y[i] = the lanes of x[i] reversed, and the words of w[i] summed into s[i]: float4 / uint4 buffers."""
    params = (Param("x", "f32x4", True, True), Param("y", "f32x4", True), Param("w", "u32x4", True, True),
              Param("s", "u32", True), Param("n", "int"))
    e = Emitter(d)
    e.line(d.prelude(set()))
    with e.kernel("kk_vectors", list(params)):
        e.line(f"const int i = {d.global_index(0)};")
        e.line("if (i >= n) return;")
        e.line(f"const {d.vector('f32', 4)} v = x[i];")
        e.line(f"y[i] = {d.make_vector('f32', 'v.w', 'v.z', 'v.y', 'v.x')};")
        e.line(f"const {d.vector('u32', 4)} u = w[i];")
        e.line("s[i] = u.x + u.y + u.z + u.w;")
    return e.text(), params


def test_vector_pointer_kinds_are_each_targets_four_wide_vectors():
    targets = (OPENCL, CUDA, METAL, GLSL)
    assert [d.element_type("f32x4") for d in targets] == ["float4", "float4", "float4", "vec4"]
    assert [d.element_type("u32x4") for d in targets] == ["uint4", "uint4", "uint4", "uvec4"]
    assert needs_of([Param("x", "f32x4", True)]) == set()
    glsl, _ = _vector_kernel(GLSL)
    assert "vec4 x[];" in glsl and "uvec4 w[];" in glsl
    assert "const float4* __restrict__ x," in _vector_kernel(CUDA)[0]


@pytest.mark.parametrize("target", ["opencl", "vulkan"])
def test_vector_pointer_kinds_run(require, target):
    import importlib

    import numpy as np

    from kernelkit.program import KernelSignature, LaunchConfig, Program

    runtime = importlib.import_module(f"kernelkit.{target}")
    require(target, runtime.probe())
    rt = runtime.default_runtime()
    dialect = OPENCL if target == "opencl" else GLSL
    source, params = _vector_kernel(dialect)
    kernel = rt.kernel(Program(source, dialect, (KernelSignature("kk_vectors", params),), name="kk_vectors"),
                       "kk_vectors")
    n = 10
    x = np.arange(4 * n, dtype=np.float32)
    w = np.arange(4 * n, dtype=np.uint32) * 3
    bx, by, bw, bs = rt.upload(x), rt.alloc(16 * n), rt.upload(w), rt.alloc(4 * n)
    kernel.launch(LaunchConfig(1, 16), bx, by, bw, bs, n)
    y = rt.download(by, np.zeros(4 * n, np.float32))
    s = rt.download(bs, np.zeros(n, np.uint32))
    np.testing.assert_array_equal(y, x.reshape(n, 4)[:, ::-1].ravel())
    np.testing.assert_array_equal(s, w.reshape(n, 4).sum(axis=1))
