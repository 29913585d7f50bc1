"""vidmag's device kernels, written once through kernelkit's dialects: GLSL 4.50, CUDA C++, OpenCL C and MSL.

Each kernel is one :class:`kernelkit.program.Program` (a GLSL compute shader has one ``main``, so one kernel
per program on every target keeps one layout). The templates never ask which target they are written for: the
index, the casts, the types and the parameter bindings come from the :class:`kernelkit.dialects.Dialect`
(``{u32}`` / ``{f32}`` below are its scalar types, :meth:`~kernelkit.dialects.Dialect.cast` its conversions).
The bodies are the arithmetic of the opencl backend's hand-written kernels (``backend/opencl/kernels/*.cl``),
value for value in the same order, so every target agrees with them and with the NumPy reference the same way;
the OpenCL build of these templates, which PoCL runs in CI, is what vouches for the CUDA and Metal text.

Conventions (the same on every target, so one set of host code, :mod:`vidmag.backend.kernels`, serves all):

- every kernel covers ``total`` work items with a bounds check; the launch is a 2-D grid of groups of
  :data:`GROUP` (:func:`cover`), whose y rows extend the x axis past Vulkan's 65,535 groups. The row kernels
  (:data:`GRID_KERNELS`: the one-axis maps and the render of the fused tier) instead run over a 3-D grid
  (:func:`cover_grid`): x along a row (``xs`` items, bounds-checked), y the row, z the frame (from ``f0``).
  Why: an item's row and frame come from its position, not from integer divisions of a flat index, which
  cost more than the arithmetic on a CPU device (lavapipe, PoCL divide lane by lane); and the items of one
  work group share a row, so its tap table entries are the same for all of them;
- bytes (frames, output) live in 32-bit words, four bytes per word, little-endian: GLSL 4.50 has no 8-bit
  storage without an extension, and one layout keeps the host code one. A byte is read with a shift and a
  mask; bytes are written four pixels (12 bytes, 3 whole words) per work item, so no two items share a word;
- indices are 32-bit ints: the device layers keep every buffer under 2 GiB.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from kernelkit.dialects import DIALECTS, Dialect, Param
from kernelkit.emitter import Emitter
from kernelkit.program import KernelSignature, LaunchConfig, Program

__all__ = ["GRID_KERNELS", "GROUP", "KERNELS", "ROWS_PER_ITEM", "cover", "cover_grid", "program"]

#: Work items per group (a multiple of every subgroup size in use: 8 on lavapipe, 32 on NVIDIA, 32 / 64
#: elsewhere).
GROUP = 64

#: The most groups along one axis of a dispatch every device takes (Vulkan's maxComputeWorkGroupCount, and
#: CUDA's grid y).
MAX_GROUPS = 65535


def cover(total: int) -> LaunchConfig:
    """Groups of :data:`GROUP` covering ``total`` work items: along x up to 65,535 groups, then in y rows (the
    kernels index ``y * (groups along x) * GROUP + x`` and skip the items past ``total``)."""
    groups = max(1, -(-int(total) // GROUP))
    gx = min(groups, MAX_GROUPS)
    return LaunchConfig((gx, -(-groups // gx)), (GROUP, 1))


def cover_grid(xs: int, rows: int, frames: int) -> LaunchConfig:
    """Groups of :data:`GROUP` items along x covering ``xs`` items of each of ``rows`` rows of ``frames``
    frames (a kernel of :data:`GRID_KERNELS`). ``rows`` and ``frames`` are at most :data:`MAX_GROUPS`
    (the caller launches more frames in pieces, through the kernels' ``f0``)."""
    if not (0 < rows <= MAX_GROUPS and 0 < frames <= MAX_GROUPS):
        raise ValueError(f"rows and frames must be 1 .. {MAX_GROUPS}; got {rows} and {frames}")
    return LaunchConfig((max(1, -(-int(xs) // GROUP)), int(rows), int(frames)), (GROUP, 1, 1))


def _helpers(d: Dialect) -> list[str]:
    u32, f32 = d.scalar("u32"), d.scalar("f32")
    q = f"{d.function_qualifier} " if d.function_qualifier else ""
    byte = d.cast(f32, "(buf[(i) >> 2] >> (8 * ((i) & 3))) & 255u")

    def clamp_round(v: str) -> str:
        return d.cast(u32, f"({v} < 255.0f ? {v} : 255.0f) + 0.5f")

    return [
        "// byte i of a buffer of 32-bit words, as a float 0 .. 255",
        f"#define BYTE(buf, i) {byte}",
        "",
        "// The MIT output handling of one pixel (MIT_BYTES of the OpenCL kernels): negatives become 0,",
        "// a pixel with a channel above 1 is divided by its largest channel, then x * 255 rounded half up",
        "// (truncating x * 255 + 0.5, the values are >= 0 by then). The three bytes come back packed in one",
        "// word (r in the low byte): a scalar return every target spells alike.",
        f"{q}{u32} mit_bytes({f32} r, {f32} g, {f32} b)",
        "{",
        "    r = r > 0.0f ? r : 0.0f;",
        "    g = g > 0.0f ? g : 0.0f;",
        "    b = b > 0.0f ? b : 0.0f;",
        f"    {f32} peak = r > g ? r : g;",
        "    peak = peak > b ? peak : b;",
        f"    const {f32} s = peak > 1.0f ? 255.0f / peak : 255.0f;",
        "    r *= s;",
        "    g *= s;",
        "    b *= s;",
        f"    return {clamp_round('r')} | ({clamp_round('g')} << 8) | ({clamp_round('b')} << 16);",
        "}",
    ]


def _index(d: Dialect) -> str:
    return (f"const int i = {d.global_index(1)} * ({d.num_groups(0)} * {d.group_dim(0)})"
            f" + {d.global_index(0)};")


def _p(name: str, kind: str, *, out: bool = False) -> Param:
    return Param(name, kind, pointer=True, const=not out)


def _s(*names: str, kind: str = "int") -> list[Param]:
    return [Param(n, kind) for n in names]


def _load(src_kind: str) -> str:
    return "BYTE(src, {0})" if src_kind == "u8" else "src[{0}]"


def _src(src_kind: str) -> Param:
    return _p("src", "u32" if src_kind == "u8" else "f32")


Template = tuple[list[Param], list[str]]


def _rows(d: Dialect, src_kind: str) -> Template:
    # along the width: (rows, w_in, 3) -> (rows, w_out, 3); item (x, row), one pixel's three channels
    load = _load(src_kind)
    params = [_src(src_kind), _p("dst", "f32", out=True), _p("other", "f32"), _p("idx", "int"),
              _p("wt", "f32"), *_s("k", "w_in", "w_out", "mode", "total")]
    body = [
        "const int x = i % w_out;",
        "const int base = (i / w_out) * w_in * 3;",
        "float a = 0.0f, b = 0.0f, c = 0.0f;",
        "for (int t = 0; t < k; ++t) {",
        "    const int j = base + idx[x * k + t] * 3;",
        "    const float g = wt[x * k + t];",
        f"    a += g * {load.format('j')};",
        f"    b += g * {load.format('j + 1')};",
        f"    c += g * {load.format('j + 2')};",
        "}",
        "const int o = i * 3;",
        "if (mode == 1) { a = other[o] + a; b = other[o + 1] + b; c = other[o + 2] + c; }",
        "else if (mode == 2) { a = other[o] - a; b = other[o + 1] - b; c = other[o + 2] - c; }",
        "dst[o] = a;",
        "dst[o + 1] = b;",
        "dst[o + 2] = c;",
    ]
    return params, body


def _cols(d: Dialect, src_kind: str) -> Template:
    # along the height: (n, h_in, w3) -> (n, h_out, w3); item (value of a row, y_out, frame)
    # mode 0: map(src); 1: other + map(src); 2: other - map(src)
    load = _load(src_kind)
    params = [_src(src_kind), _p("dst", "f32", out=True), _p("other", "f32"), _p("idx", "int"),
              _p("wt", "f32"), *_s("k", "h_in", "h_out", "w3", "mode", "total")]
    body = [
        "const int xc = i % w3;",
        "const int rest = i / w3;",
        "const int y = rest % h_out;",
        "const int base = (rest / h_out) * h_in * w3 + xc;",
        "float acc = 0.0f;",
        f"for (int t = 0; t < k; ++t) acc += wt[y * k + t] * {load.format('base + idx[y * k + t] * w3')};",
        "if (mode == 1) acc = other[i] + acc;",
        "else if (mode == 2) acc = other[i] - acc;",
        "dst[i] = acc;",
    ]
    return params, body


def _grid() -> list[Param]:
    # the last two parameters of a kernel of GRID_KERNELS: its first frame and its items along x
    return _s("f0", "xs")


def _moded(outs: list[str], at: list[str]) -> list[str]:
    # mode 1: other + map, 2: other - map (the value written at ``at`` of the same item)
    plus = " ".join(f"{v} = other[{o}] + {v};" for v, o in zip(outs, at))
    minus = " ".join(f"{v} = other[{o}] - {v};" for v, o in zip(outs, at))
    return [f"if (mode == 1) {{ {plus} }}", f"else if (mode == 2) {{ {minus} }}"]


#: Rows of one frame an item of the rows_grid kernels computes (the grid's y is a block of them): the row's
#: taps are loaded once for all of them.
ROWS_PER_ITEM = 2


def _rows_grid(d: Dialect, src_kind: str) -> Template:
    # along the width: (n, h, w_in, 3) -> (n, h, xs, 3); item x of row block y of frame f: one pixel's
    # channels in each of ROWS_PER_ITEM rows (a block past the last row re-reads the last row and writes
    # nothing there)
    load = _load(src_kind)
    params = [_src(src_kind), _p("dst", "f32", out=True), _p("other", "f32"), _p("idx", "int"),
              _p("wt", "f32"), *_s("k", "h", "w_in", "mode"), *_grid()]
    rows = range(ROWS_PER_ITEM)
    body = [f"const int y0 = y * {ROWS_PER_ITEM};"]
    for r in rows:
        row = f"(y0 + {r} < h ? y0 + {r} : h - 1)" if r else "y0"
        body.append(f"const int base{r} = (f * h + {row}) * w_in * 3;")
        body.append(f"float a{r} = 0.0f, b{r} = 0.0f, c{r} = 0.0f;")
    body += [
        "for (int t = 0; t < k; ++t) {",
        "    const int j = idx[x * k + t] * 3;",
        "    const float g = wt[x * k + t];",
    ]
    for r in rows:
        body += [f"    a{r} += g * {load.format(f'base{r} + j')};",
                 f"    b{r} += g * {load.format(f'base{r} + j + 1')};",
                 f"    c{r} += g * {load.format(f'base{r} + j + 2')};"]
    body.append("}")
    for r in rows:
        row = f"y0 + {r}" if r else "y0"
        sums = [f"a{r}", f"b{r}", f"c{r}"]
        inner = [f"const int o = ((f * h + {row}) * xs + x) * 3;",
                 *_moded(sums, ["o", "o + 1", "o + 2"]),
                 *(f"dst[o + {c}] = {v};" for c, v in enumerate(sums))]
        if r:
            body += [f"if ({row} < h) {{", *("    " + line for line in inner), "}"]
        else:
            body += ["{", *("    " + line for line in inner), "}"]
    return params, body


def _store4(d: Dialect, sums: list[str], at: str) -> list[str]:
    # four sums into float4 ``at`` of dst, plus or minus ``other``'s (read only under modes 1 and 2: ``other``
    # is then a real array; under mode 0 it is a one-word stand-in)
    f32x4 = d.vector("f32", 4)
    plus = " ".join(f"{v} = b.{c} + {v};" for v, c in zip(sums, "xyzw"))
    minus = " ".join(f"{v} = b.{c} - {v};" for v, c in zip(sums, "xyzw"))
    return [
        f"if (mode == 1) {{ const {f32x4} b = other[{at}]; {plus} }}",
        f"else if (mode == 2) {{ const {f32x4} b = other[{at}]; {minus} }}",
        f"dst[{at}] = {d.make_vector('f32', *sums)};",
    ]


def _cols_bytes(d: Dialect) -> Template:
    # along the height, bytes in: (n, h_in, 16 xs) -> (n, h_out, 16 xs) floats; item x of output row y of
    # frame f is the 16 values of the 16 bytes (one uint4) x of the row (the caller checks 3 W % 16 == 0)
    u32x4, f32 = d.vector("u32", 4), d.scalar("f32")
    params = [_p("src", "u32x4"), _p("dst", "f32x4", out=True), _p("other", "f32x4"), _p("idx", "int"),
              _p("wt", "f32"), *_s("k", "h_in", "h_out", "mode"), *_grid()]
    sums = [f"a{j}" for j in range(16)]
    body = [
        "const int base = f * h_in * xs + x;",
        "float " + ", ".join(f"{a} = 0.0f" for a in sums) + ";",
        "for (int t = 0; t < k; ++t) {",
        "    const float g = wt[y * k + t];",
        f"    const {u32x4} v = src[base + idx[y * k + t] * xs];",
    ]
    for j, a in enumerate(sums):  # byte j: word j / 4 (lane x y z w), shift 8 (j % 4)
        word = f"v.{'xyzw'[j // 4]}"
        part = f"({word} >> {8 * (j % 4)}) & 255u" if j % 4 not in (0, 3) else (
            f"{word} & 255u" if j % 4 == 0 else f"{word} >> 24")
        body.append(f"    {a} += g * {d.cast(f32, part)};")
    body += ["}", "const int o = ((f * h_out + y) * xs + x) * 4;"]
    for q in range(4):
        body += _store4(d, sums[4 * q: 4 * q + 4], f"o + {q}")
    return params, body


def _cols_floats(d: Dialect) -> Template:
    # along the height, floats: (n, h_in, 4 xs) -> (n, h_out, 4 xs); item x of output row y of frame f is
    # float4 x of the row (the caller checks w3 % 4 == 0)
    f32x4 = d.vector("f32", 4)
    sums = [f"a{q}" for q in range(4)]
    params = [_p("src", "f32x4"), _p("dst", "f32x4", out=True), _p("other", "f32x4"), _p("idx", "int"),
              _p("wt", "f32"), *_s("k", "h_in", "h_out", "mode"), *_grid()]
    body = [
        "const int base = f * h_in * xs + x;",
        "float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;",
        "for (int t = 0; t < k; ++t) {",
        "    const float g = wt[y * k + t];",
        f"    const {f32x4} v = src[base + idx[y * k + t] * xs];",
        *(f"    {a} += g * v.{c};" for a, c in zip(sums, "xyzw")),
        "}",
        *_store4(d, sums, "(f * h_out + y) * xs + x"),
    ]
    return params, body


_M = [f"m{j}" for j in range(9)]
_C = [f"c{j}" for j in range(9)]
_E = [f"e{j}" for j in range(9)]


def _matrix(d: Dialect, src_kind: str) -> Template:
    # pixels times a 3 x 3 matrix (row major m0 .. m8), one pixel per item
    load = _load(src_kind)
    params = [_src(src_kind), _p("dst", "f32", out=True), *_s(*_M, kind="f32"), *_s("total")]
    body = [
        "const int p = i * 3;",
        f"const float a = {load.format('p')}, b = {load.format('p + 1')}, c = {load.format('p + 2')};",
        "dst[p] = m0 * a + m1 * b + m2 * c;",
        "dst[p + 1] = m3 * a + m4 * b + m5 * c;",
        "dst[p + 2] = m6 * a + m7 * b + m8 * c;",
    ]
    return params, body


def _pack_words(d: Dialect) -> list[str]:
    # the 12 bytes of four pixels (v[0 .. 3], three bytes packed in each) as three words, the words past the
    # buffer skipped
    u32 = d.scalar("u32")
    return [
        "const int words = (3 * pixels + 3) / 4;",
        "for (int j = 0; j < 3; ++j) {",
        "    const int w = 3 * i + j;",
        "    if (w >= words) break;",
        f"    {u32} word = 0u;",
        "    for (int q = 0; q < 4; ++q) {",
        "        const int byte_ = 4 * j + q;",
        "        word |= ((v[byte_ / 3] >> (8 * (byte_ % 3))) & 255u) << (8 * q);",
        "    }",
        "    dst[w] = word;",
        "}",
    ]


def _four_pixels(d: Dialect) -> list[str]:
    # the opening of a loop over a work item's four pixels p (of ``pixels``), each packed into a word's v[q]
    return [
        f"{d.scalar('u32')} v[4];",
        "for (int q = 0; q < 4; ++q) {",
        "    const int p = 4 * i + q;",
        "    v[q] = 0u;",
        "    if (p >= pixels) continue;",
    ]


def _to_bytes(d: Dialect) -> Template:
    # YIQ (pixels, 3) float -> RGB bytes through m and the MIT output handling; four pixels per item
    params = [_p("src", "f32"), _p("dst", "u32", out=True), *_s(*_M, kind="f32"), *_s("pixels", "total")]
    body = [
        *_four_pixels(d),
        "    const float y = src[3 * p], c = src[3 * p + 1], d = src[3 * p + 2];",
        "    v[q] = mit_bytes(m0 * y + m1 * c + m2 * d, m3 * y + m4 * c + m5 * d, m6 * y + m7 * c + m8 * d);",
        "}",
        *_pack_words(d),
    ]
    return params, body


def _render(d: Dialect) -> Template:
    # frames (n, H, W, 3) bytes plus a signal (n, h, W, 3) resampled along the height through (iy, wy), k taps
    # per output row (k 0: no signal): out = handle(C rgb + E signal); four pixels per item
    params = [_p("frames", "u32"), _p("signal", "f32"), _p("dst", "u32", out=True), _p("iy", "int"),
              _p("wy", "f32"), *_s("k", "H", "W", "h", "pixels"), *_s(*_C, *_E, kind="f32"), *_s("total")]
    body = [
        *_four_pixels(d),
        "    const int f = p / (H * W);",
        "    const int rest = p % (H * W);",
        "    const int y = rest / W;",
        "    const int col = (f * h * W + rest % W) * 3;",
        "    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;",
        "    for (int t = 0; t < k; ++t) {",
        "        const float g = wy[y * k + t];",
        "        const int j = col + iy[y * k + t] * W * 3;",
        "        s0 += g * signal[j];",
        "        s1 += g * signal[j + 1];",
        "        s2 += g * signal[j + 2];",
        "    }",
        "    const float r = BYTE(frames, 3 * p), gr = BYTE(frames, 3 * p + 1), b = BYTE(frames, 3 * p + 2);",
        "    v[q] = mit_bytes(c0 * r + c1 * gr + c2 * b + e0 * s0 + e1 * s1 + e2 * s2,",
        "                     c3 * r + c4 * gr + c5 * b + e3 * s0 + e4 * s1 + e5 * s2,",
        "                     c6 * r + c7 * gr + c8 * b + e6 * s0 + e7 * s1 + e8 * s2);",
        "}",
        *_pack_words(d),
    ]
    return params, body


def _render_rows(d: Dialect) -> Template:
    # render's arithmetic over the 3-D grid: item x of row y of frame f is pixels 4 x .. 4 x + 3 of the row,
    # the 12 bytes of three whole words (rows of whole words: the caller checks W % 4 == 0, xs = W / 4), so
    # the pixels' bytes are read and written without a loop and the row's taps are the same for every item
    u32, f32 = d.scalar("u32"), d.scalar("f32")
    # the signal's rows are whole float4s too (3 W floats, W % 4 == 0): each tap reads three of them
    params = [_p("frames", "u32"), _p("signal", "f32x4"), _p("dst", "u32", out=True), _p("iy", "int"),
              _p("wy", "f32"), *_s("k", "H", "W", "h"), *_s(*_C, *_E, kind="f32"), *_grid()]
    words = ["w0", "w1", "w2"]
    f32x4 = d.vector("f32", 4)
    body = [
        "const int word = ((f * H + y) * xs + x) * 3;",
        f"const {u32} w0 = frames[word], w1 = frames[word + 1], w2 = frames[word + 2];",
    ]
    for byte in range(12):  # byte b of the 12: word b / 4, shift 8 (b % 4); pixel b / 3, channel b % 3
        shifted = words[byte // 4] + (f" >> {8 * (byte % 4)}" if byte % 4 else "")
        value = f"({shifted}) & 255u" if byte % 4 != 3 else shifted
        body.append(f"const {f32} p{byte // 3}{'rgb'[byte % 3]} = {d.cast(f32, value)};")
    body += [
        "const int col = (f * h * xs + x) * 3;",
        "float " + ", ".join(f"s{j} = 0.0f" for j in range(12)) + ";",
        "for (int t = 0; t < k; ++t) {",
        "    const float g = wy[y * k + t];",
        "    const int j = col + iy[y * k + t] * xs * 3;",
        f"    const {f32x4} q0 = signal[j], q1 = signal[j + 1], q2 = signal[j + 2];",
        *(f"    s{j} += g * q{j // 4}.{'xyzw'[j % 4]};" for j in range(12)),
        "}",
    ]
    for q in range(4):
        r, g, b = (f"p{q}{c}" for c in "rgb")
        s0, s1, s2 = (f"s{3 * q + c}" for c in range(3))
        rgb = [f"c{3 * row} * {r} + c{3 * row + 1} * {g} + c{3 * row + 2} * {b} + e{3 * row} * {s0} + "
               f"e{3 * row + 1} * {s1} + e{3 * row + 2} * {s2}" for row in range(3)]
        body.append(f"const {u32} v{q} = mit_bytes({', '.join(rgb)});")
    body += [
        "// v holds r | g << 8 | b << 16; the row's bytes r0 g0 b0 r1 | g1 b1 r2 g2 | b2 r3 g3 b3",
        "dst[word] = v0 | (v1 << 24);",
        "dst[word + 1] = (v1 >> 8) | (v2 << 16);",
        "dst[word + 2] = (v2 >> 16) | (v3 << 8);",
    ]
    return params, body


def _axpby(d: Dialect) -> Template:
    params = [_p("a", "f32"), _p("b", "f32"), _p("dst", "f32", out=True), *_s("alpha", "beta", kind="f32"),
              *_s("total")]
    return params, ["dst[i] = alpha * a[i] + beta * b[i];"]


def _level_gain(d: Dialect) -> Template:
    # (pixels, 3): Y times gain_y, I and Q times gain_iq
    params = [_p("src", "f32"), _p("dst", "f32", out=True), *_s("gain_y", "gain_iq", kind="f32"),
              *_s("total")]
    return params, [
        "const int p = i * 3;",
        "dst[p] = src[p] * gain_y;",
        "dst[p + 1] = src[p + 1] * gain_iq;",
        "dst[p + 2] = src[p + 2] * gain_iq;",
    ]


def _copy2d(d: Dialect) -> Template:
    # rows x cols floats: dst[dst_off + r dst_stride + c] = src[src_off + r src_stride + c]
    params = [_p("src", "f32"), _p("dst", "f32", out=True),
              *_s("cols", "src_stride", "src_off", "dst_stride", "dst_off", "total")]
    return params, [
        "const int r = i / cols;",
        "const int c = i % cols;",
        "dst[dst_off + r * dst_stride + c] = src[src_off + r * src_stride + c];",
    ]


def _scan(d: Dialect) -> Template:
    # a run of frames through two first-order low-passes, one item per sample, looping over time: x (t, p) is
    # overwritten with g (lp1 - lp2); s1, s2 the low-pass states and xp the previous input, carried over
    params = [_p("x", "f32", out=True), _p("s1", "f32", out=True), _p("s2", "f32", out=True),
              _p("xp", "f32", out=True), *_s("t_len", "p_len"),
              *_s("c1_y", "c1_x", "c1_xp", "c2_y", "c2_x", "c2_xp", "g", kind="f32"), *_s("total")]
    return params, [
        "float a = s1[i], b = s2[i], prev = xp[i];",
        "for (int t = 0; t < t_len; ++t) {",
        "    const int j = t * p_len + i;",
        "    const float v = x[j];",
        "    a = c1_y * a + c1_x * v + c1_xp * prev;",
        "    b = c2_y * b + c2_x * v + c2_xp * prev;",
        "    prev = v;",
        "    x[j] = g * (a - b);",
        "}",
        "s1[i] = a;",
        "s2[i] = b;",
        "xp[i] = prev;",
    ]


def _scan4(d: Dialect) -> Template:
    # the scan four samples (a float4) per item: the same recursion lane by lane, a quarter of the loads and
    # stores (the caller checks p % 4 == 0; p4 = p / 4 items)
    f32x4 = d.vector("f32", 4)
    params = [_p("x", "f32x4", out=True), _p("s1", "f32x4", out=True), _p("s2", "f32x4", out=True),
              _p("xp", "f32x4", out=True), *_s("t_len", "p4"),
              *_s("c1_y", "c1_x", "c1_xp", "c2_y", "c2_x", "c2_xp", "g", kind="f32"), *_s("total")]
    lanes = "xyzw"
    body = [f"const {f32x4} a4 = s1[i], b4 = s2[i], prev4 = xp[i];"]
    body += [f"float a{c} = a4.{c}, b{c} = b4.{c}, prev{c} = prev4.{c};" for c in lanes]
    body += [
        "for (int t = 0; t < t_len; ++t) {",
        "    const int j = t * p4 + i;",
        f"    const {f32x4} v = x[j];",
    ]
    for c in lanes:
        body += [
            f"    a{c} = c1_y * a{c} + c1_x * v.{c} + c1_xp * prev{c};",
            f"    b{c} = c2_y * b{c} + c2_x * v.{c} + c2_xp * prev{c};",
            f"    prev{c} = v.{c};",
        ]
    body += [
        f"    x[j] = {d.make_vector('f32', *(f'g * (a{c} - b{c})' for c in lanes))};",
        "}",
        f"s1[i] = {d.make_vector('f32', *(f'a{c}' for c in lanes))};",
        f"s2[i] = {d.make_vector('f32', *(f'b{c}' for c in lanes))};",
        f"xp[i] = {d.make_vector('f32', *(f'prev{c}' for c in lanes))};",
    ]
    return params, body


def _project_coefficients(d: Dialect) -> Template:
    # the ideal band-pass as a projection (vidmag.backend.bandpass_basis): with d = x - x[0] per series,
    # coef (m, p) = analysis^T (m, t) d (t, p)
    params = [_p("x", "f32"), _p("analysis", "f32"), _p("coef", "f32", out=True),
              *_s("t_len", "m_len", "p_len", "total")]
    return params, [
        "const int p = i % p_len;",
        "const int m = i / p_len;",
        "const float x0 = x[p];",
        "float acc = 0.0f;",
        "for (int t = 0; t < t_len; ++t) acc += analysis[t * m_len + m] * (x[t * p_len + p] - x0);",
        "coef[i] = acc;",
    ]


def _project_synthesis(d: Dialect) -> Template:
    # out (t, p) = gain_c (identity d + synthesis (t, m) coef (m, p) + keeps_dc x[0]), the gain per channel
    # c = (p0 + p) mod 3 (p0: where this piece of the series starts among all of them)
    params = [_p("x", "f32"), _p("coef", "f32"), _p("synthesis", "f32"), _p("dst", "f32", out=True),
              *_s("t_len", "m_len", "p_len", "p0"), *_s("identity", "keeps_dc", "g0", "g1", "g2", kind="f32"),
              *_s("total")]
    return params, [
        "const int p = i % p_len;",
        "const int t = i / p_len;",
        "const int c = (p0 + p) % 3;",
        "const float g = c == 0 ? g0 : (c == 1 ? g1 : g2);",
        "const float x0 = x[p];",
        "float acc = identity * (x[i] - x0) + keeps_dc * x0;",
        "for (int m = 0; m < m_len; ++m) acc += synthesis[t * m_len + m] * coef[m * p_len + p];",
        "dst[i] = g * acc;",
    ]


#: The kernels launched over a 3-D grid (:func:`cover_grid`); their last parameters are ``f0, xs``.
GRID_KERNELS = frozenset({"rows_grid_f32", "rows_grid_u8", "cols_grid_f32", "cols_grid_u8", "render_grid"})

#: Kernel name -> template ``dialect -> (parameters, body lines)``.
KERNELS = {
    "rows_f32": lambda d: _rows(d, "f32"),
    "rows_u8": lambda d: _rows(d, "u8"),
    "cols_f32": lambda d: _cols(d, "f32"),
    "cols_u8": lambda d: _cols(d, "u8"),
    "rows_grid_f32": lambda d: _rows_grid(d, "f32"),
    "rows_grid_u8": lambda d: _rows_grid(d, "u8"),
    "cols_grid_f32": _cols_floats,
    "cols_grid_u8": _cols_bytes,
    "matrix_f32": lambda d: _matrix(d, "f32"),
    "matrix_u8": lambda d: _matrix(d, "u8"),
    "to_bytes": _to_bytes,
    "render": _render,
    "render_grid": _render_rows,
    "axpby": _axpby,
    "level_gain": _level_gain,
    "copy2d": _copy2d,
    "scan": _scan,
    "scan4": _scan4,
    "project_coefficients": _project_coefficients,
    "project_synthesis": _project_synthesis,
}


def _build(kernels: dict[str, Callable[[Dialect], Template]], name: str, dialect: Dialect | str) -> Program:
    """Kernel ``name`` of the template table ``kernels`` (this module's :data:`KERNELS` or the Riesz ones of
    :mod:`vidmag.backend.kernels.riesz_templates`) as a Program of one kernel in ``dialect``: the dialect's
    prelude, the shared helpers, the work item's index ``i`` and the bounds check against ``total``."""
    if name not in kernels:
        raise ValueError(f"name must be one of {', '.join(kernels)}; got {name!r}")
    if isinstance(dialect, str):
        if dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}; got {dialect!r}")
        dialect = DIALECTS[dialect]
    params, body = kernels[name](dialect)
    e = Emitter(dialect)
    prelude = dialect.prelude(set()).rstrip("\n")
    if prelude:
        e.line(prelude)
    e.lines(_helpers(dialect))
    with e.kernel(name, params):
        if name in GRID_KERNELS:
            e.line(f"const int x = {dialect.global_index(0)};")
            e.line(f"const int y = {dialect.global_index(1)};")
            e.line(f"const int f = f0 + {dialect.global_index(2)};")
            e.line("if (x >= xs) return;")
        else:
            e.line(_index(dialect))
            e.line("if (i >= total) return;")
        e.lines(body)
    return Program(e.text(), dialect, (KernelSignature(name, tuple(params)),), name=f"vidmag-{name}")


@functools.cache
def program(name: str, dialect: Dialect | str = "glsl") -> Program:
    """Kernel ``name`` (a key of :data:`KERNELS`) as a Program of one kernel in ``dialect`` (a
    :class:`~kernelkit.dialects.Dialect` or its name: ``"glsl"``, ``"cuda"``, ``"opencl"``, ``"metal"``)."""
    return _build(KERNELS, name, dialect)
