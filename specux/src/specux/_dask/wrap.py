"""The dask plumbing: one builder per transform, each returning a lazy ``dask.array.Array``.

Every builder checks the arguments up front by running the public front on a few zeros (so a bad argument is
the same ``ValueError`` / ``TypeError`` as without dask, raised at the call, not at compute time), works out
the output's shape, dtype and chunks exactly, and lays out tasks that each call the public front on one block
(numpy blocks run on the cpu backend, cupy blocks on cuda). Nothing is computed here.

Along batch axes blocks map independently. Along the time axis:

* framing transforms (stft, melspectrogram, chroma_stft with a given tuning, and the bands of mfcc / lfcc)
  read, per task, the frames that start in one chunk of the centre-padded signal: ``n_fft - hop`` samples
  past the chunk (:func:`specux._dask.overlap.frame_spans`);
* istft reads, per span of output samples, every frame that reaches it
  (:func:`~specux._dask.overlap.istft_spans`);
* fftconvolve reads ``n2 - 1`` samples past each span of the output (overlap-save);
* the decibel floor (``top_db``) of power_to_db / amplitude_to_db / mfcc / lfcc is one lazy reduction (the
  maximum over the whole array, or per item for torchaudio's rule) applied afterwards;
* the constant-Q family (cqt, vqt, chroma_cqt with a given tuning) computes blocks of output frames, each
  from a slice of the signal that starts at a multiple of the hop (every octave's frame grid and every
  resampler's phase are then the whole signal's) and reaches past its frames by the transform's reach: the
  octave's ``n_fft`` samples and, per resampling, the filter's reach (scipy's polyphase filter; for libsoxr
  the impulse response's support above 1e-7 of its peak, +-191 inputs for a "soxr_hq" halving, plus a
  margin), followed back through the chain of resamplings; padding only at the signal's true ends, chunks
  shorter than the halo merged (:mod:`specux._dask.constant_q`). Measured against the in-memory result:
  3.6e-16 of the peak in float64 for ``res_type=None`` / "polyphase", 1.3e-6 in float32, and 4.7e-7 in
  float64 with "soxr_hq" (libsoxr's own single-precision rounding, its FFT blocks falling elsewhere in a
  slice);
* the FFT family and anything that estimates the tuning from the whole signal (``tuning=None``) rechunk the
  axes they need whole to one chunk.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array

from specux import _arrays
from specux._dask import constant_q, overlap

# --- blocks through the public front ------------------------------------------------------------------------


def public(op: str) -> Callable[..., Any]:
    """The public function of ``op`` (``"stft"`` -> specux.stft, ``"fft.rfft"`` -> specux.fft.rfft)."""
    import specux

    obj: Any = specux
    for part in op.split("."):
        obj = getattr(obj, part)
    return obj


class Front:
    """A picklable task: ``public(op)(**{carrier: block}, **kwargs)``, then ``post`` of the result."""

    def __init__(self, op: str, carrier: str, kwargs: dict, post: Callable[[Any], Any] | None = None):
        self.op, self.carrier, self.kwargs, self.post = op, carrier, kwargs, post

    def __call__(self, block: Any, *others: Any) -> Any:
        kwargs = dict(self.kwargs)
        kwargs[self.carrier] = block
        if others:  # fftconvolve's second input, block by block
            kwargs["in2"] = others[0]
        out = public(self.op)(**kwargs)
        return out if self.post is None else self.post(out)


def probe(op: str, carrier: str, args: dict, sample: np.ndarray, **changes: Any) -> np.ndarray:
    """The front on a small numpy ``sample``: checks the arguments and gives the block's dtype and shape."""
    kwargs = {**args, **changes, carrier: sample}
    others = [k for k, v in kwargs.items() if _is_dask(v)]
    if others:  # never back into the dask route from here
        raise TypeError(f"specux.{op}: {others[0]} is a dask array too; only {carrier} may be one here")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short-signal warnings of the sample, not of the user's data
        return np.asarray(public(op)(**kwargs))


def _xp(block: Any) -> Any:
    return sys.modules["cupy"] if _arrays.is_cupy(block) else np


def _map(fn: Callable, x: Any, chunks: tuple, dtype: Any, others: tuple = (), **kw: Any) -> Any:
    """``da.map_blocks`` with the output chunks and dtype given (nothing inferred by calling ``fn``);
    ``others``: arrays whose blocks come as further arguments (map_blocks does not align them: one block along
    an axis is the same block for all)."""
    # the meta in the block library (numpy or cupy) with the output's dtype, without casting a value
    meta = np.empty_like(meta_from_array(x._meta, len(chunks)), dtype=dtype)
    return da.map_blocks(fn, x, *others, chunks=chunks, dtype=dtype, meta=meta, **kw)


def _whole(x: Any, axes: tuple[int, ...]) -> Any:
    """``x`` with ``axes`` rechunked to a single chunk (a no-op where they already are)."""
    if all(x.numblocks[a] == 1 for a in axes):
        return x
    return x.rechunk({a: -1 for a in axes})


def _sample(dtype: Any, length: int, batch: int = 0) -> np.ndarray:
    return np.zeros((*([1] * batch), length), dtype=dtype)


def _trailing(op: str, carrier: str, args: dict, dtype: Any, n_fft: int, hop: int, **changes: Any):
    """``(trailing shape of one frame, axis of the frames in it, dtype)`` of a framing transform's block."""
    one = probe(op, carrier, args, _sample(dtype, n_fft), center=False, **changes)
    two = probe(op, carrier, args, _sample(dtype, n_fft + hop), center=False, **changes)
    axis = next(i for i, (a, b) in enumerate(zip(one.shape, two.shape, strict=True)) if a != b)
    return list(one.shape), axis, one.dtype


# --- framing transforms -------------------------------------------------------------------------------------


def framed(
    op: str,
    carrier: str,
    args: dict,
    *,
    n_fft: int,
    hop: int,
    center: bool,
    pad_mode: str,
    block_op: str | None = None,
    post: Callable[[Any], Any] | None = None,
) -> Any:
    """A transform computed frame by frame over the last axis of ``args[carrier]`` (see the module doc)."""
    x = args[carrier]
    nb, length = x.ndim - 1, x.shape[-1]
    probe(op, carrier, args, _sample(x.dtype, max(n_fft, 2 * hop + 1)))  # every argument as given
    if not center and n_fft > length:
        raise ValueError(
            f"{op}: n_fft={n_fft} is larger than the signal length {length} with center=False "
            "(use a smaller n_fft, a longer signal, or center=True)"
        )
    block_op = block_op or op
    kwargs = {k: v for k, v in args.items() if k != carrier}
    frames = overlap.n_frames(length, n_fft, hop, center)
    shape, fax, dtype = _trailing(block_op, carrier, kwargs, x.dtype, n_fft, hop)
    h = n_fft // 2 if center else 0
    if x.numblocks[-1] == 1 or length <= h + 1:
        # one chunk in time (or a signal shorter than the padding, whose reflections read all of it)
        y = _whole(x, (nb,))
        shape[fax] = frames
        chunks = (*y.chunks[:-1], *((s,) for s in shape))
        return _map(Front(block_op, carrier, kwargs, post), y, chunks, dtype, **_axes(nb, 1, len(shape)))
    padded = da.pad(x, [(0, 0)] * nb + [(h, h)], mode=pad_mode) if h else x
    cuts = overlap.bounds(x.chunks[-1])
    edges = [0, *(c + h for c in cuts[1:-1]), length + 2 * h]
    block_kwargs = {**kwargs, "center": False}
    parts = []
    for t0, t1, a, b in overlap.frame_spans(edges, frames, hop, n_fft):
        piece = padded[..., a:b].rechunk({nb: -1})
        shape[fax] = t1 - t0
        chunks = (*piece.chunks[:-1], *((s,) for s in shape))
        fn = Front(block_op, carrier, block_kwargs, post)
        parts.append(_map(fn, piece, chunks, dtype, **_axes(nb, 1, len(shape))))
    return da.concatenate(parts, axis=nb + fax)


def _axes(nb: int, n_in: int, n_out: int) -> dict:
    """map_blocks' ``new_axis`` / ``drop_axis`` for trailing axes ``n_in`` -> ``n_out`` after ``nb`` batch
    axes (the input's last axis becomes the output's frames or samples)."""
    if n_out > n_in:
        return {"new_axis": list(range(nb + n_in - 1, nb + n_out - 1))}
    if n_out < n_in:
        return {"drop_axis": list(range(nb, nb + n_in - n_out))}
    return {}


def _along_frames(op: str, carrier: str, args: dict, feature_axes: int = 1) -> Any:
    """A transform of a spectrogram (..., F, T) that acts frame by frame: T keeps its chunks, F is whole."""
    S = args[carrier]
    nb = S.ndim - 2
    kwargs = {k: v for k, v in args.items() if k != carrier}
    sample = np.zeros((S.shape[-2], 1), dtype=S.dtype)
    one = probe(op, carrier, kwargs, sample)
    S = _whole(S, (nb,))
    chunks = (*S.chunks[:nb], (one.shape[-2],), S.chunks[-1])
    return _map(Front(op, carrier, kwargs), S, chunks, one.dtype)


def _one_chunk(op: str, carrier: str, args: dict, out_trailing: tuple[int, ...], dtype: Any, axes) -> Any:
    """``args[carrier]`` with ``axes`` whole, each block through the front; the last axis becomes the output's
    trailing axes ``out_trailing``."""
    x = _whole(args[carrier], axes)
    nb = x.ndim - 1
    kwargs = {k: v for k, v in args.items() if k != carrier}
    chunks = (*x.chunks[:-1], *((s,) for s in out_trailing))
    return _map(Front(op, carrier, kwargs), x, chunks, dtype, **_axes(nb, 1, len(out_trailing)))


# --- the transforms -----------------------------------------------------------------------------------------


def _stft(op: str, args: dict) -> Any:
    n_fft = args["n_fft"]
    win = n_fft if args["win_length"] is None else args["win_length"]
    hop = max(win // 4, 1) if args["hop_length"] is None else args["hop_length"]
    _check_ints(op, n_fft=n_fft, hop_length=hop)
    return framed(op, "y", args, n_fft=n_fft, hop=hop, center=args["center"], pad_mode=args["pad_mode"])


def _check_ints(op: str, **values: Any) -> None:
    """Sizes the chunk arithmetic needs, checked before it (the front checks them again, with its words)."""
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise (TypeError if not isinstance(v, (int, np.integer)) else ValueError)(
                f"specux.{op}: {name} must be a positive integer; got {v!r}"
            )


def _mel_frames(op: str, args: dict) -> tuple[int, int, str]:
    """``(n_fft, hop, pad_mode)`` of melspectrogram / mfcc, resolved as
    :func:`specux._spec.features.mel_validate` does."""
    from specux._spec.features import resolve

    compat = args["compat"]
    n_fft = resolve(compat, "n_fft", args["n_fft"])
    hop = args["hop_length"]
    if hop is None:
        if compat == "torchaudio":
            win = n_fft if args["win_length"] is None else args["win_length"]
            _check_ints(op, win_length=win)
            hop = max(win // 2, 1)
        else:
            hop = 512
    _check_ints(op, n_fft=n_fft, hop_length=hop)
    return n_fft, hop, resolve(compat, "pad_mode", args["pad_mode"])


def _melspectrogram(op: str, args: dict) -> Any:
    if args["y"] is None or args["S"] is not None:
        _exactly_one(op, args, "y", "S")
        return _along_frames(op, "S", args)
    n_fft, hop, pad_mode = _mel_frames(op, args)
    return framed(op, "y", args, n_fft=n_fft, hop=hop, center=args["center"], pad_mode=pad_mode)


def _exactly_one(op: str, args: dict, a: str, b: str) -> None:
    if (args[a] is None) == (args[b] is None):
        # the front's own message, from numpy stand-ins (the dask arrays would come back here)
        stand_ins = {k: np.zeros((2, 8), v.dtype) for k, v in args.items() if _is_dask(v)}
        public(op)(**{**args, **stand_ins})


def _mfcc(op: str, args: dict) -> Any:
    if args["y"] is None or args["S"] is not None:
        _exactly_one(op, args, "y", "S")
        return _along_frames(op, "S", args)
    y = args["y"]
    if max(y.numblocks) == 1:  # one block: the front itself (the dB floor reads the whole array)
        n_fft, hop, _ = _mel_frames(op, args)
        return framed(op, "y", args, n_fft=n_fft, hop=hop, center=args["center"], pad_mode="constant")
    probe(op, "y", args, _sample(y.dtype, 4096))  # every argument checked before anything is built
    from specux._spec.features import resolve

    compat = args["compat"]
    mel_names = ("sr", "n_fft", "hop_length", "win_length", "window", "center", "pad_mode", "power", "n_mels")
    mel_args = {k: args[k] for k in (*mel_names, "fmin", "fmax", "htk", "compat", "backend")}
    bands = public("melspectrogram")(y, norm=args["mel_norm"], **mel_args)
    if compat == "torchaudio":
        logged = torchaudio_db(bands, args["top_db"])
    else:
        logged = power_to_db_lazy(bands, 1.0, 1e-10, args["top_db"])
    n_mfcc = resolve(compat, "n_mfcc", args["n_mfcc"])
    return public("mfcc")(
        S=logged,
        n_mfcc=n_mfcc,
        dct_type=args["dct_type"],
        norm=args["norm"],
        lifter=args["lifter"],
        backend=args["backend"],
    )


class LinearBands:
    """lfcc's filter-bank energies of one block: the linear bank times ``|stft| ** power`` (a task)."""

    def __init__(self, args: dict):
        self.args = args

    def __call__(self, block: Any) -> Any:
        import specux
        from specux._backends.cpu.stft import _power_tf

        a = self.args
        X = specux.stft(
            block,
            n_fft=a["n_fft"],
            hop_length=a["hop_length"],
            win_length=a["win_length"],
            window=a["window"],
            center=False,
            backend=a["backend"],
        )
        basis = specux.filters.linear(
            sr=a["sample_rate"], n_fft=a["n_fft"], n_filter=a["n_filter"], f_min=a["f_min"], f_max=a["f_max"]
        )
        xp = _xp(block)
        power = _power_tf(X, float(a["power"]))
        return xp.matmul(xp.asarray(basis.astype(power.dtype, copy=False)), power)


def _lfcc(op: str, args: dict) -> Any:
    y = args["waveform"]
    n_fft = args["n_fft"]
    win = n_fft if args["win_length"] is None else args["win_length"]
    _check_ints(op, n_fft=n_fft, win_length=win)
    hop = max(win // 2, 1) if args["hop_length"] is None else args["hop_length"]
    _check_ints(op, hop_length=hop)
    if max(y.numblocks) == 1:  # one block: the front itself (the dB floor reads every item whole)
        return framed(op, "waveform", args, n_fft=n_fft, hop=hop, center=args["center"], pad_mode="constant")
    probe(op, "waveform", args, _sample(y.dtype, max(n_fft, 2 * hop + 1)))
    resolved = {**args, "hop_length": hop}
    bands = _framed_fn(y, LinearBands(resolved), args, n_fft, hop)
    if args["log_lf"]:
        logged = da.log(bands + bands.dtype.type(1e-6))
    else:
        logged = torchaudio_db(bands, 80.0)
    return public("mfcc")(
        S=logged, n_mfcc=args["n_lfcc"], dct_type=2, norm=args["norm"], lifter=0.0, backend=args["backend"]
    )


def _framed_fn(y: Any, fn: Callable, args: dict, n_fft: int, hop: int) -> Any:
    """:func:`framed` for a task function that is not a public front (lfcc's bands), (..., bands, T)."""
    nb, length = y.ndim - 1, y.shape[-1]
    center, pad_mode = args["center"], args["pad_mode"]
    one = fn(_sample(y.dtype, n_fft))
    h = n_fft // 2 if center else 0
    frames = overlap.n_frames(length, n_fft, hop, center)
    padded = da.pad(y, [(0, 0)] * nb + [(h, h)], mode=pad_mode) if h else y
    cuts = overlap.bounds(y.chunks[-1])
    edges = [0, *(c + h for c in cuts[1:-1]), length + 2 * h]
    parts = []
    for t0, t1, a, b in overlap.frame_spans(edges, frames, hop, n_fft):
        piece = padded[..., a:b].rechunk({nb: -1})
        chunks = (*piece.chunks[:-1], (one.shape[-2],), (t1 - t0,))
        parts.append(_map(fn, piece, chunks, one.dtype, new_axis=[nb]))
    return da.concatenate(parts, axis=-1)


def _chroma_stft(op: str, args: dict) -> Any:
    if args["y"] is None or args["S"] is not None:
        _exactly_one(op, args, "y", "S")
        args = {**args, "y": None}  # the front uses S when given, not y
        if args["tuning"] is None:  # estimated from the whole spectrogram, batch included
            S = args["S"]
            one = probe(op, "S", args, np.zeros((S.shape[-2], 1), S.dtype))
            return _whole_array(op, "S", args, np.empty((one.shape[-2], S.shape[-1]), one.dtype))
        return _along_frames(op, "S", args)
    n_fft, hop = args["n_fft"], args["hop_length"]
    _check_ints(op, n_fft=n_fft, hop_length=hop)
    if args["tuning"] is None:  # estimated from the whole signal, batch included: one task
        y = args["y"]
        one = probe(op, "y", args, _sample(y.dtype, max(n_fft, 2 * hop + 1)))
        frames = overlap.n_frames(y.shape[-1], n_fft, hop, args["center"])
        return _whole_array(op, "y", args, np.empty((*one.shape[:-1], frames), one.dtype))
    return framed(op, "y", args, n_fft=n_fft, hop=hop, center=args["center"], pad_mode=args["pad_mode"])


def _whole_array(op: str, carrier: str, args: dict, like: np.ndarray) -> Any:
    """The front on the whole array as one block (a transform that reads all of it: the tuning estimate);
    ``like`` gives the trailing shape and dtype of the result for one signal."""
    x = args[carrier]
    whole = x.rechunk(-1) if max(x.numblocks, default=1) > 1 else x
    nb = x.ndim - (like.ndim if carrier != "y" else 1)
    kwargs = {k: v for k, v in args.items() if k != carrier}
    chunks = (*((s,) for s in x.shape[:nb]), *((s,) for s in like.shape))
    n_in = x.ndim - nb
    return _map(Front(op, carrier, kwargs), whole, chunks, like.dtype, **_axes(nb, n_in, like.ndim))


def _constant_q(op: str, args: dict) -> Any:
    """cqt / vqt / chroma_cqt from a signal: blocks of output frames along time, each read with the halo the
    transform needs (:mod:`specux._dask.constant_q`); batch blocks independent."""
    if op == "chroma_cqt" and (args["y"] is None or args["C"] is not None):
        _exactly_one(op, args, "y", "C")
        return _along_frames(op, "C", {**args, "y": None})  # the front uses C when given, not y
    y = args["y"]
    hop = args["hop_length"]
    _check_ints(op, hop_length=hop)
    one = probe(op, "y", args, _sample(y.dtype, 4 * hop))
    if args["tuning"] is None:  # estimated from the whole signal, batch included
        trailing = (one.shape[-2], 1 + y.shape[-1] // hop)
        return _whole_array(op, "y", args, np.empty(trailing, one.dtype))
    lay = constant_q.layout(_vqt_params(op, args, y.dtype))
    n, nb = y.shape[-1], y.ndim - 1
    trailing = (one.shape[-2], lay.block_frames(n))
    kwargs = {k: v for k, v in args.items() if k != "y"}
    # wrap padding reads the signal's other end, which a slice at one end does not hold
    wraps = args.get("pad_mode") == "wrap"
    split = y.numblocks[-1] > 1 and args["res_type"] in constant_q.SPLIT_RES_TYPES and not wraps
    tasks = constant_q.spans(lay, overlap.bounds(y.chunks[-1]), n) if split else []
    if len(tasks) <= 1:
        return _one_chunk(op, "y", args, trailing, one.dtype, (nb,))
    parts = []
    for t0, t1, a, b in tasks:
        piece = y[..., a:b].rechunk({nb: -1})
        lo = t0 - a // hop
        chunks = (*piece.chunks[:-1], (trailing[0],), (t1 - t0,))
        fn = Front(op, "y", kwargs, _Slice(lo, lo + t1 - t0))
        parts.append(_map(fn, piece, chunks, one.dtype, **_axes(nb, 1, 2)))
    return da.concatenate(parts, axis=-1)


def _vqt_params(op: str, args: dict, dtype: Any) -> Any:
    """The :class:`specux._validate.VqtParams` of a constant-Q call with a given tuning (checked already)."""
    import inspect

    from specux._spec.cqt import validate_vqt

    names = (
        "sr", "hop_length", "fmin", "n_bins", "intervals", "gamma", "bins_per_octave", "tuning",
        "filter_scale", "norm", "sparsity", "window", "scale", "pad_mode", "res_type", "dtype",
    )  # fmt: skip
    if op == "vqt":
        kw = {k: args[k] for k in names}
    else:
        kw = {k: p.default for k, p in inspect.signature(public("cqt")).parameters.items() if k in names}
        kw.update(intervals="equal", gamma=0)
        if op == "cqt":
            kw.update({k: args[k] for k in names if k in args})
        else:  # chroma_cqt's window and norm are the fold's, not the transform's
            kw.update({k: args[k] for k in ("sr", "hop_length", "fmin", "tuning", "res_type")})
            bpo = args["n_chroma"] if args["bins_per_octave"] is None else args["bins_per_octave"]
            kw.update(n_bins=args["n_octaves"] * bpo, bins_per_octave=bpo)
    return validate_vqt(_sample(dtype, 4 * args["hop_length"]), op, **kw)[1]


def _istft(op: str, args: dict) -> Any:
    D = args["stft_matrix"]
    nb = D.ndim - 2
    kwargs = {k: v for k, v in args.items() if k != "stft_matrix"}
    n_bins, frames = D.shape[-2], D.shape[-1]
    n_fft = 2 * (n_bins - 1) if args["n_fft"] is None else args["n_fft"]
    win = n_fft if args["win_length"] is None else args["win_length"]
    _check_ints(op, n_fft=n_fft, win_length=win)
    hop = max(win // 4, 1) if args["hop_length"] is None else args["hop_length"]
    _check_ints(op, hop_length=hop)
    one = probe(op, "stft_matrix", kwargs, np.zeros((n_bins, min(max(frames, 1), 4)), D.dtype))  # checks args
    center = args["center"]
    start = n_fft // 2 if center else 0
    if args["length"] is not None:
        length = args["length"]
        padded = length + 2 * start
        frames = min(frames, -(-padded // hop))
        D = D[..., :frames]
    else:
        length = n_fft + hop * (frames - 1) - 2 * start
    dtype = one.dtype
    D = _whole(D, (nb,))
    if D.numblocks[-1] == 1 or args["nola"] == "raise":
        # nola="raise" checks every sample's squared-window sum: one task along time sees them all
        D = _whole(D, (nb + 1,))
        chunks = (*D.chunks[:nb], (length,))
        return _map(Front(op, "stft_matrix", kwargs), D, chunks, dtype, drop_axis=[nb])
    block_kwargs = {**kwargs, "center": False, "length": None, "n_fft": n_fft, "hop_length": hop}
    parts = []
    for a, b, t0, t1 in overlap.istft_spans(overlap.bounds(D.chunks[-1]), frames, hop, n_fft, start, length):
        if t1 <= t0:
            parts.append(da.zeros((*D.shape[:nb], b - a), dtype=dtype, chunks=(*D.chunks[:nb], (b - a,))))
            continue
        lo = a + start - t0 * hop
        piece = D[..., t0:t1].rechunk({nb + 1: -1})
        fn = Front(op, "stft_matrix", block_kwargs, _Slice(lo, lo + b - a))
        parts.append(_map(fn, piece, (*piece.chunks[:nb], (b - a,)), dtype, drop_axis=[nb]))
    return da.concatenate(parts, axis=-1)


class _Slice:
    """``out[..., lo:hi]`` (a picklable post-step of a task)."""

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi

    def __call__(self, out: Any) -> Any:
        return out[..., self.lo : self.hi]


# --- the FFT family -----------------------------------------------------------------------------------------

_ONE_D = {"fft", "ifft", "rfft", "irfft", "hfft", "ihfft"}


def _fft_length(name: str, m: int, n: int | None, last: bool) -> int:
    """Output length along a transformed axis of input length ``m`` (``last``: the n-D transforms' last
    axis, the only one a real transform changes)."""
    real_fwd = name in ("rfft", "ihfft", "rfftn", "rfft2")
    real_inv = name in ("irfft", "hfft", "irfftn", "irfft2")
    if real_inv and last:
        return 2 * (m - 1) if n is None else n
    size = m if n is None else n
    return size // 2 + 1 if real_fwd and last else size


def _fft(op: str, args: dict) -> Any:
    name = op.removeprefix("fft.")
    a = args["a"]
    one = probe(op, "a", args, np.zeros((4,) * a.ndim, a.dtype), **_small_sizes(name, args, a.ndim))
    if name in _ONE_D:
        axes, sizes = [args["axis"] % a.ndim], [args["n"]]
    else:
        s, axes = args["s"], args["axes"]
        if axes is None:
            axes = list(range(a.ndim)) if s is None else list(range(a.ndim - len(s), a.ndim))
        axes = [ax % a.ndim for ax in axes]
        sizes = [None] * len(axes) if s is None else list(s)
    x = _whole(a, tuple(axes))
    chunks = list(x.chunks)
    for i, (ax, n) in enumerate(zip(axes, sizes, strict=True)):
        chunks[ax] = (_fft_length(name, a.shape[ax], n, i == len(axes) - 1),)
    kwargs = {k: v for k, v in args.items() if k != "a"}
    return _map(Front(op, "a", kwargs), x, tuple(chunks), one.dtype)


def _small_sizes(name: str, args: dict, ndim: int) -> dict:
    """Arguments of the dtype probe: the sizes ``n`` / ``s`` dropped (the probe's axes are 4 long)."""
    if name in _ONE_D:
        return {"n": None}
    return {
        "s": None,
        "axes": args["axes"]
        if args["axes"] is not None or args["s"] is None
        else tuple(range(ndim - len(args["s"]), ndim)),
    }


# --- fftconvolve --------------------------------------------------------------------------------------------


def _fftconvolve(op: str, args: dict) -> Any:
    in1, in2, mode, axes = args["in1"], args["in2"], args["mode"], args["axes"]
    kwargs = {k: v for k, v in args.items() if k not in ("in1", "in2")}
    in1 = in1 if _is_dask(in1) else da.asarray(in1)
    in2_d = in2 if _is_dask(in2) else da.asarray(in2)
    if in1.ndim != in2_d.ndim:
        public(op)(np.zeros((1,) * in1.ndim, in1.dtype), np.zeros((1,) * in2_d.ndim, in2_d.dtype), mode, axes)
    nd = in1.ndim
    small = [1] * nd
    conv = list(range(nd)) if axes is None else [ax % nd for ax in np.atleast_1d(axes).tolist()]
    for ax in conv:
        small[ax] = 2
    one = probe(op, "in1", {**kwargs, "in2": np.zeros(small, in2_d.dtype)}, np.zeros(small, in1.dtype))
    conv = sorted(set(conv))
    batch = [ax for ax in range(nd) if ax not in conv]
    out_batch = np.broadcast_shapes(*(tuple(v.shape[ax] for ax in batch) for v in (in1, in2_d)))
    shape1 = list(in1.shape)
    for ax, n in zip(batch, out_batch, strict=True):
        shape1[ax] = n
    if tuple(shape1) != in1.shape:
        in1 = da.broadcast_to(in1, tuple(shape1))
    n1 = [in1.shape[ax] for ax in conv]
    n2 = [in2_d.shape[ax] for ax in conv]
    # in2: whole along the convolved axes, and along batch axes where it has the full size chunked as in1
    chunks2 = [
        in1.chunks[ax] if (ax in batch and in2_d.shape[ax] == in1.shape[ax]) else -1 for ax in range(nd)
    ]
    in2_d = in2_d.rechunk(tuple(chunks2))
    tiled = max(conv, key=lambda ax: in1.numblocks[ax])
    i = conv.index(tiled)
    plain = (
        in1.numblocks[tiled] == 1 or min(n1) < 1 or (mode == "valid" and any(a < b for a, b in zip(n1, n2)))
    )
    x = _whole(in1, tuple(ax for ax in conv if plain or ax != tiled))
    chunks = list(x.chunks)
    for ax, a, b in zip(conv, n1, n2, strict=True):
        o0, o1 = overlap.convolve_range(a, b, mode) if not (mode == "valid" and a < b) else (a - 1, b)
        chunks[ax] = (o1 - o0,)
    if plain:
        return _map(Front(op, "in1", kwargs), x, tuple(chunks), one.dtype, (in2_d,))
    K = n2[i]
    widths = [(K - 1, K - 1) if ax == tiled else (0, 0) for ax in range(nd)]
    padded = x if K == 1 else da.pad(x, widths, mode="constant")
    others = [(ax, overlap.convolve_range(a, b, mode)) for ax, a, b in zip(conv, n1, n2, strict=True)]
    parts = []
    for s, e in overlap.convolve_spans(overlap.bounds(in1.chunks[tiled]), K, mode):
        index = [slice(None)] * nd
        index[tiled] = slice(s, e + K - 1)
        piece = padded[tuple(index)].rechunk({tiled: -1})
        keep = [slice(None)] * nd
        for ax, (o0, o1) in others:
            keep[ax] = slice(K - 1, K - 1 + e - s) if ax == tiled else slice(o0, o1)
        fn = Front(op, "in1", {**kwargs, "mode": "full"}, _Keep(tuple(keep)))
        piece_chunks = list(chunks)
        piece_chunks[tiled] = (e - s,)
        piece_chunks = [piece.chunks[ax] if ax in batch else piece_chunks[ax] for ax in range(nd)]
        parts.append(_map(fn, piece, tuple(piece_chunks), one.dtype, (in2_d,)))
    return da.concatenate(parts, axis=tiled)


class _Keep:
    """``out[index]`` (a picklable post-step of a task)."""

    def __init__(self, index: tuple):
        self.index = index

    def __call__(self, out: Any) -> Any:
        return out[self.index]


def _is_dask(x: Any) -> bool:
    return isinstance(x, da.Array)


# --- decibels -----------------------------------------------------------------------------------------------


class _RefValue:
    """``|ref(magnitude)|`` checked as :func:`specux.convert._ref_value` does, on the computed reference."""

    def __call__(self, value: Any) -> np.ndarray:
        from specux.convert import _ref_value

        return np.asarray(_ref_value(lambda _: np.asarray(value).item(), np.zeros(1), "power_to_db"))


def _db_lazy(magnitude: Any, ref: Any, amin: float, top_db: float | None, square: bool) -> Any:
    """The decibels of :func:`specux.convert._power_to_db_numpy` (``square``: of ``magnitude ** 2``, as
    amplitude_to_db computes them), the ``top_db`` floor one lazy maximum over the whole array."""
    if callable(ref):
        value = ref(magnitude)
        value = da.asarray(value).map_blocks(_RefValue(), dtype=np.float64, meta=np.empty((), np.float64))
    else:
        value = float(np.abs(ref))
    power = da.square(magnitude) if square else magnitude
    if square:
        value, amin = value**2, amin**2
    dt = power.dtype.type
    log_spec = 10.0 * da.log10(da.maximum(power, dt(amin)))
    offset = 10.0 * (da.log10(da.maximum(amin, value)) if _is_dask(value) else np.log10(max(amin, value)))
    log_spec = log_spec - (offset.astype(power.dtype) if _is_dask(offset) else dt(offset))
    if top_db is None or log_spec.size == 0:
        return log_spec
    peak = da.nanmax(log_spec)
    floor = (peak - top_db).astype(log_spec.dtype)
    return da.where(da.isfinite(peak), da.maximum(log_spec, floor), log_spec)


def power_to_db_lazy(S: Any, ref: Any, amin: float, top_db: float | None) -> Any:
    magnitude = da.absolute(S) if np.iscomplexobj(S._meta) else S
    if not np.issubdtype(magnitude.dtype, np.floating):
        magnitude = magnitude.astype(np.float64)
    return _db_lazy(magnitude, ref, amin, top_db, square=False)


def torchaudio_db(x: Any, top_db: float | None) -> Any:
    """:func:`specux._backends.cpu.features._torchaudio_db` lazily: the floor per item of the last three
    axes."""
    db = 10.0 * da.log10(da.maximum(x, x.dtype.type(1e-10)))
    if top_db is None or db.size == 0:
        return db
    axes = tuple(range(-min(db.ndim, 3), 0)) if db.ndim > 2 else tuple(range(db.ndim))
    peak = da.nanmax(db, axis=axes, keepdims=True)
    return da.maximum(db, (peak - top_db).astype(db.dtype))


def _convert(op: str, args: dict) -> Any:
    S = args["S"] if "S" in args else args["S_db"]
    carrier = "S" if "S" in args else "S_db"
    if not _is_dask(S):
        S = da.asarray(S)
    kwargs = {k: v for k, v in args.items() if k != carrier}
    if kwargs.get("backend", "auto") not in ("auto", "cpu"):
        # the lazy conversion is dask's own array arithmetic, chunk by chunk where the chunks live (cupy
        # chunks on their GPU): a named device backend would not be used, so it is refused, not ignored
        raise ValueError(
            f"specux.{op} of a dask array: backend must be 'auto' or 'cpu' (the conversion runs as dask "
            f"array operations on each chunk, on the GPU for cupy-backed chunks); got {kwargs['backend']!r}"
        )
    one = probe(
        op,
        carrier,
        {**kwargs, "ref": 1.0} if callable(args.get("ref")) else kwargs,
        np.ones((1,) * max(S.ndim, 1), S.dtype),
    )
    if op in ("db_to_power", "db_to_amplitude"):
        return _map(Front(op, carrier, kwargs), S, S.chunks, one.dtype)
    if np.iscomplexobj(S._meta):
        from specux.convert import _warn_complex

        _warn_complex(True, op, "np.abs(S) ** 2" if op == "power_to_db" else "np.abs(S)", S.dtype)
    if op == "power_to_db":
        return power_to_db_lazy(S, args["ref"], args["amin"], args["top_db"])
    magnitude = da.absolute(S)
    if not np.issubdtype(magnitude.dtype, np.floating):
        magnitude = magnitude.astype(np.float64)
    return _db_lazy(magnitude, args["ref"], args["amin"], args["top_db"], square=True)


_BUILDERS: dict[str, Callable[[str, dict], Any]] = {
    "stft": _stft,
    "istft": _istft,
    "melspectrogram": _melspectrogram,
    "mfcc": _mfcc,
    "lfcc": _lfcc,
    "chroma_stft": _chroma_stft,
    "chroma_cqt": _constant_q,
    "cqt": _constant_q,
    "vqt": _constant_q,
    "fftconvolve": _fftconvolve,
    "power_to_db": _convert,
    "amplitude_to_db": _convert,
    "db_to_power": _convert,
    "db_to_amplitude": _convert,
}


def _tuning(op: str, args: dict) -> Any:
    """estimate_tuning / pitch_tuning: one number from the whole array, a lazy 0-d array of one task (its
    arguments are checked when it runs: an estimate of zeros says nothing about them)."""
    carrier = next(name for name in CARRIERS.get(op, ("frequencies",)) if _is_dask(args.get(name)))
    x = args[carrier]
    kwargs = {k: v for k, v in args.items() if k != carrier}
    whole = x.rechunk(-1) if max(x.numblocks, default=1) > 1 else x
    task = dask.delayed(Front(op, carrier, kwargs, np.float64))(whole)
    return da.from_delayed(task, shape=(), dtype=np.float64, meta=np.empty((), np.float64))


_BUILDERS["estimate_tuning"] = _tuning
_BUILDERS["pitch_tuning"] = _tuning

#: the parameters that may carry the data (a dask array anywhere else is refused); default: the first
CARRIERS = {
    "melspectrogram": ("y", "S"),
    "mfcc": ("y", "S"),
    "chroma_stft": ("y", "S"),
    "chroma_cqt": ("y", "C"),
    "estimate_tuning": ("y", "S"),
    "fftconvolve": ("in1", "in2"),
}


def call(op: str, args: dict) -> Any:
    """The lazy result of public ``op`` with the bound arguments ``args``, one of which is a dask array."""
    builder = _fft if op.startswith("fft.") else _BUILDERS.get(op)
    if builder is None:
        from specux.errors import UnsupportedOperationError

        raise UnsupportedOperationError(f"specux.{op}: dask arrays are not supported by this function")
    carriers = CARRIERS.get(op, (next(iter(args)),))
    if not any(_is_dask(args.get(name)) for name in carriers):
        name = next(k for k, v in args.items() if _is_dask(v))
        raise TypeError(
            f"specux.{op}: {name} is a dask array; only {' or '.join(carriers)} may be one (pass {name} as a "
            "numpy array)"
        )
    return builder(op, args)
