"""A persisted store of tuning results: ``<cache dir>/tuning.json``, one section per client.

The file is one JSON object whose members are the clients' sections, each a JSON object of entries, each
entry a JSON object::

    {"specux.fft": {"opencl|<device>|4608|f32": {"threads": null, "rows": null, "split": [64, 72]}}}

kernelkit knows nothing of what an entry means: each client makes a :class:`TuningStore` for its section with
a validator that decides what an entry must look like. The store **never breaks a caller on a bad file**.
A file that is not JSON, or JSON of the wrong shape (``[1,2,3]``, ``null``, a section or an entry that is not
an object, an entry the validator refuses), is ignored entry by entry with one :class:`TuningFileWarning`
naming the file, and the next :meth:`TuningStore.store` rewrites it atomically with the good entries and the
new one. Sections of other clients are kept as they are (their validators are theirs); top-level members
that are not objects are dropped.

Lookups happen on every planned call, so the file is read once per process and store, and kept in memory;
without a disk cache directory (``KERNELKIT_CACHE_DIR=off``) results live for the process only. Concurrent
writers in several processes do not corrupt the file (each write is a whole-file atomic replace); one of two
simultaneous stores can be lost, which only costs a retune.
"""

from __future__ import annotations

import json
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelkit import cache

FILE_NAME = "tuning.json"

#: ``validate(key, entry)``: raise ValueError / TypeError (or return False) when ``entry`` is not acceptable
Validator = Callable[[str, dict[str, Any]], Any]


class TuningFileWarning(UserWarning):
    """The tuning file, or some of its entries, could not be used and were ignored."""


_write_lock = threading.Lock()


def path() -> Path | None:
    """Where tuning results are stored, or None when the disk cache is off."""
    directory = cache.cache_dir()
    return None if directory is None else directory / FILE_NAME


def _read(where: Path) -> tuple[Any, str | None]:
    """(decoded JSON or None, problem) of the file at ``where``; a missing file is ``({}, None)``."""
    try:
        text = where.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"cannot be read ({type(exc).__name__}: {exc})"
    try:
        return json.loads(text), None
    except ValueError as exc:
        return None, f"is not JSON ({exc})"


class TuningStore:
    """The tuning results of one client: its section of the tuning file.

    Parameters
    ----------
    section : str
        Name of the client's section (e.g. ``"specux.fft"``).
    validate : callable
        ``validate(key, entry)`` raises ``ValueError`` / ``TypeError`` (or returns ``False``) when ``entry``
        (already known to be a JSON object) is not a valid result for ``key``. Entries it refuses are
        ignored with a warning; :meth:`store` refuses them with ``ValueError``.
    """

    def __init__(self, section: str, validate: Validator):
        if not isinstance(section, str) or not section:
            raise ValueError(f"section must be a non-empty str; got {section!r}")
        self.section = section
        self._validate = validate
        self._lock = threading.Lock()
        self._table: dict[str, dict[str, Any]] | None = None
        self._warned: set[tuple[str, str]] = set()

    # -- reading -----------------------------------------------------------------------------------------

    def _problem(self, key: str, entry: Any) -> str | None:
        if not isinstance(entry, dict):
            return f"entry {key!r} is {type(entry).__name__}, not an object"
        try:
            ok = self._validate(key, entry)
        except Exception as exc:  # the validator's own words, whatever it raised
            return f"entry {key!r}: {exc}"
        return f"entry {key!r} is not valid" if ok is False else None

    def _load_section(self, where: Path, warn: bool) -> tuple[dict[str, dict[str, Any]], Any]:
        """(the valid entries of our section, the whole decoded file or None when it is not an object)."""
        data, problem = _read(where)
        problems = [] if problem is None else [problem]
        good: dict[str, dict[str, Any]] = {}
        if problem is None and not isinstance(data, dict):
            problems.append(f"holds {type(data).__name__}, not an object of sections")
            data = None
        if isinstance(data, dict):
            problems += [
                f"section {name!r} is {type(value).__name__}, not an object"
                for name, value in data.items()
                if not isinstance(value, dict)
            ]
            section = data.get(self.section, {})
            if not isinstance(section, dict):
                section = {}
            for key, entry in section.items():
                why = self._problem(key, entry)
                if why is None:
                    good[key] = entry
                else:
                    problems.append(why)
        if problems and warn:
            self._warn(where, problems)
        return good, data

    def _warn(self, where: Path, problems: list[str]) -> None:
        token = (str(where), "; ".join(problems))
        if token in self._warned:  # the same bad content is reported once per process
            return
        self._warned.add(token)
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        warnings.warn(
            f"tuning file {where}: ignored what cannot be used ({shown}); defaults are used instead, and the "
            "next stored result rewrites the file",
            TuningFileWarning,
            stacklevel=4,
        )

    def _entries(self) -> dict[str, dict[str, Any]]:
        if self._table is None:
            where = path()
            self._table = {} if where is None else self._load_section(where, warn=True)[0]
        return self._table

    def lookup(self, key: str) -> dict[str, Any] | None:
        """The stored entry under ``key`` (a copy), or None. Never raises on a bad file."""
        with self._lock:
            entry = self._entries().get(key)
        return None if entry is None else dict(entry)

    def entries(self) -> dict[str, dict[str, Any]]:
        """Every valid entry of this client's section."""
        with self._lock:
            return {k: dict(v) for k, v in self._entries().items()}

    # -- writing -----------------------------------------------------------------------------------------

    def store(self, key: str, entry: dict[str, Any]) -> None:
        """Remember ``entry`` under ``key`` (in memory; on disk too with a cache directory).

        Raises ``ValueError`` when the validator refuses the entry or it is not JSON. A disk that cannot be
        written only loses the result for later processes.
        """
        if not isinstance(key, str):
            raise TypeError(f"key must be a str; got {type(key).__name__}")
        why = self._problem(key, entry)
        if why is not None:
            raise ValueError(f"tuning {self.section!r}: {why}")
        entry = json.loads(json.dumps(entry, allow_nan=False))  # a JSON copy: refuses what JSON cannot hold
        with self._lock:
            table = self._entries()
            table[key] = entry
            where = path()
            if where is None:
                return
            with _write_lock:
                # merge with what is on disk now: another process (or client) may have written since
                ours, data = self._load_section(where, warn=True)
                ours.update(table)
                table.update(ours)
                # other clients' sections stay as they are; members that are no section at all go
                members = data.items() if isinstance(data, dict) else ()
                whole = {k: v for k, v in members if isinstance(v, dict)}
                whole[self.section] = ours
                try:
                    cache.atomic_write(where, json.dumps(whole, indent=1, sort_keys=True).encode())
                except OSError:
                    pass

    def forget(self) -> None:
        """Drop the in-memory copy: the next lookup rereads the file (and warns again about a bad one)."""
        with self._lock:
            self._table = None
            self._warned.clear()
