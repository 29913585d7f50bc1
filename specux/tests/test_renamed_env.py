"""specux's side of kernelkit's renamed variables (SPECUX_CACHE_DIR, SPECUX_DUMP_SOURCE and
SPECUX_OPENCL_OPTIONS, now KERNELKIT_*): one still set makes the compiling backends unavailable with a reason
naming it and its new name, and stops backend="auto" (which would otherwise run on cuda or cpu with the
setting ignored)."""

from __future__ import annotations

import numpy as np
import pytest

import specux
from specux._backends import registry

RENAMED = {
    "SPECUX_CACHE_DIR": "KERNELKIT_CACHE_DIR",
    "SPECUX_DUMP_SOURCE": "KERNELKIT_DUMP_SOURCE",
    "SPECUX_OPENCL_OPTIONS": "KERNELKIT_OPENCL_OPTIONS",
}
VALUE = {"SPECUX_CACHE_DIR": "/tmp/specux-old-cache", "SPECUX_DUMP_SOURCE": "1",
         "SPECUX_OPENCL_OPTIONS": "-cl-opt-disable"}
#: the backends each old name concerns (cpu compiles no kernel: none)
CONCERNS = {"SPECUX_CACHE_DIR": ("cuda", "metal", "opencl"),
            "SPECUX_DUMP_SOURCE": ("cuda", "metal", "opencl"),
            "SPECUX_OPENCL_OPTIONS": ("opencl",)}


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    saved = dict(registry._probed)
    for old, new in RENAMED.items():  # the new names too: CI may set KERNELKIT_OPENCL_OPTIONS
        monkeypatch.delenv(old, raising=False)
        monkeypatch.delenv(new, raising=False)
    yield
    registry._probed.clear()  # nothing this file does is kept as a probe's verdict; leave the cache as found
    registry._probed.update(saved)


def _alone(old):
    return f"{old}={VALUE[old]!r} is set, but {old} is no longer read (it was renamed {RENAMED[old]})"


@pytest.mark.parametrize("old", RENAMED)
def test_the_old_name_alone_makes_the_compiling_backends_unavailable(monkeypatch, old):
    monkeypatch.setenv(old, VALUE[old])
    rows = {row.name: row for row in specux.backends()}
    for name in CONCERNS[old]:
        assert not rows[name].available and rows[name].ops == ()
        assert rows[name].unavailable_reason.startswith(_alone(old))
        assert f"set {RENAMED[old]}={VALUE[old]!r} instead" in rows[name].unavailable_reason
        with pytest.raises(specux.BackendUnavailableError, match=f"'{name}' is unavailable: {old}="):
            specux.fft.rfft(np.zeros(16), backend=name)
    assert rows["cpu"].available  # cpu reads none of them
    for name in set(("cuda", "metal", "opencl")) - set(CONCERNS[old]):
        assert old not in (rows[name].unavailable_reason or "")


@pytest.mark.parametrize("old", RENAMED)
def test_auto_raises_rather_than_fall_back_to_cpu(monkeypatch, old):
    monkeypatch.setenv(old, VALUE[old])
    x = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
    for call in (lambda: specux.fft.rfft(x), lambda: specux.stft(x, n_fft=256),
                 lambda: specux.melspectrogram(y=x, sr=16000, n_fft=256)):
        with pytest.raises(specux.BackendUnavailableError, match="'auto' is unavailable: ") as info:
            call()
        assert info.value.reason.startswith(_alone(old)) and "'auto' stops here" in info.value.reason
    # backend="cpu", named, is not concerned
    np.testing.assert_allclose(specux.fft.rfft(x, backend="cpu"), np.fft.rfft(x), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("old", RENAMED)
def test_the_same_value_under_both_names_is_accepted(monkeypatch, old, tmp_path):
    value = str(tmp_path) if old == "SPECUX_CACHE_DIR" else VALUE[old]
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))  # kernels and dumps, if any, land in tmp_path
    monkeypatch.setenv(old, value)
    monkeypatch.setenv(RENAMED[old], value)
    assert registry._renamed("auto") is None
    x = np.zeros(64, np.float32)
    assert specux.fft.rfft(x).shape == (33,)  # auto chooses as usual
    for row in specux.backends():
        assert old not in (row.unavailable_reason or "")


@pytest.mark.parametrize("old", RENAMED)
def test_different_values_under_both_names_is_an_error_naming_both(monkeypatch, old):
    new = RENAMED[old]
    monkeypatch.setenv(old, VALUE[old])
    monkeypatch.setenv(new, "/tmp/elsewhere" if old != "SPECUX_OPENCL_OPTIONS" else "-cl-mad-enable")
    match = rf"{old}={VALUE[old]!r} and {new}=.* disagree: .*unset {old}"
    with pytest.raises(specux.BackendUnavailableError, match=match):
        specux.fft.rfft(np.zeros(16))
    with pytest.raises(specux.BackendUnavailableError, match=match):
        registry.get("opencl")


def test_unsetting_it_takes_effect_at_the_next_call(monkeypatch):
    # the check is made at every call, apart from the probes' kept verdicts: nothing to reset
    monkeypatch.setenv("SPECUX_CACHE_DIR", "/tmp/specux-old-cache")
    with pytest.raises(specux.BackendUnavailableError):
        specux.fft.rfft(np.zeros(16))
    monkeypatch.delenv("SPECUX_CACHE_DIR")
    assert specux.fft.rfft(np.zeros(16)).shape == (9,)
    assert registry.get("cpu") is not None

