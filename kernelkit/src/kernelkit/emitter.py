"""A small line emitter and the pieces of C every template shares (literals, complex helpers).

Kernels are built as text because every target reads C-family source; what differs between them comes from
:mod:`kernelkit.dialects`, never from branches here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kernelkit.dialects import OPENCL, Dialect, Param


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

    @contextmanager
    def kernel(
        self,
        name: str,
        params: list[Param] | tuple[Param, ...],
        *,
        block: tuple[int, ...] | None = None,
        shared: tuple[tuple[str, str, int], ...] = (),
    ) -> Iterator[None]:
        """A kernel in the extended form: ``shared`` arrays (``(type, name, size)`` each) declared where the
        target wants them, every index of :meth:`Dialect.local_index` and friends available in the body.

        ``block`` fixes the group size in the source where the target says it there (GLSL); None leaves it
        to the launch (GLSL then takes it from specialization constants 0, 1, 2, which the Vulkan runtime
        sets from the launch configuration).
        """
        head, first = self.d.kernel_parts(name, list(params), block, tuple(shared))
        with self.block(head):
            self.lines(first)
            yield

    def literal(self, value: float, prec: str) -> str:
        """:func:`literal` in this emitter's dialect."""
        return self.d.literal(value, prec)

    def text(self) -> str:
        return "\n".join(self._lines) + "\n"


def literal(value: float, prec: str, dialect: Dialect | None = None) -> str:
    """A floating-point literal of the compute precision (``f`` suffix in float32, so no double sneaks in).

    Without ``dialect`` the C family's spelling (no suffix on doubles); GLSL needs its own (``lf``).
    """
    return (dialect or OPENCL).literal(value, prec)


def complex_helpers(e: Emitter, prec: str) -> None:
    """Complex arithmetic for the compute precision of ``prec``.

    CUDA's float2 has no operators and OpenCL C has no overloading, so every template calls these few
    functions instead of writing ``a * b``; one source holds exactly one compute precision, so the names need
    no suffix.
    """
    d = e.d
    C, R = d.cplx(prec), d.real(prec)
    # "static inline float2", or just "vec2" where functions take no qualifier (GLSL)
    q = d.function_qualifier
    F = f"{q} {C}" if q else C

    def mk(re: str, im: str) -> str:
        return d.make_complex(prec, re, im)

    e.lines(
        [
            f"{F} cadd({C} a, {C} b) {{ return {mk('a.x + b.x', 'a.y + b.y')}; }}",
            f"{F} csub({C} a, {C} b) {{ return {mk('a.x - b.x', 'a.y - b.y')}; }}",
            f"{F} cmul({C} a, {C} b) "
            f"{{ return {mk('a.x * b.x - a.y * b.y', 'a.x * b.y + a.y * b.x')}; }}",
            f"{F} cscale({C} a, {R} s) {{ return {mk('a.x * s', 'a.y * s')}; }}",
            f"{F} cconj({C} a) {{ return {mk('a.x', '-a.y')}; }}",
            # multiplication by -i: the forward transform's quarter turn, free of arithmetic
            f"{F} cmul_mi({C} a) {{ return {mk('a.y', '-a.x')}; }}",
        ]
    )
