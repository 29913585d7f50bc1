"""The scalar checks every public function applies to its parameters: each raises ``TypeError`` /
``ValueError`` naming the parameter and what is allowed.

They sit below everything else of specux (they import only numpy), so that the modules building filters and
windows use the same rules as :mod:`specux._validate`, which builds on those modules, without an import
running both ways.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np


def is_number(value: Any) -> bool:
    """Whether ``value`` is a real number: a Python int or float, a numpy integer or floating scalar, or a 0-d
    numpy array of one. Not bool (numpy's or Python's), not a string."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, numbers.Real):
        return True
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf"


def _type_of(value: Any) -> str:
    return type(value).__name__


def flag(value: Any, name: str, public: str) -> bool:
    """A boolean parameter: True / False or a numpy bool, else TypeError naming it (a string such as
    ``"False"`` is truthy, so it would silently mean True)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(
        f"{public}: {name} must be a bool (True or False); got {value!r} of type {_type_of(value)}"
    )


def optional_flag(value: Any, name: str, public: str) -> bool | None:
    """:func:`flag` where ``None`` (a derived default) is also allowed."""
    return None if value is None else flag(value, name, public)


def real(value: Any, name: str, public: str, *, finite: bool = True) -> float:
    """A real-number parameter (see :func:`is_number`) as a float; strings, bools and other types are a
    TypeError naming it, and a non-finite value a ValueError unless ``finite`` is False."""
    if not is_number(value):
        raise TypeError(f"{public}: {name} must be a number; got {value!r} of type {_type_of(value)}")
    out = float(value)
    if finite and not math.isfinite(out):
        raise ValueError(f"{public}: {name} must be a finite number; got {value!r}")
    return out


def optional_real(value: Any, name: str, public: str, *, finite: bool = True) -> float | None:
    """:func:`real` where ``None`` is also allowed (and returned)."""
    return None if value is None else real(value, name, public, finite=finite)


def positive_int(value: Any, name: str, public: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{public}: {name} must be an int >= {minimum}; got {value!r}")
    if value < minimum:
        raise ValueError(f"{public}: {name} must be >= {minimum}; got {value}")
    return int(value)


def choice(value: Any, name: str, public: str, allowed: tuple) -> Any:
    listed = ", ".join(repr(a) for a in allowed)
    # True == 1: a bool is one of the choices only where a bool is listed (bool is not a number)
    if isinstance(value, (bool, np.bool_)) and not any(isinstance(a, bool) for a in allowed):
        raise TypeError(f"{public}: {name} must be one of {listed}; got {value!r}, a bool")
    try:
        found = value in allowed
    except (TypeError, ValueError):  # an array compared element-wise
        found = False
    if not found:
        raise ValueError(f"{public}: {name} must be one of {listed}; got {value!r}")
    # 2.0 == 2 too: where the choices are ints, a float (or complex) is refused as positive_int refuses it,
    # rather than passed on (dct_type=2.0 reached scipy's dct and failed there without naming dct_type)
    ints = any(isinstance(a, int) and not isinstance(a, bool) for a in allowed)
    if ints and isinstance(value, numbers.Number) and not isinstance(value, numbers.Integral):
        raise TypeError(f"{public}: {name} must be one of {listed}; got {value!r}, a {_type_of(value)}")
    return value
