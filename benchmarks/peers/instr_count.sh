#!/bin/sh
# Instructions per message (write path, read path) of pyqueue and each peer,
# counted by callgrind: there are no hardware counters on these VMs.
# Usage: benchmarks/peers/instr_count.sh [peer_dir]   (from anywhere, after the build)
# PYQ_INSTR_QUEUES="pyqueue:0 pyqueue:32" counts only those adapter:burst pairs;
# PYQ_INSTR_PUBLISH=each counts pyqueue's queues under publish each (default max);
# PYQ_INSTR_SRC=DIR builds the queue from DIR's csrc/ instead (e.g. a
# `git archive main csrc | tar -x -C DIR` of the base of a change): an A/B of
# instruction counts with the same loops.
set -e
peers=$(realpath "${1:-$(dirname "$0")/../../pyqueue/peers}")
cd "$(dirname "$0")/../.."
src=$(realpath "${PYQ_INSTR_SRC:-.}")
out=${TMPDIR:-/tmp}/pyq_instr
mkdir -p "$out"
# The sources are the layers' one list (csrc/layers.mk), read through make.
srcs=$(printf 'include %s/csrc/layers.mk\nall:\n\t@echo $(addprefix %s/csrc/,$(PYQ_ALL))\n' "$src" "$src" |
       make -s -f -)
cc -std=gnu11 -O2 -pthread -I"$src/csrc/include" -I"$src/csrc" -o "$out/instr_count" \
   benchmarks/peers/instr_count.c $srcs -ldl -lm
rounds=200
msgs=$((rounds * 512))
# write / read: the whole loop per message (run_writes / run_polls inclusive);
# own: the queue's calls alone -- minus the loop's own instructions (making
# the sequence numbers, the indirect call) and, for reads, the callback.
# pyqueue_inline (pyqueue_inline.h, no adapter): the queue is inlined into the
# loop, so only the whole loop is counted ("-" in the own columns).
printf '%-14s %12s %12s %12s %12s\n' queue "write Ir/msg" "read Ir/msg" "write own" "read own"
for spec in ${PYQ_INSTR_QUEUES:-pyqueue:0 mutex:0 ck:0 dpdk:0 dpdk:32 rwq:0 boost:0 boost:32 atomic_queue:0 pyqueue:32 pyqueue_inline:0 pyqueue_inline:32}; do
    name=${spec%:*}; burst=${spec#*:}
    cg="$out/cg.$name.$burst"
    if ! valgrind --tool=callgrind --callgrind-out-file="$cg" \
         "$out/instr_count" "$name" "$peers" "$burst" "$rounds" >/dev/null 2>&1; then
        printf '%-14s %s\n' "$name/$burst" "not installed or failed"; continue
    fi
    ir() { # ir inclusive|self FUNCTION: its Ir in the profile, 0 when absent
        callgrind_annotate --inclusive=$1 "$cg" 2>/dev/null |
            awk -v f=":$2 " '$0 ~ f {gsub(",","",$1); v=$1; exit} END {print v+0}'
    }
    if [ "$name" = pyqueue_inline ]; then
        w=$(ir yes run_writes_inline); r=$(ir yes run_polls_inline)
        printf '%-14s %12.1f %12.1f %12s %12s\n' "inline/$burst" "$(echo "$w / $msgs" | bc -l)" \
            "$(echo "$r / $msgs" | bc -l)" - -
        continue
    fi
    w=$(ir yes run_writes); r=$(ir yes run_polls)
    wo=$(echo "$w - $(ir no run_writes)" | bc); ro=$(echo "$r - $(ir no run_polls) - $(ir yes check)" | bc)
    printf '%-14s %12.1f %12.1f %12.1f %12.1f\n' "$name/$burst" "$(echo "$w / $msgs" | bc -l)" \
        "$(echo "$r / $msgs" | bc -l)" "$(echo "$wo / $msgs" | bc -l)" "$(echo "$ro / $msgs" | bc -l)"
done
