"""From a custom op's arguments to the frozen parameter objects of :mod:`specux._validate`.

The ops take the public arguments (``None`` meaning "derived", as in the functional API) in a form a
``torch.library`` schema can hold, plus optional tensors for precomputed windows and filter banks (the
``nn.Module`` wrappers pass their buffers). Validation runs inside the op (its real kernel and its fake
kernel), never in traced Python, so ``torch.compile`` sees one call; the checks and defaults are the
functional API's own.

Window and norm specifications that a schema cannot hold (tuples like ``("kaiser", 8.0)``, numbers) travel as
their ``repr``; :func:`decode_spec` turns them back.

An op's scalar arguments are spelled once, in its annotated signature (the schema); :class:`OpArguments`
reads their names from it, for the kernels (positional arguments by name), the route and the modules (public
arguments by name, in schema order).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from specux import _validate
from specux._filters.windows import pad_center
from specux._validate import StftParams
from specux.torch._convert import dtype_name, numpy_of


def decode_spec(spec: str | None) -> Any:
    """``"hann"`` -> ``"hann"``; ``"('kaiser', 8.0)"`` -> the tuple; ``"2.0"`` -> 2.0; None -> None."""
    if spec is None:
        return None
    if spec.isidentifier() and spec not in ("True", "False"):
        # a name ("hann", "slaney", "auto"): what literal_eval would hand back, without its parse
        # (about 37 us, paid on every call of a transform with a named window)
        return spec
    try:
        value = ast.literal_eval(spec)
    except (ValueError, SyntaxError):
        return spec
    return value if isinstance(value, (tuple, int, float)) else spec


def encode_spec(value: Any) -> str | None:
    """Inverse of :func:`decode_spec` for strings, numbers, tuples and None."""
    if value is None or isinstance(value, str):
        return value
    return repr(value)


def _as_is(value: Any) -> Any:
    return value


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


#: how a value is passed for an argument of this annotation: as a Python float where the schema takes one
#: (the route and the modules have always passed numbers that way; an int passes float() unchanged in value)
_PASSED_AS = {"float": float, "float | None": _float_or_none}


def _annotation(a: Any) -> str:
    """An annotation as its source text (string annotations, ``from __future__ import annotations``, as
    they are; ``float`` as "float")."""
    return a if isinstance(a, str) else getattr(a, "__name__", str(a))


@dataclasses.dataclass(frozen=True)
class OpArguments:
    """The arguments of a custom op after its leading ones (its tensors, and a ``window_spec`` that the
    callers derive from their ``window``), in schema order, read from the op's annotated signature: the one
    place they are spelled.

    Attributes
    ----------
    names : tuple of str
        The arguments' names, in the schema's order (the names the params functions take).
    passed_as : tuple of callable
        For each, how a public value is passed to the op: ``float`` for a ``float`` argument, float or None
        for a ``float | None`` one, the value itself otherwise.
    public : tuple of str
        For each, the public function's name for it (the op's own name but where the op renames one, as
        specux::mfcc's ``dct_norm`` is mfcc's ``norm``): the names :meth:`passed` and :meth:`ordered` read.
    n_leading : int
        How many arguments come before these (what :meth:`positional` hands on as they are).

    Examples
    --------
    >>> def signature(y: "Tensor", sr: float, hop_length: int) -> "Tensor": ...
    >>> args = OpArguments.of(signature, n_leading=1)
    >>> args.named((22050.0, 512))
    {'sr': 22050.0, 'hop_length': 512}
    >>> args.passed({"hop_length": 512, "sr": 22050})
    (22050.0, 512)
    """

    names: tuple[str, ...]
    passed_as: tuple[Callable[[Any], Any], ...]
    public: tuple[str, ...]
    n_leading: int

    @classmethod
    def of(cls, signature: Callable, n_leading: int, public: Mapping[str, str] | None = None) -> OpArguments:
        """The arguments of ``signature`` after its first ``n_leading``; ``public``: op name -> public name,
        for those the public function names otherwise."""
        parameters = list(inspect.signature(signature).parameters.values())[n_leading:]
        renamed = public or {}
        return cls(
            tuple(p.name for p in parameters),
            tuple(_PASSED_AS.get(_annotation(p.annotation), _as_is) for p in parameters),
            tuple(renamed.get(p.name, p.name) for p in parameters),
            n_leading,
        )

    def named(self, args: Sequence[Any]) -> dict[str, Any]:
        """The op's positional arguments (after its leading ones) by name."""
        return dict(zip(self.names, args))

    def from_public(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` (by public name; more names are ignored) by the op's names, as they are."""
        return {n: values[p] for n, p in zip(self.names, self.public)}

    def ordered(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        """``values`` (by public name; more names are ignored) as the op's positional arguments, as they
        are."""
        return tuple([values[p] for p in self.public])

    def passed(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        """``values`` (by public name; more names are ignored) as the op's positional arguments, each passed
        as :attr:`passed_as` says (plain Python, which dynamo traces without graph breaks)."""
        return tuple([f(values[p]) for p, f in zip(self.public, self.passed_as)])

    def positional(self, params: Callable[..., Any]) -> Callable[..., Any]:
        """``params`` (the leading arguments positionally, these by name) as a function of the op's
        positional arguments, as the kernels, fake kernels and device recipes call it."""
        n = self.n_leading

        def resolve(*args: Any) -> Any:
            return params(*args[:n], **self.named(args[n:]))

        resolve.__doc__ = params.__doc__
        return resolve


def signature_without(signature: Callable, names: Sequence[str], name: str, doc: str) -> Callable:
    """An annotated signature like ``signature`` without the arguments ``names``: the schema of an op whose
    arguments are another's less some that it fixes (specux::cqt's are specux::vqt's without ``intervals``
    and ``gamma``)."""
    # a copy of the function keeps its globals, in which infer_schema evaluates the string annotations
    derived = types.FunctionType(signature.__code__, signature.__globals__, name)
    sig = inspect.signature(signature)
    derived.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[p for p in sig.parameters.values() if p.name not in names]
    )
    derived.__doc__ = doc
    return derived


def is_fake(t: torch.Tensor) -> bool:
    return isinstance(t, torch._subclasses.fake_tensor.FakeTensor) or t.device.type == "meta"


def window_array(window: torch.Tensor | None, win_length: int, n_fft: int, public: str) -> np.ndarray | None:
    """A window tensor as the float64 ``n_fft``-long array the kernels use (``win_length`` long: centred)."""
    if window is None:
        return None
    if window.dim() != 1 or window.shape[0] not in (n_fft, win_length):
        raise ValueError(
            f"{public}: window tensor must have shape ({n_fft},) or ({win_length},); got "
            f"{tuple(window.shape)}"
        )
    if is_fake(window):
        return np.ones(n_fft)
    w = np.asarray(numpy_of(window), dtype=np.float64)
    return pad_center(w, n_fft) if w.shape[0] != n_fft else w


def stft_params(
    y: torch.Tensor, window: torch.Tensor | None, window_spec: str, *, public: str = "stft", **kw: Any
) -> StftParams:
    """stft's parameters for input ``y`` (real tensor, possibly fake; ``kw``: specux::stft's arguments after
    ``window_spec``, by name: :data:`specux.torch._ops_stft.STFT_ARGS`); a window tensor replaces
    ``window_spec``."""
    precision = _validate.real_dtype(y, public, "y")
    spec = "boxcar" if window is not None else decode_spec(window_spec)
    p = _validate.stft_params(tuple(int(s) for s in y.shape), precision, window=spec, public=public, **kw)
    w = window_array(window, p.win_length, p.n_fft, public)
    return p if w is None else dataclasses.replace(p, window=w)


def stft_out_shape(y: torch.Tensor, p: StftParams) -> tuple[tuple[int, ...], torch.dtype]:
    batch = tuple(int(s) for s in y.shape[:-1])
    F = p.n_fft // 2 + 1
    if p.output == "complex":
        return (*batch, F, p.n_frames), {torch.float32: torch.complex64}.get(y.dtype, torch.complex128)
    if p.output == "real_imag":
        return (*batch, F, p.n_frames, 2), y.dtype
    return (*batch, F, p.n_frames), y.dtype


def stft_frames_shape(shape: tuple[int, ...], output: str) -> tuple[int, ...]:
    """The shape of specux::stft_frames' output for specux::stft's ``shape``: frames before bins."""
    if output == "real_imag":
        return (*shape[:-3], shape[-2], shape[-3], 2)
    return (*shape[:-2], shape[-1], shape[-2])


def same_dtype(a: torch.Tensor, b: torch.Tensor | None, public: str, what: str) -> None:
    """A precomputed tensor of lower precision than the input would silently round the computation: refuse it.

    (A float64 window or bank with a float32 input is fine: the kernels cast it to the computing precision.)
    """
    if b is not None and b.dtype.is_floating_point and b.dtype != torch.float64 and a.dtype == torch.float64:
        raise TypeError(
            f"{public}: {what} has dtype {dtype_name(b)} but the input is {dtype_name(a)}; cast one of them "
            "(module buffers follow module.to(dtype))"
        )
