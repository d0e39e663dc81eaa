"""Moved to pyqueue.lab.runtime.threads; this alias goes in the next release (docs/CHANGELOG.md)."""
from pyqueue.lab.runtime.threads import *  # noqa: F401,F403
