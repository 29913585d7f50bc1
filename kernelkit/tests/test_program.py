"""Program, KernelSignature, LaunchConfig, ObjectCode and Kernel with no device: validation, bookkeeping."""

from __future__ import annotations

import numpy as np
import pytest

from kernelkit.dialects import CUDA, OPENCL, Param
from kernelkit.program import KernelSignature, LaunchConfig, ObjectCode, Program, exact_cover


def test_launch_config_normalises_one_to_three_axes():
    one = LaunchConfig(4, 16)
    assert (one.grid3, one.block3, one.ndim, one.global_size, one.local_size) == (
        (4, 1, 1), (16, 1, 1), 1, (64,), (16,)
    )
    two = LaunchConfig([5, 6], (8, 4))
    assert two.grid == (5, 6) and two.grid3 == (5, 6, 1) and two.block3 == (8, 4, 1)
    assert two.ndim == 2 and two.global_size == (40, 24) and two.local_size == (8, 4)
    three = LaunchConfig((3, 2, 4), (4, 2, 3), shared_mem=1024)
    assert three.global_size == (12, 4, 12) and three.shared_mem == 1024
    # numpy integers are integers; the config is a value
    assert LaunchConfig(np.int64(4), np.int32(16)) == one
    assert hash(LaunchConfig((5, 6), (8, 4))) == hash(two)
    # a 2-D grid with a 1-D block: one thread along y
    assert LaunchConfig((4, 3), 8).local_size == (8, 1)


@pytest.mark.parametrize(
    "grid, block, shared, error, match",
    [
        (0, 1, 0, ValueError, "grid must be positive"),
        ((2, -1), (1, 1), 0, ValueError, "grid must be positive"),
        ((), 1, 0, ValueError, "grid must have 1 to 3 dimensions"),
        ((1, 1, 1, 1), 1, 0, ValueError, "grid must have 1 to 3 dimensions"),
        (2.0, 1, 0, TypeError, "grid must be an int or a tuple"),
        (True, 1, 0, TypeError, "grid must be an int"),
        (None, 1, 0, TypeError, "grid must be an int"),
        ((2, "x"), (1, 1), 0, TypeError, "grid must be positive integers"),
        (4, 0, 0, ValueError, "block must be positive"),
        (4, (2, 2), 0, ValueError, "block .* has more dimensions than grid"),
        (4, 8, -1, ValueError, "shared_mem must be a non-negative integer"),
        (4, 8, 1.5, ValueError, "shared_mem"),
        (4, 8, True, ValueError, "shared_mem"),
    ],
)
def test_launch_config_refuses_bad_sizes_naming_the_parameter(grid, block, shared, error, match):
    with pytest.raises(error, match=match):
        LaunchConfig(grid, block, shared)


def test_exact_cover_divides_the_first_axis():
    config = exact_cover(1000, 512)
    assert config.block3[0] == 500 and config.global_size == (1000,)
    config = exact_cover((97, 5, 3), 64)  # a prime first axis: groups of one
    assert config.block3 == (1, 1, 1) and config.global_size == (97, 5, 3)
    assert exact_cover((640, 480), 256).local_size == (160, 1)


def _program() -> Program:
    return Program(
        "...",
        OPENCL,
        (
            KernelSignature("a", (Param("x", "f32", True), Param("n", "int"))),
            KernelSignature("b", (Param("n", "i64"),), block=(64,)),
        ),
        name="two",
    )


def test_program_signatures_and_missing_kernels():
    p = _program()
    assert p.signature("b").block == (64,) and p.signature("a").params[1].kind == "int"
    with pytest.raises(KeyError, match=r"has no kernel 'c' .*it defines: a, b"):
        p.signature("c")
    # programs are values: the cache keys compiled objects by them
    assert p == _program() and hash(p) == hash(_program())
    assert Program("...", CUDA, p.kernels, name="two") != p


class _Recorder:
    """Stands in for a runtime: records launches."""

    def __init__(self):
        self.launches = []

    def launch(self, kernel, config, args):
        self.launches.append((kernel.name, config, args))


def test_object_code_kernels_and_argument_count():
    rt = _Recorder()
    code = ObjectCode(rt, _program(), {"a": "handle-a", "b": "handle-b"}, b"bin", module="module")
    assert sorted(code.kernels) == ["a", "b"] and code.kernel("a").handle == "handle-a"
    with pytest.raises(KeyError, match="compiled no kernel 'c'"):
        code.kernel("c")
    k = code.kernel("a")
    k.launch(LaunchConfig(2, 8), "buf", 16)
    assert rt.launches == [("a", LaunchConfig(2, 8), ["buf", 16])]
    with pytest.raises(TypeError, match="takes 2 arguments; got 1"):
        k.launch(LaunchConfig(2, 8), "buf")
