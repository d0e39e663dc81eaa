"""python -m pyqueue compare: a folder against its own copy (no regression, exit 0), a
doctored copy (a figure made worse, exit 1), a tampered index and an incomparable
environment (refused, exit 2 unless --force)."""
import hashlib
import json
import shutil

import pytest

from cli_quick import pyqueue

COMPARED = ("bench", "burst-tail", "c2c", "pacing", "pipeline")


def reindex(folder):
    """Recompute index.json after a deliberate edit, as a run would have written it."""
    index = json.loads((folder / "index.json").read_text())
    for rel, entry in index["files"].items():
        data = (folder / rel).read_bytes()
        entry.update(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    (folder / "index.json").write_text(json.dumps(index, indent=1))


def worsen(summary):
    """Make every latency 10x and every 'higher is better' ratio 10x smaller."""

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k in ("per_round",):
                    o[k] = [[x * 10 if x is not None else x for x in r] for r in v]
                elif k in ("median_ns", "p99_ns", "ratio_median") and isinstance(v, (int, float)):
                    o[k] = v * 10
                elif k == "d_pace":
                    o[k] = v / 10
                elif k == "by_placement":
                    for d in v.values():
                        d["median"] = d["median"] / 10 if d.get("median") else d.get("median")
                else:
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(summary["results"])


@pytest.mark.parametrize("command", COMPARED)
def test_compare_copy_doctored_and_tampered(quick_runs, tmp_path, command):
    p, old = quick_runs[command]
    assert p.returncode == 0, p.stderr
    same = tmp_path / "same"
    shutil.copytree(old, same)
    r = pyqueue("compare", str(old), str(same))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "+0.0%" in r.stdout and "REGRESSION" not in r.stdout

    worse = tmp_path / "worse"
    shutil.copytree(old, worse)
    summary = json.loads((worse / "summary.json").read_text())
    worsen(summary)
    (worse / "summary.json").write_text(json.dumps(summary))
    reindex(worse)
    r = pyqueue("compare", str(old), str(worse))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "REGRESSION" in r.stdout
    r = pyqueue("compare", str(old), str(worse), "--json")
    body = json.loads(r.stdout)
    assert r.returncode == 1
    assert body["regressions"] == sum(c["regression"] for c in body["changes"]) > 0

    tampered = tmp_path / "tampered"
    shutil.copytree(old, tampered)
    (tampered / "summary.json").write_text((tampered / "summary.json").read_text() + " ")
    r = pyqueue("compare", str(old), str(tampered))
    assert r.returncode == 2 and "does not verify" in r.stderr and "Traceback" not in r.stderr


def test_incomparable_environment_is_refused_unless_forced(quick_runs, tmp_path):
    _, old = quick_runs["burst-tail"]
    other = tmp_path / "other"
    shutil.copytree(old, other)
    env = json.loads((other / "environment.json").read_text())
    env["cpu_model"] = "another CPU"
    (other / "environment.json").write_text(json.dumps(env))
    reindex(other)
    r = pyqueue("compare", str(old), str(other))
    assert r.returncode == 2 and "cpu_model" in r.stderr and "another CPU" in r.stderr
    assert pyqueue("compare", "--force", str(old), str(other)).returncode == 0


def test_other_experiment_is_refused(quick_runs):
    r = pyqueue("compare", str(quick_runs["bench"][1]), str(quick_runs["c2c"][1]))
    assert r.returncode == 2 and "not the same experiment" in r.stderr
