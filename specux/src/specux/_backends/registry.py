"""The table of backends, their availability, and the choice of backend for a call.

Backends are listed in order of preference for ``backend="auto"`` and loaded lazily by module path, so
importing specux imports no GPU library. See :mod:`specux._backends.base` for what a backend module provides.

The variables of earlier builds that kernelkit renamed (``SPECUX_CACHE_DIR``, ``SPECUX_DUMP_SOURCE`` and, for
opencl, ``SPECUX_OPENCL_OPTIONS``; :data:`kernelkit.cache.RENAMED`) are checked at every call, apart from the
probes' cached verdicts: one still set is the reason cuda, metal and opencl cannot run, and stops
``backend="auto"`` before it chooses anything (cpu included), so nothing runs with the setting ignored.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from dataclasses import dataclass
from typing import Any

from specux import _arrays
from specux.errors import BackendUnavailableError, UnsupportedOperationError

#: backend names in order of preference; each is the module ``specux._backends.<name>``
NAMES: tuple[str, ...] = ("cuda", "metal", "opencl", "cpu")
#: which backend serves arrays living on each device type
DEVICE_BACKEND = {"cuda": "cuda", "mps": "metal", "cpu": "cpu"}

NOT_BUILT = "not built yet"

#: public functions whose cpu version is computed in the front itself (no cpu backend method); listed in the
#: cpu row of :func:`backends`. chroma_stft and chroma_cqt also have generated versions on the device
#: backends.
HOST_ONLY = frozenset(
    {
        "chroma_stft", "chroma_cqt", "estimate_tuning", "pitch_tuning", "piptrack", "icqt", "griffinlim_cqt",
        "power_to_db", "amplitude_to_db",
    }
)
#: the arrays each backend takes, for the docstrings' "Backends:" lines
INPUTS = {
    "cpu": "numpy arrays, torch CPU tensors",
    "cuda": "numpy and cupy arrays, torch CUDA tensors",
    "metal": "numpy arrays",
    "opencl": "numpy arrays",
}

_lock = threading.RLock()  # re-entrant: a backend module may consult the registry while loading
_probed: dict[str, tuple[str | None, Any]] = {}


@dataclass(frozen=True)
class BackendInfo:
    """One row of :func:`specux.backends`.

    Attributes
    ----------
    name : str
        ``"cuda"``, ``"metal"``, ``"opencl"`` or ``"cpu"``.
    available : bool
        Whether the backend can run on this machine.
    unavailable_reason : str or None
        Why it cannot (``None`` when available).
    ops : tuple of str
        Public operations it serves (``"fft"`` is the whole FFT family); empty when unavailable.

    Examples
    --------
    >>> import specux
    >>> info = specux.backends()[-1]
    >>> info.name, info.available, info.unavailable_reason
    ('cpu', True, None)
    >>> "stft" in info.ops
    True
    """

    name: str
    available: bool
    unavailable_reason: str | None
    ops: tuple[str, ...]


#: the backends that compile kernels through kernelkit, whose renamed variables concern them
COMPILING = ("cuda", "metal", "opencl")


def _renamed(name: str) -> str | None:
    """Why a variable of an earlier build that kernelkit renamed stops backend ``name`` (``"auto"``: every
    compiling backend's), or None. cpu compiles no kernel and reads none of them: never."""
    if name not in (*COMPILING, "auto"):
        return None
    from kernelkit import cache

    if name in ("opencl", "auto"):  # opencl's table holds the cache's variables and its build options
        from kernelkit import opencl

        table = opencl.RENAMED
    else:
        table = cache.RENAMED
    problems = cache.renamed_problems(table)
    return "; ".join(problems) if problems else None


def _reason(name: str) -> str | None:
    """Why ``name`` cannot run now: a renamed variable still set (read at every call), else the probe's
    verdict (kept per process)."""
    return _renamed(name) or _load(name)[0]


def _load(name: str) -> tuple[str | None, Any]:
    """(reason, backend) for ``name``, probing once per process."""
    with _lock:
        if name in _probed:
            return _probed[name]
        try:
            module = importlib.import_module(f"specux._backends.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"specux._backends.{name}":
                result = (NOT_BUILT, None)
            else:
                result = (f"cannot import specux._backends.{name}: {exc}", None)
        except Exception as exc:  # a broken backend module must not break specux
            result = (f"cannot import specux._backends.{name}: {type(exc).__name__}: {exc}", None)
        else:
            try:
                reason = module.probe()
            except Exception as exc:
                reason = f"probe failed: {type(exc).__name__}: {exc}"
            backend = None
            if reason is None:
                try:
                    backend = module.get()
                except Exception as exc:
                    reason = f"initialisation failed: {type(exc).__name__}: {exc}"
            result = (reason, backend)
        _probed[name] = result
        return result


def declared(op: str) -> tuple[str, ...]:
    """The backends whose code serves ``op`` in this build, in order of preference, without probing the
    machine (whether each can run here is :func:`backends`' answer). ``"fft"`` is the FFT family."""
    from specux._backends import cpu, generated

    names = []
    module = generated.EXEC_MODULES.get(op)
    # find_spec, not an import: docstrings are filled at import time, which must stay light
    if op == "fft" or (module is not None and importlib.util.find_spec(f"specux._runtime.{module}")):
        names += ["cuda", "metal", "opencl"]
    if op == "fft" or op in cpu.IMPLEMENTATIONS or op in HOST_ONLY:
        names.append("cpu")
    return tuple(names)


def backends_line(op: str) -> str:
    """The "Backends: ..." sentence of a public function's docstring, from :func:`declared`."""
    names = declared(op)
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(INPUTS[name], []).append(name)
    parts = [f"{' and '.join(group)} ({inputs})" for inputs, group in groups.items()]
    return "Backends: " + "; ".join(parts) + ". Which of them run on this machine: ``specux.backends()``."


def reset() -> None:
    """Forget cached probe results (tests; after installing a driver in a running process)."""
    with _lock:
        _probed.clear()


def backends() -> list[BackendInfo]:
    """Every specux backend, with whether it can run here and, if not, why.

    Returns
    -------
    list of BackendInfo
        In order of preference: cuda, metal, opencl, cpu.

    Examples
    --------
    >>> import specux
    >>> [info.name for info in specux.backends()]
    ['cuda', 'metal', 'opencl', 'cpu']
    >>> for info in specux.backends():   # doctest: +SKIP
    ...     print(info.name, info.unavailable_reason or "available")
    cuda libcuda not found: no NVIDIA driver on this machine (Failed to dlopen libcuda.so.1)
    metal Metal needs macOS (this is linux)
    opencl available
    cpu available
    """
    rows = []
    for name in NAMES:
        reason, backend = _renamed(name), None  # ahead of the probe, which then need not run
        if reason is None:
            reason, backend = _load(name)
        ops = tuple(sorted(backend.ops)) if backend is not None else ()
        rows.append(BackendInfo(name, reason is None, reason, ops))
    return rows


def get(name: str) -> Any:
    """The backend object called ``name``; raises BackendUnavailableError with the reason if it cannot run."""
    if name not in NAMES:
        raise ValueError(
            f"backend must be 'auto' or one of {', '.join(repr(n) for n in NAMES)}; got {name!r}"
        )
    reason, backend = _renamed(name), None
    if reason is None:
        reason, backend = _load(name)
    if reason is not None:
        raise BackendUnavailableError(name, reason)
    return backend


def _servers(op: str) -> list[str]:
    return [n for n in NAMES if _reason(n) is None and op in _load(n)[1].ops]


def _require_op(backend: Any, op: str, public: str) -> None:
    if op not in backend.ops:
        servers = _servers(op)
        where = ", ".join(servers) if servers else "no backend available on this machine"
        raise UnsupportedOperationError(
            f"{public}: backend {backend.name!r} does not provide this operation; it is served by: {where}"
        )


def select(x: Any, backend: str, op: str, public: str | None = None) -> Any:
    """Pick the backend object for running ``op`` on ``x``.

    ``backend="auto"``: a torch tensor runs where it lives, a cupy array on cuda, a host array on cuda when
    that backend is available and serves ``op``, otherwise on cpu. A named backend is strict: it must be
    available, serve ``op`` and either own ``x`` or receive host memory; nothing is ever copied through the
    host. A variable of an earlier build that kernelkit renamed, still set, makes "auto" raise
    BackendUnavailableError with its reason rather than run anywhere (cpu included) with it ignored.
    """
    public = public or op
    if not isinstance(backend, str):
        raise TypeError(
            f"backend must be a str ('auto' or one of {', '.join(NAMES)}); got {type(backend).__name__}"
        )
    where = _arrays.device_kind(x)
    if backend == "auto":
        renamed = _renamed("auto")
        if renamed is not None:
            raise BackendUnavailableError(
                "auto", f"{renamed}; 'auto' stops here rather than run on any backend with it ignored"
            )
        if where == "cpu":
            reason, cuda = _load("cuda")
            if reason is None and op in cuda.ops:
                return cuda
            chosen = get("cpu")
        else:
            name = DEVICE_BACKEND.get(where)
            if name is None:
                raise UnsupportedOperationError(
                    f"{public}: no specux backend serves arrays on device {where!r}"
                )
            chosen = get(name)
        _require_op(chosen, op, public)
        return chosen
    chosen = get(backend)
    _require_op(chosen, op, public)
    if where != "cpu" and not chosen.owns(x):
        raise UnsupportedOperationError(
            f"{public}: backend={backend!r} cannot use an array on device {where!r} "
            f"without copying it through "
            f"the host; move it yourself or pass backend='auto' (which runs it on "
            f"{DEVICE_BACKEND.get(where, 'its device')!r})"
        )
    return chosen
