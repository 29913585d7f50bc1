"""Just enough of the C preprocessor to read the declarations of a kernel source: pure ``str -> tokens``.

Kernel files often generate their entry points with function-like macros (one body, several tap counts or
element types), so reading ``__kernel void name(...)`` needs the macros expanded first. This module does
what that takes and nothing more: line splicing, comments, ``#define`` (object-like, function-like,
variadic, ``#`` and ``##``), ``#undef``, and ``#if`` / ``#ifdef`` / ``#ifndef`` / ``#elif`` / ``#else`` /
``#endif`` over integer expressions. Macros that only the compiler defines (extension names,
``__OPENCL_VERSION__``) count as undefined, as they would under a compiler that lacks them; ``-D`` options
define macros as a compiler would. ``#include`` cannot be followed and is refused.

The output is the expanded token list, for a declaration reader; it is never compiled.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# pp-tokens: whitespace, identifiers, pp-numbers, string and character literals, ## and single punctuators
_TOKEN = re.compile(
    r"\s+|[A-Za-z_]\w*|\.?\d(?:[eEpP][+-]|[\w.])*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|##|\S"
)
# comments are found in one left-to-right scan with literals, so that neither hides inside the other
_COMMENT_OR_LITERAL = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
_DIRECTIVE = re.compile(r"\s*#\s*(\w*)(.*)\Z", re.S)


@dataclass(frozen=True)
class Macro:
    body: tuple[str, ...]
    #: parameter names of a function-like macro (``__VA_ARGS__`` last when variadic); None: object-like
    params: tuple[str, ...] | None = None


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _is_ident(token: str) -> bool:
    return _IDENT.match(token) is not None


def _strip(tokens: list[str]) -> list[str]:
    while tokens and tokens[0].isspace():
        tokens = tokens[1:]
    while tokens and tokens[-1].isspace():
        tokens = tokens[:-1]
    return tokens


def _logical_lines(source: str) -> list[str]:
    spliced = re.sub(r"\\[ \t]*\r?\n", "", source)

    def blank(match: re.Match) -> str:
        text = match.group(0)
        if text.startswith("//"):
            return " "
        if text.startswith("/*"):
            return " " + "\n" * text.count("\n")  # keep the line structure for the directives
        return text

    return _COMMENT_OR_LITERAL.sub(blank, spliced).split("\n")


def _define(rest: str) -> tuple[str, Macro]:
    match = re.match(r"\s*([A-Za-z_]\w*)(\()?", rest)
    if match is None:
        raise ValueError(f"#define needs a macro name; got {rest.strip()!r}")
    name = match.group(1)
    rest = rest[match.end():]
    if match.group(2) is None:  # object-like: no parenthesis right after the name
        return name, Macro(tuple(_strip(tokenize(rest))))
    close = rest.find(")")
    if close < 0:
        raise ValueError(f"#define {name}: unclosed parameter list")
    params = [p.strip() for p in rest[:close].split(",")] if rest[:close].strip() else []
    if params and params[-1] == "...":
        params[-1] = "__VA_ARGS__"
    for p in params:
        if not _is_ident(p):
            raise ValueError(f"#define {name}: bad parameter {p!r}")
    return name, Macro(tuple(_strip(tokenize(rest[close + 1:]))), tuple(params))


def _arguments(tokens: list[str], open_index: int) -> tuple[list[list[str]], int]:
    """The comma-separated arguments after the ``(`` at ``open_index``, and the index after the ``)``."""
    args: list[list[str]] = [[]]
    depth = 0
    for i in range(open_index + 1, len(tokens)):
        tok = tokens[i]
        if tok == "(":
            depth += 1
        elif tok == ")":
            if depth == 0:
                return [_strip(a) for a in args], i + 1
            depth -= 1
        elif tok == "," and depth == 0:
            args.append([])
            continue
        args[-1].append(tok)
    raise ValueError("unterminated macro call")


def _stringify(tokens: list[str]) -> str:
    text = " ".join("".join(" " if t.isspace() else t for t in tokens).split())
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _substitute(name: str, macro: Macro, args: list[list[str]], macros: dict[str, Macro],
                disabled: frozenset[str]) -> list[str]:
    params = macro.params or ()
    if params == () and args == [[]]:
        args = []
    if params and params[-1] == "__VA_ARGS__" and len(args) >= len(params):
        head, tail = args[: len(params) - 1], args[len(params) - 1:]
        joined: list[str] = []
        for i, a in enumerate(tail):
            joined.extend(([","] if i else []) + a)
        args = [*head, joined]
    if len(args) != len(params):
        raise ValueError(f"macro {name} takes {len(params)} argument(s); got {len(args)}")
    raw = dict(zip(params, args))
    body = list(macro.body)
    solid = [i for i, t in enumerate(body) if not t.isspace()]
    out: list[str] = []
    k = 0
    while k < len(solid):
        i = solid[k]
        tok = body[i]
        prev = body[solid[k - 1]] if k else None
        nxt = body[solid[k + 1]] if k + 1 < len(solid) else None
        if tok == "#" and nxt in raw:  # stringification of a parameter
            out.append(_stringify(raw[nxt]))
            k += 2
            continue
        if tok in raw:
            pasted = prev == "##" or nxt == "##"
            out.extend(raw[tok] if pasted else expand(raw[tok], macros, disabled))
        else:
            out.append(tok)
        if k + 1 < len(solid) and solid[k + 1] > i + 1:
            out.append(" ")
        k += 1
    # token pasting: the neighbours of ## join into one token
    pasted_out: list[str] = []
    i = 0
    while i < len(out):
        if out[i] == "##":
            while pasted_out and pasted_out[-1].isspace():
                pasted_out.pop()
            j = i + 1
            while j < len(out) and out[j].isspace():
                j += 1
            left = pasted_out.pop() if pasted_out else ""
            right = out[j] if j < len(out) else ""
            pasted_out.extend(tokenize(left + right))
            i = j + 1
            continue
        pasted_out.append(out[i])
        i += 1
    return pasted_out


def expand(tokens: list[str], macros: dict[str, Macro], disabled: frozenset[str] = frozenset()) -> list[str]:
    """``tokens`` with every macro call replaced by its expansion (a macro never expands inside itself)."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        macro = macros.get(tok) if tok not in disabled and _is_ident(tok) else None
        if macro is None:
            out.append(tok)
            i += 1
            continue
        if macro.params is None:
            out.extend(expand(list(macro.body), macros, disabled | {tok}))
            i += 1
            continue
        j = i + 1
        while j < len(tokens) and tokens[j].isspace():
            j += 1
        if j == len(tokens) or tokens[j] != "(":  # a function-like macro's name alone is not a call
            out.append(tok)
            i += 1
            continue
        args, end = _arguments(tokens, j)
        out.extend(expand(_substitute(tok, macro, args, macros, disabled), macros, disabled | {tok}))
        i = end
    return out


_DEFINED = re.compile(r"\bdefined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))")
_CONDITION_TOKEN = re.compile(r"\s+|0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|&&|\|\||==|!=|<=|>=|[()!<>+\-*/%]")
#: binary operators of #if expressions by precedence (C's, tightest last)
_BINARY = (("||",), ("&&",), ("==", "!="), ("<", ">", "<=", ">="), ("+", "-"), ("*", "/", "%"))


def _integer(text: str) -> int:
    digits = text.rstrip("uUlL")
    if digits[:2] in ("0x", "0X"):
        return int(digits, 16)
    return int(digits, 8) if len(digits) > 1 and digits[0] == "0" else int(digits)


def _apply(op: str, left: int, right: int, live: bool) -> int:
    if op in ("/", "%"):
        if right == 0:
            if live:
                raise ValueError("division by zero")
            return 0  # in the operand that || or && skips, as C leaves it unevaluated
        quotient = abs(left) // abs(right) * (1 if (left < 0) == (right < 0) else -1)  # C truncates
        return quotient if op == "/" else left - right * quotient
    return {
        "||": int(bool(left or right)), "&&": int(bool(left and right)), "==": int(left == right),
        "!=": int(left != right), "<": int(left < right), ">": int(left > right), "<=": int(left <= right),
        ">=": int(left >= right), "+": left + right, "-": left - right, "*": left * right,
    }[op]


def _evaluate(tokens: list[str]) -> int:
    """Precedence climbing over integer tokens and C's operators (``live``: the operand is evaluated)."""
    pos = 0

    def unary(live: bool) -> int:
        nonlocal pos
        tok = tokens[pos] if pos < len(tokens) else ""
        pos += 1
        if tok == "(":
            value = binary(0, live)
            if pos >= len(tokens) or tokens[pos] != ")":
                raise ValueError("unbalanced parentheses")
            pos += 1
            return value
        if tok in ("!", "-", "+"):
            value = unary(live)
            return int(not value) if tok == "!" else -value if tok == "-" else value
        if tok[:1].isdigit():
            return _integer(tok)
        raise ValueError(f"unexpected {tok or 'end'!r}")

    def binary(level: int, live: bool) -> int:
        nonlocal pos
        if level == len(_BINARY):
            return unary(live)
        left = binary(level + 1, live)
        while pos < len(tokens) and tokens[pos] in _BINARY[level]:
            op = tokens[pos]
            pos += 1
            skipped = (op == "||" and bool(left)) or (op == "&&" and not left)
            right = binary(level + 1, live and not skipped)
            left = _apply(op, left, right, live)
        return left

    value = binary(0, True)
    if pos != len(tokens):
        raise ValueError(f"unexpected {tokens[pos]!r}")
    return value


def _condition(text: str, macros: dict[str, Macro]) -> bool:
    """The value of an ``#if`` expression: integers, ``defined``, macros and C's operators."""
    # `defined X` / `defined(X)` are read before expansion, as the standard says
    resolved = tokenize(_DEFINED.sub(lambda m: "1" if (m.group(1) or m.group(2)) in macros else "0", text))
    # identifiers left after expansion are 0, as in C
    expanded = "".join("0" if _is_ident(t) else t for t in expand(resolved, macros))
    pieces = _CONDITION_TOKEN.findall(expanded)
    if "".join(pieces) != expanded:
        raise ValueError(f"#if {text.strip()!r}: only integer expressions can be read here")
    try:
        return bool(_evaluate([p for p in pieces if not p.isspace()]))
    except (ValueError, IndexError) as exc:
        raise ValueError(f"#if {text.strip()!r} cannot be evaluated: {exc}") from None


def preprocess(source: str, defines: dict[str, str] | None = None) -> list[str]:
    """The tokens of ``source`` after preprocessing, whitespace included (directives removed).

    Each run of text lines between two directives is expanded with the macros defined at that point.
    """
    macros = {name: Macro(tuple(tokenize(value))) for name, value in (defines or {}).items()}
    # each open conditional: (some branch of it was taken, the conditional's surroundings are active)
    stack: list[tuple[bool, bool]] = []
    active = True
    out: list[str] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            out.extend(expand(tokenize("\n".join(pending)), macros))
            out.append("\n")
            pending.clear()

    for line in _logical_lines(source):
        match = _DIRECTIVE.match(line)
        if match is None:
            if active:
                pending.append(line)
            continue
        flush()
        directive, rest = match.group(1), match.group(2)
        if directive in ("if", "ifdef", "ifndef"):
            if not active:
                taken = False
            elif directive == "if":
                taken = _condition(rest, macros)
            else:
                name = rest.split()[0] if rest.split() else ""
                taken = (name in macros) == (directive == "ifdef")
            stack.append((taken, active))
            active = active and taken
        elif directive in ("elif", "else"):
            if not stack:
                raise ValueError(f"#{directive} without #if")
            any_taken, parent = stack[-1]
            taken = parent and not any_taken and (directive == "else" or _condition(rest, macros))
            stack[-1] = (any_taken or taken, parent)
            active = taken
        elif directive == "endif":
            if not stack:
                raise ValueError("#endif without #if")
            active = stack.pop()[1]
        elif not active:
            continue
        elif directive == "define":
            name, macro = _define(rest)
            macros[name] = macro
        elif directive == "undef":
            macros.pop(rest.strip(), None)
        elif directive == "include":
            raise ValueError(f"#include{rest.rstrip()} cannot be followed here; list the kernels explicitly")
        # #pragma, #error (the compiler reports it), #line and null directives change no declaration
    if stack:
        raise ValueError("#if without #endif")
    flush()
    return out


def defines_from_options(options: Iterable[str]) -> dict[str, str]:
    """Macros that ``-DNAME``, ``-DNAME=VALUE`` and ``-D NAME=VALUE`` compiler options define."""
    out: dict[str, str] = {}
    items = list(options)
    i = 0
    while i < len(items):
        opt = items[i]
        value = None
        if opt == "-D" and i + 1 < len(items):
            value = items[i + 1]
            i += 1
        elif opt.startswith("-D") and len(opt) > 2:
            value = opt[2:]
        if value is not None:
            name, _, body = value.partition("=")
            out[name] = body if _ else "1"
        i += 1
    return out
