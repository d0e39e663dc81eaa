"""Moved to pyqueue.lab.runtime.cpu; this alias goes in the next release (docs/CHANGELOG.md)."""
from pyqueue.lab.runtime.cpu import *  # noqa: F401,F403
