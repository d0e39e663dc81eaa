"""python -m pyqueue env: runs, and --json has every section."""
import json
import os
import subprocess
import sys

import support

ROOT = support.ROOT


def run(*args):
    return subprocess.run([sys.executable, "-m", "pyqueue", "env", *args], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)


def test_env_json():
    out = run("--json")
    assert out.returncode == 0, out.stderr
    env = json.loads(out.stdout)
    assert set(env) >= {"machine", "topology", "clocks", "counters", "scheduling", "warnings"}
    assert env["clocks"]["cost_ns"]["monotonic"] > 0
    assert len(env["counters"]["events"]) == 8
    assert isinstance(env["scheduling"]["pinning"], bool)


def test_env_text():
    out = run()
    assert out.returncode == 0, out.stderr
    for word in ("topology", "clocks", "counters", "pinning", "SCHED_FIFO", "monotonic"):
        assert word in out.stdout
