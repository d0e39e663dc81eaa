"""What machine and software produced a result: its environment.json (DESIGN §6.8).

Everything is read best-effort from /proc, /sys and the interpreter; whatever
cannot be read is recorded as "not readable" / "unknown" / "unsupported" rather
than guessed.  The host name is deliberately not recorded.
"""
import glob
import os
import platform
import shlex
import subprocess
import sys
import time

__all__ = ["collect_environment", "cpu_list_text", "loadavg", "is_vm"]

NOT_READABLE = "not readable"


def cpu_list_text(cpus):
    """[0, 1, 2, 3, 6, 8, 9] -> '0-3,6,8-9' (the kernel's cpulist format)."""
    from ..runtime.topology import format_cpulist
    return format_cpulist(set(int(c) for c in cpus))


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _cpu_model():
    text = _read("/proc/cpuinfo") or ""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    if fields.get("model name"):                       # x86, some arm kernels
        return fields["model name"]
    if fields.get("Model"):                            # e.g. Raspberry Pi
        return fields["Model"]
    if fields.get("CPU implementer"):                  # arm64: ids only
        return "ARM implementer %s part %s" % (fields["CPU implementer"],
                                               fields.get("CPU part", "?"))
    return platform.processor() or NOT_READABLE


def loadavg():
    """The 1, 5 and 15 minute load averages as /proc/loadavg writes them, or None."""
    text = _read("/proc/loadavg")
    return text.split()[:3] if text is not None else None


def is_vm():
    """True when /proc/cpuinfo says a hypervisor runs this machine."""
    return " hypervisor" in (_read("/proc/cpuinfo") or "")


def _governors():
    found = {}
    for path in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"):
        value = _read(path)
        if value is None:
            continue
        cpu = int(path.split("/")[5][3:])
        found.setdefault(value.strip(), []).append(cpu)
    if not found:
        return NOT_READABLE
    return {gov: cpu_list_text(cpus) for gov, cpus in sorted(found.items())}


def _allowed_cpus():
    if not hasattr(os, "sched_getaffinity"):
        return "unsupported"
    return cpu_list_text(os.sched_getaffinity(0))


def _git_commit():
    """HEAD of the checkout the pyqueue package lives in, with a dirty flag."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    def git(*args):
        return subprocess.run(["git", "-C", here] + list(args), capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
    try:
        # a venv inside some repository must not lend us that repository's commit
        git("ls-files", "--error-unmatch", "__init__.py")
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return {"commit": "unknown", "dirty": None}
    return {"commit": commit, "dirty": dirty}


def _versions():
    versions = {"python": "%s %s" % (platform.python_implementation(),
                                     platform.python_version())}
    for name in ("numpy", "cffi", "pyqueue"):
        try:
            versions[name] = getattr(__import__(name), "__version__", "unknown")
        except ImportError:
            versions[name] = "not installed"
    return versions


def collect_environment(pinning=None, argv=None):
    """The environment record as a JSON-ready dict.

    ``pinning``: what the experiment pinned (e.g. ``{"producer_cpu": 2,
    "consumer_cpu": 3}``), or None for "not pinned / not stated".  ``argv``: the
    command line (defaults to ``sys.argv``).
    """
    argv = list(sys.argv if argv is None else argv)
    uname = os.uname()
    return {
        "cpu_model": _cpu_model(),
        "kernel": {"system": uname.sysname, "release": uname.release,
                   "version": uname.version, "machine": uname.machine},
        "cpu_count": os.cpu_count(),
        "allowed_cpus": _allowed_cpus(),
        "pinning": pinning if pinning is not None else "not stated",
        "governor": _governors(),
        "versions": _versions(),
        "git": _git_commit(),
        "command": {"argv": argv, "line": shlex.join(argv), "python": sys.executable},
        "recorded_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
