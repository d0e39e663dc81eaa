"""Builds the optional peer-queue adapters (SPEC §7).  Filled in by the peers work."""


def build_all(cmd):
    return {}
