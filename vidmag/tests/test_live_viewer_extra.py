"""Without the live extra, Viewer.start() says what is missing and how to install it (issue 19, Installing):
not the bare "No module named 'aiohttp'" of the server thread."""

from __future__ import annotations

import sys

import pytest

from vidmag.cli import main
from vidmag.live.viewer import Viewer

HINT = r'pip install -e "\./vidmag\[live\]"'


@pytest.mark.parametrize(("module", "name"), [("aiohttp", "aiohttp"), ("PIL", "Pillow")])
def test_start_names_the_missing_package_and_the_extra(monkeypatch, module, name):
    monkeypatch.setitem(sys.modules, module, None)  # import of it fails as if it were not installed
    viewer = Viewer("127.0.0.1", 0)
    with pytest.raises(ImportError, match=rf"needs {name}.*'live' extra: {HINT}.*pip install {name}"):
        viewer.start()


def test_the_command_says_it_in_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "aiohttp", None)
    code = main(["live", "synthetic", "--preset", "face", "--serve", "127.0.0.1:0", "--frames", "3", "-q"])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "aiohttp" in err and "vidmag[live]" in err
