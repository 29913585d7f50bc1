"""Same kernels, same bits: specux's FFT templates render byte-identical source on kernelkit's dialect tables.

``codegen_golden.json`` holds the SHA-256 of the rendered source (and the kernel name and block size) of 101
kernel specs, covering every kernel kind of :mod:`specux._codegen.fft_kernels` (Stockham: local, four-step
column and row passes, one and many rows per block; Bluestein pre / post and the filter multiply) in float32,
float64 and half storage, in every dialect that computes the spec's precision (OpenCL C, CUDA C++, MSL). The
hashes were recorded with specux's own copies of the dialect tables and emitter, before the generator moved
onto :mod:`kernelkit.dialects` / :mod:`kernelkit.emitter`; the specs are stored field by field, so a change of
the planner cannot move them. A spelling change in a kernelkit table that reaches these kernels fails here.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kernelkit import dialects
from specux._codegen import fft_kernels

GOLDEN = json.loads((Path(__file__).with_name("codegen_golden.json")).read_text())["kernels"]

_SPECS = {
    "StockhamSpec": fft_kernels.StockhamSpec,
    "BluesteinPreSpec": fft_kernels.BluesteinPreSpec,
    "BluesteinPostSpec": fft_kernels.BluesteinPostSpec,
    "CmulTableSpec": fft_kernels.CmulTableSpec,
}


def _spec(row: dict) -> object:
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in row["fields"].items()}
    return _SPECS[row["spec"]](**fields)


def test_the_golden_set_covers_every_kernel_kind_dialect_and_precision():
    assert {r["spec"] for r in GOLDEN} == set(_SPECS)
    assert {r["dialect"] for r in GOLDEN} == {"opencl", "cuda", "metal"}
    assert {r["fields"]["prec"] for r in GOLDEN} == {"f32", "f64"}
    storages = {r["fields"].get(k) for r in GOLDEN for k in ("in_storage", "out_storage")}
    assert {"f16", "f32", "f64"} <= storages
    stockham = [r["fields"] for r in GOLDEN if r["spec"] == "StockhamSpec"]
    assert any(f["twiddle2"] for f in stockham) and any(f["b1"] > 1 and not f["twiddle2"] for f in stockham)
    assert any(f["rows"] > 1 for f in stockham) and len({f["n"] for f in stockham}) >= 20


@pytest.mark.parametrize("dialect", ["opencl", "cuda", "metal"])
def test_rendered_sources_hash_as_before_the_move(dialect):
    d = dialects.get(dialect)
    changed = []
    for row in (r for r in GOLDEN if r["dialect"] == dialect):
        ks = fft_kernels.render(_spec(row), d)
        digest = hashlib.sha256(ks.source.encode()).hexdigest()
        if (digest, ks.name, ks.block) != (row["sha256"], row["name"], row["block"]):
            changed.append(f"{row['spec']}{row['fields']}")
    assert not changed, f"{len(changed)} {dialect} kernels changed, e.g. {changed[0]}"


def test_specux_renders_with_kernelkit_tables():
    import specux._codegen as codegen

    for name in ("opencl", "cuda", "metal"):
        assert codegen.DIALECTS[name] is dialects.get(name)
