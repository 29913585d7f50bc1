"""The variables of earlier builds that kernelkit renamed (SPECUX_CACHE_DIR, SPECUX_DUMP_SOURCE,
SPECUX_OPENCL_OPTIONS) are not silently ignored: still set, unless to what the new name gives, they are an
error naming the old and the new variable."""

from __future__ import annotations

import re

import pytest

from kernelkit import _devices, cache, opencl

RENAMED = {
    "SPECUX_CACHE_DIR": "KERNELKIT_CACHE_DIR",
    "SPECUX_DUMP_SOURCE": "KERNELKIT_DUMP_SOURCE",
    "SPECUX_OPENCL_OPTIONS": "KERNELKIT_OPENCL_OPTIONS",
}
#: a value that asks for something other than the default, per old name
VALUE = {"SPECUX_CACHE_DIR": "/tmp/kk-old-cache", "SPECUX_DUMP_SOURCE": "1",
         "SPECUX_OPENCL_OPTIONS": "-cl-opt-disable"}
OTHER = {"SPECUX_CACHE_DIR": "/tmp/kk-new-cache", "SPECUX_DUMP_SOURCE": "/tmp/kk-dump",
         "SPECUX_OPENCL_OPTIONS": "-cl-mad-enable"}


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    for old, new in RENAMED.items():
        monkeypatch.delenv(old, raising=False)
        monkeypatch.delenv(new, raising=False)


def test_the_tables_hold_every_renamed_variable():
    assert {(v.old, v.new) for v in cache.RENAMED} == set(list(RENAMED.items())[:2])
    assert {(v.old, v.new) for v in opencl.RENAMED} == set(RENAMED.items())


def test_nothing_set_is_nothing_to_say():
    assert cache.renamed_problems(opencl.RENAMED) == []
    cache.check_renamed(opencl.RENAMED)


@pytest.mark.parametrize("old", RENAMED)
def test_the_old_name_alone_is_an_error_naming_both(monkeypatch, old):
    new, value = RENAMED[old], VALUE[old]
    monkeypatch.setenv(old, value)
    with pytest.raises(cache.RenamedVariableError) as info:
        cache.check_renamed(opencl.RENAMED)
    said = rf"{old}={value!r} is set, but {old} is no longer read \(it was renamed {new}\): "
    said += rf"set {new}={value!r}"
    assert re.search(said, str(info.value)) and f"unset {old}" in str(info.value)
    assert isinstance(info.value, RuntimeError) and len(info.value.problems) == 1


@pytest.mark.parametrize("old", RENAMED)
def test_both_set_to_the_same_value_is_accepted(monkeypatch, old):
    monkeypatch.setenv(old, VALUE[old])
    monkeypatch.setenv(RENAMED[old], f" {VALUE[old]} ")
    assert cache.renamed_problems(opencl.RENAMED) == []


@pytest.mark.parametrize("old", RENAMED)
def test_both_set_to_different_values_is_an_error_naming_both(monkeypatch, old):
    new = RENAMED[old]
    monkeypatch.setenv(old, VALUE[old])
    monkeypatch.setenv(new, OTHER[old])
    with pytest.raises(cache.RenamedVariableError,
                       match=rf"{old}={VALUE[old]!r} and {new}={OTHER[old]!r} disagree: .*unset {old}"):
        cache.check_renamed(opencl.RENAMED)


def test_every_variable_still_set_is_named(monkeypatch):
    for old in RENAMED:
        monkeypatch.setenv(old, VALUE[old])
    problems = cache.renamed_problems(opencl.RENAMED)
    assert [p.split("=")[0] for p in problems] == list(RENAMED)
    assert [p.split("=")[0] for p in cache.renamed_problems()] == list(RENAMED)[:2]  # the cache's only


def test_same_setting_spelled_differently_agrees(monkeypatch):
    monkeypatch.setenv("SPECUX_CACHE_DIR", "off")
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", "0")
    monkeypatch.setenv("SPECUX_OPENCL_OPTIONS", "-cl-opt-disable   -cl-mad-enable")
    monkeypatch.setenv("KERNELKIT_OPENCL_OPTIONS", "-cl-opt-disable -cl-mad-enable")
    assert cache.renamed_problems(opencl.RENAMED) == []


@pytest.mark.parametrize("value", ["", "off", "0"])
def test_an_old_cache_dir_that_turned_the_cache_off_is_a_setting(monkeypatch, value):
    # earlier builds took SPECUX_CACHE_DIR="" / off / 0 as "no disk cache": ignoring it would write one
    monkeypatch.setenv("SPECUX_CACHE_DIR", value)
    with pytest.raises(cache.RenamedVariableError, match="set KERNELKIT_CACHE_DIR="):
        cache.check_renamed()


@pytest.mark.parametrize(("old", "value"), [("SPECUX_DUMP_SOURCE", ""), ("SPECUX_DUMP_SOURCE", "0"),
                                            ("SPECUX_OPENCL_OPTIONS", " ")])
def test_an_old_variable_asking_for_the_default_changes_nothing(monkeypatch, old, value):
    monkeypatch.setenv(old, value)
    assert cache.renamed_problems(opencl.RENAMED) == []


def test_the_getters_do_not_raise(monkeypatch, tmp_path):
    # a device probe compiles through the cache: the check is the entry points', never a probe's verdict
    monkeypatch.setenv("SPECUX_CACHE_DIR", str(tmp_path / "old"))
    monkeypatch.setenv("SPECUX_DUMP_SOURCE", "1")
    monkeypatch.setenv("SPECUX_OPENCL_OPTIONS", "-cl-opt-disable")
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    assert cache.cache_dir() == tmp_path and cache.dump_dir() is None and opencl.build_options() == ()


@pytest.mark.parametrize("old", RENAMED)
def test_the_opencl_runtime_raises_before_choosing_a_device(monkeypatch, old):
    monkeypatch.setenv(old, VALUE[old])
    with pytest.raises(cache.RenamedVariableError, match=rf"{old}=.*{RENAMED[old]}"):
        opencl.default_runtime()


def test_devices_give_the_reason_ahead_of_the_probe(monkeypatch):
    monkeypatch.setenv("SPECUX_OPENCL_OPTIONS", "-cl-opt-disable")
    assert _devices._probe("opencl").startswith("SPECUX_OPENCL_OPTIONS='-cl-opt-disable' is set")
    monkeypatch.setenv("SPECUX_CACHE_DIR", "/tmp/kk-old-cache")
    for name in _devices.RUNTIMES:  # every runtime compiles through the cache
        assert _devices._probe(name).startswith("SPECUX_CACHE_DIR='/tmp/kk-old-cache' is set"), name
