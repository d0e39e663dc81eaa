"""Moved to pyqueue.lab.peers.table; this alias goes in the next release (docs/CHANGELOG.md)."""
from pyqueue.lab.peers.table import *  # noqa: F401,F403
