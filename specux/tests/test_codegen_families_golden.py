"""Default blocks, same bits: the kernels beyond the FFT render byte-identical source with the default block.

``families_golden.json`` holds the SHA-256 of the rendered source (and the kernel name and block size) of
every spec in the structural covers of ``spectral_kernels``, ``feature_kernels``, ``cq_kernels`` and
``convolve_kernels`` (storages f16, f32, f64) in every dialect that renders it, recorded before the block
became a plan choice (:mod:`specux._codegen.blocks`). The specs are stored field by field without a block,
so each is rebuilt with the default one: the choice must not move a default kernel's text.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from specux._codegen import DIALECTS
from specux._codegen.blocks import DEFAULT_BLOCK, Blocked

GOLDEN = json.loads((Path(__file__).with_name("families_golden.json")).read_text())["kernels"]
FAMILIES = ("spectral_kernels", "feature_kernels", "cq_kernels", "convolve_kernels")


def _spec(row: dict) -> object:
    module = importlib.import_module(f"specux._codegen.{row['family']}")
    return getattr(module, row["spec"])(**row["fields"])


def test_the_golden_set_covers_every_family_and_dialect():
    assert {r["family"] for r in GOLDEN} == set(FAMILIES)
    assert {r["dialect"] for r in GOLDEN} == {"opencl", "cuda", "metal"}
    assert all("block" not in r["fields"] and r["block"] == DEFAULT_BLOCK for r in GOLDEN)


@pytest.mark.parametrize("family", FAMILIES)
def test_default_block_sources_hash_as_before_the_choice(family):
    module = importlib.import_module(f"specux._codegen.{family}")
    changed = []
    rows = [r for r in GOLDEN if r["family"] == family]
    for row in rows:
        ks = module.render(_spec(row), DIALECTS[row["dialect"]])
        digest = hashlib.sha256(ks.source.encode()).hexdigest()
        if (digest, ks.name, ks.block) != (row["sha256"], row["name"], row["block"]):
            changed.append(f"{row['dialect']} {row['spec']}{row['fields']}")
    assert rows and not changed, f"{len(changed)} {family} kernels changed, e.g. {changed[:1]}"


@pytest.mark.parametrize("family", FAMILIES)
def test_a_chosen_block_reaches_the_source_and_the_launch(family):
    """A non-default block changes the index arithmetic (the tiled kernels: their rows of threads) and the
    launch block, and nothing else."""
    module = importlib.import_module(f"specux._codegen.{family}")
    specs = [s for s in module.cover(("f32",)) if isinstance(s, Blocked) and s.block == DEFAULT_BLOCK]
    assert specs
    d = DIALECTS["opencl"]
    for spec in specs:
        base = module.render(spec, d)
        ks = module.render(replace(spec, block=64), d)
        assert ks.block == 64 and ks.name == base.name
        assert ks.source != base.source
        assert ks.source.replace(" * 64 + ", " * 256 + ").replace("k += 2)", "k += 8)") == base.source


def test_every_cover_holds_non_default_blocks():
    for family in FAMILIES:
        module = importlib.import_module(f"specux._codegen.{family}")
        blocks = {s.block for s in module.cover(("f16", "f32", "f64")) if isinstance(s, Blocked)}
        assert {64, DEFAULT_BLOCK, 1024} <= blocks, family


@pytest.mark.parametrize("bad", [0, 100, 2048, 256.0, True, "256"])
def test_a_block_outside_the_choices_is_refused_naming_the_spec(bad):
    from specux._codegen.convolve_kernels import CropSpec

    with pytest.raises(ValueError, match=r"CropSpec\.block must be one of \[32, 64, 128, 256, 512, 1024\]"):
        CropSpec(False, "f32", "f32", block=bad)
