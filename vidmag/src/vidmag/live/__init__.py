"""Magnify a live feed: :class:`Magnifier` (frames pushed in, magnified frames out, one for one),
:func:`open_source` (a camera, a stream URL, a file or the built-in synthetic scene as an iterator of frames),
and the viewer (``vidmag.live.viewer``, the page ``vidmag live --serve`` serves).

The names are loaded on first use (``vidmag.live.Magnifier`` imports ``vidmag.live.magnifier``), so that
importing one part, the viewer say, does not import the others, nor any backend or server library.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["LIVE_PRESETS", "Magnifier", "MagnifierStats", "Source", "live_preset_params", "open_source"]

# name -> the submodule that defines it
_WHERE = {
    "Magnifier": "magnifier",
    "MagnifierStats": "magnifier",
    "LIVE_PRESETS": "presets",
    "live_preset_params": "presets",
    "Source": "sources",
    "open_source": "sources",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
