"""Import the three packages before pytest imports any test module.

pytest's importlib mode names a test module after its path (``vidmag/tests/test_x.py`` becomes
``vidmag.tests.test_x``) and, when no ``vidmag`` is imported yet, registers the repository folder ``vidmag/``
as an empty namespace package of that name, which hides the installed package. Importing the real packages
here, first, gives that name to the installed package.
"""

import kernelkit  # noqa: F401
import specux  # noqa: F401
import vidmag  # noqa: F401
