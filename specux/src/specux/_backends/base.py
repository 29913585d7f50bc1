"""The contract every specux backend module fulfils.

A backend lives in its own module ``specux._backends.<name>`` (``cuda``, ``metal``, ``opencl``, ``cpu``),
which the registry imports only when the backend is first asked for. The module exposes two functions:

``probe() -> str | None``
    ``None`` when the backend can run on this machine, otherwise the precise reason it cannot (the message a
    user sees in :func:`specux.backends` and in :class:`specux.BackendUnavailableError`), e.g.
    ``"pyopencl is not installed (pip install pyopencl)"`` or ``"cuInit failed: libcuda.so.1 not
    found"``. It must not raise, must be cheap to call more than once (the registry caches its answer for the
    process) and must import nothing heavy before it knows it needs to.
``get() -> Backend``
    The backend object (a singleton is fine). Only called after ``probe()`` returned ``None``.

The backend object satisfies :class:`Backend` below. The frontend (``specux.fft``, ``specux.ops.*``) does all
argument handling: it validates parameters, pads or truncates to the transform length, turns ``norm`` into a
``scale`` factor, splits multi-axis transforms into one-axis calls, checks the dtype against
:attr:`Backend.dtypes`, and converts the result back to the caller's array library. A backend only computes.

Arrays a backend receives
    - host arrays (numpy, or a torch CPU tensor) always arrive as **numpy** arrays; every backend accepts
      them and stages them to its device if it has one; it may return numpy or its own device array type only
      if that is what the caller passed (so: numpy in -> numpy out for host inputs);
    - arrays for which :meth:`Backend.owns` is true (a torch CUDA tensor or a cupy array for ``cuda``, a torch
      ``mps`` tensor for ``metal``) arrive unchanged and the result must be the same library on the same
      device.
    Inputs may be non-contiguous views; a backend that needs contiguity makes its own copy.

Dtypes
    The FFT entry points receive ``complex64`` / ``complex128`` (``c2c``, ``c2r``) or ``float32`` /
    ``float64`` (``r2c``), or the half / complex-half equivalents when ``"float16"`` is in
    :attr:`Backend.dtypes` (torch's ``complex32`` for torch inputs; for numpy, half storage is passed as
    ``float16`` real input to ``r2c`` only). Results keep the precision of the input (``float32`` in ->
    ``complex64`` out).

Operations
    :attr:`Backend.ops` names the public operations the backend serves. ``"fft"`` stands for the whole FFT
    family and means the three methods ``c2c`` / ``r2c`` / ``c2r`` exist. Every other name (``"stft"``,
    ``"istft"``, ``"melspectrogram"``, ``"fftconvolve"``, ...) means the backend has a method of that name
    with the signature ``method(x, params)``, where ``params`` is the frozen dataclass that the matching
    validation function in :mod:`specux._validate` returns (e.g. :class:`specux._validate.StftParams`); the
    method returns the operation's result in the caller's library as described above. The frontend raises a
    clear error naming the backends that do serve an operation when the chosen one does not.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

#: Names under which the FFT family is advertised in :attr:`Backend.ops`.
FFT_OP = "fft"


@runtime_checkable
class Backend(Protocol):
    """What the specux frontend calls on a backend (see the module docstring for the full contract)."""

    #: registry name: ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``
    name: str
    #: public operations served: ``"fft"`` for the FFT family, plus any of ``"stft"``, ``"istft"``, ...
    ops: frozenset[str]
    #: real dtypes accepted, by numpy name: a subset of ``{"float16", "float32", "float64"}``
    dtypes: frozenset[str]

    def owns(self, x: Any) -> bool:
        """True if ``x`` is an array living on this backend's device (used by ``backend="auto"``).

        Must not import any library: check ``type(x).__module__`` / ``sys.modules`` instead. Host arrays
        (numpy, torch CPU tensors) are owned by no backend except ``cpu``.
        """
        ...

    def c2c(self, x: Any, axis: int, inverse: bool, scale: float) -> Any:
        """Unnormalised complex DFT of ``x`` along ``axis`` (sign -1 forward, +1 when ``inverse``), times
        ``scale``.

        ``x`` already has the transform length along ``axis``; the output has the same shape and dtype.
        """
        ...

    def r2c(self, x: Any, axis: int, scale: float) -> Any:
        """Forward DFT of real ``x`` along ``axis``, keeping bins ``0 .. n // 2`` (``n = x.shape[axis]``),
        times ``scale``.

        Output shape: ``x.shape`` with ``n // 2 + 1`` along ``axis``; complex of the input's precision.
        """
        ...

    def c2r(self, x: Any, axis: int, n: int, scale: float) -> Any:
        """Inverse DFT (sign +1) of the Hermitian half-spectrum ``x`` along ``axis``, giving ``n`` real
        points, times ``scale``.

        ``x`` already has exactly ``n // 2 + 1`` entries along ``axis``. As numpy does, the imaginary part of
        bin 0 (and of bin ``n / 2`` for even ``n``) is ignored. Output: real of the input's precision, ``n``
        along ``axis``.
        """
        ...
