"""The gallery's full output (``make gallery``: site-assets/gallery) lands in the built site when it exists.

docs/_hooks/gallery_assets.py (mkdocs.yml ``hooks:``) adds the folder's files to the site under gallery/ and
writes the animated previews into the gallery page at its marker; without the folder the strict build passes
the same and the page links nothing. The builds here use a tiny fake folder (``VIDMAG_GALLERY_ASSETS``), so
the test needs no sample clips and never touches site-assets/ of the checkout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("mkdocs", reason="mkdocs comes with requirements-dev.txt")


def _build(site: Path, assets: str) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "VIDMAG_GALLERY_ASSETS": assets}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site), "--config-file",
         str(ROOT / "mkdocs.yml")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-6000:]}"


def test_page_marker_is_there():
    # the hook writes the previews at this marker: without it they would silently never show
    text = (ROOT / "docs" / "vidmag" / "gallery.md").read_text(encoding="utf-8")
    assert "<!-- full-build: gallery previews -->" in text


def test_gallery_assets_land_in_the_site_and_on_the_page(tmp_path):
    gallery = tmp_path / "assets" / "gallery"
    gallery.mkdir(parents=True)
    (gallery / "face-face-preview.webp").write_bytes(b"RIFF\x00\x00\x00\x00WEBP fake")
    (gallery / ".face-face-after.png.tmp").write_bytes(b"half written")  # gallery.py's temporary
    site = tmp_path / "site"
    _build(site, str(gallery))
    assert (site / "gallery" / "face-face-preview.webp").read_bytes() == b"RIFF\x00\x00\x00\x00WEBP fake"
    assert not (site / "gallery" / ".face-face-after.png.tmp").exists()
    assert not (site / "_hooks").exists()  # the hook is build machinery, not a download
    page = (site / "vidmag" / "gallery" / "index.html").read_text(encoding="utf-8")
    assert 'src="../../gallery/face-face-preview.webp"' in page


def test_site_builds_without_gallery_assets(tmp_path):
    site = tmp_path / "site"
    _build(site, str(tmp_path / "no-such-folder"))
    assert not (site / "gallery").exists()
    page = (site / "vidmag" / "gallery" / "index.html").read_text(encoding="utf-8")
    assert "preview.webp" not in page.replace("CLIP-PRESET-preview.webp", "")
