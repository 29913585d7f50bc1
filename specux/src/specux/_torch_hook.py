"""The hook that sends torch tensors from the functional API to specux's torch ops.

A public transform decorated with ``@torch_route("stft")`` runs as before for numpy / cupy inputs. When its
signal is a torch CPU tensor and ``backend`` is ``"auto"`` or ``"cpu"``, the call goes instead, with every
argument (defaults included, so they live once, in the public signature), to
:func:`specux.torch._route.call`, which calls the ``torch.ops.specux`` op: autograd works and
``torch.compile`` traces it as one node. The FFT family does the same for float32 / float64 CUDA tensors with
``"auto"`` or ``"cuda"`` (its ops have CUDA kernels). A torch CPU tensor with a named device backend
(``"opencl"``, ``"cuda"``, ``"metal"``) runs through that backend's device ops
(:mod:`specux.torch._device_op`: the generated kernels forward, their adjoint kernels backward) when it
requires grad or under ``torch.compile``, for the operations in :data:`DEVICE_ROUTED_OPS`; without grad it
keeps the frontend's own path, which runs the same kernels. A float32 / float64 CUDA tensor with ``"auto"``
or ``"cuda"`` does the same for those operations: with grad (or under ``torch.compile``) through the device
ops on the cuda backend, in place on the tensor's memory, else through the frontend (the same kernels, also
in place). Other cases (a tensor on another device, half
precision on CUDA, an operation without device adjoints) keep the frontend's own path, whose backend rules
apply; a tensor there that requires grad is refused (that path cannot differentiate), never silently
detached.

This module imports neither torch nor :mod:`specux.torch`: the route is imported on the first tensor, when
torch is necessarily loaded already. The wrapper is plain Python that dynamo traces without graph breaks.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from specux import _arrays
from specux._dask import dask_route
from specux.errors import UnsupportedOperationError

F = TypeVar("F", bound=Callable[..., Any])

#: backends under which a torch CPU tensor runs through the torch ops
ROUTED_BACKENDS = ("auto", "cpu")
#: CUDA tensors (float32 / float64) run through torch ops under these backends: the FFT family always, the
#: device-routed operations when they require grad or under torch.compile (the device ops, cuda backend)
CUDA_ROUTED_BACKENDS = ("auto", "cuda")
_HALF = ("torch.float16", "torch.bfloat16", "torch.complex32")
#: named backends under which a torch CPU tensor may run through the device ops (specux.torch._device_op)
DEVICE_ROUTED_BACKENDS = ("cuda", "metal", "opencl")
#: the operations with device ops: the keys of specux.torch._ops_device.OPS (a test checks they agree)
DEVICE_ROUTED_OPS = (
    "chroma_cqt", "chroma_stft", "cqt", "fftconvolve", "icqt", "istft", "lfcc", "melspectrogram", "mfcc",
    "stft", "vqt",
)


def _differentiated(x: Any, *others: Any) -> bool:
    """Whether a call on ``x`` must keep its gradient: ``x`` (or one of ``others``, the call's other tensors
    with a gradient, such as fftconvolve's ``in2``) requires grad with grad mode on, or dynamo is tracing (the
    compiled graph must hold the op whatever the tensor at run time)."""
    torch = sys.modules["torch"]
    wants = any(getattr(t, "requires_grad", False) for t in (x, *others))
    return bool(wants and torch.is_grad_enabled()) or torch.compiler.is_compiling()


def routed(op: str, x: Any, backend: Any, *others: Any) -> bool:
    """Whether the torch tensor ``x`` runs ``op`` through the ``torch.ops.specux`` ops under ``backend``
    (``others``: the call's other tensors that may require grad)."""
    if not isinstance(backend, str):
        return False
    if x.device.type == "cpu":
        if backend in ROUTED_BACKENDS:
            return True
        return backend in DEVICE_ROUTED_BACKENDS and op in DEVICE_ROUTED_OPS and _differentiated(x, *others)
    if x.device.type != "cuda" or backend not in CUDA_ROUTED_BACKENDS or str(x.dtype) in _HALF:
        return False
    # the FFT family's ops have CUDA kernels; the device ops run CUDA tensors in place (on the cuda backend)
    return op.startswith("fft.") or (op in DEVICE_ROUTED_OPS and _differentiated(x, *others))


def _route_backend(op: str, x: Any, backend: str) -> str:
    """The backend a routed call names: a CUDA tensor's ``"auto"`` is ``"cuda"`` for the device ops (the FFT
    family's ops pick their CUDA kernels themselves)."""
    if backend == "auto" and x.device.type == "cuda" and not op.startswith("fft."):
        return "cuda"
    return backend


def torch_route(
    op: str, inputs: tuple[str, ...] | None = None, differentiable: tuple[str, ...] = ()
) -> Callable[[F], F]:
    """Decorate the public function of ``op`` so that torch CPU tensors run through ``specux.torch``.

    Parameters
    ----------
    op : str
        The route's name for the operation (``"stft"``, ``"fft.rfft"``, ...).
    inputs : tuple of str or None
        The parameters that may carry the tensor (e.g. ``("y", "S")``); ``None``: the first parameter.
    differentiable : tuple of str
        Other parameters whose tensors may require grad (fftconvolve's ``in2``, a learnable filter): one
        that does sends the call through the differentiable ops too, and is refused where none exists.
    """

    def decorate(fn: F) -> F:
        params = inspect.signature(fn).parameters
        names = [n for n, p in params.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        defaults = {n: p.default for n, p in params.items() if p.default is not inspect.Parameter.empty}
        carriers = inputs if inputs is not None else (next(iter(params)),)
        positions = {name: names.index(name) for name in (*carriers, *differentiable) if name in names}

        def argument(name: str, args: tuple, kwargs: dict) -> Any:
            pos = positions.get(name)
            return args[pos] if pos is not None and pos < len(args) else kwargs.get(name)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            backend = kwargs.get("backend", defaults.get("backend", "auto"))
            for name in carriers:
                x = argument(name, args, kwargs)
                if x is not None:
                    break
            others = [t for t in (argument(n, args, kwargs) for n in differentiable) if _arrays.is_torch(t)]
            if _arrays.is_torch(x) and routed(op, x, backend, *others):
                bound = dict(defaults)
                bound.update(zip(names, args))
                bound.update(kwargs)
                if "backend" in bound:
                    bound["backend"] = _route_backend(op, x, backend)
                from specux.torch._route import call

                return call(op, **bound)
            wants_grad = any(t.requires_grad for t in (x, *others) if _arrays.is_torch(t))
            if wants_grad and sys.modules["torch"].is_grad_enabled():
                # the frontend's own path detaches: refuse rather than drop the gradient silently
                raise UnsupportedOperationError(
                    f"specux.{op}: gradients flow through the specux torch ops, which take torch CPU tensors "
                    "with backend 'auto' or 'cpu', torch CPU tensors with backend 'opencl', 'cuda' or "
                    f"'metal' for {', '.join(DEVICE_ROUTED_OPS)} (the device's adjoint kernels), and "
                    "float32 / float64 CUDA tensors with backend 'auto' or 'cuda' for those and specux.fft; "
                    "got "
                    f"backend={backend!r} and a {getattr(x, 'dtype', type(x).__name__)} input on "
                    f"{getattr(x, 'device', 'the host')}. Pass x.detach() or call it "
                    "under torch.no_grad()"
                )
            return fn(*args, **kwargs)

        # dask arrays build a lazy graph of calls of this same front (specux._dask)
        return dask_route(op, fn)(wrapper)  # type: ignore[return-value]

    return decorate
