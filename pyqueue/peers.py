"""Moved to pyqueue.lab.peers; this alias goes in the next release (docs/CHANGELOG.md)."""
from pyqueue.lab.peers import *  # noqa: F401,F403
