"""Moved to pyqueue.lab.runtime.topology; this alias goes in the next release (docs/CHANGELOG.md)."""
from pyqueue.lab.runtime.topology import *  # noqa: F401,F403
