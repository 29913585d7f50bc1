"""A small line emitter and the pieces of C every template shares (literals, complex helpers).

Kernels are built as text because all three targets read C-family source; what differs between them comes from
:mod:`specux._codegen.dialects`, never from branches here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from specux._codegen.dialects import COMPUTE_OF, Dialect


class Emitter:
    """Accumulates indented lines of source."""

    def __init__(self, dialect: Dialect):
        self.d = dialect
        self._lines: list[str] = []
        self._depth = 0

    def line(self, text: str = "") -> None:
        self._lines.append(("    " * self._depth + text) if text else "")

    def lines(self, texts: list[str]) -> None:
        for t in texts:
            self.line(t)

    @contextmanager
    def block(self, head: str) -> Iterator[None]:
        """``head {`` ... ``}`` with the body indented one level."""
        self.line(head + " {")
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            self.line("}")

    def text(self) -> str:
        return "\n".join(self._lines) + "\n"


def literal(value: float, prec: str) -> str:
    """A floating-point literal of the compute precision (``f`` suffix in float32, so no double sneaks in)."""
    text = repr(float(value))
    if "e" not in text and "." not in text and "inf" not in text:
        text += ".0"
    return text + ("f" if COMPUTE_OF[prec] == "f32" else "")


def complex_helpers(e: Emitter, prec: str) -> None:
    """Complex arithmetic for the compute precision of ``prec``.

    CUDA's float2 has no operators and OpenCL C has no overloading, so every template calls these few
    functions instead of writing ``a * b``; one source holds exactly one compute precision, so the names need
    no suffix.
    """
    d = e.d
    C, R = d.cplx(prec), d.real(prec)
    q = d.function_qualifier

    def mk(re: str, im: str) -> str:
        return d.make_complex(prec, re, im)

    e.lines(
        [
            f"{q} {C} cadd({C} a, {C} b) {{ return {mk('a.x + b.x', 'a.y + b.y')}; }}",
            f"{q} {C} csub({C} a, {C} b) {{ return {mk('a.x - b.x', 'a.y - b.y')}; }}",
            f"{q} {C} cmul({C} a, {C} b) "
            f"{{ return {mk('a.x * b.x - a.y * b.y', 'a.x * b.y + a.y * b.x')}; }}",
            f"{q} {C} cscale({C} a, {R} s) {{ return {mk('a.x * s', 'a.y * s')}; }}",
            f"{q} {C} cconj({C} a) {{ return {mk('a.x', '-a.y')}; }}",
            # multiplication by -i: the forward transform's quarter turn, free of arithmetic
            f"{q} {C} cmul_mi({C} a) {{ return {mk('a.y', '-a.x')}; }}",
        ]
    )
