"""Test-suite settings: CI runs hypothesis derandomized so that ``main`` stays reproducible."""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
