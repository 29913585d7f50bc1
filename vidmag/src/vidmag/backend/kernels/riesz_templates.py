"""The Riesz pipelines' kernels written once, for every dialect of kernelkit: GLSL 4.50, CUDA C++, OpenCL C
and MSL.

They are the kernels of the opencl backend's ``backend/opencl/kernels/riesz.cl`` (the steps of
:mod:`vidmag._reference.riesz` in float32), value for value in the same order, one pixel a work item instead
of eight (the float8 kernels there sum in the same order as their one-pixel forms), under the conventions of
:mod:`vidmag.backend.kernels.templates`: one kernel per program, a 1-D index over ``total`` work items with a
bounds check, bytes four to a 32-bit word, 32-bit indices. What GLSL forbids shapes them: riesz.cl's
``filter_weigh`` takes buffers, so its lines are written into each kernel that uses it; conditions are
comparisons (``first != 0``), and no local is named as GLSL reserves (``out``, ``filter``, ...).

The row pass of the amplitude-weighted blur is the shared ``rows_f32`` kernel (the same sum in the same
order); everything else is here:

- ``riesz_luma``: RGB bytes -> luminance;
- ``riesz_reduce`` / ``riesz_expand``: one pyramid step through both axes' tap tables (expand with ``other``:
  mode 1 a collapse step, mode 2 a Laplacian band);
- ``riesz_phase``: a level's Riesz transform, the step of the quaternionic phase and (``kind`` 1 Butterworth,
  2 the MIT IIR) the temporal filter and the amplitude weights;
- ``riesz_weigh``: the amplitude weights of riesz_ideal's band-passed phase (one piece of its stack);
- ``riesz_blur_shift`` / ``riesz_shift``: the column pass of the blur and the phase shift (or the shift alone,
  sigma 0);
- ``riesz_render``: the output bytes (the input's I and Q with the magnified luminance, the MIT output
  handling), four pixels a work item.
"""

from __future__ import annotations

import functools

from kernelkit.dialects import Dialect, Param, UnsupportedError
from kernelkit.program import Program
from vidmag._reference.riesz import PHASE_EPSILON, PI_FADE_POWER
from vidmag.backend.kernels.templates import _build, _four_pixels, _p, _pack_words, _s

__all__ = ["KERNELS", "program"]

Template = tuple[list[Param], list[str]]

#: atan2(y, x) of each dialect: kernelkit's portable math has none (GLSL spells it atan with two arguments)
_ATAN2 = {"opencl": "atan2", "cuda": "atan2f", "metal": "atan2", "glsl": "atan"}

#: PHASE_EPSILON^4 of the reference's step fade, as a float32 literal (riesz.cl writes the same one); the
#: fade's power of sin^2 is four squarings
_EPS4 = f"{PHASE_EPSILON**4:.9g}f"
assert PI_FADE_POWER == 16

_FILTER = ("hb0", "hb1", "ha0", "ha1", "lb0", "lb1", "la0", "la1")


def _atan2(d: Dialect, y: str, x: str) -> str:
    if d.name not in _ATAN2:
        raise UnsupportedError(f"atan2 in {d.name}")
    return f"{_ATAN2[d.name]}({y}, {x})"


def _step_fade() -> list[str]:
    # riesz.cl's step_fade (vidmag._reference.riesz.step_fade) on b, r1, r2, pb, px, py, re and qlen:
    # g(|current|) g(|previous|) (1 - sin^2(diff / 2)^16), the power by four squarings
    return [
        "const float nc = b * b + r1 * r1 + r2 * r2;",
        "const float np = pb * pb + px * px + py * py;",
        f"const float gate = (nc * nc / (nc * nc + {_EPS4})) * (np * np / (np * np + {_EPS4}));",
        "const float hs = qlen > 0.0f ? (qlen - re) / (2.0f * qlen) : 0.0f;  // sin^2(diff / 2)",
        "const float hs2 = hs * hs;",
        "const float hs4 = hs2 * hs2;",
        "const float hs8 = hs4 * hs4;",
        "const float fade = gate * (1.0f - hs8 * hs8);",
    ]


def _filter_params() -> list[Param]:
    return [*_s("kind", "first", "weigh"), *_s(*_FILTER, kind="f32")]


def _luma(d: Dialect) -> Template:
    # Y = m0 r + m1 g + m2 b of RGB bytes (the 1 / 255 folded into m)
    params = [_p("src", "u32"), _p("dst", "f32", out=True), *_s("m0", "m1", "m2", kind="f32"), *_s("total")]
    return params, [
        "const int p = i * 3;",
        "dst[i] = m0 * BYTE(src, p) + m1 * BYTE(src, p + 1) + m2 * BYTE(src, p + 2);",
    ]


def _tables() -> list[Param]:
    return [_p("ix", "int"), _p("wx", "f32"), *_s("kx"), _p("iy", "int"), _p("wy", "f32"), *_s("ky")]


def _reduce(d: Dialect) -> Template:
    # along the width, then the height: out = sum_ty wy (sum_tx wx in); item (x, y) of the output
    params = [_p("src", "f32"), _p("dst", "f32", out=True), *_tables(), *_s("w_in", "w_out", "total")]
    return params, [
        "const int x = i % w_out;",
        "const int y = i / w_out;",
        "float acc = 0.0f;",
        "for (int ty = 0; ty < ky; ++ty) {",
        "    const int start = iy[y * ky + ty] * w_in;",
        "    float along = 0.0f;",
        "    for (int tx = 0; tx < kx; ++tx) along += wx[x * kx + tx] * src[start + ix[x * kx + tx]];",
        "    acc += wy[y * ky + ty] * along;",
        "}",
        "dst[i] = acc;",
    ]


def _expand(d: Dialect) -> Template:
    # along the height, then the width: out = sum_tx wx (sum_ty wy in); mode 0: out = expand; 1: other +
    # expand (a collapse step); 2: other - expand (a Laplacian band)
    params = [_p("src", "f32"), _p("dst", "f32", out=True), _p("other", "f32"), *_tables(),
              *_s("w_in", "w_out", "mode", "total")]
    return params, [
        "const int x = i % w_out;",
        "const int y = i / w_out;",
        "float acc = 0.0f;",
        "for (int tx = 0; tx < kx; ++tx) {",
        "    const int c = ix[x * kx + tx];",
        "    float down = 0.0f;",
        "    for (int ty = 0; ty < ky; ++ty) down += wy[y * ky + ty] * src[iy[y * ky + ty] * w_in + c];",
        "    acc += wx[x * kx + tx] * down;",
        "}",
        "if (mode == 1) acc = other[i] + acc;",
        "else if (mode == 2) acc = other[i] - acc;",
        "dst[i] = acc;",
    ]


def _filter_weigh(xc: str, xs: str, amplitude: str) -> list[str]:
    # riesz.cl's filter_weigh, written in place (GLSL passes no buffer to a function): the temporal filter of
    # pixel i's accumulated phase (xc, xs) with its state (planes n apart), and the weighted values it writes
    # (f_c w, f_s w, w), w = amplitude + 1e-12 when weigh != 0, else 1
    return [
        f"float fc = {xc}, fs = {xs};",
        "if (kind != 0 && first != 0) {",
        f"    state[i] = {xc}; state[n + i] = {xc}; state[2 * n + i] = {xc};",
        f"    state[3 * n + i] = {xs}; state[4 * n + i] = {xs}; state[5 * n + i] = {xs};",
        "    fc = 0.0f;",
        "    fs = 0.0f;",
        "} else if (kind == 1) {",
        f"    const float high_c = (-ha1 * state[i] + hb0 * {xc} + hb1 * state[2 * n + i]) / ha0;",
        f"    const float low_c = (-la1 * state[n + i] + lb0 * {xc} + lb1 * state[2 * n + i]) / la0;",
        f"    const float high_s = (-ha1 * state[3 * n + i] + hb0 * {xs} + hb1 * state[5 * n + i]) / ha0;",
        f"    const float low_s = (-la1 * state[4 * n + i] + lb0 * {xs} + lb1 * state[5 * n + i]) / la0;",
        f"    state[i] = high_c; state[n + i] = low_c; state[2 * n + i] = {xc};",
        f"    state[3 * n + i] = high_s; state[4 * n + i] = low_s; state[5 * n + i] = {xs};",
        "    fc = high_c - low_c;",
        "    fs = high_s - low_s;",
        "} else if (kind == 2) {",
        f"    const float high_c = hb0 * state[i] + hb1 * {xc};",
        f"    const float low_c = lb0 * state[n + i] + lb1 * {xc};",
        f"    const float high_s = hb0 * state[3 * n + i] + hb1 * {xs};",
        f"    const float low_s = lb0 * state[4 * n + i] + lb1 * {xs};",
        "    state[i] = high_c; state[n + i] = low_c;",
        "    state[3 * n + i] = high_s; state[4 * n + i] = low_s;",
        "    fc = high_c - low_c;",
        "    fs = high_s - low_s;",
        "}",
        f"const float wgt = weigh != 0 ? {amplitude} + 1e-12f : 1.0f;",
        "weighted[i * 3] = fc * wgt;",
        "weighted[i * 3 + 1] = fs * wgt;",
        "weighted[i * 3 + 2] = wgt;",
    ]


def _phase(d: Dialect) -> Template:
    # a level's band (h, w): its 3-tap Riesz transform (R1 along x, R2 along y: [0.5, 0, -0.5], mirror
    # borders), the phase difference of current * conj(previous) added to the accumulated phase, the
    # amplitude sqrt(|current| |previous|); (qb, qx, qy) take the current quaternion; then (kind != 0) the
    # temporal filter. first != 0: the first frame (accumulated phase 0, previous quaternion itself).
    params = [_p("band", "f32"), *(_p(n, "f32", out=True) for n in ("qb", "qx", "qy", "phase_c", "phase_s",
                                                                  "amplitude", "state", "weighted")),
              *_s("w", "h"), *_filter_params(), *_s("total")]
    sqrt = functools.partial(d.math, "sqrt", "f32")
    body = [
        "const int x = i % w;",
        "const int y = i / w;",
        "const int rw = y * w;",
        "const int xl = x > 0 ? x - 1 : 1;",
        "const int xr = x < w - 1 ? x + 1 : w - 2;",
        "const int yu = y > 0 ? y - 1 : 1;",
        "const int yd = y < h - 1 ? y + 1 : h - 2;",
        "const float b = band[i];",
        "const float r1 = 0.5f * band[rw + xl] - 0.5f * band[rw + xr];",
        "const float r2 = 0.5f * band[yu * w + x] - 0.5f * band[yd * w + x];",
        "const float pb = first != 0 ? b : qb[i];",
        "const float px = first != 0 ? r1 : qx[i];",
        "const float py = first != 0 ? r2 : qy[i];",
        "const float re = b * pb + r1 * px + r2 * py;",
        "const float vx = pb * r1 - b * px;",
        "const float vy = pb * r2 - b * py;",
        f"const float vlen = {sqrt('vx * vx + vy * vy')};",
        f"const float qlen = {sqrt('re * re + vlen * vlen')};",
        f"const float diff = {_atan2(d, 'vlen', 're')};  // acos(re / |q|), stable near 0 and pi",
        *_step_fade(),
        "const float scale = (vlen > 0.0f ? diff / vlen : 0.0f) * fade;",
        f"const float amp = {sqrt('qlen')};",
        "const float xc = first != 0 ? 0.0f : phase_c[i] + vx * scale;",
        "const float xs = first != 0 ? 0.0f : phase_s[i] + vy * scale;",
        "amplitude[i] = amp;",
        "phase_c[i] = xc;",
        "phase_s[i] = xs;",
        "qb[i] = b;",
        "qx[i] = r1;",
        "qy[i] = r2;",
        "if (kind == 0) return;",
        "const int n = w * h;",
        *_filter_weigh("xc", "xs", "amp"),
    ]
    return params, body


def _weigh(d: Dialect) -> Template:
    # riesz.cl's riesz_filter with kind 0 (riesz_ideal): the amplitude weights of the band-passed phase of
    # one frame, read from one piece of its stacks (the frame's values from pixel p0 on start at ``start``)
    params = [_p("phase_c", "f32"), _p("phase_s", "f32"), _p("amplitude", "f32"),
              _p("weighted", "f32", out=True), *_s("start", "p0", "weigh", "total")]
    return params, [
        "const int q = p0 + i;",
        "const float wgt = weigh != 0 ? amplitude[q] + 1e-12f : 1.0f;",
        "weighted[q * 3] = phase_c[start + i] * wgt;",
        "weighted[q * 3 + 1] = phase_s[start + i] * wgt;",
        "weighted[q * 3 + 2] = wgt;",
    ]


def _shift_lines(d: Dialect) -> list[str]:
    # the band becomes the real part of exp(v) q, v = alpha (f_c, f_s) / norm: cos|v| b - sin|v| (v_x R1 +
    # v_y R2) / |v| (the band itself where v = 0)
    sqrt, sin, cos = (functools.partial(d.math, f, "f32") for f in ("sqrt", "sin", "cos"))
    return [
        "const float pc = alpha * (a / norm), ps = alpha * (c / norm);",
        f"const float magnitude = {sqrt('pc * pc + ps * ps')};",
        f"const float sinc = magnitude > 0.0f ? {sin('magnitude')} / magnitude : 1.0f;",
        f"dst[i] = {cos('magnitude')} * qb[i] - sinc * (pc * qx[i] + ps * qy[i]);",
    ]


def _quaternion() -> list[Param]:
    return [_p("qb", "f32"), _p("qx", "f32"), _p("qy", "f32"), _p("dst", "f32", out=True)]


def _blur_shift(d: Dialect) -> Template:
    # the column pass of the amplitude-weighted blur (tap table iy, wy, k taps per row, over the row-blurred
    # (f_c w, f_s w, w), w pixels a row) and the phase shift of the pixel
    params = [_p("rows", "f32"), _p("iy", "int"), _p("wy", "f32"), *_s("k"), *_quaternion(), *_s("w"),
              *_s("alpha", kind="f32"), *_s("total")]
    return params, [
        "const int x = i % w;",
        "const int y = i / w;",
        "float a = 0.0f, c = 0.0f, norm = 0.0f;",
        "for (int t = 0; t < k; ++t) {",
        "    const float g = wy[y * k + t];",
        "    const int j = (iy[y * k + t] * w + x) * 3;",
        "    a += g * rows[j];",
        "    c += g * rows[j + 1];",
        "    norm += g * rows[j + 2];",
        "}",
        *_shift_lines(d),
    ]


def _shift(d: Dialect) -> Template:
    # the phase shift of one level without the blur (sigma 0: the weights are 1)
    params = [_p("blurred", "f32"), *_quaternion(), *_s("alpha", kind="f32"), *_s("total")]
    return params, [
        "const float norm = blurred[i * 3 + 2];",
        "const float a = blurred[i * 3], c = blurred[i * 3 + 1];",
        *_shift_lines(d),
    ]


_FWD = [f"f{j}" for j in range(3, 9)]
_INV = [f"v{j}" for j in range(9)]


def _render(d: Dialect) -> Template:
    # the output bytes: the input's I and Q (f3 .. f8: rows 1 and 2 of RGB bytes -> YIQ) with the magnified
    # luminance, back to RGB (v0 .. v8) and to bytes with the MIT output handling; four pixels per item
    params = [_p("src", "u32"), _p("luma", "f32"), _p("dst", "u32", out=True), *_s(*_FWD, *_INV, kind="f32"),
              *_s("pixels", "total")]
    return params, [
        *_four_pixels(d),
        "    const float r = BYTE(src, 3 * p), g = BYTE(src, 3 * p + 1), b = BYTE(src, 3 * p + 2);",
        "    const float y = luma[p];",
        "    const float ci = f3 * r + f4 * g + f5 * b;",
        "    const float cq = f6 * r + f7 * g + f8 * b;",
        "    v[q] = mit_bytes(v0 * y + v1 * ci + v2 * cq, v3 * y + v4 * ci + v5 * cq,",
        "                     v6 * y + v7 * ci + v8 * cq);",
        "}",
        *_pack_words(d),
    ]


#: Kernel name -> template ``dialect -> (parameters, body lines)``.
KERNELS = {
    "riesz_luma": _luma,
    "riesz_reduce": _reduce,
    "riesz_expand": _expand,
    "riesz_phase": _phase,
    "riesz_weigh": _weigh,
    "riesz_blur_shift": _blur_shift,
    "riesz_shift": _shift,
    "riesz_render": _render,
}


@functools.cache
def program(name: str, dialect: Dialect | str = "glsl") -> Program:
    """Riesz kernel ``name`` (a key of :data:`KERNELS`) as a Program of one kernel in ``dialect`` (a
    :class:`~kernelkit.dialects.Dialect` or its name), with the helpers and conventions of
    :func:`vidmag.backend.kernels.templates.program`."""
    return _build(KERNELS, name, dialect)
