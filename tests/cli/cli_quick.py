"""What the CLI tests share: each command's quick arguments and a way to run it."""
import subprocess
import sys

import support

# Each command's quick run, cut further where --quick alone takes tens of seconds.
QUICK = {
    "bench": ["--quick"],
    "bench-xproc": ["--quick"],
    "burst-tail": ["--quick", "--classes", "yield0", "--rounds", "1", "--windows", "20"],
    "c2c": ["--quick"],
    "drain-rate": ["--quick"],
    "ownership": ["--quick", "--windows", "200", "--rounds", "1"],
    "pacing": ["--quick", "--rounds", "1"],
    "pipeline": ["--quick", "--variants", "mutex_condvar,pinned_backoff"],
    "soak": ["--quick", "--seconds", "1"],
}


def pyqueue(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "pyqueue", *args], capture_output=True,
                          text=True, env=support.subprocess_env(), timeout=timeout,
                          cwd=support.ROOT)
