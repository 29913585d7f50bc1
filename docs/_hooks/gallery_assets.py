"""mkdocs hook: the gallery's full output (``make gallery``: site-assets/gallery) goes into the built site.

scripts/dev/gallery.py writes its pictures and animated previews (17 MB, git-ignored) outside docs/, so that
the site builds on a fresh checkout without them. When the folder exists, this hook

- adds its files to the site under ``gallery/`` (``on_files``: mkdocs copies them, and a page's links to
  them are checked like any other);
- writes the animated previews, each with the ``vidmag magnify`` command of its clip, into
  docs/vidmag/gallery.md where the page has the marker ``<!-- full-build: gallery previews -->``
  (``on_page_markdown``); without the folder the marker stays an invisible comment and the page links
  nothing that does not exist;
- copies the Markdown manifest (``gallery.md``, which mkdocs would otherwise take for a page) verbatim
  (``on_post_build``).

``VIDMAG_GALLERY_ASSETS`` names another folder (the tests build with a tiny one); an empty value, or a
folder that does not exist, builds the site without the gallery. Hidden files (gallery.py's temporaries,
``.NAME.tmp``) are left out.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from mkdocs.structure.files import File, Files

#: where the built site gets the gallery's files (site/gallery/...)
DEST = "gallery"
#: the marker of the page that shows the previews, and that page
MARKER = "<!-- full-build: gallery previews -->"
PAGE = "vidmag/gallery.md"
ENV = "VIDMAG_GALLERY_ASSETS"


def assets(config) -> Path | None:
    """The gallery folder to publish, or None when there is none (the site builds without it)."""
    if ENV in os.environ:
        chosen = os.environ[ENV]
        if not chosen:
            return None
        folder = Path(chosen)
    else:
        folder = Path(config.config_file_path).resolve().parent / "site-assets" / "gallery"
    return folder if folder.is_dir() else None


def _published(folder: Path) -> list[Path]:
    """The files of ``folder`` to publish, relative to it: every plain file, hidden ones left out."""
    found = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and not any(part.startswith(".") for part in rel.parts):
            found.append(rel)
    return found


def on_files(files: Files, config) -> Files:
    folder = assets(config)
    if folder is None:
        return files
    for rel in _published(folder):
        if rel.suffix.lower() in (".md", ".markdown"):
            continue  # a page to mkdocs: copied as it is after the build
        files.append(File.generated(config, f"{DEST}/{rel.as_posix()}", abs_src_path=str(folder / rel)))
    return files


def previews_markdown(folder: Path) -> str:
    """The page's section of animated previews, from the folder's manifest (gallery.json) if it has one."""
    try:
        manifest = json.loads((folder / "gallery.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = {}
    items = [item for item in manifest.get("items", [])
             if (item.get("files") or {}).get("preview") and (folder / item["files"]["preview"]).is_file()]
    if not items:  # no manifest: the preview files by name
        items = [{"files": {"preview": p.name}, "clip": p.name.removesuffix("-preview.webp")}
                 for p in sorted(folder.glob("*-preview.webp"))]
    if not items:
        return ""
    made = ", ".join(text.format(manifest[key]) for key, text in
                     (("command", "`{}`"), ("machine", "on {}"), ("date", "{}")) if manifest.get(key))
    every = (f" Every file with its command: [gallery.json](../{DEST}/gallery.json)."
             if (folder / "gallery.json").is_file() else "")
    lines = ["In this build of the site the full gallery is included (`make gallery`, then `make docs`"
             + (f"; made by {made}" if made else "") + "): the animated previews, input left and output "
             "right." + every, ""]
    for item in items:
        name = " ".join(str(item[key]) for key in ("clip", "preset") if item.get(key))
        lines.append(f"![{name}: animated preview, input and output](../{DEST}/{item['files']['preview']})")
        lines.append("")
        lines.append(f"{name}" + (f": `{item['vidmag_command']}`" if item.get("vidmag_command") else ""))
        lines.append("")
    return "\n".join(lines)


def on_page_markdown(markdown: str, page, config, files) -> str:
    folder = assets(config)
    if folder is None or page.file.src_uri != PAGE or MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, previews_markdown(folder), 1)


def on_post_build(config) -> None:
    folder = assets(config)
    if folder is None:
        return
    for rel in _published(folder):
        if rel.suffix.lower() in (".md", ".markdown"):
            target = Path(config.site_dir) / DEST / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folder / rel, target)
