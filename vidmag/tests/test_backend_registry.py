"""The backend registry: order, honest reasons, no silent fallback, a stable "auto", lazy loading."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from vidmag import backend
from vidmag.backend import registry
from vidmag.backend.generic import Backend, bind
from vidmag.backend.numpy import NumpyOperations


def test_order_and_docs_fields():
    infos = registry.list_backends()
    assert [i.name for i in infos] == ["cuda", "metal", "opencl", "vulkan", "torch", "cpu"]
    for info in infos:
        assert info.runs_on and info.written_in and info.needs
        assert info.unavailable_reason is None or isinstance(info.unavailable_reason, str)
    assert infos[-1].unavailable_reason is None  # cpu runs anywhere


@pytest.mark.parametrize("name", registry.names())
def test_an_unavailable_backend_raises_with_its_reason(name):
    reason = registry.unavailable_reason(name)
    if reason is None:
        name_got, chosen = backend.select(name)
        assert name_got == name and isinstance(chosen, Backend)
        return
    with pytest.raises(backend.BackendUnavailableError) as error:
        backend.select(name)
    assert reason in str(error.value) and name in str(error.value)
    assert isinstance(error.value, RuntimeError)


def test_a_backend_not_built_says_so():
    reasons = {i.name: i.unavailable_reason for i in registry.list_backends()}
    # metal cannot run off macOS whether or not its module exists; the reason must be a sentence, not empty
    assert reasons["metal"]


def test_auto_is_the_first_available_and_stable():
    first = next(i.name for i in registry.list_backends() if i.unavailable_reason is None)
    picks = {backend.select("auto")[0] for _ in range(5)}
    assert picks == {first}
    assert backend.select("auto")[1] is backend.select(first)[1]


def test_unknown_name_is_a_value_error():
    with pytest.raises(ValueError, match="cpu"):
        backend.select("gpu")


def test_importing_vidmag_loads_no_gpu_or_video_library():
    code = (
        "import sys, vidmag, vidmag.backend, vidmag.backend.registry, vidmag.pipelines;"
        "bad = [m for m in ('torch', 'pyopencl', 'cupy', 'vulkan', 'cuda', 'av') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture
def fresh_registry(monkeypatch):
    monkeypatch.setattr(registry, "_reasons", {})
    monkeypatch.setattr(registry, "_instances", {})
    return registry


def _fake_module(monkeypatch, name, probe):
    module = types.ModuleType(name)
    module.probe = probe
    module.create = lambda: bind(NumpyOperations(), name="fake")
    monkeypatch.setitem(sys.modules, name, module)
    return module


def test_a_new_backend_needs_only_a_module_and_a_row(monkeypatch, fresh_registry):
    _fake_module(monkeypatch, "vidmag_fake_ready", lambda: None)
    _fake_module(monkeypatch, "vidmag_fake_broken", lambda: 1 / 0)
    rows = (
        registry.BackendSpec("broken", "vidmag_fake_broken", "nothing", "Python", "nothing"),
        registry.BackendSpec("missing", "vidmag_fake_no_such_module", "nothing", "Python", "nothing"),
        registry.BackendSpec("ready", "vidmag_fake_ready", "anything", "Python", "nothing"),
        *registry.BACKENDS,
    )
    monkeypatch.setattr(registry, "BACKENDS", rows)
    reasons = {i.name: i.unavailable_reason for i in registry.list_backends()}
    assert "ZeroDivisionError" in reasons["broken"]
    assert "not part of this build" in reasons["missing"]
    assert reasons["ready"] is None
    name, chosen = backend.select("auto")
    assert name == "ready" and chosen.name == "fake"
    with pytest.raises(backend.BackendUnavailableError, match="ZeroDivisionError"):
        backend.select("broken")
