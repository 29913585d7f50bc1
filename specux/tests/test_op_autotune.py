"""Op-level plans on OpenCL (PoCL): the block of the generated kernels beyond the FFT, tuned and persisted.

Every block a plan may choose gives the default plan's result bit for bit (the kernels that take it compute
each item in one thread, in a fixed order, or move a tile: no arithmetic depends on the block);
:func:`specux.autotune_op` stores its winner in the ``"specux.ops"`` section of the tuning file, which later
calls, in this process after a cleared cache and in a fresh process, use (seen on the launches themselves);
entries of the wrong shape or past the device's limit are ignored with a warning; bad arguments are refused
naming the parameter; the plans in memory stay bounded. No test looks at a timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import specux
from kernelkit.tuning import TuningFileWarning
from specux import plans
from specux._codegen.blocks import CHOICES, DEFAULT_BLOCK
from specux._runtime import launch, op_tuning

#: (op, shape of the array argument(s), keyword arguments): small problems of each operation family
CASES = {
    "stft": ((2, 3000), {"n_fft": 256, "hop_length": 96, "output": "magnitude"}),
    "stft_complex": ((2, 3000), {"n_fft": 256, "pad_mode": "reflect"}),
    "istft": ((2, 129, 30), {"n_fft": 256, "hop_length": 64}),
    "melspectrogram": ((2, 3000), {"sr": 8000, "n_fft": 256, "n_mels": 32}),
    "mfcc": ((2, 3000), {"sr": 8000, "n_fft": 256, "n_mels": 32, "n_mfcc": 13}),
    "cqt": ((1, 4000), {"sr": 8000, "fmin": 200.0, "n_bins": 24}),
    "fftconvolve": (((2, 700), (2, 61)), {"mode": "same"}),
}


def _op(case: str) -> str:
    return case.split("_complex")[0]


def _inputs(case: str, dtype: str = "float32") -> tuple[np.ndarray, ...]:
    shape, _ = CASES[case]
    return plans._op_inputs(_op(case), plans._shapes(_op(case), shape), dtype)


@pytest.fixture
def opencl(require_backend, monkeypatch, tmp_path):
    """The opencl backend with a fresh cache directory and no plans in memory (before and after)."""
    backend = require_backend("opencl")
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    op_tuning.clear()
    yield backend
    op_tuning.clear()


@pytest.fixture
def launches(monkeypatch):
    """Every kernel launched from here on, as (kernel name, threads per block)."""
    seen: list[tuple[str, int]] = []
    run = launch.run

    def spy(rt, prog, n_groups, args):
        seen.append((prog.kernels[0].name, prog.kernels[0].block[0]))
        return run(rt, prog, n_groups, args)

    monkeypatch.setattr(launch, "run", spy)
    return seen


def _planned_blocks(seen: list[tuple[str, int]]) -> set[int]:
    """The blocks of the kernels a plan chooses for (not the FFT's, not the fixed reductions')."""
    fixed = ("spx_stockham", "spx_bluestein", "spx_cmul", "spx_reduce")
    return {block for name, block in seen if not name.startswith(fixed)}


def _call(case: str, *arrays: np.ndarray) -> np.ndarray:
    _, kwargs = CASES[case]
    return getattr(specux, _op(case))(*arrays, backend="opencl", **kwargs)


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_block_gives_the_default_result_bit_for_bit(opencl, launches, monkeypatch, case):
    x = _inputs(case)
    want = _call(case, *x)
    assert _planned_blocks(launches) == {DEFAULT_BLOCK}
    chosen = {"block": DEFAULT_BLOCK}

    def forced(rt, op, shape, dtype):
        return op_tuning.OpPlan(op, "opencl", rt.arch(), shape, dtype, chosen["block"], True)

    monkeypatch.setattr(op_tuning, "plan", forced)
    for block in (b for b in CHOICES if b <= opencl.runtime.max_block()):
        chosen["block"] = block
        launches.clear()
        got = _call(case, *x)
        assert _planned_blocks(launches) == {block}, block  # the plan's block reached every such kernel
        np.testing.assert_array_equal(got, want, err_msg=f"block {block}")


def test_autotune_stores_the_winner_and_later_calls_use_it(opencl, launches, tmp_path):
    case = "melspectrogram"
    shape, kwargs = CASES[case]
    report = specux.autotune_op(
        case, shape, "float32", backend="opencl", repeat=1, blocks=(64, 512), **kwargs
    )
    assert [c["block"] for c in report["candidates"]] == [64, DEFAULT_BLOCK, 512]
    assert all(c["identical"] and c["rel_l2"] == 0.0 for c in report["candidates"])
    block = report["chosen"]["block"]
    stored = json.loads((tmp_path / "tuning.json").read_text())["specux.ops"]
    assert stored == {report["key"]: {"block": block}}
    assert report["key"].startswith(f"melspectrogram|opencl|{opencl.runtime.arch()}|2x3000@")
    assert report["key"].endswith("|float32")

    op_tuning.clear()  # as a new process would: the file is read again
    launches.clear()
    x = _inputs(case)
    _call(case, *x)
    assert _planned_blocks(launches) == {block}
    listed = [p for p in plans.op_plans() if p["op"] == case]
    assert len(listed) == 1 and listed[0]["block"] == block and listed[0]["tuned"]

    # other parameters are another problem: the default plan
    launches.clear()
    specux.melspectrogram(x[0], sr=8000, n_fft=256, n_mels=40, backend="opencl")
    assert _planned_blocks(launches) == {DEFAULT_BLOCK}
    plans.clear_caches()
    assert plans.op_plans() == []


_FRESH = """
import json, sys
import numpy as np
import specux
from specux._runtime import launch
seen = []
run = launch.run
def spy(rt, prog, n, args):
    seen.append((prog.kernels[0].name, prog.kernels[0].block[0]))
    return run(rt, prog, n, args)
launch.run = spy
x = np.random.default_rng(0).standard_normal((2, 700)).astype(np.float32)
h = np.random.default_rng(1).standard_normal((2, 61)).astype(np.float32)
specux.fftconvolve(x, h, mode="same", backend="opencl")
print(json.dumps(sorted({b for n, b in seen if not n.startswith("spx_stockham")})))
"""


def test_a_fresh_process_uses_the_stored_plan(opencl, tmp_path):
    shape, kwargs = CASES["fftconvolve"]
    report = specux.autotune_op("fftconvolve", shape, backend="opencl", repeat=1, blocks=(128,), **kwargs)
    key = report["key"]
    # whichever block won, store one that is not the default so that its use shows
    op_tuning.STORE.store(key, {"block": 128})
    env = {**os.environ, "KERNELKIT_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", _FRESH], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [128]


def _bad_entries(key: str, other: str) -> dict[str, dict]:
    section = "specux.ops"
    return {
        "block not a choice": {section: {key: {"block": 100}}},
        "block too large": {section: {key: {"block": 2048}}},
        "block a str": {section: {key: {"block": "256"}}},
        "block a bool": {section: {key: {"block": True}}},
        "no block": {section: {key: {}}},
        "entry not an object": {section: {key: 128}},
        "unknown op": {section: {key.replace("stft|", "nosuchop|", 1): {"block": 64}, key: {"block": 9}}},
        "bad dtype": {section: {other + "|float8": {"block": 64}, key: {"block": 0}}},
        "bad shape": {section: {key.replace("@", "@zz"): {"block": 64}, key: {"block": -64}}},
    }


def test_wrong_shaped_entries_are_ignored_with_the_warning(opencl, launches, tmp_path):
    case = "stft"
    x = _inputs(case)
    want = _call(case, *x)
    (plan,) = [p for p in plans.op_plans() if p["op"] == "stft"]
    key = op_tuning.key(opencl.runtime, "stft", plan["shape"], plan["dtype"])
    other = key.rsplit("|", 1)[0]
    path = tmp_path / "tuning.json"
    for label, content in _bad_entries(key, other).items():
        path.write_text(json.dumps(content))
        op_tuning.clear()
        launches.clear()
        with pytest.warns(TuningFileWarning, match="tuning file .*tuning.json") as caught:
            got = _call(case, *x)
        assert len([w for w in caught if w.category is TuningFileWarning]) == 1, label
        np.testing.assert_array_equal(got, want, err_msg=label)
        assert _planned_blocks(launches) == {DEFAULT_BLOCK}, label


def test_a_block_past_the_devices_limit_is_ignored_with_the_warning(opencl, launches, monkeypatch, tmp_path):
    case = "stft"
    x = _inputs(case)
    want = _call(case, *x)
    (plan,) = [p for p in plans.op_plans() if p["op"] == "stft"]
    key = op_tuning.key(opencl.runtime, "stft", plan["shape"], plan["dtype"])
    (tmp_path / "tuning.json").write_text(json.dumps({"specux.ops": {key: {"block": 512}}}))
    op_tuning.clear()
    monkeypatch.setattr(type(opencl.runtime), "max_block", lambda self: 256)
    launches.clear()
    with pytest.warns(
        TuningFileWarning, match=r"tuning file .*block 512, more than this device allows \(256\)"
    ):
        got = _call(case, *x)
    np.testing.assert_array_equal(got, want)
    assert _planned_blocks(launches) == {DEFAULT_BLOCK}


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        (("nosuchop", (2, 100)), {}, r"autotune_op: op must be one of \['stft', "),
        (("griffinlim_cqt", (2, 100)), {}, r"autotune_op: op must be one of"),
        (("stft", (2, 1000), "int16"), {}, r"autotune_op: dtype must be one of \['float16', 'float32', "),
        (
            ("istft", (2, 129, 10), "float16"),
            {},
            r"autotune_op: dtype must be 'float32' or 'float64' for op=",
        ),
        (("stft", (2, 0)), {}, r"autotune_op: shape must be a tuple of positive ints for op='stft'"),
        (("stft", 1000), {}, r"autotune_op: shape must be a tuple of positive ints"),
        (("fftconvolve", (2, 100)), {}, r"autotune_op: shape must be a pair of shapes"),
        (("stft", (2, 1000)), {"repeat": 0}, r"repeat"),
        (("stft", (2, 1000)), {"blocks": (64, 100)}, r"every entry of blocks must be one of \[32, 64, "),
        (("stft", (2, 1000)), {"blocks": 64}, r"autotune_op: blocks must be a sequence of block sizes"),
    ],
)
def test_bad_arguments_are_refused_naming_the_parameter(opencl, args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        specux.autotune_op(*args, backend="opencl", **kwargs)


def test_the_cpu_backend_is_refused_naming_the_parameter():
    with pytest.raises(ValueError, match=r"backend must be 'cuda', 'metal' or 'opencl' .*got 'cpu'"):
        specux.autotune_op("stft", (2, 1000), backend="cpu")


def test_the_plans_in_memory_stay_bounded(opencl):
    rt = opencl.runtime
    digest = "0" * 16
    for i in range(op_tuning.MAX_PLANS + 40):
        op_tuning.plan(rt, "stft", f"1x{i + 1}@{digest}", "float32")
    kept = plans.op_plans()
    assert len(kept) == op_tuning.MAX_PLANS == 512
    assert kept[0]["shape"] == f"1x41@{digest}"  # the 40 least recently used went first
    plans.clear_caches()
    assert plans.op_plans() == []
