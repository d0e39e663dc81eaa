"""Moved to pyqueue.lab.runtime.counters; this alias goes in the next release (docs/CHANGELOG.md)."""
from pyqueue.lab.runtime.counters import *  # noqa: F401,F403
