"""Moved to pyqueue.lab.runtime.clock; this alias goes in the next release (docs/CHANGELOG.md)."""
from pyqueue.lab.runtime.clock import *  # noqa: F401,F403
