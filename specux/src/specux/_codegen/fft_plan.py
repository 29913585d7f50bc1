"""How a one-axis transform of length n is decomposed into generated kernels (pure Python, no device).

Three shapes of plan, chosen by n alone:

``LocalPlan``
    n has only prime factors the butterflies know (2, 3, 5, 7, 11, 13) and fits one block's shared memory:
    one Stockham kernel.
``FourStepPlan``
    a smooth n too long for one block: n = n1 * n2 with both factors fitting a block. A column pass (length
    n1,
    stride n2, four-step twiddles applied on its store) and a row pass (length n2, scattered store that leaves
    the result in natural order), both on the device. This covers lengths up to ``local_max ** 2``.
``BluesteinPlan``
    n has a prime factor above 13: the chirp-z identity turns the DFT into a circular convolution of length
    m = the power of two >= 2n - 1, done with a LocalPlan or FourStepPlan of length m on the device.

The tables a plan needs (twiddles, chirp, the chirp filter's spectrum) are made here in float64 and cast to
the compute precision, so float32 kernels start from correctly rounded constants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from kernelkit.dialects import COMPUTE_OF
from specux._codegen.butterflies import RADICES
from specux._codegen.fft_kernels import (
    BluesteinPostSpec,
    BluesteinPreSpec,
    CmulTableSpec,
    StockhamSpec,
)

#: shared memory a Stockham block may use: 32 KiB fits every CUDA, Metal and OpenCL GPU in use
LOCAL_BYTES = 32768
#: the largest prime the butterflies handle; lengths with larger prime factors go through Bluestein
MAX_SMALL_PRIME = max(r for r in RADICES if r % 2)
#: upper bound on threads per transform row (and the target threads per block)
MAX_THREADS = 256

KINDS = ("c2c", "r2c", "c2r")
STORAGES = ("f16", "f32", "f64")


def complex_bytes(prec: str) -> int:
    return 16 if COMPUTE_OF[prec] == "f64" else 8


def local_max(prec: str) -> int:
    """Longest transform one block holds in its two shared buffers (2048 in float32, 1024 in float64)."""
    return LOCAL_BYTES // (2 * complex_bytes(prec))


def max_length(prec: str) -> int:
    """Longest length any plan reaches: two passes of ``local_max`` (4.2 M float32, 1 M float64)."""
    return local_max(prec) ** 2


def prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def is_smooth(n: int) -> bool:
    """True when every prime factor of ``n`` has a butterfly."""
    return all(p <= MAX_SMALL_PRIME for p in prime_factors(n))


def radices_for(n: int) -> tuple[int, ...]:
    """Stage radices of a smooth n: as many radix-8 stages as possible (fewest passes over shared memory)."""
    factors = prime_factors(n)
    twos = factors.count(2)
    pow2: list[int] = [8] * (twos // 3)
    rest = twos % 3
    if rest == 1:
        # 8 * 2 costs a weak radix-2 stage; 4 * 4 is as short and balanced
        pow2 = [*pow2[:-1], 4, 4] if pow2 else [2]
    elif rest == 2:
        pow2.append(4)
    odd = sorted(p for p in factors if p != 2)
    return tuple(pow2 + odd)


def _geometry(n: int, radices: tuple[int, ...], prec: str) -> tuple[int, int]:
    """(threads per row, rows per block): enough threads that each holds about one butterfly per stage."""
    threads = 1 if n == 1 else min(MAX_THREADS, -(-n // max(radices)))
    return threads, _max_rows(n, threads, prec, 128)


def _max_rows(n: int, threads: int, prec: str, target_threads: int) -> int:
    """Rows per block for about ``target_threads`` threads, within the shared-memory budget."""
    return max(1, min(max(1, target_threads // threads), LOCAL_BYTES // (2 * n * complex_bytes(prec))))


@dataclass(frozen=True)
class Tuning:
    """A non-default choice for the top level of a plan (what :func:`specux.plans.autotune` searches).

    ``threads`` / ``rows``: Stockham geometry of a local plan; ``split``: (n1, n2) of a four-step plan.
    """

    threads: int | None = None
    rows: int | None = None
    split: tuple[int, int] | None = None


def candidates(n: int, prec: str) -> list[Tuning]:
    """A few configurations worth timing for length ``n``; the default (``Tuning()``) comes first."""
    out = [Tuning()]
    if not is_smooth(n):
        return out
    limit = local_max(prec)
    if n <= limit:
        if n == 1:
            return out
        t0, p0 = _geometry(n, radices_for(n), prec)
        for t in sorted({max(1, t0 // 2), min(MAX_THREADS, 2 * t0)} - {t0}):
            out.append(Tuning(threads=t, rows=_max_rows(n, t, prec, 128)))
        for target in (64, 256):
            p = _max_rows(n, t0, prec, target)
            if p != p0:
                out.append(Tuning(threads=t0, rows=p))
        return out
    splits = [(n1, n // n1) for n1 in range(2, limit + 1) if n % n1 == 0 and n // n1 <= limit]
    default = _split(n, limit)
    splits.sort(key=lambda s: abs(math.log(s[0] / s[1])))
    for split in splits[:4]:
        if split != default:
            out.append(Tuning(split=split))
    return out


@dataclass(frozen=True)
class LocalPlan:
    n: int
    kernel: StockhamSpec

    def specs(self) -> list[object]:
        return [self.kernel]


@dataclass(frozen=True)
class FourStepPlan:
    n: int
    n1: int
    n2: int
    column: StockhamSpec
    row: StockhamSpec

    def specs(self) -> list[object]:
        return [self.column, self.row]


@dataclass(frozen=True)
class BluesteinPlan:
    n: int
    m: int
    pre: BluesteinPreSpec
    post: BluesteinPostSpec
    cmul: CmulTableSpec
    conv: LocalPlan | FourStepPlan

    def specs(self) -> list[object]:
        return [self.pre, *self.conv.specs(), self.cmul, self.post]


Plan = LocalPlan | FourStepPlan | BluesteinPlan


def _split(n: int, limit: int) -> tuple[int, int] | None:
    """The most balanced n = n1 * n2 with both factors at most ``limit``, or None."""
    best = None
    for n1 in range(2, math.isqrt(n) + 1):
        if n % n1 == 0:
            n2 = n // n1
            if n2 <= limit:
                best = (n1, n2)  # the last one found is the most balanced
    return best


def _smooth_plan(
    n: int, prec: str, in_storage: str, out_storage: str, nt: int, tuning: Tuning | None = None
) -> LocalPlan | FourStepPlan | None:
    limit = local_max(prec)
    tuning = tuning or Tuning()
    if n <= limit:
        radices = radices_for(n)
        threads, rows = _geometry(n, radices, prec)
        if tuning.threads is not None:
            threads = max(1, min(1024, tuning.threads))
        if tuning.rows is not None:
            rows = max(1, min(tuning.rows, LOCAL_BYTES // (2 * n * complex_bytes(prec)), 1024 // threads))
        spec = StockhamSpec(n, radices, threads, rows, prec, in_storage, out_storage, nt_in=nt, nt_out=nt)
        return LocalPlan(n, spec)
    split = _split(n, limit)
    if tuning.split is not None:
        t1, t2 = tuning.split
        if t1 * t2 != n or max(t1, t2) > limit:
            raise ValueError(f"tuning split {tuning.split} does not factor n={n} into parts <= {limit}")
        split = tuning.split
    if split is None:
        return None
    n1, n2 = split
    r1, r2 = radices_for(n1), radices_for(n2)
    t1, p1 = _geometry(n1, r1, prec)
    t2, p2 = _geometry(n2, r2, prec)
    column = StockhamSpec(
        n1,
        r1,
        t1,
        p1,
        prec,
        in_storage,
        prec,
        in_gmul=n2,
        in_b1mul=1,
        out_gmul=n2,
        out_b1mul=1,
        b1=n2,
        nt_in=n,
        nt_out=n,
        twiddle2=True,
    )
    row = StockhamSpec(
        n2,
        r2,
        t2,
        p2,
        prec,
        prec,
        out_storage,
        in_gmul=1,
        in_b1mul=n2,
        out_gmul=n1,
        out_b1mul=1,
        b1=n1,
        nt_in=n,
        nt_out=n,
    )
    return FourStepPlan(n, n1, n2, column, row)


@lru_cache(maxsize=512)
def plan(
    n: int,
    prec: str,
    in_storage: str | None = None,
    out_storage: str | None = None,
    tuning: Tuning | None = None,
) -> Plan:
    """The decomposition of a length-``n`` transform (the same for c2c, r2c and c2r: the modes are arguments).

    Parameters
    ----------
    n : int
        Transform length, >= 1.
    prec : {"f32", "f64"}
        Compute precision.
    in_storage, out_storage : {"f16", "f32", "f64"}, optional
        Storage of the caller's input and output (None: ``prec``). Intermediates use ``prec``.
    tuning : Tuning, optional
        A non-default geometry or split for the top level (from :func:`specux.plans.autotune`).
    """
    if prec not in ("f32", "f64"):
        raise ValueError(f"prec must be 'f32' or 'f64'; got {prec!r}")
    in_storage = in_storage or prec
    out_storage = out_storage or prec
    for name, st in (("in_storage", in_storage), ("out_storage", out_storage)):
        if st not in STORAGES:
            raise ValueError(f"{name} must be one of {STORAGES}; got {st!r}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int; got {n!r}")
    if n > max_length(prec):
        raise ValueError(
            f"transform length n={n} exceeds the longest {prec} transform the generated kernels reach "
            f"({max_length(prec)} = two passes of {local_max(prec)})"
        )
    if is_smooth(n):
        found = _smooth_plan(n, prec, in_storage, out_storage, n, tuning)
        if found is not None:
            return found
    m = 1 << (2 * n - 2).bit_length()  # smallest power of two >= 2n - 1
    if m > max_length(prec):
        raise ValueError(
            f"transform length n={n} needs a Bluestein convolution of length {m}, beyond the longest {prec} "
            f"transform the generated kernels reach ({max_length(prec)})"
        )
    conv = _smooth_plan(m, prec, prec, prec, m)
    assert conv is not None  # powers of two always split
    return BluesteinPlan(
        n,
        m,
        BluesteinPreSpec(prec, in_storage),
        BluesteinPostSpec(prec, out_storage),
        CmulTableSpec(prec),
        conv,
    )


# --- tables (float64 on the host, cast to the compute precision) --------------------------------------------


def _dtype(prec: str) -> np.dtype:
    return np.dtype(np.complex128 if COMPUTE_OF[prec] == "f64" else np.complex64)


#: pi in the host's long double (80-bit on x86-64 Linux; plain double where long double is double)
_PI = np.longdouble("3.14159265358979323846264338327950288419716939937510")


def _cis(num: np.ndarray, den: int) -> np.ndarray:
    """``exp(-i pi num / den)`` for integer ``num``, evaluated in long double and rounded once to complex128.

    The numerator is first reduced to (-den, den] in integers, so conjugate entries are computed from opposite
    angles and come out exactly conjugate.
    """
    r = np.mod(num, 2 * den)
    r = np.where(r > den, r - 2 * den, r)
    angle = _PI * r.astype(np.longdouble) / np.longdouble(den)
    return (np.cos(angle).astype(np.float64) - 1j * np.sin(angle).astype(np.float64)).astype(np.complex128)


def twiddles(n: int, prec: str) -> np.ndarray:
    """``exp(-2 pi i m / n)`` for m in [0, n), shape (n,)."""
    return _cis(2 * np.arange(n, dtype=np.int64), n).astype(_dtype(prec))


def chirp(n: int, prec: str) -> np.ndarray:
    """``exp(-i pi k^2 / n)``, shape (n,); k^2 is reduced mod 2n in integers so the phase stays exact."""
    k = np.arange(n, dtype=np.int64)
    return _cis((k * k) % (2 * n), n).astype(_dtype(prec))


def bluestein_filter(n: int, m: int, prec: str) -> np.ndarray:
    """Spectrum of the conjugate chirp wrapped to length m, divided by m (the inverse FFT's normalisation)."""
    k = np.arange(n, dtype=np.int64)
    w = np.conj(_cis((k * k) % (2 * n), n))
    b = np.zeros(m, dtype=np.complex128)
    b[:n] = w
    b[m - n + 1 :] = w[1:][::-1]
    return (np.fft.fft(b) / m).astype(_dtype(prec))


# --- the kernels a set of sizes needs (compile checks, warm-up) ---------------------------------------------

#: (compute precision, input storage, output storage) combinations the backends use: numpy float32 / float64,
#: numpy float16 into r2c, torch complex32 / float16 both ways
STORAGE_COMBOS = (("f32", "f32", "f32"), ("f64", "f64", "f64"), ("f32", "f16", "f32"), ("f32", "f16", "f16"))


def conformance_sizes() -> list[int]:
    """Lengths of the conformance tests: 1..128, powers of two to 2**20, primes, products of small primes."""
    sizes = set(range(1, 129)) | {2**k for k in range(21)}
    sizes |= {131, 509, 4099, 65537, 100003, 360, 1000, 2310, 3003, 6000, 30030, 194481, 4500, 5000, 60, 17}
    return sorted(sizes)


def kernel_specs(sizes: list[int], combos=STORAGE_COMBOS) -> list[object]:
    """Every distinct kernel spec the planner chooses for ``sizes`` under the storage ``combos``."""
    seen: dict[object, None] = {}
    for prec, in_st, out_st in combos:
        for n in sizes:
            if n <= max_length(prec):
                for spec in plan(n, prec, in_st, out_st).specs():
                    seen.setdefault(spec, None)
    return list(seen)


def _features(spec: StockhamSpec) -> set[tuple]:
    """What can differ structurally between Stockham kernels of one role: radices, stage count, rows per
    block,
    and whether a stage gives a thread more than one butterfly."""
    feats = {("radix", r) for r in spec.radices}
    feats.add(("stages", min(len(spec.radices), 2)))
    feats.add(("rows", spec.rows > 1))
    feats.add(("multi", any(-(-(spec.n // r) // spec.threads) > 1 for r in spec.radices)))
    return feats


def structural_cover(specs: list[object]) -> list[object]:
    """A subset of ``specs`` covering every structural variant, for quick compile checks.

    Within each role (kernel kind, precision, storages, four-step pass) specs are picked greedily until every
    radix, single- and multi-stage form, multi-row block and multi-butterfly thread seen in the role is
    covered. Specs left out differ from a picked one only in integer constants; the full list is for a slow
    run.
    """
    groups: dict[tuple, list[object]] = {}
    for spec in specs:
        if isinstance(spec, StockhamSpec):
            role = ("stockham", spec.prec, spec.in_storage, spec.out_storage, spec.twiddle2, spec.b1 > 1)
        else:
            role = (type(spec).__name__, *vars(spec).values())
        groups.setdefault(role, []).append(spec)
    picked: list[object] = []
    for members in groups.values():
        if not isinstance(members[0], StockhamSpec):
            picked.append(members[0])
            continue
        todo = set().union(*(_features(m) for m in members))
        while todo:
            best = max(members, key=lambda m: len(_features(m) & todo))
            picked.append(best)
            todo -= _features(best)
    return picked
