"""vidmag: Eulerian video magnification, the four pipelines of Wu et al. (SIGGRAPH 2012) on several backends.

``magnify`` works on a clip in memory, ``magnify_file`` on video files, ``pipelines.run`` on a source of
frames, ``open_stream`` on a live stream (push frames, get as many magnified frames back); ``PRESETS`` holds
the paper's runs. Importing vidmag imports no GPU library and no video library.
"""

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from vidmag.pipelines import SaturationWarning, magnify, open_stream
from vidmag.presets import PRESETS, Preset

try:
    __version__ = version("vidmag-evm")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "PRESETS",
    "Preset",
    "SaturationWarning",
    "__version__",
    "magnify",
    "magnify_file",
    "magnify_files",
    "open_stream",
]


def __getattr__(name: str) -> Any:
    # magnify_file needs PyAV; load it on first use so that `import vidmag` stays light.
    if name == "magnify_file":
        from vidmag.files import magnify_file

        return magnify_file
    if name == "magnify_files":  # many clips on Dask (vidmag.many)
        from vidmag.many import magnify_files

        return magnify_files
    raise AttributeError(f"module 'vidmag' has no attribute {name!r}")
