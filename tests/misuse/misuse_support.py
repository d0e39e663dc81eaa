"""Helpers of the misuse suite (tests/misuse/), importable as ``misuse_support``."""
import subprocess
import sys
import tempfile
import textwrap

import pytest

import support

# What the suite tried, printed by conftest.py at the end of the run.
TRIED = {"tests": 0, "examples": 0}


def count_example():
    """Called by each property-based example, so the summary counts them."""
    TRIED["examples"] += 1


# SIGINT back to Python's handler: a suite started as a background job (`&` in
# a shell without job control) hands its children SIGINT ignored, and the
# Ctrl-C cases would wait out their timeout.
PRELUDE = ("import copy, gc, os, pickle, signal, sys, threading, time\n"
           "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
           "import pyqueue.lab.runtime.threads as pqt\n"
           "import numpy as np\nimport pyqueue as pq\n")


def run_case(name, body, timeout=60):
    """Run ``body`` (after PRELUDE) in a fresh interpreter outside the tree; fail
    with its stderr if it crashes, raises or does not end within ``timeout`` s."""
    code = PRELUDE + textwrap.dedent(body)
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout, cwd=tempfile.gettempdir(),
                              env=support.subprocess_env())
    except subprocess.TimeoutExpired as e:
        pytest.fail("%s did not end within %d s (a hang)\n%s" % (name, timeout, (e.stderr or b"")[-3000:]))
    assert proc.returncode == 0, "%s exited %d\n%s" % (name, proc.returncode, proc.stderr[-3000:])
    return proc.stdout
