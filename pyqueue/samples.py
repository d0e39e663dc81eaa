"""Moved to pyqueue.lab.runtime.samples; this alias goes in the next release (docs/CHANGELOG.md)."""
from pyqueue.lab.runtime.samples import *  # noqa: F401,F403
