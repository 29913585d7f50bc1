"""The metal backend: every kernel's MSL passes a C++ syntax check against a small stub of ``metal_stdlib``,
and off macOS the backend's reason is the true one.

The check is weak, and labelled so (as specux's): MSL is C++14 with address spaces and attributes, so with
``device`` / ``constant`` / ``kernel`` defined away and ``[[buffer(i)]]`` and the thread-position attributes
ignored, g++ catches typos, undeclared names, type and arity errors in the generated text. It cannot catch
Metal's own rules or anything about results; the metal backend has never run (it needs macOS and an Apple
GPU). A missing C++ compiler is a skip, and a failure where ``msl`` is listed in ``VIDMAG_REQUIRE_BACKENDS``
or ``KERNELKIT_REQUIRE_DEVICES``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

from vidmag.backend import registry
from vidmag.backend.kernels.templates import KERNELS, program

# the shared helpers (vidmag/tests/_backend_support.py), by path: pytest imports with --import-mode=importlib
_SUPPORT = Path(__file__).with_name("_backend_support.py")
_spec = importlib.util.spec_from_file_location("_backend_support", _SUPPORT)
support = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(support)

CXX = shutil.which("g++") or shutil.which("clang++")

STUB = support.MSL_STUB_HEAD + "}\n"


@pytest.fixture(scope="module")
def stub_dir(tmp_path_factory):
    if CXX is None:
        listed = set()
        for variable in ("VIDMAG_REQUIRE_BACKENDS", "KERNELKIT_REQUIRE_DEVICES"):
            listed |= {n.strip() for n in os.environ.get(variable, "").split(",")}
        message = "no C++ compiler (g++ or clang++) for the MSL syntax check"
        if "msl" in listed:
            pytest.fail(f"{message} (msl is required)")
        pytest.skip(message)
    d = tmp_path_factory.mktemp("metal_stub")
    (d / "metal_stdlib").write_text(STUB)
    return d


@pytest.mark.parametrize("name", list(KERNELS))
def test_every_kernel_passes_the_msl_syntax_check(name, stub_dir, tmp_path):
    source = program(name, "metal").source
    assert "double" not in source and "#include <metal_stdlib>" in source  # Apple GPUs have no float64
    proc = support.msl_syntax_check(CXX, source, tmp_path / f"{name}.metal", stub_dir)
    assert proc.returncode == 0, proc.stderr[:2000]


def test_every_kernel_fits_metals_31_buffer_arguments():
    """Metal binds buffers and small constants through one table of 31 entries per kernel."""
    for name in KERNELS:
        (signature,) = program(name, "metal").kernels
        assert len(signature.params) <= 31, name


@pytest.mark.skipif(sys.platform == "darwin", reason="on macOS Metal may run")
def test_off_macos_the_reason_says_macos():
    reason = registry.unavailable_reason("metal")
    assert reason is not None and "needs macOS" in reason and "not part of this build" not in reason
