"""kernelkit.tuning: a generic persisted store whose bad files (not JSON, wrong shapes, refused entries) are
ignored entry by entry with one warning naming the file, and rewritten atomically by the next store."""

from __future__ import annotations

import json
import warnings

import pytest

from kernelkit import tuning
from kernelkit.tuning import TuningFileWarning, TuningStore


def _validate(key, entry):
    value = entry.get("block")
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"block must be a positive int; got {value!r}")


@pytest.fixture
def where(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    return tmp_path / "tuning.json"


def _store():
    return TuningStore("client", _validate)


def test_store_and_lookup_persist_across_processes(where):
    a = _store()
    assert a.lookup("k") is None
    a.store("k", {"block": 64})
    a.store("j", {"block": 8, "extra": [1, 2]})
    assert a.lookup("k") == {"block": 64}
    both = {"j": {"block": 8, "extra": [1, 2]}, "k": {"block": 64}}
    assert json.loads(where.read_text()) == {"client": both}
    b = _store()  # a new process reads the file
    assert b.entries() == both
    entry = b.lookup("k")
    entry["block"] = 1  # lookups hand out copies
    assert b.lookup("k") == {"block": 64}
    assert [p.name for p in where.parent.iterdir()] == ["tuning.json"]  # no temporary files left


def test_stores_merge_with_what_other_processes_wrote(where):
    a, b = _store(), _store()
    a.lookup("x")  # both read the (empty) file
    b.lookup("x")
    a.store("one", {"block": 1})
    b.store("two", {"block": 2})
    assert json.loads(where.read_text())["client"] == {"one": {"block": 1}, "two": {"block": 2}}
    assert b.lookup("one") == {"block": 1}


BAD = {
    "not json": "{not json",
    "truncated json": '{"client": {"k": {"block": 6',
    "list": "[1, 2, 3]",
    "null": "null",
    "number": "7",
    "str member": json.dumps({"k": "x"}),
    "str section": json.dumps({"client": "x"}),
    "list section": json.dumps({"client": [1]}),
    "str entry": json.dumps({"client": {"k": "x"}}),
    "null entry": json.dumps({"client": {"k": None}}),
    "refused entry": json.dumps({"client": {"k": {"block": "x"}}}),
    "bool entry field": json.dumps({"client": {"k": {"block": True}}}),
}


@pytest.mark.parametrize("label", list(BAD))
def test_a_bad_file_is_ignored_with_one_warning_and_rewritten_by_the_next_store(where, label):
    where.write_text(BAD[label])
    store = _store()
    with pytest.warns(TuningFileWarning, match=f"tuning file {where}") as caught:
        assert store.lookup("k") is None
        assert store.lookup("k") is None  # read once: no second warning
    assert len(caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rewrite reports nothing more about the same content
        store.store("k", {"block": 4})
    assert json.loads(where.read_text()) == {"client": {"k": {"block": 4}}}
    fresh = _store()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rewritten file is clean
        assert fresh.lookup("k") == {"block": 4}


def test_good_entries_and_other_clients_survive_bad_neighbours(where):
    where.write_text(
        json.dumps(
            {
                "client": {"good": {"block": 2}, "bad": {"block": 0}, "worse": 3},
                "other": {"theirs": {"anything": "goes"}},
                "junk": 1,
            }
        )
    )
    store = _store()
    with pytest.warns(TuningFileWarning) as caught:
        assert store.lookup("good") == {"block": 2}
    text = str(caught[0].message)
    assert "'bad'" in text and "'worse'" in text and "'junk'" in text and "'good'" not in text
    store.store("new", {"block": 5})
    assert json.loads(where.read_text()) == {
        "client": {"good": {"block": 2}, "new": {"block": 5}},
        "other": {"theirs": {"anything": "goes"}},
    }


def test_store_refuses_what_the_validator_or_json_refuses(where):
    store = _store()
    with pytest.raises(ValueError, match="block must be a positive int"):
        store.store("k", {"block": -1})
    with pytest.raises(ValueError, match="not an object"):
        store.store("k", [1])
    with pytest.raises(ValueError, match=r"JSON compliant|out of range"):
        store.store("k", {"block": 1, "time": float("nan")})
    with pytest.raises(TypeError, match="key must be a str"):
        store.store(3, {"block": 1})
    assert not where.exists()


def test_a_validator_that_returns_false_refuses_too(where):
    where.write_text(json.dumps({"c": {"k": {"v": 1}}}))
    store = TuningStore("c", lambda key, entry: entry.get("v") == 2)
    with pytest.warns(TuningFileWarning, match="entry 'k' is not valid"):
        assert store.lookup("k") is None


def test_without_a_cache_directory_results_live_in_memory(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", "off")
    assert tuning.path() is None
    store = _store()
    store.store("k", {"block": 3})
    assert store.lookup("k") == {"block": 3}
    assert list(tmp_path.iterdir()) == []


def test_an_unreadable_or_unwritable_file_never_breaks_the_caller(where):
    where.mkdir()  # a directory where the file should be: neither readable nor replaceable
    store = _store()
    with pytest.warns(TuningFileWarning, match="cannot be read"):
        assert store.lookup("k") is None
    store.store("k", {"block": 1})  # the disk refuses: kept for this process only
    assert store.lookup("k") == {"block": 1}


def test_forget_rereads_the_file(where):
    store = _store()
    store.store("k", {"block": 1})
    where.write_text(json.dumps({"client": {"k": {"block": 9}}}))
    assert store.lookup("k") == {"block": 1}
    store.forget()
    assert store.lookup("k") == {"block": 9}


def test_a_section_needs_a_name():
    with pytest.raises(ValueError, match="section must be a non-empty str"):
        TuningStore("", _validate)
