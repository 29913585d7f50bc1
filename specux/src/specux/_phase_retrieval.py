"""The fast Griffin-Lim iteration (Perraudin, Balazs and Sondergaard, 2013), shared by every phase retrieval.

:func:`fast_griffin_lim` runs librosa.griffinlim's loop with the transform pair given as a callable
(``rebuild``: stft of istft for :func:`specux.griffinlim`, cqt of icqt for ``griffinlim_cqt``), on numpy
arrays or torch tensors alike. With ``c = momentum / (1 + momentum)`` and ``X_0 = S * angles_0``::

    R_n = rebuild(X_{n-1})
    A_n = R_n - c * R_{n-1}          (R_0 = 0)
    X_n = S * A_n / (|A_n| + eps)    (project)

and the caller inverts ``X_{n_iter}``. This is librosa's order of operations (and torchaudio's, which differs
only in ``eps`` and its random start), so the same start gives the same iterates within float rounding.
numpy arrays are updated in place (no temporaries past one per step); torch tensors only out of place, so
that autograd sees every step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["fast_griffin_lim", "initial_angles", "momentum_value", "resolve_rng"]


def resolve_rng(random_state: Any, public: str) -> Any:
    """librosa's seeding: None -> a fresh ``np.random.default_rng()``; an int -> ``np.random.RandomState``
    (so that ``random_state=0`` draws librosa's numbers); a RandomState or Generator is used as given."""
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, (bool, np.bool_)):
        return np.random.RandomState(seed=int(random_state))
    if isinstance(random_state, (np.random.RandomState, np.random.Generator)):
        return random_state
    raise TypeError(
        f"{public}: random_state must be None, an int, a numpy.random.RandomState or a "
        f"numpy.random.Generator; got {random_state!r} of type {type(random_state).__name__}"
    )


def momentum_value(momentum: Any, public: str) -> float:
    """``momentum`` checked: a finite number >= 0 (librosa warns above 1, where the iteration may diverge)."""
    import warnings

    from specux import _validate
    from specux.errors import user_stacklevel

    m = _validate.real(momentum, "momentum", public)
    if m < 0:
        raise ValueError(f"{public}: momentum must be >= 0; got {momentum!r}")
    if m > 1:
        warnings.warn(
            f"{public}: momentum={m} > 1 can make the iteration unstable",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    return m


def initial_angles(shape: tuple[int, ...], cdtype: Any, init: Any, rng: Any, public: str) -> np.ndarray:
    """The start phases as librosa draws them: ``init="random"``: ``exp(2j pi u)``, ``u = rng.random(shape)``
    (float64 draws, then cast to ``cdtype``); ``init=None``: ones (zero phase)."""
    if init is None:
        return np.ones(shape, dtype=cdtype)
    if isinstance(init, str) and init == "random":
        phase = 2 * np.pi * rng.random(size=shape)
        out = np.empty(shape, dtype=cdtype)
        # librosa's phasor: cos + 1j sin of the float64 angles, cast on assignment
        out.real = np.cos(phase)
        out.imag = np.sin(phase)
        return out
    raise ValueError(f"{public}: init must be 'random' or None; got {init!r}")


def _project_numpy(a: np.ndarray, S: np.ndarray, eps: float) -> np.ndarray:
    """``a / (|a| + eps) * S`` in place (librosa's order: divide, then multiply)."""
    mag = np.abs(a)
    mag += eps
    a /= mag
    a *= S
    return a


def fast_griffin_lim(
    S: Any,
    angles: Any,
    *,
    n_iter: int,
    momentum: float,
    rebuild: Callable[[Any], Any],
    eps: float,
    project: Callable[[Any], Any] | None = None,
) -> Any:
    """Iterate fast Griffin-Lim and return the last consistent-magnitude estimate ``X_{n_iter}``.

    Parameters
    ----------
    S : array, real
        Target magnitudes (numpy array or torch tensor); ``angles`` and what ``rebuild`` returns have its
        shape.
    angles : array, complex
        Start phases (unit modulus for librosa's start; torchaudio's random start is not), same library as
        ``S``. Not modified.
    n_iter : int
        Iterations (0: return ``S * angles``).
    momentum : float
        Fast Griffin-Lim's alpha; 0 gives the original Griffin-Lim.
    rebuild : callable
        ``X -> forward(inverse(X))``: the nearest consistent spectrum. Must return a fresh array.
    eps : float
        Added to ``|A|`` before dividing (librosa: ``tiny`` of the dtype; torchaudio: 1e-16).
    project : callable or None
        ``A -> X``, the magnitude projection; None: ``S * A / (|A| + eps)``. A numpy ``project`` may
        overwrite ``A`` (it is a fresh array).

    Returns
    -------
    array, complex
        ``X_{n_iter}``, same library and shape as ``angles``; invert it with the transform's inverse.

    See Also
    --------
    specux.griffinlim : the STFT phase retrieval built on this loop.
    """
    host = isinstance(S, np.ndarray)
    c = momentum / (1 + momentum)
    if project is None:
        if host:

            def project(a: Any) -> Any:
                return _project_numpy(a, S, eps)
        else:

            def project(a: Any) -> Any:
                return a / (abs(a) + eps) * S

    X = angles * S
    tprev = None
    for _ in range(n_iter):
        rebuilt = rebuild(X)
        if tprev is None:
            a = rebuilt.copy() if host else rebuilt
        elif host:
            a = np.multiply(tprev, -c, dtype=np.result_type(tprev, rebuilt))
            a += rebuilt
        else:
            a = rebuilt - c * tprev
        X = project(a)
        tprev = rebuilt
    return X
