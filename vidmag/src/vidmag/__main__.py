"""``python -m vidmag``: the ``vidmag`` command (:func:`vidmag.cli.main`), where the script is not on PATH."""

import sys

from vidmag.cli import main

if __name__ == "__main__":  # imported by a tool that walks the package, it runs nothing
    sys.exit(main())
