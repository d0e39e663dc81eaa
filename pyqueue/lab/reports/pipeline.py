"""The figures and the printed summary of a pipeline run (experiments/pipeline.py):
latency and lateness percentiles per variant, context switches, CPU shares,
rests.  Nothing here measures."""
import numpy as np

from ..common.stats import NOT_ENOUGH, format_table, per_round_then_mean
from pyqueue.table import render

__all__ = ["figures", "summary", "THREADS", "PERCENTILES"]

THREADS = ("producer", "stage", "consumer")
PERCENTILES = (50.0, 99.0, 99.9, 100.0)


def figures(lat_slices, late_slices, infos):
    """One variant's figures from its slices: latency and producer lateness percentiles
    (µs; nearest rank per slice, mean over slices), context switches, CPU shares, rests."""
    rp = per_round_then_mean([s.astype(np.float64) / 1e3 for s in lat_slices], PERCENTILES)
    late = per_round_then_mean([s.astype(np.float64) / 1e3 for s in late_slices], PERCENTILES)
    msgs = sum(i["delivered"] for i in infos)
    wall = sum(i["wall_ns"] for i in infos)
    cs = sum(i["context_switches"] for i in infos)
    per_thread_cs = {t: sum(i["threads"][t]["voluntary_cs"] + i["threads"][t]["involuntary_cs"]
                            for i in infos) for t in THREADS}
    per_thread_cpu = {t: sum(i["threads"][t]["cpu_ns"] for i in infos) / wall for t in THREADS}
    others = [i["others_cpus"] for i in infos if i.get("others_cpus") is not None]
    return dict(latency_us=rp, others_cpus=float(np.mean(others)) if others else None,
                producer_lateness_us=late, messages=msgs,
                context_switches=cs, cs_per_1k_messages=1000.0 * cs / msgs,
                cs_by_thread=per_thread_cs, cpus_used=sum(per_thread_cpu.values()),
                cpu_share_by_thread=per_thread_cpu,
                waits=sum(i["threads"][t]["waits"] for i in infos for t in ("stage", "consumer")),
                rests=sum(i["threads"][t]["rests"] for i in infos for t in ("stage", "consumer")),
                rest_share_of_wall=sum(i["threads"][t]["rest_ns"] for i in infos
                                       for t in ("stage", "consumer")) / wall)


def _us(rp, i):
    """Percentile i of a RoundPercentiles, or why it is not reported."""
    return "%.1f" % rp.mean[i] if rp.reported(i) else rp.reason(i, short=True)


def summary(res, markdown=False):
    """The text the command prints of a PipelineResult ``res``."""
    rows = {n: f["latency_us"] for n, f in res.table.items()}
    lines = ["Pipeline producer -> stage -> consumer at %g msg/s, %d-byte messages, %d messages "
             "per slice; end-to-end latency from the scheduled send time"
             % (res.params["rate"], res.params["msg_size"], res.params["messages"]), ""]
    lines.append(format_table(rows, unit="µs", digits=1, label="variant", markdown=markdown))
    lines.append("")
    lines.append(render(
        ["variant", "ctx switches", "per 1k messages", "CPUs used",
         "CPU share producer/stage/consumer", "other load (CPUs)"],
        [[n, f["context_switches"], "%.1f" % f["cs_per_1k_messages"], "%.2f" % f["cpus_used"],
          " / ".join("%.2f" % f["cpu_share_by_thread"][t] for t in THREADS),
          "-" if f["others_cpus"] is None else "%.2f" % f["others_cpus"]]
         for n, f in res.table.items()], markdown=markdown))
    lines.append("")
    lines.append("producer lateness p99.9 (send - scheduled, µs): " + ", ".join(
        "%s %s" % (n, _us(f["producer_lateness_us"], 2)) for n, f in res.table.items()))
    base = res.table.get("mutex_condvar")
    if base:
        for n in ("pinned_spin", "pinned_backoff"):
            if n in res.table:
                a, b = base["latency_us"].mean[2], res.table[n]["latency_us"].mean[2]
                lines.append("p99.9 mutex_condvar / %s: %s" % (
                    n, "%.1fx" % (a / b) if np.isfinite(a) and np.isfinite(b) and b else
                    "not reported (%s)" % NOT_ENOUGH))
    lines.append("receiver rests (CPU budget; count, share of wall time): " + ", ".join(
        "%s %d %.1f%%" % (n, f["rests"], 100 * f["rest_share_of_wall"])
        for n, f in res.table.items()))
    pr = res.params
    lines.append("CPUs (producer, stage, consumer) of the pinned variants: (%d, %d, %d)%s; "
                 "SCHED_FIFO stage/consumer %s, producer %s; pacer spin %d ns; load average at "
                 "start %s" % (pr["writer_cpu"], pr["stage_cpu"], pr["reader_cpu"],
                               " (stage and consumer in one thread)" if pr["combine"] else "",
                               pr["fifo_priority"] or "off", pr["producer_fifo"] or "off",
                               pr["pacer_spin_ns"], res.loadavg_start))
    lines.append("status: %s" % res.status)
    return "\n".join(lines)
