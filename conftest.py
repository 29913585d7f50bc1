"""Import the three packages before pytest imports any test module; register the hypothesis profiles.

pytest's importlib mode names a test module after its path (``vidmag/tests/test_x.py`` becomes
``vidmag.tests.test_x``) and, when no ``vidmag`` is imported yet, registers the repository folder ``vidmag/``
as an empty namespace package of that name, which hides the installed package. Importing the real packages
here, first, gives that name to the installed package.
"""

import os

import kernelkit  # noqa: F401
import specux  # noqa: F401
import vidmag  # noqa: F401

# Hypothesis profiles for the property tests of every package, chosen by HYPOTHESIS_PROFILE. "ci", the
# default: few examples per property and a fixed seed (derandomize), so a CI run tries the same examples
# every time and never fails on one the last run did not try; no deadline, since first calls build kernels,
# plans and filter banks. "thorough": many more examples, random, remembered in the example database
# (.hypothesis/) so that a failure found once is tried first the next time.
try:
    from hypothesis import HealthCheck
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # the property tests skip themselves (pytest.importorskip)
    pass
else:
    _hypothesis_settings.register_profile(
        "ci", max_examples=100, deadline=None, derandomize=True, database=None, print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    _hypothesis_settings.register_profile(
        "thorough", max_examples=400, deadline=None, print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    _hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
