"""A polite kill (SIGTERM: a CI timeout, systemd) stops a run as Ctrl-C does: the
current slice ends, the output folder verifies and says "interrupted", exit 130.
Each run is a subprocess with a timeout: a command that ignored the signal fails
here by its timeout, never by hanging the suite."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import support
from pyqueue.lab.common import output

# Long enough that the signal always arrives mid-run; a slice is well under a second.
LONG = {
    "bench": ["--rounds", "50"],
    "soak": ["--seconds", "120", "--period", "1", "--slice", "0.2"],
    "burst-tail": ["--classes", "yield0", "--rounds", "3", "--windows", "2000",
                   "--spill-blocks", "2048", "--slice-windows", "10"],
}


def _started(out, deadline):
    """Wait for the folder's first checkpoint: the run is then measuring."""
    while time.monotonic() < deadline:
        try:
            if json.loads((out / "summary.json").read_text()).get("status"):
                return True
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    return False


@pytest.mark.two_cpus(reason="the runs pin two threads")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("command", sorted(LONG))
def test_a_signal_ends_the_run_with_a_valid_interrupted_folder(tmp_path, command, sig):
    out = tmp_path / "run"
    p = subprocess.Popen([sys.executable, "-m", "pyqueue", command, *LONG[command],
                          "--no-progress", "--out", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=support.subprocess_env(), cwd=support.ROOT)
    try:
        assert _started(out, time.monotonic() + 120), "no checkpoint within 120 s"
        time.sleep(0.5)
        p.send_signal(sig)
        stdout, stderr = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 130, (p.returncode, stdout, stderr)
    assert "Traceback" not in stderr, stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"].startswith("interrupted"), summary["status"]
    assert output.verify(out) == []
