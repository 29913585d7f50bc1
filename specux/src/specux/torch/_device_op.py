"""Torch autograd on a device backend: one way for a custom op to run, forward and backward, on the generated
kernels of the backend named by its caller.

A torch CPU tensor passed with ``backend="opencl"`` (or ``"cuda"`` / ``"metal"``) is data in torch that the
caller wants computed on that device (an AMD or Intel GPU through OpenCL, for instance). Such a call goes
through ``specux::<name>_device``, registered here by :func:`define_device_op` from the annotated signature
of the CPU op of the same transform with one more argument, ``backend: str``, last. Its kernel

1. resolves the parameters from the op's arguments, inside the op (also for fake tensors: validation is the
   functional API's and never traced Python, so ``torch.compile(fullgraph=True)`` sees one node);
2. looks the backend up in the registry (unavailable, not serving the operation, or lacking the precision:
   the registry's errors, raised in the fake kernel too, so at trace time);
3. moves the inputs to the device through a :class:`Transfer`, runs the backend's exec forward function
   (:mod:`specux._runtime`), and moves the result back.

``specux::<name>_device_backward(grad, <the same arguments>)`` does the same with the exec module's adjoint:
the gradient is the device adjoint kernels' (never a trace through a decomposition, never the CPU
backend's). The autograd formula joining the two is registered here too; a constant tensor argument that
requires grad (a trainable window or bank) is refused with the option and the backend named, since the
device exec modules have no adjoint for those. A constant the forward derives from the signal when the
caller leaves it out (chroma_stft's bank, from a tuning estimated on the host) is returned by the forward
op as a second output and handed to the backward op in that argument's place (:class:`Derived`), so the
backward does not derive it again.

Where the tensors live
----------------------
The op is registered for CPU and CUDA tensors; only the place where its arrays live differs, and that is all
that differs (parameters, exec calls and the autograd formula are the same for both):

- :class:`HostPlace` (a CPU tensor, any named device backend): the tensor is read through its NumPy view (no
  copy on the torch side) and uploaded; the result is downloaded into a fresh NumPy array that becomes the
  output tensor without a copy (``torch.from_numpy``).
- :class:`CudaPlace` (a CUDA tensor, backend ``"cuda"``): the cuda backend's
  :meth:`~specux._backends.cuda.CudaBackend.in_place` runs the exec function on the tensor's own memory, on
  torch's current stream, with temporaries and the result allocated by torch's caching allocator; the result
  is a CUDA tensor on the input's device. Nothing passes through the host but the parameters' small tables
  (windows, filter banks), as for every generated op on CUDA.

A CUDA tensor with a backend other than ``"cuda"`` is refused with both named (nothing is moved behind the
caller's back).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from specux._runtime import device_array as da
from specux._runtime.device_array import DeviceArray
from specux.errors import UnsupportedOperationError
from specux.torch._convert import dtype_name, numpy_of
from specux.torch._signal_op import signature_schema

#: the backends whose generated kernels a device op runs (named explicitly by the caller)
DEVICE_BACKENDS = ("cuda", "metal", "opencl")

#: ``forward(rt, inputs, p) -> DeviceArray``: an exec module's operation
Forward = Callable[[Any, tuple[DeviceArray, ...], Any], DeviceArray]
#: ``backward(rt, grad, x, p, shape, backend) -> DeviceArray``: the gradient of the op's first argument
#: (``x`` None when the recipe does not read the input; ``backend`` the name, for refusals)
Backward = Callable[[Any, DeviceArray, "DeviceArray | None", Any, tuple[int, ...], str], DeviceArray]


#: the torch dtype of each dtype name the exec functions take
_TORCH_DTYPES = {
    "float16": torch.float16,
    "float32": torch.float32,
    "float64": torch.float64,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
}

#: ``run(rt, inputs) -> DeviceArray``: the exec work of one call, on device arrays of the inputs
Run = Callable[[Any, tuple["DeviceArray | None", ...]], DeviceArray]


class HostPlace:
    """Tensors in host memory, uploaded to a kernelkit runtime's device arrays and the result downloaded."""

    def run(self, backend: Any, op: str, tensors: tuple[tuple[Tensor | None, str], ...], run: Run) -> Tensor:
        """``run`` on ``tensors`` (each with the dtype name it is taken in; None stays None) on ``backend``'s
        runtime; the result a fresh CPU tensor (the download's array, not copied again)."""
        rt = backend.runtime
        with _lock(rt):
            inputs = tuple(
                None if t is None else da.upload(rt, numpy_of(t).astype(dtype, copy=False))
                for t, dtype in tensors
            )
            return torch.from_numpy(da.download(rt, run(rt, inputs)))


class CudaPlace:
    """CUDA tensors used in place by the cuda backend on torch's current stream (see the module docstring)."""

    def run(self, backend: Any, op: str, tensors: tuple[tuple[Tensor | None, str], ...], run: Run) -> Tensor:
        present = [i for i, (t, _) in enumerate(tensors) if t is not None]
        arrays = tuple(tensors[i][0].to(_TORCH_DTYPES[tensors[i][1]]) for i in present)  # type: ignore[union-attr]

        def on_device(rt: Any, inputs: tuple[DeviceArray, ...]) -> DeviceArray:
            full: list[DeviceArray | None] = [None] * len(tensors)
            for i, a in zip(present, inputs):
                full[i] = a
            return run(rt, tuple(full))

        out = backend.in_place(f"{op} (torch device op)", arrays, "torch", on_device)
        # an exec function may return its input itself (a view); a custom op's result must not alias its
        # arguments (torch.library's rule), so that one case is copied
        storage = out.untyped_storage().data_ptr()
        if any(a.untyped_storage().data_ptr() == storage for a in arrays):
            out = out.clone()
        return out


HOST = HostPlace()
CUDA = CudaPlace()


def place_of(x: Tensor, backend: str, op: str) -> HostPlace | CudaPlace:
    """Where a device op on ``x`` runs its arrays: the host's staging for a CPU tensor, the tensor's own
    memory for a CUDA tensor with backend ``"cuda"``; anything else is refused with both named."""
    if x.device.type == "cpu":
        return HOST
    if x.device.type == "cuda" and backend == "cuda":
        return CUDA
    raise ValueError(
        f"specux.{op}: CUDA tensors run on backend 'cuda' and CPU tensors on "
        f"{', '.join(map(repr, DEVICE_BACKENDS))}; got backend={backend!r} for a tensor on {x.device} "
        "(move it: x.cpu() or x.cuda(); nothing is copied behind your back)"
    )


@dataclass(frozen=True)
class Derived:
    """A constant tensor argument that the forward may derive from the signal when the caller leaves it out
    (chroma_stft's chroma bank, from the tuning estimated with ``tuning=None``), which the backward would
    otherwise derive again. The forward op returns it, float64, as a second output; the autograd formula
    passes that output to the backward op in the argument's place, so the backward starts from the value
    the forward computed with.

    Attributes
    ----------
    argument : int
        The argument's position among the op's inputs (0 is the signal).
    shape : callable
        ``shape(p) -> tuple``: its shape from the parameters (for the fake kernel).
    """

    argument: int
    shape: Callable[[Any], tuple[int, ...]]


@dataclass(frozen=True)
class DeviceRecipe:
    """What a device op runs.

    Attributes
    ----------
    op : str
        The public operation (the registry's name: ``"vqt"``, ``"stft"``, ...).
    params : callable
        ``params(x, *args) -> p`` from the op's arguments (``x`` possibly fake): the exec module's parameters;
        raises for an option the device does not take.
    forward : callable
        The exec forward, ``forward(rt, (x,), p)``; with ``derived``, ``(result, value)``, ``value`` the
        NumPy array the forward computed with in that argument's place.
    backward : callable
        The exec adjoint chain, ``backward(rt, grad, x, p, x_shape, backend)``; ``x`` is None unless
        ``reads_input(p)``.
    out : callable
        ``out(x, p) -> (shape, torch dtype)`` of the forward's result (the fake kernel's).
    input_dtype : callable
        ``input_dtype(p) -> str``: the dtype the exec functions take the input in.
    compute_dtype : callable
        ``compute_dtype(p) -> str``: the real precision the device must have.
    reads_input : callable
        ``reads_input(p) -> bool``: whether the backward needs the input (nonlinear outputs: magnitude,
        power, logarithms).
    constants : str
        Names of the op's constant tensor arguments, for the refusal of their gradients.
    derived : Derived or None
        A constant the forward hands to the backward (see :class:`Derived`).
    """

    op: str
    params: Callable[..., Any]
    forward: Forward
    backward: Backward
    out: Callable[[Tensor, Any], tuple[tuple[int, ...], torch.dtype]]
    input_dtype: Callable[[Any], str]
    compute_dtype: Callable[[Any], str]
    reads_input: Callable[[Any], bool]
    constants: str
    derived: Derived | None = None


def backend_of(name: str, op: str, real: str) -> Any:
    """The backend object ``name``, checked to serve the operation ``op`` computing in the real precision
    ``real`` (a recipe's ``compute_dtype(p)``)."""
    if name not in DEVICE_BACKENDS:
        raise ValueError(
            f"specux::{op}_device: backend must be one of {', '.join(map(repr, DEVICE_BACKENDS))}; "
            f"got {name!r}"
        )
    from specux._backends import registry

    backend = registry.get(name)  # BackendUnavailableError with the reason
    if op not in backend.ops:
        raise UnsupportedOperationError(
            f"specux.{op}: backend {name!r} does not provide this operation in this build"
        )
    if real not in backend.dtypes:
        raise TypeError(
            f"specux.{op}: backend {name!r} computes in {', '.join(sorted(backend.dtypes))}; this "
            f"call needs {real} (the device lacks it): pass float32 input or backend='cpu'"
        )
    return backend


def _lock(rt: Any) -> Any:
    # the host path's per-runtime lock: kernelkit's runtimes keep per-runtime scratch (tables, staging)
    from specux._backends.generated import _lock as runtime_lock

    return runtime_lock(rt)


def _register(
    name: str,
    kernel: Callable,
    fake: Callable,
    signature: Callable,
    backward: bool,
    returns: str | None = None,
) -> Any:
    """``specux::<name>``: ``kernel`` on CPU and CUDA tensors with ``fake`` for tracing, its schema
    ``signature``'s with ``str backend`` last (and ``Tensor grad`` first for a ``backward`` op; ``returns``
    in place of the signature's return type)."""
    op = torch.library.custom_op(
        f"specux::{name}",
        kernel,
        mutates_args=(),
        device_types=("cpu", "cuda"),
        schema=signature_schema(signature, grad=backward, last="str backend", returns=returns),
    )
    op.register_fake(fake)
    return op


def define_device_op(name: str, signature: Callable, n_tensors: int, recipe: DeviceRecipe) -> tuple[Any, Any]:
    """Register ``specux::<name>_device`` and ``specux::<name>_device_backward``; returns both ops.

    Parameters
    ----------
    name : str
        The CPU op's name (``"vqt"``, ``"stft"``, ...); the device ops add ``_device``.
    signature : callable
        The CPU op's annotated signature (the schema); the device op takes the same arguments and then
        ``backend: str``.
    n_tensors : int
        How many leading arguments are tensors (or lists of tensors): the input, then constants.
    recipe : DeviceRecipe
        The parameters, exec forward and exec adjoint.

    Returns
    -------
    forward, backward : torch custom ops
        ``forward(x, *args, backend)`` and ``backward(grad, x, *args, backend)``. With ``recipe.derived``
        the op ``specux::<name>_device`` returns ``(result, derived constant)`` and ``forward`` is a
        function of the same arguments returning the result.

    See Also
    --------
    specux.torch._signal_op.define_signal_op : the CPU backend's counterpart.

    Examples
    --------
    >>> import torch, specux  # doctest: +SKIP
    >>> y = torch.randn(2, 4000, dtype=torch.float64, requires_grad=True)  # doctest: +SKIP
    >>> specux.cqt(y, sr=8000, n_bins=24, backend="opencl").abs().sum().backward()  # doctest: +SKIP
    """

    derived = recipe.derived

    def kernel(x: Tensor, *rest: Any) -> Any:
        *args, backend = rest
        place = place_of(x, backend, recipe.op)
        p = recipe.params(x, *args)
        b = backend_of(backend, recipe.op, recipe.compute_dtype(p))
        tensors = ((x, recipe.input_dtype(p)),)
        if derived is None:
            return place.run(b, recipe.op, tensors, lambda rt, ins: recipe.forward(rt, ins, p))
        held = []

        def run(rt: Any, ins: tuple) -> DeviceArray:
            out, value = recipe.forward(rt, ins, p)
            held.append(value)
            return out

        out = place.run(b, recipe.op, tensors, run)
        # a fresh float64 copy (never an alias of an argument), on the result's device: a small host table
        return out, torch.from_numpy(np.array(held[0], dtype=np.float64)).to(out.device)

    def fake(x: Tensor, *rest: Any) -> Any:
        *args, backend = rest
        place_of(x, backend, recipe.op)
        p = recipe.params(x, *args)
        backend_of(backend, recipe.op, recipe.compute_dtype(p))
        shape, dtype = recipe.out(x, p)
        if derived is None:
            return x.new_empty(shape, dtype=dtype)
        return x.new_empty(shape, dtype=dtype), x.new_empty(derived.shape(p), dtype=torch.float64)

    def backward_kernel(grad: Tensor, x: Tensor, *rest: Any) -> Tensor:
        *args, backend = rest
        place = place_of(x, backend, recipe.op)
        p = recipe.params(x, *args)
        b = backend_of(backend, recipe.op, recipe.compute_dtype(p))
        shape = tuple(int(s) for s in x.shape)
        # autograd hands the gradient in the output's dtype, which is the one the adjoints take; the input
        # travels only when the recipe reads it (nonlinear outputs)
        tensors = ((grad, dtype_name(grad)), (x if recipe.reads_input(p) else None, recipe.input_dtype(p)))
        gx = place.run(
            b, recipe.op, tensors, lambda rt, ins: recipe.backward(rt, ins[0], ins[1], p, shape, backend)
        )
        return gx.to(x.dtype)

    def backward_fake(grad: Tensor, x: Tensor, *rest: Any) -> Tensor:
        return torch.empty_like(x, memory_format=torch.contiguous_format)

    kernel.__doc__ = (
        f"specux::{name} on the device backend named by ``backend`` (torch CPU tensors, or CUDA tensors with "
        f"backend 'cuda', in and out on the same device): "
        f"{signature.__doc__}"
    )
    backward_kernel.__doc__ = f"Gradient of specux::{name}_device by the device's adjoint kernels."
    returns = None if derived is None else "(Tensor, Tensor)"
    forward_op = _register(f"{name}_device", kernel, fake, signature, False, returns)
    backward_op = _register(f"{name}_device_backward", backward_kernel, backward_fake, signature, True)

    def setup(ctx: Any, inputs: tuple, output: Any) -> None:
        if derived is None:
            ctx.save_for_backward(inputs[0])
        else:
            ctx.mark_non_differentiable(output[1])
            ctx.save_for_backward(inputs[0], output[1])
        ctx.args = inputs[1:]
        # a list of tensors (constant-Q weights) gets a list of gradients; every other argument, a list of
        # numbers (vqt's intervals) too, gets None
        ctx.lists = [len(a) if isinstance(a, (list, tuple)) else None for a in inputs[1:n_tensors]]
        ctx.n_inputs = len(inputs)

    def grad_fn(ctx: Any, grad: Tensor, *derived_grad: Any) -> tuple:
        x, *value = ctx.saved_tensors
        for need in ctx.needs_input_grad[1:n_tensors]:
            if any(need) if isinstance(need, (list, tuple)) else need:
                raise UnsupportedOperationError(
                    f"specux.{recipe.op}: gradients with respect to {recipe.constants} are not computed on "
                    f"backend {ctx.args[-1]!r} (its adjoint kernels give the signal's gradient); pass "
                    "constants that do not require grad, or backend='cpu' for their gradients"
                )
        args = list(ctx.args)
        if value:  # the constant the forward derived (e.g. from an estimated tuning), not derived again
            args[derived.argument - 1] = value[0]
        gx = backward_op(grad.contiguous(), x, *args) if ctx.needs_input_grad[0] else None
        constants = tuple(None if n is None else [None] * n for n in ctx.lists)
        return (gx, *constants) + (None,) * (ctx.n_inputs - n_tensors)

    forward_op.register_autograd(grad_fn, setup_context=setup)
    if derived is None:
        return forward_op, backward_op

    def result(*args: Any) -> Tensor:
        return forward_op(*args)[0]

    result.__doc__ = f"The result of specux::{name}_device (its first output)."
    return result, backward_op
