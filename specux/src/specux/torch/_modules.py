"""``nn.Module`` wrappers of the specux transforms, owning their windows and filter banks as buffers.

Each module takes the keyword arguments of the functional transform it wraps (same names; defaults are read
from the functional signature, so they live once) and precomputes, at construction, everything that does not
depend on the signal: the window, the mel / linear / chroma filter bank, the DCT matrix, the constant-Q frame
weights of every octave. These are registered buffers: they follow ``module.to(device)`` /
``module.to(dtype)`` and are saved in the ``state_dict``. ``forward`` calls the same ``torch.ops.specux`` op
as the functional API, with the buffers passed in, so module and function give identical results.

Every module also takes torch's factory keyword ``dtype`` (the buffers' dtype, default
``torch.get_default_dtype()``): build float64 modules with ``dtype=torch.float64`` to keep the windows and
banks at full precision (``module.to(torch.float64)`` converts float32-rounded values).

``STFT``, ``MelSpectrogram``, ``MFCC``, ``LFCC``, ``CQT`` and ``VQT`` also take ``trainable`` (False by
default): True makes their window, filter bank, DCT matrix or constant-Q weights ``nn.Parameter`` s
initialised to the precomputed values (a learnable front end, as nnAudio's ``trainable`` kernels), a sequence
of names makes only those trainable (``"weights"`` stands for every octave's weights). Their
gradients are analytic too (``specux::<op>_constants_backward``).
"""

from __future__ import annotations

import fnmatch
import inspect
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

import specux
from specux._spec.stft import stft_validate
from specux.errors import UnsupportedOperationError
from specux.torch import _ops, _ops_device
from specux.torch._ops_cq import (
    CHROMA_CQT_ARGS,
    CHROMA_STFT_ARGS,
    CQT_ARGS,
    VQT_ARGS,
    _chroma_cqt_parts,
    _cqt_as_vqt,
    intervals_arg,
    vqt_params,
)
from specux.torch._ops_features import LFCC_ARGS, MEL_ARGS, MFCC_ARGS, lfcc_params
from specux.torch._ops_stft import ISTFT_ARGS, STFT_ARGS
from specux.torch._params import OpArguments, encode_spec

# Buffers are built in float64 and stored in the module's ``dtype`` (torch's factory keyword; default: torch's
# default dtype, float32 unless changed), as nn.Linear stores its weights. module.to(torch.float64) converts
# float32 buffers (keeping their float32 rounding); dtype=torch.float64 at construction keeps full precision.


def _on_cuda(x: Tensor) -> bool:
    return x.device.type == "cuda"


#: the modules that run CUDA tensors through the device ops, as the refusal names them
_ON_CUDA = (
    "STFT",
    "ISTFT",
    "MelSpectrogram",
    "MFCC",
    "LFCC",
    "Chroma (source 'cqt' with tuning=None only: precomputed octave weights have no device op)",
)


def _op(module: nn.Module, name: str, x: Tensor, device: bool = True) -> Any:
    """The op computing ``name`` for ``x``: the CPU op for a CPU tensor (or a meta / fake one), the device op
    on the cuda backend for a CUDA tensor (forward and adjoint kernels in place on the tensor, with the
    module's buffers as its constants: :mod:`specux.torch._device_op`); another device is refused by name
    rather than copied. ``device=False``: the module has no device route (the constant-Q modules' weights,
    and a ``Chroma("cqt")``'s with a numeric tuning, have no device op that would use them: a device builds
    its own frequency-domain basis)."""
    if device and _on_cuda(x) and name in _ops_device.OPS:
        return _ops_device.on_backend(name, "cuda")
    if x.device.type in ("cpu", "meta"):
        return getattr(_ops, name)
    on_cuda = ", ".join(f"specux.torch.{n}" for n in _ON_CUDA)
    public = name.removesuffix("_frames")
    raise UnsupportedOperationError(
        f"specux.torch.{type(module).__name__}: runs on CPU tensors; on CUDA tensors {on_cuda} run; got a "
        f"tensor on {x.device} (move it with .cpu(), or call the functional specux.{public} on it, which "
        "says where it runs)"
    )


def _defaults(fn: Any, skip: tuple[str, ...]) -> dict[str, Any]:
    return {
        name: par.default
        for name, par in inspect.signature(fn).parameters.items()
        if par.default is not inspect.Parameter.empty and name not in skip
    }


def _merge(cls_name: str, fn: Any, kwargs: dict[str, Any], skip: tuple[str, ...] = ()) -> dict[str, Any]:
    defaults = _defaults(fn, ("backend", "S", "C", "y", *skip))
    unknown = sorted(set(kwargs) - set(defaults))
    if unknown:
        raise TypeError(
            f"{cls_name}: unknown argument(s) {', '.join(unknown)}; accepted: {', '.join(defaults)}"
        )
    return {**defaults, **kwargs}


def _buffer(module: nn.Module, name: str, value: np.ndarray) -> None:
    """A precomputed tensor: a buffer, or a parameter when the module was built trainable for it."""
    dtype = module.buffer_dtype or torch.get_default_dtype()
    t = torch.from_numpy(np.array(value, dtype=np.float64)).to(dtype)
    if name in module.trainable:
        module.register_parameter(name, nn.Parameter(t))
    else:
        module.register_buffer(name, t)


def _factory(module: nn.Module, kwargs: dict[str, Any], trainable: tuple[str, ...] = ()) -> dict[str, Any]:
    """Take torch's factory keyword ``dtype`` (the buffers' dtype) and ``trainable`` out of the transform's
    arguments.

    ``trainable``: False (default: every precomputed tensor is a buffer), True (all of them, the names in
    ``trainable``, become ``nn.Parameter``), or a sequence of those names.
    """
    name = type(module).__name__
    dtype = kwargs.pop("dtype", None)
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"{name}: dtype must be a floating torch.dtype or None; got {dtype!r}")
    module.buffer_dtype = dtype
    want = kwargs.pop("trainable", False)
    if want is False:
        chosen: tuple[str, ...] = ()
    elif want is True:
        chosen = trainable
    elif isinstance(want, (list, tuple, set, frozenset)) and all(isinstance(w, str) for w in want):
        chosen = tuple(want)
    else:
        raise TypeError(f"{name}: trainable must be True, False or a sequence of names; got {want!r}")
    unknown = sorted(c for c in chosen if not any(fnmatch.fnmatchcase(c, t) for t in trainable))
    if unknown or (want is True and not trainable):
        offered = ", ".join(trainable) if trainable else "nothing (its tensors have no gradient)"
        raise ValueError(f"{name}: trainable {unknown or want!r} is not offered; trainable: {offered}")
    module.trainable = chosen
    return kwargs


def _window_spec(window: Any) -> Any:
    return window if isinstance(window, (str, tuple, int, float)) else np.asarray(window)


def _op_values(
    module: nn.Module, arguments: OpArguments, given: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The op's arguments (by public name) as a module passes them: those it resolved at construction (its
    attributes, e.g. ``n_fft``, ``hop_length``, which a caller may have changed since) over those it was
    ``given``."""
    own = vars(module)  # plain attributes only: buffers and parameters live elsewhere
    return {name: own[name] if name in own else (given or {})[name] for name in arguments.public}


class STFT(nn.Module):
    """Short-time Fourier transform (:func:`specux.stft`) with the window as a buffer.

    Parameters
    ----------
    **kwargs
        Those of :func:`specux.stft` (``n_fft``, ``hop_length``, ``win_length``, ``window``, ``center``,
        ``pad_mode``, ``output``), with its defaults; ``trainable=True`` makes ``window`` a parameter.

    Notes
    -----
    Buffers: ``window`` (n_fft,), the window centred in ``n_fft`` samples. ``forward(y)``: (..., L) ->
    (..., 1 + n_fft // 2, n_frames) (``real_imag``: trailing 2). Differentiable; traceable by torch.compile.

    Examples
    --------
    >>> import torch
    >>> import specux.torch as st
    >>> st.STFT(n_fft=512, hop_length=128)(torch.randn(2, 4000)).shape
    torch.Size([2, 257, 32])
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        kwargs = _factory(self, kwargs, ("window",))
        a = _merge("STFT", specux.stft, kwargs, skip=("dtype",))
        # center is checked by the op when called (the stand-in signal of one frame is one either way)
        p = stft_validate(
            np.zeros(max(a["n_fft"], 1)),
            window=_window_spec(a["window"]),
            **{**STFT_ARGS.from_public(a), "center": True},
        )
        for name in STFT_ARGS.public:
            setattr(self, name, a[name])
        self.hop_length, self.win_length = p.hop_length, p.win_length
        _buffer(self, "window", p.window)

    def forward(self, y: Tensor) -> Tensor:
        args = STFT_ARGS.passed(_op_values(self, STFT_ARGS))
        if _on_cuda(y):  # the device op's layout is (bins, frames) already
            return _op(self, "stft", y)(y, self.window, "boxcar", *args)
        # the CPU kernel's own layout (frames, bins), returned as the transposed view, as specux.stft does
        D = _op(self, "stft_frames", y)(y, self.window, "boxcar", *args)
        return D.transpose(-2, -3) if self.output == "real_imag" else D.transpose(-1, -2)


class ISTFT(nn.Module):
    """Inverse STFT (:func:`specux.istft`) with the window as a buffer.

    Parameters
    ----------
    n_fft : int
        FFT length of the spectra to invert (needed to build the window).
    **kwargs
        The other arguments of :func:`specux.istft` (``hop_length``, ``win_length``, ``window``, ``center``,
        ``length``, ``nola``).

    Notes
    -----
    Buffers: ``window`` (n_fft,). ``forward(stft_matrix)``: complex (..., 1 + n_fft // 2, T) -> real (..., L).

    Examples
    --------
    >>> import torch
    >>> import specux.torch as st
    >>> y = torch.randn(4000, dtype=torch.float64)
    >>> D = st.STFT(n_fft=512, dtype=torch.float64)(y)
    >>> y_back = st.ISTFT(512, length=4000, dtype=torch.float64)(D)
    >>> bool(torch.allclose(y_back, y))
    True
    """

    def __init__(self, n_fft: int, **kwargs: Any) -> None:
        super().__init__()
        kwargs = _factory(self, kwargs)
        a = _merge("ISTFT", specux.istft, kwargs, skip=("dtype", "n_fft"))
        win_length = n_fft if a["win_length"] is None else a["win_length"]
        hop_length = max(win_length // 4, 1) if a["hop_length"] is None else a["hop_length"]
        resolved = {**a, "n_fft": n_fft, "win_length": win_length, "hop_length": hop_length}
        for name in ISTFT_ARGS.public:
            setattr(self, name, resolved[name])
        from specux._filters.windows import window_for

        _buffer(self, "window", window_for(_window_spec(a["window"]), win_length, n_fft))

    def forward(self, stft_matrix: Tensor, length: int | None = None) -> Tensor:
        values = _op_values(self, ISTFT_ARGS)
        if length is not None:
            values["length"] = length
        return _op(self, "istft", stft_matrix)(stft_matrix, self.window, "boxcar", *ISTFT_ARGS.passed(values))


def _mel_args(cls_name: str, fn: Any, kwargs: dict[str, Any], skip: tuple[str, ...] = ()) -> tuple[dict, Any]:
    """Merged arguments and the resolved MelParams (built on a stand-in signal of one frame)."""
    a = _merge(cls_name, fn, kwargs, skip)
    from specux._spec.features import mel_validate, resolve

    n_fft = resolve(a["compat"], "n_fft", a["n_fft"])
    # mfcc's bank normalisation is its mel_norm (its norm is the DCT's)
    values = {**a, "norm": a["mel_norm"]} if "mel_norm" in a else a
    p = mel_validate(
        np.zeros(n_fft),
        from_spectrogram=False,
        window=_window_spec(a["window"]),
        public=cls_name,
        **MEL_ARGS.from_public(values),
    )
    return a, p


class MelSpectrogram(nn.Module):
    """Mel spectrogram (:func:`specux.melspectrogram`) with the window and the mel filter bank as buffers.

    Parameters
    ----------
    **kwargs
        Those of :func:`specux.melspectrogram` (``sr``, ``n_fft``, ``hop_length``, ``n_mels``, ``power``,
        ``fmin``, ``fmax``, ``htk``, ``norm``, ``compat``, ...), with its defaults. ``trainable``: True or
        some of ``("window", "mel_basis")`` become parameters.

    Notes
    -----
    Buffers: ``window`` (n_fft,), ``mel_basis`` (n_mels, 1 + n_fft // 2). ``forward(y)``: (..., L) ->
    (..., n_mels, n_frames).

    Examples
    --------
    >>> import torch
    >>> import specux.torch as st
    >>> st.MelSpectrogram(sr=16000, n_fft=512, hop_length=160, n_mels=64)(torch.randn(2, 16000)).shape
    torch.Size([2, 64, 101])
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        kwargs = _factory(self, kwargs, ("window", "mel_basis"))
        a, p = _mel_args("MelSpectrogram", specux.melspectrogram, kwargs)
        self.args = a
        self.n_fft, self.hop_length = p.stft.n_fft, p.stft.hop_length
        self.win_length, self.pad_mode, self.power = p.stft.win_length, p.stft.pad_mode, p.power
        _buffer(self, "window", p.stft.window)
        _buffer(self, "mel_basis", p.basis)

    def forward(self, y: Tensor) -> Tensor:
        values = _op_values(self, MEL_ARGS, self.args)
        values["norm"] = encode_spec(values["norm"])
        op = _op(self, "melspectrogram", y)
        return op(y, self.window, self.mel_basis, "boxcar", *MEL_ARGS.passed(values))


class MFCC(nn.Module):
    """MFCCs (:func:`specux.mfcc`) with the window, mel filter bank and DCT matrix as buffers.

    Parameters
    ----------
    **kwargs
        Those of :func:`specux.mfcc` (``sr``, ``n_mfcc``, ``dct_type``, ``norm``, ``lifter``, ``n_fft``,
        ``n_mels``, ``mel_norm``, ``top_db``, ``compat``, ...), with its defaults. ``trainable``: True or
        some of ``("window", "mel_basis", "dct")`` become parameters.

    Notes
    -----
    Buffers: ``window``, ``mel_basis`` (n_mels, F), ``dct`` (n_mfcc, n_mels; lifter folded in).
    ``forward(y)``: (..., L) -> (..., n_mfcc, n_frames).

    Examples
    --------
    >>> import torch
    >>> import specux.torch as st
    >>> st.MFCC(sr=16000, n_mfcc=13, n_fft=512, hop_length=160)(torch.randn(16000)).shape
    torch.Size([13, 101])
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        kwargs = _factory(self, kwargs, ("window", "mel_basis", "dct"))
        a, p = _mel_args("MFCC", specux.mfcc, kwargs)
        from specux._spec.features import dct_matrix, resolve

        self.args = a
        self.n_mfcc = resolve(a["compat"], "n_mfcc", a["n_mfcc"])
        self.n_fft, self.hop_length, self.win_length = p.stft.n_fft, p.stft.hop_length, p.stft.win_length
        self.pad_mode = p.stft.pad_mode
        _buffer(self, "window", p.stft.window)
        _buffer(self, "mel_basis", p.basis)
        _buffer(
            self,
            "dct",
            dct_matrix(self.n_mfcc, p.basis.shape[0], a["dct_type"], a["norm"], float(a["lifter"])),
        )

    def forward(self, y: Tensor) -> Tensor:
        values = _op_values(self, MFCC_ARGS, self.args)
        values["mel_norm"] = encode_spec(values["mel_norm"])
        op = _op(self, "mfcc", y)
        return op(y, self.window, self.mel_basis, self.dct, "boxcar", *MFCC_ARGS.passed(values))


class LFCC(nn.Module):
    """LFCCs (:func:`specux.lfcc`, torchaudio's LFCC) with the window, linear filter bank and DCT as buffers.

    Parameters
    ----------
    **kwargs
        Those of :func:`specux.lfcc` (``sample_rate``, ``n_filter``, ``n_lfcc``, ``norm``, ``log_lf``,
        ``n_fft``, ...), with its defaults. ``trainable``: True or some of ``("window", "filter_bank",
        "dct")`` become parameters.

    Notes
    -----
    Buffers: ``window``, ``filter_bank`` (n_filter, F), ``dct`` (n_lfcc, n_filter). ``forward(waveform)``:
    (..., L) -> (..., n_lfcc, n_frames).

    Examples
    --------
    >>> import torch
    >>> import specux.torch as st
    >>> st.LFCC(sample_rate=16000, n_lfcc=20)(torch.randn(16000)).shape[0]
    20
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        kwargs = _factory(self, kwargs, ("window", "filter_bank", "dct"))
        a = _merge("LFCC", specux.lfcc, kwargs, skip=("waveform",))
        from specux._filters.windows import window_for

        probe = torch.zeros(a["n_fft"], dtype=torch.float64)  # a stand-in signal: only shapes are read
        # the module's own values, checked as specux.lfcc checks them (validation names what is wrong)
        p = lfcc_params(probe, None, None, None, "boxcar", **LFCC_ARGS.from_public(a))
        self.args = a
        self.hop_length, self.win_length = p.mel.stft.hop_length, p.mel.stft.win_length
        _buffer(self, "window", window_for(_window_spec(a["window"]), self.win_length, a["n_fft"]))
        _buffer(self, "filter_bank", p.mel.basis)
        _buffer(self, "dct", p.dct)

    def forward(self, waveform: Tensor) -> Tensor:
        values = _op_values(self, LFCC_ARGS, self.args)
        return _op(self, "lfcc", waveform)(
            waveform, self.window, self.filter_bank, self.dct, "boxcar", *LFCC_ARGS.passed(values)
        )


class _ConstantQ(nn.Module):
    """Shared construction of CQT / VQT: the frame weights of every octave as buffers ``weights_<i>``
    (parameters with ``trainable=True``)."""

    _fn: Any = None
    _name = ""
    #: the op's arguments after the signal and the weights (specux::cqt's or specux::vqt's)
    _op_arguments: OpArguments = VQT_ARGS
    #: those arguments as specux::vqt's (whose parameters give the weights)
    _as_vqt: Any = staticmethod(lambda *args: args)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        kwargs = _factory(self, kwargs, ("weights", "weights_*"))
        a = _merge(self._name, type(self)._fn, kwargs, skip=("dtype",))
        if a["tuning"] is None:
            raise ValueError(
                f"{self._name}: tuning=None (estimated per signal) cannot be precomputed into buffers; give "
                "a "
                "number of bins (0.0: A440), or call the functional specux." + self._name.lower()
            )
        self.args = a
        probe = torch.zeros(1, dtype=torch.float64)
        # the module's own values, not passed as the op takes them: validation names what is wrong with them
        vqt_args = self._as_vqt(*self._op_arguments.ordered(self._values()))
        _, bases = vqt_params(probe, [], self._name, **VQT_ARGS.named(vqt_args))
        self.n_octaves = len(bases)
        names = tuple(f"weights_{i}" for i in range(self.n_octaves))
        if "weights" in self.trainable:  # one name for the weights of every octave
            self.trainable = names
        elif set(self.trainable) - set(names):
            have = ", ".join(names)
            raise ValueError(f"{self._name}: trainable {self.trainable!r}; its weights are {have}")
        for i, (w, _) in enumerate(bases):
            _buffer(self, f"weights_{i}", w)

    def _values(self) -> dict[str, Any]:
        """The module's arguments by name, the window and the intervals as the op takes them."""
        a = dict(self.args)
        w = a["window"]
        a["window"] = w if isinstance(w, str) else encode_spec(w)
        if "intervals" in a:
            a["intervals"] = intervals_arg(a["intervals"])
        return a

    def _op_args(self) -> tuple:
        """The op's arguments after the signal and the weights, in its schema's order."""
        return self._op_arguments.passed(self._values())

    def weights(self) -> list[Tensor]:
        return [getattr(self, f"weights_{i}") for i in range(self.n_octaves)]


class CQT(_ConstantQ):
    """Constant-Q transform (:func:`specux.cqt`) with the frame weights of every octave as buffers.

    Parameters
    ----------
    **kwargs
        Those of :func:`specux.cqt`, with its defaults; ``tuning`` must be a number.

    Notes
    -----
    Buffers (parameters with ``trainable=True``): ``weights_0 .. weights_<octaves - 1>`` (n_fft, 2 k), top
    octave first. ``forward(y)``: (..., n) -> complex (..., n_bins, n_frames).

    Examples
    --------
    >>> import torch
    >>> import specux.torch as st
    >>> st.CQT(sr=22050, n_bins=24, tuning=0.0)(torch.randn(22050)).shape
    torch.Size([24, 44])
    """

    _fn = specux.cqt
    _name = "CQT"
    _op_arguments = CQT_ARGS
    _as_vqt = staticmethod(_cqt_as_vqt)

    def forward(self, y: Tensor) -> Tensor:
        # on CUDA a device basis would stand in for the module's weights: refused (_op) rather than ignored
        return _op(self, "cqt", y, device=False)(y, self.weights(), *self._op_args())


class VQT(_ConstantQ):
    """Variable-Q transform (:func:`specux.vqt`) with the frame weights of every octave as buffers.

    Parameters
    ----------
    **kwargs
        Those of :func:`specux.vqt`, with its defaults; ``tuning`` must be a number.

    Notes
    -----
    Buffers: ``weights_0 ..`` as :class:`CQT`. ``forward(y)``: (..., n) -> complex (..., n_bins, n_frames).

    Examples
    --------
    >>> import torch
    >>> import specux.torch as st
    >>> st.VQT(sr=22050, n_bins=24, gamma=10.0, tuning=0.0)(torch.randn(22050)).shape
    torch.Size([24, 44])
    """

    _fn = specux.vqt
    _name = "VQT"

    def forward(self, y: Tensor) -> Tensor:
        return _op(self, "vqt", y, device=False)(y, self.weights(), *self._op_args())


class Chroma(nn.Module):
    """Chromagram from an STFT (:func:`specux.chroma_stft`) or a CQT (:func:`specux.chroma_cqt`).

    Parameters
    ----------
    source : {"stft", "cqt"}
        Which transform the chroma is folded from.
    **kwargs
        Those of :func:`specux.chroma_stft` or :func:`specux.chroma_cqt`, with their defaults. ``tuning=None``
        (their default) is estimated from each signal, so no chroma bank can be precomputed; give a number to
        have the bank (``"stft"``) or the octave weights (``"cqt"``) as buffers.

    Notes
    -----
    Buffers: ``"stft"``: ``window`` and, with a numeric tuning, ``chroma_bank`` (n_chroma, F); ``"cqt"``:
    ``weights_<i>`` per octave (numeric tuning) and ``fold`` (n_chroma, n_bins). ``forward(y)``: (..., n) ->
    (..., n_chroma, n_frames). Differentiable with respect to ``y``; traceable by torch.compile.

    On a CUDA tensor (the module moved with ``.cuda()``) ``forward`` runs the device op on the cuda backend
    (``specux::chroma_stft_device`` / ``chroma_cqt_device``, forward and adjoint kernels in place on the
    tensor) with the buffers as its constants: the window and chroma bank, or the fold. ``"cqt"`` with a
    numeric tuning refuses a CUDA tensor, as :class:`CQT` does: a device builds its own frequency-domain
    basis, which would stand in for the ``weights_<i>`` buffers.

    Examples
    --------
    >>> import torch
    >>> import specux.torch as st
    >>> st.Chroma("stft", sr=22050, tuning=0.0)(torch.randn(22050)).shape
    torch.Size([12, 44])
    """

    def __init__(self, source: str = "stft", **kwargs: Any) -> None:
        super().__init__()
        kwargs = _factory(self, kwargs)
        if source not in ("stft", "cqt"):
            raise ValueError(f"Chroma: source must be 'stft' or 'cqt'; got {source!r}")
        self.source = source
        fn = specux.chroma_stft if source == "stft" else specux.chroma_cqt
        a = _merge("Chroma", fn, kwargs)
        self.args = a
        self.weight_names: list[str] = []
        if source == "stft":
            self._init_stft(a)
        else:
            self._init_cqt(a)

    def _init_stft(self, a: dict[str, Any]) -> None:
        from specux._filters.chroma import chroma as chroma_filter
        from specux._filters.windows import window_for

        win = a["n_fft"] if a["win_length"] is None else a["win_length"]
        _buffer(self, "window", window_for(_window_spec(a["window"]), win, a["n_fft"]))
        self.register_buffer("chroma_bank", None)
        if a["tuning"] is not None:
            _buffer(
                self,
                "chroma_bank",
                chroma_filter(
                    sr=a["sr"],
                    n_fft=a["n_fft"],
                    tuning=a["tuning"],
                    n_chroma=a["n_chroma"],
                    ctroct=a["ctroct"],
                    octwidth=a["octwidth"],
                    base_c=a["base_c"],
                ),
            )

    def _init_cqt(self, a: dict[str, Any]) -> None:
        from specux._filters.constant_q import cq_to_chroma

        if a["cqt_mode"] != "full":
            raise ValueError(f"Chroma: cqt_mode must be 'full'; got {a['cqt_mode']!r}")
        bpo = a["n_chroma"] if a["bins_per_octave"] is None else a["bins_per_octave"]
        _buffer(
            self,
            "fold",
            cq_to_chroma(
                a["n_octaves"] * bpo,
                bins_per_octave=bpo,
                n_chroma=a["n_chroma"],
                fmin=a["fmin"],
                window=a["window"],
            ),
        )
        if a["tuning"] is not None:
            probe = torch.zeros(1, dtype=torch.float64)
            # sr and tuning through float() as this module has always passed them, the rest as given
            given = {**a, "sr": float(a["sr"]), "tuning": float(a["tuning"])}
            _, bases, _ = _chroma_cqt_parts(probe, [], None, **CHROMA_CQT_ARGS.from_public(given))
            for i, (w, _) in enumerate(bases):
                _buffer(self, f"weights_{i}", w)
                self.weight_names.append(f"weights_{i}")

    def forward(self, y: Tensor) -> Tensor:
        if self.source == "stft":
            args = CHROMA_STFT_ARGS.passed(self.args)
            op = _op(self, "chroma_stft", y)
            return op(y, self.window, self.chroma_bank, "boxcar", *args)
        weights = [getattr(self, n) for n in self.weight_names]
        # on CUDA a device basis would stand in for the octave weights (as for CQT): refused rather than
        # ignored; without weights (tuning=None) the device op computes with the module's fold
        op = _op(self, "chroma_cqt", y, device=not weights)
        return op(y, weights, self.fold, *CHROMA_CQT_ARGS.passed(self.args))


# --- inverses, with torchaudio's names and defaults
# -----------------------------------------------------------------


class GriffinLim(nn.Module):
    """Signal from a magnitude spectrogram by fast Griffin-Lim: torchaudio.transforms.GriffinLim's module
    (same arguments and defaults), on the ``specux::stft`` / ``specux::istft`` ops.

    Each iteration is torchaudio's (and :func:`specux.griffinlim`'s): inverse STFT of ``S * angles``, STFT
    with ``center=True`` and ``pad_mode="reflect"``, momentum ``momentum / (1 + momentum)`` against the
    previous STFT, phases ``A / (|A| + 1e-16)``; then the inverse of the last estimate.

    Parameters
    ----------
    n_fft : int
        FFT length; ``specgram`` has ``n_fft // 2 + 1`` bins.
    n_iter : int
        Iterations.
    win_length : int or None
        Window length; ``None``: ``n_fft``.
    hop_length : int or None
        Samples between frames; ``None``: ``win_length // 2`` (torchaudio's default, not librosa's).
    window_fn : callable
        ``window_fn(win_length, **wkwargs)`` returns the window (a tensor); default ``torch.hann_window``.
    power : float
        Exponent of ``specgram`` (2: power, 1: magnitude); it is raised to ``1 / power`` first.
    wkwargs : dict or None
        Keyword arguments of ``window_fn``.
    momentum : float
        In [0, 1); 0 is the original Griffin-Lim.
    length : int or None
        Samples of the output (also inside the loop, as torchaudio does).
    rand_init : bool
        Random start phases (``torch.rand`` of the complex dtype, torchaudio's, so the same torch seed gives
        its start), else zero phase.

    Notes
    -----
    Buffers: ``window`` (win_length,), as torchaudio's. ``forward(specgram)``: (..., n_fft // 2 + 1, frames)
    -> (..., time). Differentiable with respect to ``specgram``; traceable by ``torch.compile`` (fullgraph).

    Examples
    --------
    >>> import torch
    >>> import specux.torch as st
    >>> specgram = torch.rand(2, 257, 40)
    >>> st.GriffinLim(n_fft=512, n_iter=4, rand_init=False)(specgram).shape
    torch.Size([2, 9984])
    """

    def __init__(
        self,
        n_fft: int = 400,
        n_iter: int = 32,
        win_length: int | None = None,
        hop_length: int | None = None,
        window_fn: Any = torch.hann_window,
        power: float = 2.0,
        wkwargs: dict | None = None,
        momentum: float = 0.99,
        length: int | None = None,
        rand_init: bool = True,
    ) -> None:
        super().__init__()
        from specux import _validate

        name = "GriffinLim"
        m = _validate.real(momentum, "momentum", name)
        if not 0 <= m < 1:
            raise ValueError(f"{name}: momentum must be in [0, 1); got {momentum!r}")
        self.n_fft = _validate.positive_int(n_fft, "n_fft", name)
        self.n_iter = _validate.positive_int(n_iter, "n_iter", name, minimum=0)
        self.win_length = (
            n_fft if win_length is None else _validate.positive_int(win_length, "win_length", name)
        )
        if self.win_length > self.n_fft:
            raise ValueError(f"{name}: win_length={self.win_length} must be <= n_fft={self.n_fft}")
        self.hop_length = (
            max(self.win_length // 2, 1)
            if hop_length is None
            else _validate.positive_int(hop_length, "hop_length", name)
        )
        self.power = _validate.positive_float(power, "power", name)
        self.length = None if length is None else _validate.positive_int(length, "length", name)
        self.momentum = m
        self.rand_init = _validate.flag(rand_init, "rand_init", name)
        window = window_fn(self.win_length) if wkwargs is None else window_fn(self.win_length, **wkwargs)
        self.register_buffer("window", window)

    def _inverse(self, X: Tensor) -> Tensor:
        return _ops.istft(
            X,
            self.window,
            "boxcar",
            self.n_fft,
            self.hop_length,
            self.win_length,
            True,
            self.length,
            "ignore",
        )

    def _rebuild(self, X: Tensor) -> Tensor:
        frames = _ops.stft_frames(
            self._inverse(X),
            self.window,
            "boxcar",
            self.n_fft,
            self.hop_length,
            self.win_length,
            True,
            "reflect",
            "complex",
        )
        return frames.transpose(-1, -2)

    def forward(self, specgram: Tensor) -> Tensor:
        from specux._phase_retrieval import fast_griffin_lim

        if specgram.dim() < 2 or specgram.shape[-2] != self.n_fft // 2 + 1:
            raise ValueError(
                f"GriffinLim: specgram must have shape (..., {self.n_fft // 2 + 1}, frames) for "
                f"n_fft={self.n_fft}; got {tuple(specgram.shape)}"
            )
        S = specgram.pow(1 / self.power)
        cdtype = torch.complex128 if S.dtype == torch.float64 else torch.complex64
        if self.rand_init:
            angles = torch.rand(S.size(), dtype=cdtype, device=S.device)
        else:
            angles = torch.ones(S.size(), dtype=cdtype, device=S.device)
        X = fast_griffin_lim(
            S, angles, n_iter=self.n_iter, momentum=self.momentum, rebuild=self._rebuild, eps=1e-16
        )
        return self._inverse(X)


class InverseMelScale(nn.Module):
    """Linear-frequency spectrogram from a mel spectrogram by least squares: torchaudio.transforms.
    InverseMelScale's module (same arguments, defaults and result).

    Solves ``fb.T @ X = melspec`` with ``torch.linalg.lstsq`` (LAPACK's ``driver``) for every frame and clips
    negative values to zero (``relu``), where ``fb`` is torchaudio's mel bank
    (:func:`specux.filters.mel_torchaudio`). For librosa's non-negative least squares, see
    :func:`specux.mel_to_stft`.

    Parameters
    ----------
    n_stft : int
        Frequency bins of the STFT (``n_fft // 2 + 1``).
    n_mels : int
        Mel bands.
    sample_rate : int
        Sampling rate, Hz.
    f_min : float
        Lowest frequency, Hz.
    f_max : float or None
        Highest frequency, Hz; ``None``: ``sample_rate // 2``.
    norm : {None, "slaney"}
        Area normalisation of the bands.
    mel_scale : {"htk", "slaney"}
        The mel scale.
    driver : {"gels", "gelsy", "gelsd", "gelss"}
        The ``torch.linalg.lstsq`` driver (CUDA: only ``"gels"``, which assumes full rank).

    Notes
    -----
    Buffers: ``fb`` (n_stft, n_mels), float32, as torchaudio's. ``forward(melspec)``: (..., n_mels, time) ->
    (..., n_stft, time). Differentiable where ``torch.linalg.lstsq`` is (full-rank banks).

    Examples
    --------
    >>> import torch
    >>> import specux.torch as st
    >>> inv = st.InverseMelScale(n_stft=257, n_mels=64, sample_rate=16000)
    >>> inv(torch.rand(2, 64, 10)).shape
    torch.Size([2, 257, 10])
    """

    def __init__(
        self,
        n_stft: int,
        n_mels: int = 128,
        sample_rate: int = 16000,
        f_min: float = 0.0,
        f_max: float | None = None,
        norm: str | None = None,
        mel_scale: str = "htk",
        driver: str = "gels",
    ) -> None:
        super().__init__()
        from specux import _validate
        from specux.filters import mel_torchaudio

        name = "InverseMelScale"
        self.n_stft = _validate.positive_int(n_stft, "n_stft", name, minimum=2)
        self.n_mels = _validate.positive_int(n_mels, "n_mels", name)
        self.sample_rate = _validate.positive_int(sample_rate, "sample_rate", name)
        self.f_min = _validate.real(f_min, "f_min", name)
        self.f_max = float(self.sample_rate // 2) if f_max is None else _validate.real(f_max, "f_max", name)
        if self.f_min > self.f_max:
            raise ValueError(f"{name}: f_min={f_min} must be <= f_max={self.f_max}")
        self.norm = _validate.choice(norm, "norm", name, (None, "slaney"))
        self.mel_scale = _validate.choice(mel_scale, "mel_scale", name, ("htk", "slaney"))
        self.driver = _validate.choice(driver, "driver", name, ("gels", "gelsy", "gelsd", "gelss"))
        bank = mel_torchaudio(
            sr=self.sample_rate,
            n_fft=2 * (self.n_stft - 1),
            n_mels=self.n_mels,
            fmin=self.f_min,
            fmax=self.f_max,
            htk=self.mel_scale == "htk",
            norm=self.norm,
        )
        self.register_buffer("fb", torch.from_numpy(np.array(bank, dtype=np.float32).T.copy()))

    def forward(self, melspec: Tensor) -> Tensor:
        shape = melspec.shape
        if melspec.dim() < 2 or shape[-2] != self.n_mels:
            raise ValueError(
                f"InverseMelScale: melspec must have shape (..., {self.n_mels}, time) "
                f"(n_mels={self.n_mels}); got {tuple(shape)}"
            )
        x = melspec.reshape(-1, shape[-2], shape[-1])
        solution = torch.linalg.lstsq(self.fb.transpose(-1, -2)[None], x, driver=self.driver).solution
        return torch.relu(solution).reshape((*shape[:-2], self.n_stft, shape[-1]))
