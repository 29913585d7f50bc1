"""Straight-line code for the small DFTs (the radices) a Stockham stage applies.

Every butterfly computes the forward transform (sign -1). Inverse transforms are obtained by conjugating on
load and on store (``ifft(x) = conj(fft(conj(x)))``), so each radix is generated once and the direction is a
runtime flag rather than a second compiled kernel.
"""

from __future__ import annotations

import math

from kernelkit.emitter import Emitter, literal

#: radices the generator emits; powers of two are built by splitting, odd primes by the symmetric formula
RADICES = (2, 3, 4, 5, 7, 8, 11, 13)

_SQRT_HALF = math.sqrt(0.5)


class _Names:
    """Fresh temporary names inside one butterfly."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.count = 0

    def __call__(self) -> str:
        self.count += 1
        return f"{self.prefix}{self.count}"


def _twiddle_pow2(e: Emitter, prec: str, x: str, u: int, r: int, fresh: _Names) -> str:
    """``x * exp(-2 pi i u / r)`` for r in {2, 4, 8}, using the exact cases instead of a general multiply."""
    C = e.d.cplx(prec)
    eighth = (8 * u // r) % 8
    if eighth == 0:
        return x
    t = fresh()
    s = literal(_SQRT_HALF, prec)
    mk = e.d.make_complex
    if eighth == 2:
        e.line(f"{C} {t} = cmul_mi({x});")
    elif eighth == 1:
        e.line(f"{C} {t} = {mk(prec, f'({x}.x + {x}.y) * {s}', f'({x}.y - {x}.x) * {s}')};")
    elif eighth == 3:
        e.line(f"{C} {t} = {mk(prec, f'({x}.y - {x}.x) * {s}', f'-({x}.x + {x}.y) * {s}')};")
    else:  # pragma: no cover - radix 8 only needs eighths 0..3
        raise AssertionError(eighth)
    return t


def _dft_pow2(e: Emitter, prec: str, xs: list[str], fresh: _Names) -> list[str]:
    """Radix-2 decimation in time, recursively: outputs are variable names in natural order."""
    r = len(xs)
    if r == 1:
        return list(xs)
    even = _dft_pow2(e, prec, xs[0::2], fresh)
    odd = _dft_pow2(e, prec, xs[1::2], fresh)
    C = e.d.cplx(prec)
    out: list[str] = [""] * r
    for u in range(r // 2):
        w = _twiddle_pow2(e, prec, odd[u], u, r, fresh)
        a, b = fresh(), fresh()
        e.line(f"{C} {a} = cadd({even[u]}, {w});")
        e.line(f"{C} {b} = csub({even[u]}, {w});")
        out[u], out[u + r // 2] = a, b
    return out


def _dft_odd(e: Emitter, prec: str, xs: list[str], fresh: _Names) -> list[str]:
    """Odd-length DFT pairing inputs t and r - t, which halves the multiplications of the direct sum."""
    r = len(xs)
    h = (r - 1) // 2
    C, R = e.d.cplx(prec), e.d.real(prec)
    mk = e.d.make_complex
    s, d = [], []
    for t in range(1, h + 1):
        st, dt = fresh(), fresh()
        e.line(f"{C} {st} = cadd({xs[t]}, {xs[r - t]});")
        e.line(f"{C} {dt} = csub({xs[t]}, {xs[r - t]});")
        s.append(st)
        d.append(dt)
    out: list[str] = [""] * r
    y0 = fresh()
    e.line(f"{C} {y0} = {xs[0]};")
    for st in s:
        e.line(f"{y0} = cadd({y0}, {st});")
    out[0] = y0
    for u in range(1, h + 1):
        ax, ay, bx, by = fresh(), fresh(), fresh(), fresh()
        e.line(f"{R} {ax} = {xs[0]}.x; {R} {ay} = {xs[0]}.y; {R} {bx} = 0; {R} {by} = 0;")
        for t in range(1, h + 1):
            c = literal(math.cos(2 * math.pi * ((t * u) % r) / r), prec)
            sn = literal(math.sin(2 * math.pi * ((t * u) % r) / r), prec)
            st, dt = s[t - 1], d[t - 1]
            e.line(
                f"{ax} += {c} * {st}.x; {ay} += {c} * {st}.y; {bx} += {sn} * {dt}.x; {by} += {sn} * {dt}.y;"
            )
        yu, yv = fresh(), fresh()
        # y_u = A - iB and y_(r-u) = A + iB for the forward sign
        e.line(f"{C} {yu} = {mk(prec, f'{ax} + {by}', f'{ay} - {bx}')};")
        e.line(f"{C} {yv} = {mk(prec, f'{ax} - {by}', f'{ay} + {bx}')};")
        out[u], out[r - u] = yu, yv
    return out


def emit_dft(e: Emitter, prec: str, xs: list[str], prefix: str) -> list[str]:
    """Emit the forward DFT of the complex variables ``xs``; returns the names of the outputs, in order."""
    r = len(xs)
    if r not in RADICES:
        raise ValueError(f"radix must be one of {RADICES}; got {r}")
    fresh = _Names(prefix)
    if r & (r - 1) == 0:
        return _dft_pow2(e, prec, xs, fresh)
    return _dft_odd(e, prec, xs, fresh)
