"""python -m pyqueue env: what to check before trusting a measurement on this machine.

Prints the topology, the clocks and their measured costs, which perf counters
work (and why not), and whether pinning and SCHED_FIFO are allowed.
"""
import os
import platform
import sys

from pyqueue.table import render
from .options import add_output_options, emit_json

NAME = "env"
HELP = "print topology, clock costs, perf counters and scheduling rights of this machine"


def add_arguments(parser):
    add_output_options(parser, what="the report")
    parser.add_argument("--sysfs-root", default="/sys", help="read the topology under this root (default /sys)")


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _cpu_model_and_flags():
    model, flags = platform.processor() or platform.machine(), set()
    text = _read("/proc/cpuinfo") or ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "Model") and model in ("", platform.machine(), platform.processor()):
            model = value.strip()
        elif key in ("flags", "Features") and not flags:
            flags = set(value.split())
    return model, flags


def collect(sysfs_root="/sys"):
    """Everything the command reports, as a JSON-ready dict."""
    from ..runtime import clock, counters, cpu, topology

    model, flags = _cpu_model_and_flags()
    out = {"machine": {"cpu_model": model, "arch": platform.machine(), "kernel": platform.release(),
                       "cpus_online": os.cpu_count(), "python": sys.version.split()[0],
                       "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")}}
    try:
        topo = topology.read(sysfs_root)
        rel = {}
        for r in ("smt_sibling", "same_l3", "other_l3", "other_numa"):
            pair = topo.pick_pair(r, required=False)
            rel[r] = list(pair) if pair else None
        out["topology"] = dict(topo.to_dict(), summary=topo.describe(), pairs=rel)
    except (OSError, ValueError) as e:
        out["topology"] = {"error": str(e)}

    cc = clock.calibrate()
    # The cycle counter's step is measured once, in ticks; its ns follow from it.
    ticks = clock.step_ticks()
    steps = {name: clock.step_ns(name) for name in clock.CLOCKS if name != "cycles"}
    steps["cycles"] = None if ticks is None else clock.cycles_to_ns(ticks)
    out["clocks"] = {
        "clocksource": _read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "cost_ns": clock.costs(),
        "step_ns": steps,
        "cycle_step_ticks": ticks,
        "cycle_counter": {"name": cc.name, "available": cc.available,
                          "ticks_per_ns": cc.ticks_per_ns, "counter_hz": cc.counter_hz,
                          "constant_tsc": "constant_tsc" in flags if cc.name == "rdtsc" else None,
                          "nonstop_tsc": "nonstop_tsc" in flags if cc.name == "rdtsc" else None},
    }

    with counters.Counters() as c:
        status = c.status
        out["counters"] = {
            "perf_event_paranoid": _read("/proc/sys/kernel/perf_event_paranoid"),
            "events": {n: {"available": s.available, "reason": s.reason} for n, s in status.items()},
            "read_cost_ns": c.read_cost_ns(),
        }

    pin_ok, pin_detail = cpu.probe_pinning()
    fifo_ok, fifo_detail = cpu.probe_fifo()
    out["scheduling"] = {"allowed_cpus": cpu.allowed_cpus(), "pinning": pin_ok, "pinning_detail": pin_detail,
                         "sched_fifo": fifo_ok, "sched_fifo_detail": fifo_detail,
                         "rt_runtime_us": _read("/proc/sys/kernel/sched_rt_runtime_us")}
    out["warnings"] = warnings(out)
    return out


def warnings(env):
    """Plain-language reasons to distrust a measurement here."""
    w = []
    clocks = env["clocks"]
    if clocks["clocksource"] not in (None, "tsc", "arch_sys_counter"):
        w.append("clocksource is %r, not tsc: clock_gettime may be slow or a system call"
                 % clocks["clocksource"])
    cyc = clocks["cycle_counter"]
    if cyc["name"] == "rdtsc" and cyc["constant_tsc"] is False:
        w.append("the TSC is not constant_tsc: cycle counts vary with frequency")
    ev = env["counters"]["events"]
    if not any(ev[n]["available"] for n in ("cycles", "instructions")):
        w.append("no hardware counters (cycles/instructions): no PMU exposed (VM?) or forbidden")
    if not env["scheduling"]["pinning"]:
        w.append("pinning is refused: thread placement and migrations are up to the scheduler")
    gov = env["machine"]["governor"]
    if gov not in (None, "performance"):
        w.append("cpufreq governor is %r: frequency scaling adds noise (use 'performance')" % gov)
    topo = env.get("topology", {})
    if topo.get("cpus") and len(topo["cpus"]) < 4:
        w.append("only %d CPUs: producer, consumer and the OS compete for them" % len(topo["cpus"]))
    return w


def _fmt(v, unit=" ns"):
    return "n/a" if v is None else "%.1f%s" % (v, unit)


def rows(env):
    """The report as (item, value) rows, sub-items indented under their item."""
    out = []
    p = lambda key, value: out.append((key, value))  # noqa: E731
    m = env["machine"]
    p("machine", "%s (%s), kernel %s, %s CPUs online, python %s"
      % (m["cpu_model"], m["arch"], m["kernel"], m["cpus_online"], m["python"]))
    p("governor", m["governor"] or "not readable")
    t = env["topology"]
    if "error" in t:
        p("topology", "unreadable: %s" % t["error"])
    else:
        p("topology", "%s (from %s)" % (t["summary"], t["source"]))
        p("  cores", " ".join("[%s]" % ",".join(map(str, c)) for c in t["cores"]))
        p("  L3 domains", " ".join("[%s]" % ",".join(map(str, d)) for d in t["l3_domains"])
          or "unknown")
        p("  NUMA nodes", " ".join("%s:[%s]" % (n, ",".join(map(str, c)))
                                   for n, c in t["numa_nodes"].items()))
        for r, pair in t["pairs"].items():
            p("  " + r, "CPUs %d,%d" % tuple(pair) if pair else "none on this machine")
    c = env["clocks"]
    cyc = c["cycle_counter"]
    p("clocks", "clocksource %s; %s %s" % (c["clocksource"], cyc["name"],
      "%.4f ticks/ns" % cyc["ticks_per_ns"] if cyc["available"] else "unavailable"))
    for name, cost in c["cost_ns"].items():
        step = c["step_ns"].get(name)
        p("  " + name, "%s per read%s" % (_fmt(cost), "" if step is None else
                                          ", resolution not measured (it hardly moved)"
                                          if not step else ", moves in steps of %s" % _fmt(step)))
    if c["cycle_step_ticks"] and c["cycle_step_ticks"] > 1:
        p("", "the cycle counter advances %d ticks at a time: every cycle-timed sample "
          "is a multiple of %s" % (c["cycle_step_ticks"], _fmt(c["step_ns"]["cycles"])))
    k = env["counters"]
    p("counters", "perf_event_paranoid=%s; one read of all available: %s"
      % (k["perf_event_paranoid"], _fmt(k["read_cost_ns"])))
    for name, st in k["events"].items():
        p("  " + name, "available" if st["available"] else "unavailable: " + st["reason"])
    s = env["scheduling"]
    p("pinning", "%s (%s)" % ("allowed" if s["pinning"] else "REFUSED", s["pinning_detail"]))
    p("SCHED_FIFO", "%s (%s)" % ("allowed" if s["sched_fifo"] else "refused",
                                 s["sched_fifo_detail"]))
    for w in env["warnings"]:
        p("warning", w)
    return out


def print_text(env, file=sys.stdout, markdown=False):
    print(render(("item", "value"), rows(env), markdown=markdown), file=file)


def run(args):
    env = collect(args.sysfs_root)
    if not emit_json(args, env):
        print_text(env, markdown=args.markdown)
    return 0
