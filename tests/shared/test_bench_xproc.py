"""bench-xproc end to end on tiny slices: every row is a figure or says why not.
No figure is asserted."""
import json
import subprocess
import sys

import support


def test_bench_xproc_runs_end_to_end(tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "pyqueue", "bench-xproc", "--rounds", "1",
                        "--messages", "2000", "--messages-1k", "500", "--round-trips", "100",
                        "--only", "pyqueue,multiprocessing.Queue,iceoryx2", "--json", str(out)],
                       capture_output=True, text=True, timeout=300, env=support.subprocess_env())
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(out.read_text())
    names = {r["row"] for r in doc["throughput"]}
    assert "pyqueue shared, write_batch / poll_into" in names and "iceoryx2" in names
    for r in doc["throughput"]:
        v = r["msgs_per_s"]
        assert isinstance(v, str) and v.startswith(("not installed", "not measured")) or \
            (len(v) == 1 and v[0] > 0)
    assert set(doc["roundtrip_ns"]) == {"pyqueue shared (two processes)",
                                        "pyqueue in-process (two threads)"}
    assert "x multiprocessing.Queue" in p.stdout
