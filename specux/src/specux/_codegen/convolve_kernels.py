"""Kernel templates of fftconvolve (the elementwise passes around its FFTs), written once for every dialect.

Four kernels, all one thread per element of a C-contiguous index grid of up to :data:`MAX_RANK` axes whose
sizes and strides are runtime values (an int table ``geo``, see below), so one compiled kernel serves every
shape, mode and set of axes:

``pad`` (:class:`PadSpec`)
    The zero-padded copy of an input into a transform buffer of the compute precision: grid element ``c``
    takes ``src[base_a + sum c_k * sa_k]`` when it lies inside the input (``c_k < lim_k`` on every axis and
    the position ``pbase + sum c_k * ps_k`` in ``[0, plen)``), else zero. Broadcast axes (size 1) are simply
    axes of size 1; a real input may be padded into a complex buffer (imaginary part zero). The position
    test is what overlap-save's framing needs: frame ``j``, sample ``t`` reads the long input at
    ``j * step + t``, one linear position whose bounds no single axis carries.
``product`` (:class:`ProductSpec`)
    ``dst[c] = scale * a[base_a + sum c_k * sa_k] * b[base_b + sum c_k * sb_k]``: the pointwise spectrum
    product, broadcast over the non-convolved axes by zero strides (and over overlap-save's frames for the
    short input's spectrum); real or complex operands of any storage. With ``base``/strides chosen so, it is
    also the whole operation when no axis is convolved (the broadcast product and its "same" crop). With
    ``conj_b`` the second operand is conjugated (``a * conj(b)``): the spectrum product of a correlation,
    which the adjoint (:func:`specux._runtime.convolve_exec.fftconvolve_adjoint`) is.
``crop`` (:class:`CropSpec`)
    The mode's centred part of the inverse transform into the result: ``dst[base_d + sum c_k * sd_k] =
    src[base_a + sum c_k * sa_k]`` where the position lies in ``[pbase, plen)`` (overlap-save's last,
    partial frame), nothing elsewhere. The destination is strided so that each overlap-save chunk writes its
    frames' valid samples straight into their place in the result.
``sum`` (:class:`SumSpec`)
    The adjoint's last pass: ``dst[c] = sum_j src[base_a + sum c_k * sa_k + off(j)]`` over ``count``
    reduced elements ``j``, whose offsets ``off(j)`` walk the ``nr`` rows that follow the ``nd`` grid rows in
    ``geo`` (the axes along which the input was broadcast; ``count`` 1 and one row of size 1 when there are
    none), in a fixed order (so repeatable bit for bit), into a real or complex destination of any storage
    (a real one takes the real part: the gradient of a real input).

``geo`` holds :data:`GEO_FIELDS` ints per axis, outermost axis first: the grid size ``dim``, the strides
``sa`` / ``sb`` / ``sd`` (in elements, complex counting one) of the operands and the destination (``sd``
unused by ``pad`` and ``product``, whose destination is the contiguous grid itself), the bound ``lim`` and
the position stride ``ps``. Scalars are the element count ``total``, the rank ``nd``, the base offsets and
``pbase`` / ``plen``; a geometry table instead of per-axis scalar arguments keeps every kernel under Metal's
31 argument slots whatever the rank.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelkit.dialects import COMPUTE_OF, Dialect, Param
from kernelkit.emitter import Emitter
from specux._codegen.blocks import DEFAULT_BLOCK, Blocked, index, variants
from specux._codegen.fft_kernels import KernelSource

#: threads per block: the fixed block of the kernels that assume one, the default of the others (their
#: specs derive from :class:`~specux._codegen.blocks.Blocked`: the plan chooses)
BLOCK = DEFAULT_BLOCK

#: most grid axes a kernel walks (the exec refuses inputs of more dimensions than this)
MAX_RANK = 8

#: ints per axis in the geometry table: dim, sa, sb, sd, lim, ps
GEO_FIELDS = 6
DIM, SA, SB, SD, LIM, PS = range(GEO_FIELDS)


@dataclass(frozen=True)
class PadSpec(Blocked):
    """Zero-padded copy of one input (``src_storage``, real or complex) into a compute-precision buffer."""

    src_storage: str
    src_complex: bool
    dst_complex: bool
    prec: str  # compute precision: "f32" or "f64"


@dataclass(frozen=True)
class ProductSpec(Blocked):
    """Broadcast pointwise product (times ``scale``) into a compute-precision buffer, complex if either
    operand is."""

    a_storage: str
    a_complex: bool
    b_storage: str
    b_complex: bool
    prec: str
    conj_b: bool = False  # a * conj(b): the correlation of the adjoint (a complex b only)


@dataclass(frozen=True)
class CropSpec(Blocked):
    """Strided copy of the compute-precision transform result into the (strided) result."""

    complex: bool
    prec: str
    dst_storage: str


@dataclass(frozen=True)
class SumSpec(Blocked):
    """Crop of the compute-precision correlation summed over the reduced (broadcast) axes into the gradient
    (``dst_storage``; a real destination of a complex source takes the real part)."""

    src_complex: bool
    prec: str
    dst_storage: str
    dst_complex: bool


def _ptr(name: str, kind: str, const: bool = True) -> Param:
    return Param(name, kind, pointer=True, const=const)


def _header(e: Emitter, *storages: str) -> None:
    e.line(e.d.prelude({COMPUTE_OF[s] for s in storages} | set(storages)))


def _walk(e: Emitter, operands: str, bounds: bool) -> None:
    """Turn the flat grid index ``i`` into the offsets ``o<x>`` of ``operands`` (letters of the geometry's
    stride columns: ``a``, ``b``, ``d``) and, with ``bounds``, the flag ``inside``."""
    column = {"a": SA, "b": SB, "d": SD}
    e.line("int r = i;")
    for x in operands:
        e.line(f"int o{x} = base_{x};")
    if bounds:
        e.line("int pos = pbase;")
        e.line("int inside = 1;")
    with e.block("for (int k = nd - 1; k >= 0; --k)"):
        e.line(f"const int g = {GEO_FIELDS} * k;")
        e.line(f"const int c = r % geo[g + {DIM}];")
        e.line(f"r = r / geo[g + {DIM}];")
        for x in operands:
            e.line(f"o{x} += c * geo[g + {column[x]}];")
        if bounds:
            e.line(f"inside = inside && c < geo[g + {LIM}];")
            e.line(f"pos += c * geo[g + {PS}];")
    if bounds:
        e.line("inside = inside && pos >= 0 && pos < plen;")


def _load(e: Emitter, prec: str, storage: str, is_complex: bool, ptr: str, offset: str, name: str) -> None:
    """Declare ``<name>_re`` / ``<name>_im`` (zero for a real operand) from element ``offset`` of ``ptr``."""
    d = e.d
    R = d.real(prec)
    if is_complex:
        e.line(f"const {R} {name}_re = ({R})" + d.load_real(storage, ptr, f"2 * {offset}") + ";")
        e.line(f"const {R} {name}_im = ({R})" + d.load_real(storage, ptr, f"2 * {offset} + 1") + ";")
    else:
        e.line(f"const {R} {name}_re = ({R})" + d.load_real(storage, ptr, offset) + ";")


def _store(e: Emitter, storage: str, is_complex: bool, offset: str, re: str, im: str) -> None:
    d = e.d
    if is_complex:
        e.line(d.store_real(storage, "dst", f"2 * {offset}", re))
        e.line(d.store_real(storage, "dst", f"2 * {offset} + 1", im))
    else:
        e.line(d.store_real(storage, "dst", offset, re))


def _tag(storage: str, is_complex: bool) -> str:
    return ("c" if is_complex else "r") + storage


def pad(spec: PadSpec, d: Dialect) -> KernelSource:
    """The zero-padding copy of ``spec`` in dialect ``d``."""
    if spec.src_complex and not spec.dst_complex:
        raise ValueError("pad: a complex input needs a complex transform buffer")
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, spec.src_storage, prec)
    name = f"spx_conv_pad_{_tag(spec.src_storage, spec.src_complex)}_{_tag(prec, spec.dst_complex)}"
    params = (
        _ptr("dst", prec, const=False),
        _ptr("src", spec.src_storage),
        _ptr("geo", "int"),
        Param("total", "int"),
        Param("nd", "int"),
        Param("base_a", "int"),
        Param("pbase", "int"),
        Param("plen", "int"),
    )
    zero = d.literal(0.0, prec)
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            _walk(e, "a", bounds=True)
            e.line(f"{R} v_re = {zero};")
            e.line(f"{R} v_im = {zero};")
            with e.block("if (inside)"):
                _load(e, prec, spec.src_storage, spec.src_complex, "src", "oa", "s")
                e.line("v_re = s_re;")
                if spec.src_complex:
                    e.line("v_im = s_im;")
            _store(e, prec, spec.dst_complex, "i", "v_re", "v_im")
    return KernelSource(name, e.text(), params, spec.block)


def product(spec: ProductSpec, d: Dialect) -> KernelSource:
    """The broadcast pointwise product of ``spec`` in dialect ``d``."""
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, spec.a_storage, spec.b_storage, prec)
    out_complex = spec.a_complex or spec.b_complex
    tags = f"{_tag(spec.a_storage, spec.a_complex)}_{_tag(spec.b_storage, spec.b_complex)}"
    if spec.conj_b and not spec.b_complex:
        raise ValueError("product: conj_b conjugates a complex operand; b is real")
    name = f"spx_conv_product_{tags}_{prec}" + ("_conjb" if spec.conj_b else "")
    params = (
        _ptr("dst", prec, const=False),
        _ptr("a", spec.a_storage),
        _ptr("b", spec.b_storage),
        _ptr("geo", "int"),
        Param("total", "int"),
        Param("nd", "int"),
        Param("base_a", "int"),
        Param("base_b", "int"),
        Param("scale", prec),
    )
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            _walk(e, "ab", bounds=False)
            _load(e, prec, spec.a_storage, spec.a_complex, "a", "oa", "x")
            _load(e, prec, spec.b_storage, spec.b_complex, "b", "ob", "y")
            if spec.a_complex and spec.b_complex and spec.conj_b:
                e.line(f"const {R} p_re = x_re * y_re + x_im * y_im;")
                e.line(f"const {R} p_im = x_im * y_re - x_re * y_im;")
            elif spec.a_complex and spec.b_complex:
                e.line(f"const {R} p_re = x_re * y_re - x_im * y_im;")
                e.line(f"const {R} p_im = x_re * y_im + x_im * y_re;")
            elif spec.a_complex:
                e.line(f"const {R} p_re = x_re * y_re;")
                e.line(f"const {R} p_im = x_im * y_re;")
            elif spec.b_complex and spec.conj_b:
                e.line(f"const {R} p_re = x_re * y_re;")
                e.line(f"const {R} p_im = -(x_re * y_im);")
            elif spec.b_complex:
                e.line(f"const {R} p_re = x_re * y_re;")
                e.line(f"const {R} p_im = x_re * y_im;")
            else:
                e.line(f"const {R} p_re = x_re * y_re;")
            _store(e, prec, out_complex, "i", "scale * p_re", "scale * p_im")
    return KernelSource(name, e.text(), params, spec.block)


def crop(spec: CropSpec, d: Dialect) -> KernelSource:
    """The strided crop of ``spec`` in dialect ``d``."""
    prec = spec.prec
    e = Emitter(d)
    _header(e, spec.dst_storage, prec)
    name = f"spx_conv_crop_{_tag(prec, spec.complex)}_{spec.dst_storage}"
    params = (
        _ptr("dst", spec.dst_storage, const=False),
        _ptr("src", prec),
        _ptr("geo", "int"),
        Param("total", "int"),
        Param("nd", "int"),
        Param("base_a", "int"),
        Param("base_d", "int"),
        Param("pbase", "int"),
        Param("plen", "int"),
    )
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            _walk(e, "ad", bounds=True)
            with e.block("if (inside)"):
                _load(e, prec, prec, spec.complex, "src", "oa", "s")
                _store(e, spec.dst_storage, spec.complex, "od", "s_re", "s_im" if spec.complex else "")
    return KernelSource(name, e.text(), params, spec.block)


def sum_(spec: SumSpec, d: Dialect) -> KernelSource:
    """The cropping, reducing copy of ``spec`` in dialect ``d``."""
    if spec.dst_complex and not spec.src_complex:
        raise ValueError("sum: a complex destination needs a complex source")
    prec = spec.prec
    R = d.real(prec)
    e = Emitter(d)
    _header(e, spec.dst_storage, prec)
    name = f"spx_conv_sum_{_tag(prec, spec.src_complex)}_{_tag(spec.dst_storage, spec.dst_complex)}"
    params = (
        _ptr("dst", spec.dst_storage, const=False),
        _ptr("src", prec),
        _ptr("geo", "int"),
        Param("total", "int"),
        Param("nd", "int"),
        Param("nr", "int"),
        Param("count", "int"),
        Param("base_a", "int"),
    )
    zero = d.literal(0.0, prec)
    with e.block(d.signature(name, list(params))):
        e.line(f"const int i = {index(d, spec.block)};")
        with e.block("if (i < total)"):
            _walk(e, "a", bounds=False)
            e.line(f"{R} acc_re = {zero};")
            e.line(f"{R} acc_im = {zero};")
            with e.block("for (int j = 0; j < count; ++j)"):
                e.line("int q = j;")
                e.line("int ob = oa;")
                with e.block("for (int k = nd + nr - 1; k >= nd; --k)"):
                    e.line(f"const int g = {GEO_FIELDS} * k;")
                    e.line(f"ob += (q % geo[g + {DIM}]) * geo[g + {SA}];")
                    e.line(f"q = q / geo[g + {DIM}];")
                _load(e, prec, prec, spec.src_complex, "src", "ob", "s")
                e.line("acc_re += s_re;")
                if spec.src_complex:
                    e.line("acc_im += s_im;")
            _store(e, spec.dst_storage, spec.dst_complex, "i", "acc_re", "acc_im")
    return KernelSource(name, e.text(), params, spec.block)


def render(spec: object, d: Dialect) -> KernelSource:
    """Source of the kernel described by any of the spec classes above."""
    if isinstance(spec, PadSpec):
        return pad(spec, d)
    if isinstance(spec, ProductSpec):
        return product(spec, d)
    if isinstance(spec, CropSpec):
        return crop(spec, d)
    if isinstance(spec, SumSpec):
        return sum_(spec, d)
    raise TypeError(f"no kernel template for {type(spec).__name__}")


def cover(storages: tuple[str, ...]) -> list[object]:
    """Every structural variety of these kernels for inputs of ``storages`` ("f16", "f32", "f64"): real and
    complex inputs padded into real or complex buffers, every real / complex pairing of the product (the
    spectra, and the inputs themselves when no axis is convolved), the real and complex crops; with "f64"
    among ``storages``, also the narrower storages read in float64 (a float32 input convolved with a float64
    one computes in float64); and the adjoint's conjugating products and reducing crops into real and
    complex gradients of every storage."""
    precs = {COMPUTE_OF[s] for s in storages}
    pairs = [(False, False), (False, True), (True, False), (True, True)]
    specs: list[object] = []
    for storage in storages:
        for prec in sorted(p for p in precs if p == COMPUTE_OF[storage] or p == "f64"):
            specs += [
                PadSpec(storage, False, False, prec),
                PadSpec(storage, False, True, prec),
                PadSpec(storage, True, True, prec),
            ]
            specs += [ProductSpec(storage, ac, storage, bc, prec) for ac, bc in pairs]
            specs += [ProductSpec(storage, ac, prec, bc, prec) for ac, bc in pairs]
            specs += [ProductSpec(prec, ac, storage, bc, prec) for ac, bc in pairs]
            specs += [CropSpec(False, prec, prec), CropSpec(True, prec, prec)]
            specs += [ProductSpec(storage, ac, prec, True, prec, True) for ac in (False, True)]
            specs += [ProductSpec(prec, ac, storage, True, prec, True) for ac in (False, True)]
            specs += [ProductSpec(prec, ac, prec, True, prec, True) for ac in (False, True)]
            specs += [
                SumSpec(sc, prec, storage, dc) for sc, dc in ((False, False), (True, False), (True, True))
            ]
    specs += variants(specs)
    return list(dict.fromkeys(specs))
