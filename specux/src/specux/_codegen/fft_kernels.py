"""Kernel templates of the FFT family, written once for every dialect.

Four kernels make up every plan (see :mod:`specux._codegen.fft_plan` for how they are combined):

``stockham``
    A batched complex FFT of length ``n`` (at most one block's shared memory) along an axis, one or several
    rows per block. Rows are loaded into shared memory, transformed by Stockham autosort stages (no bit
    reversal: every stage writes its outputs in the order the next stage reads them, so the result comes out
    in natural order), and stored. Loads and stores go through a "global index" ``g = e * GMUL + b1 * B1MUL``
    so the same kernel serves a plain transform (GMUL 1, B1MUL 0) and both passes of the four-step pipeline,
    where a row is a strided column or a scattered output. Loads and stores also understand real data,
    Hermitian half-spectra and half-precision storage, so r2c / c2r need no extra passes.
``bluestein_pre`` / ``cmul_table`` / ``bluestein_post``
    The chirp multiply before, the pointwise product with the chirp filter's spectrum between, and the chirp
    multiply after the two power-of-two FFTs of Bluestein's algorithm.

Kernel arguments of the same name mean the same thing in every kernel: ``nbatch`` rows, ``inner`` the product
of the dimensions after the transformed axis (so element ``g`` of a row lives at ``base + g * inner``),
``in_dist`` / ``out_dist`` the distance between consecutive outer indices, ``in_mode`` 0 complex / 1 real /
2 Hermitian half-spectrum, ``out_mode`` 0 complex / 1 real part / 2 bins ``0 .. n/2`` only, ``flags`` bit 0
conjugate on load and bit 1 on store (the inverse transform), and ``scale`` the factor applied on store.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelkit.dialects import COMPUTE_OF, Dialect, Param
from kernelkit.emitter import Emitter, complex_helpers, literal
from specux._codegen.butterflies import emit_dft

#: threads per block of the elementwise kernels
ELEMENTWISE_BLOCK = 256

#: in_mode / out_mode values
COMPLEX, REAL, HERMITIAN = 0, 1, 2
HALF_SPECTRUM = 2


@dataclass(frozen=True)
class KernelSource:
    """Generated source of one kernel, with what a runtime needs to bind and launch it."""

    name: str
    source: str
    params: tuple[Param, ...]
    #: threads per block
    block: int


@dataclass(frozen=True)
class StockhamSpec:
    """Everything that is compiled into one Stockham kernel (runtime sizes are kernel arguments)."""

    n: int
    radices: tuple[int, ...]
    threads: int  # threads per row
    rows: int  # rows per block
    prec: str  # compute precision: "f32" or "f64"
    in_storage: str  # "f16" / "f32" / "f64"; complex tables and scratch use the compute precision
    out_storage: str
    in_gmul: int = 1
    in_b1mul: int = 0
    out_gmul: int = 1
    out_b1mul: int = 0
    b1: int = 1  # rows are indexed (b2, b1, b0); b1 in [0, b1) feeds the global index
    nt_in: int = 0  # full transform length seen by Hermitian loads (0: n)
    nt_out: int = 0  # full transform length seen by half-spectrum stores (0: n)
    twiddle2: bool = False  # multiply output e by tw2[e * b1] (four-step twiddles)

    @property
    def block(self) -> int:
        return self.threads * self.rows


# The three Bluestein kernels take n and m as arguments: they are memory-bound elementwise passes, so
# compiling them per length would buy nothing and cost one compile per length.


@dataclass(frozen=True)
class BluesteinPreSpec:
    prec: str
    in_storage: str


@dataclass(frozen=True)
class BluesteinPostSpec:
    prec: str
    out_storage: str


@dataclass(frozen=True)
class CmulTableSpec:
    prec: str


def _cptr(prec: str) -> str:
    return "c64" if COMPUTE_OF[prec] == "f64" else "c32"


def _header(e: Emitter, precisions: set[str], prec: str) -> None:
    e.line(e.d.prelude(precisions))
    complex_helpers(e, prec)


def _load_store_helpers(e: Emitter, prec: str, in_storage: str | None, out_storage: str | None) -> None:
    """``ld_in`` / ``st_out``: one element of a user-layout array, with the mode and conjugation flags."""
    d = e.d
    C, R = d.cplx(prec), d.real(prec)
    q = d.function_qualifier
    zero = literal(0.0, prec)
    if in_storage is not None:
        ptr = d.global_ptr(d.storage_types[in_storage], const=True)
        with e.block(f"{q} {C} ld_in({ptr} p, int base, int g, int inner, int mode, int nt, int conj)"):
            e.line(f"{C} v;")
            with e.block("if (mode == 1)"):
                re = f"({R})" + d.load_real(in_storage, "p", "base + g * inner")
                e.line(f"v = {d.make_complex(prec, re, zero)};")
            with e.block("else"):
                # a Hermitian half-spectrum holds bins 0 .. nt/2; the others are conjugates of mirrored bins
                e.line("int flip = (mode == 2) && (g > nt / 2);")
                e.line("int a = 2 * (base + (flip ? nt - g : g) * inner);")
                re = f"({R})" + d.load_real(in_storage, "p", "a")
                im = f"({R})" + d.load_real(in_storage, "p", "a + 1")
                e.line(f"v = {d.make_complex(prec, re, im)};")
                e.line("conj ^= flip;")
            e.line("return conj ? cconj(v) : v;")
    if out_storage is not None:
        ptr = d.global_ptr(d.storage_types[out_storage], const=False)
        args = f"{ptr} p, int base, int g, int inner, int mode, int nt, int conj, {R} scale, {C} v"
        head = f"{q} void st_out({args})"
        with e.block(head):
            e.line("if (conj) v = cconj(v);")
            e.line("v = cscale(v, scale);")
            with e.block("if (mode == 1)"):
                e.line(d.store_real(out_storage, "p", "base + g * inner", "v.x"))
            with e.block("else if (mode != 2 || g <= nt / 2)"):
                e.line("int a = 2 * (base + g * inner);")
                e.line(d.store_real(out_storage, "p", "a", "v.x"))
                e.line(d.store_real(out_storage, "p", "a + 1", "v.y"))


def _precisions(*names: str) -> set[str]:
    return {COMPUTE_OF[n] for n in names} | set(names)


def stockham(spec: StockhamSpec, d: Dialect) -> KernelSource:
    """The batched shared-memory Stockham FFT kernel described by ``spec``, in dialect ``d``."""
    n, T, P = spec.n, spec.threads, spec.rows
    prec = spec.prec
    e = Emitter(d)
    _header(e, _precisions(prec, spec.in_storage, spec.out_storage), prec)
    _load_store_helpers(e, prec, spec.in_storage, spec.out_storage)
    C, R = d.cplx(prec), d.real(prec)
    name = f"spx_stockham_{n}"
    params = (
        Param("src", spec.in_storage, pointer=True, const=True),
        Param("dst", spec.out_storage, pointer=True),
        Param("tw", _cptr(prec), pointer=True, const=True),
        Param("tw2", _cptr(prec), pointer=True, const=True),
        Param("nbatch", "int"),
        Param("inner", "int"),
        Param("in_dist", "int"),
        Param("out_dist", "int"),
        Param("in_mode", "int"),
        Param("out_mode", "int"),
        Param("flags", "int"),
        Param("scale", COMPUTE_OF[prec]),
    )
    nt_in = spec.nt_in or n
    nt_out = spec.nt_out or n
    with e.block(d.signature(name, list(params))):
        # Two shared buffers, ping-ponged between stages: a stage reads one and writes the other, so it
        # needs a single barrier and no value lives across a barrier (simpler work-group code for PoCL, and
        # fewer live registers on GPUs).
        e.line(d.shared(C, "bufa", P * n))
        e.line(d.shared(C, "bufb", P * n))
        e.line(f"const int lid = {d.local_id};")
        e.line(f"const int row = lid / {T};")
        e.line(f"const int t = lid - row * {T};")
        e.line(f"const int b = {d.group_id} * {P} + row;")
        e.line("const int live = b < nbatch;")
        e.line("const int b0 = b % inner;")
        e.line("const int bq = b / inner;")
        if spec.b1 > 1:
            e.line(f"const int b1 = bq % {spec.b1};")
            e.line(f"const int b2 = bq / {spec.b1};")
        else:
            e.line("const int b1 = 0;")
            e.line("const int b2 = bq;")
        e.line(f"const int lo = row * {n};")
        with e.block("if (live)"):
            e.line("const int base = b2 * in_dist + b0;")
            with e.block(f"for (int e = t; e < {n}; e += {T})"):
                g = f"e * {spec.in_gmul} + b1 * {spec.in_b1mul}"
                e.line(f"bufa[lo + e] = ld_in(src, base, {g}, inner, in_mode, {nt_in}, flags & 1);")
        e.line(d.barrier)
        ns = 1
        cur, nxt = "bufa", "bufb"
        for s, r in enumerate(spec.radices):
            nb = n // r
            stride = n // (ns * r)
            e.line(f"/* stage {s}: radix {r} over {ns}-point sub-transforms */")
            with e.block(f"for (int j = t; j < {nb}; j += {T})"):
                e.line(f"const int k = j % {ns};")
                xs = [f"x{i}" for i in range(r)]
                for i in range(r):
                    e.line(f"{C} x{i} = {cur}[lo + j + {i * nb}];")
                if ns > 1:
                    for i in range(1, r):
                        e.line(f"x{i} = cmul(x{i}, tw[{i * stride} * k]);")
                ys = emit_dft(e, prec, xs, "y")
                e.line(f"const int o = lo + (j / {ns}) * {ns * r} + k;")
                for u in range(r):
                    e.line(f"{nxt}[o + {u * ns}] = {ys[u]};")
            e.line(d.barrier)
            ns *= r
            cur, nxt = nxt, cur
        with e.block("if (live)"):
            e.line("const int base = b2 * out_dist + b0;")
            with e.block(f"for (int e = t; e < {n}; e += {T})"):
                e.line(f"{C} v = {cur}[lo + e];")
                if spec.twiddle2:
                    e.line("v = cmul(v, tw2[e * b1]);")
                g = f"e * {spec.out_gmul} + b1 * {spec.out_b1mul}"
                e.line(f"st_out(dst, base, {g}, inner, out_mode, {nt_out}, (flags >> 1) & 1, ({R})scale, v);")
    return KernelSource(name, e.text(), params, spec.block)


def _global_index(d: Dialect) -> str:
    return f"{d.group_id} * {ELEMENTWISE_BLOCK} + {d.local_id}"


def bluestein_pre(spec: BluesteinPreSpec, d: Dialect) -> KernelSource:
    """Row b of the padded buffer: ``x[k] * chirp[k]`` for ``k < n``, zeros up to ``m``."""
    prec = spec.prec
    e = Emitter(d)
    _header(e, _precisions(prec, spec.in_storage), prec)
    _load_store_helpers(e, prec, spec.in_storage, None)
    C = d.cplx(prec)
    name = "spx_bluestein_pre"
    params = (
        Param("src", spec.in_storage, pointer=True, const=True),
        Param("buf", _cptr(prec), pointer=True),
        Param("chirp", _cptr(prec), pointer=True, const=True),
        Param("n", "int"),
        Param("m", "int"),
        Param("nbatch", "int"),
        Param("inner", "int"),
        Param("in_dist", "int"),
        Param("in_mode", "int"),
        Param("flags", "int"),
    )
    zero = literal(0.0, prec)
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {_global_index(d)};")
        with e.block("if (i < nbatch * m)"):
            e.line("const int b = i / m;")
            e.line("const int k = i - b * m;")
            e.line(f"{C} v = {d.make_complex(prec, zero, zero)};")
            with e.block("if (k < n)"):
                e.line("const int base = (b / inner) * in_dist + b % inner;")
                e.line("v = cmul(ld_in(src, base, k, inner, in_mode, n, flags & 1), chirp[k]);")
            e.line("buf[i] = v;")
    return KernelSource(name, e.text(), params, ELEMENTWISE_BLOCK)


def bluestein_post(spec: BluesteinPostSpec, d: Dialect) -> KernelSource:
    """Output bin k of row b: ``conv[b, k] * chirp[k]``, stored in the caller's layout and mode."""
    prec = spec.prec
    e = Emitter(d)
    _header(e, _precisions(prec, spec.out_storage), prec)
    _load_store_helpers(e, prec, None, spec.out_storage)
    C, R = d.cplx(prec), d.real(prec)
    name = "spx_bluestein_post"
    params = (
        Param("buf", _cptr(prec), pointer=True, const=True),
        Param("dst", spec.out_storage, pointer=True),
        Param("chirp", _cptr(prec), pointer=True, const=True),
        Param("n", "int"),
        Param("m", "int"),
        Param("nbatch", "int"),
        Param("inner", "int"),
        Param("out_dist", "int"),
        Param("out_mode", "int"),
        Param("flags", "int"),
        Param("scale", COMPUTE_OF[prec]),
    )
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {_global_index(d)};")
        with e.block("if (i < nbatch * n)"):
            e.line("const int b = i / n;")
            e.line("const int k = i - b * n;")
            e.line(f"{C} v = cmul(buf[b * m + k], chirp[k]);")
            e.line("const int base = (b / inner) * out_dist + b % inner;")
            e.line(f"st_out(dst, base, k, inner, out_mode, n, (flags >> 1) & 1, ({R})scale, v);")
    return KernelSource(name, e.text(), params, ELEMENTWISE_BLOCK)


def cmul_table(spec: CmulTableSpec, d: Dialect) -> KernelSource:
    """``buf[i] *= table[i % m]``: the spectrum of Bluestein's chirp filter applied to every row."""
    prec = spec.prec
    e = Emitter(d)
    _header(e, _precisions(prec), prec)
    name = "spx_cmul_table"
    params = (
        Param("buf", _cptr(prec), pointer=True),
        Param("table", _cptr(prec), pointer=True, const=True),
        Param("m", "int"),
        Param("total", "int"),
    )
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {_global_index(d)};")
        with e.block("if (i < total)"):
            e.line("buf[i] = cmul(buf[i], table[i % m]);")
    return KernelSource(name, e.text(), params, ELEMENTWISE_BLOCK)


def render(spec: object, d: Dialect) -> KernelSource:
    """Source of the kernel described by any of the spec classes above."""
    if isinstance(spec, StockhamSpec):
        return stockham(spec, d)
    if isinstance(spec, BluesteinPreSpec):
        return bluestein_pre(spec, d)
    if isinstance(spec, BluesteinPostSpec):
        return bluestein_post(spec, d)
    if isinstance(spec, CmulTableSpec):
        return cmul_table(spec, d)
    raise TypeError(f"no kernel template for {type(spec).__name__}")
