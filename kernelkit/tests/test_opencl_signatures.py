"""kernel_signatures: OpenCL C declarations read as KernelSignature lists, macros and conditionals."""

from __future__ import annotations

import numpy as np
import pytest

from kernelkit.dialects import OPENCL, Param
from kernelkit.opencl import kernel_signatures
from kernelkit.program import KernelSignature, Program


def _names(source, options=()):
    return [k.name for k in kernel_signatures(source, options)]


def test_pointers_and_scalars_of_a_plain_kernel():
    source = """
    __kernel void saxpy(__global const float* restrict x, global float *y, __constant int* table,
                        const float a, int n, uint m, long big, ulong u, double d, half h,
                        unsigned int also_u32) { }
    """
    (k,) = kernel_signatures(source)
    assert k.name == "saxpy" and k.block is None
    assert k.params == (
        Param("x", "f32", True, True),
        Param("y", "f32", True, False),
        Param("table", "int", True, True),  # __constant memory is read-only
        Param("a", "f32"),
        Param("n", "int"),
        Param("m", "u32"),
        Param("big", "i64"),
        Param("u", "u64"),
        Param("d", "f64"),
        Param("h", "f16"),
        Param("also_u32", "u32"),
    )


def test_element_types_of_pointers():
    source = """kernel void k(__global uchar* a, __global const char* b, __global ushort* c,
                               __global float4* d, __global const uchar16* e, __global struct S* f) {}"""
    kinds = [(p.kind, p.const) for p in kernel_signatures(source)[0].params]
    assert kinds == [("u8", False), ("i8", True), ("u16", False), ("f32x4", False), ("u8x16", True),
                     ("S", False)]


def test_no_parameters_and_void_and_source_order():
    source = "__kernel void b(void) {}\n__kernel void a() {}\nvoid helper(int x) {}\n"
    sigs = kernel_signatures(source)
    assert [s.name for s in sigs] == ["b", "a"] and all(s.params == () for s in sigs)


def test_comments_strings_and_prototypes():
    source = r"""
    // __kernel void commented(int a) {}
    /* __kernel void blocked(int a) {}
       still a comment */
    __kernel void proto(__global float* x);
    __kernel void proto(__global float* x) { printf("__kernel void in_a_string(int a) {}\n"); }
    """
    assert _names(source) == ["proto"]


def test_a_kernel_declared_twice_differently_is_refused():
    source = "__kernel void k(__global float* x);\n__kernel void k(__global int* x) {}\n"
    with pytest.raises(ValueError, match="'k' is declared twice"):
        kernel_signatures(source)


def test_macro_generated_kernels():
    # the shapes vidmag's kernel files use: a function-like macro per kernel family, spliced lines,
    # an object-like macro standing for a run of parameters, a fixed-size variant with an unused argument
    source = r"""
#define EXTRA const float c0, \
    const float c1
#define GATHER(NAME, IN_T, K_DECL, K)                                   \
__kernel void NAME(__global const IN_T* src, __global float* dst, K_DECL, EXTRA) \
{                                                                      \
    for (int t = 0; t < K; ++t) dst[t] = src[t] * c0 + c1;             \
}
GATHER(gather_f32, float, const int k, k)
GATHER(gather_u8_k5, uchar, const int unused_k, 5)
#define PASTE(kind) __kernel void scale_##kind(__global kind* x, const kind s) { }
PASTE(float)
PASTE(double)
"""
    sigs = {s.name: s for s in kernel_signatures(source)}
    assert list(sigs) == ["gather_f32", "gather_u8_k5", "scale_float", "scale_double"]
    assert [p.name for p in sigs["gather_u8_k5"].params] == ["src", "dst", "unused_k", "c0", "c1"]
    assert sigs["gather_u8_k5"].params[0] == Param("src", "u8", True, True)
    assert sigs["scale_double"].params == (Param("x", "f64", True), Param("s", "f64"))


def test_a_macro_does_not_expand_inside_itself_and_undef_ends_it():
    source = """
#define KERNEL __kernel void
#define T T
#define NAME first
KERNEL NAME(__global T* x) {}
#undef NAME
#define NAME second
KERNEL NAME(const int n) {}
"""
    sigs = kernel_signatures(source)
    assert [s.name for s in sigs] == ["first", "second"]  # each line expands with the macros of its place
    assert sigs[0].params[0].kind == "T"  # a self-referencing macro stops after one expansion


def test_variadic_macros_and_stringification():
    source = """
#define KERNEL(name, ...) __kernel void name(__VA_ARGS__) { const char* s = #name; }
KERNEL(var, __global float* x, const int n)
"""
    (k,) = kernel_signatures(source)
    assert k.name == "var" and [p.name for p in k.params] == ["x", "n"]


def test_conditionals_and_defines_from_options():
    source = """
#if defined(WIDE) && WIDE > 1
__kernel void wide(__global float* x) {}
#elif !defined(WIDE)
__kernel void narrow(__global float* x) {}
#else
__kernel void single(__global float* x) {}
#endif
#ifdef cl_khr_fp64
__kernel void with_doubles(__global double* x) {}
#endif
#ifndef NOPE
#if 0
__kernel void never(int a) {}
#endif
__kernel void always(int a) {}
#endif
"""
    assert _names(source) == ["narrow", "always"]
    assert _names(source, ["-DWIDE=4"]) == ["wide", "always"]
    assert _names(source, ("-D", "WIDE=1", "-Dcl_khr_fp64")) == ["single", "with_doubles", "always"]


def test_if_arithmetic_follows_c():
    source = """
#define N 7
#if N / 2 == 3 && -N % 2 == -1 && (1 || 1 / 0 == 0) && 0x10 == 16 && 010 == 8 && !0 == 1
__kernel void c_rules(int a) {}
#endif
"""
    assert _names(source) == ["c_rules"]


def test_required_work_group_size_is_the_block():
    source = "__kernel __attribute__((reqd_work_group_size(64, 2, 1))) void k(__global float* x) {}"
    assert kernel_signatures(source)[0].block == (64, 2, 1)


@pytest.mark.parametrize(
    ("declaration", "match"),
    [
        ("__kernel void k(__local float* scratch) {}", "__local pointer"),
        ("__kernel void k(__read_only image2d_t img) {}", "images, samplers"),
        ("__kernel void k(const float4 v) {}", "scalar parameters must be one of"),
        ("__kernel void k(__global float** p) {}", "pointers to pointers"),
        ('#include "other.cl"\n__kernel void k(int a) {}', "#include"),
        ("#if 1\n__kernel void k(int a) {}\n", "#if without #endif"),
        ("#if FOO(\n#endif\n", "#if"),
    ],
)
def test_what_cannot_be_read_is_a_value_error_naming_it(declaration, match):
    with pytest.raises(ValueError, match=match):
        kernel_signatures(declaration)


def test_the_error_names_the_kernel_and_parameter():
    with pytest.raises(ValueError, match=r"kernel 'k', parameter 'v'"):
        kernel_signatures("__kernel void k(__global float* x, const short v) {}")


_SOURCE = r"""
#define AXPB(NAME, T)                                                                    \
__kernel void NAME(__global const T* x, __global float* y, const float a, const float b, \
                   const int n)                                                          \
{                                                                                        \
    const int i = get_global_id(0);                                                      \
    if (i < n) y[i] = a * (float)x[i] + b;                                               \
}
AXPB(axpb_f32, float)
AXPB(axpb_u8, uchar)
"""


def test_a_parsed_program_compiles_and_runs_where_opencl_can(require):
    from kernelkit import opencl

    require("opencl", opencl.probe())
    cl = opencl._import_cl()
    rt = opencl.default_runtime()
    program = Program(_SOURCE, OPENCL, kernel_signatures(_SOURCE), name="test_axpb")
    # the driver's own reading of the declarations agrees with ours
    built = cl.Program(rt.context, _SOURCE).build(options=["-cl-kernel-arg-info"])
    assert sorted(k.function_name for k in built.all_kernels()) == sorted(s.name for s in program.kernels)
    for sig in program.kernels:
        handle = getattr(built, sig.name)
        names = [handle.get_arg_info(i, cl.kernel_arg_info.NAME) for i in range(len(sig.params))]
        assert names == [p.name for p in sig.params]
    x = np.arange(100, dtype=np.uint8)
    kernel = rt.kernel(program, "axpb_u8")
    out = rt.alloc(4 * x.size)
    kernel.launch(rt.cover(kernel, (x.size,)), rt.upload(x), out, 2.0, 1.0, x.size)
    np.testing.assert_array_equal(rt.download(out, np.empty(x.size, np.float32)), 2.0 * x + 1.0)
    assert isinstance(program.kernels[0], KernelSignature)


def test_an_offset_launch_starts_the_ids_there(require):
    from kernelkit import opencl

    require("opencl", opencl.probe())
    rt = opencl.default_runtime()
    program = Program(_SOURCE, OPENCL, kernel_signatures(_SOURCE), name="test_axpb")
    kernel = rt.kernel(program, "axpb_f32")
    x = np.arange(10, dtype=np.float32)
    y = rt.upload(np.zeros(10, np.float32))
    config = rt.cover(kernel, (3,), offset=(7,))
    assert isinstance(config, opencl.OffsetLaunch) and config.offset == (7,)
    kernel.launch(config, rt.upload(x), y, 1.0, 100.0, 10)
    expected = np.where(np.arange(10) >= 7, x + 100.0, 0.0)
    np.testing.assert_array_equal(rt.download(y, np.empty(10, np.float32)), expected)
    with pytest.raises(ValueError, match="offset"):
        opencl.OffsetLaunch(1, 1, offset=(1, 2))
