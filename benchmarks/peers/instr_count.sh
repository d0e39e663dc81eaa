#!/bin/sh
# Instructions per message (write path, read path) of pyqueue and each peer,
# counted by callgrind: there are no hardware counters on these VMs.
# Usage: benchmarks/peers/instr_count.sh [peer_dir]   (from anywhere, after the build)
# PYQ_INSTR_QUEUES="pyqueue:0 pyqueue:32" counts only those adapter:burst pairs;
# PYQ_INSTR_PUBLISH=each counts pyqueue's queues under publish each (default max);
# PYQ_INSTR_NT_BACKLOG_KIB=0 streams every spill block (nontemporal_backlog_kib;
# by default the loop's small backlog leaves them cached, DESIGN §3.10);
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
# own: the queue's calls alone, i.e. the whole loop minus the loop's own
# instructions, which are printed apart ("loop": storing the sequence number
# into the 32-byte buffer, the call and its test; for reads, also the
# sequence-checking callback).  Adapter rows (pyqueue, the peers) call through
# the adapter's function pointers, so their "own" includes the adapter's
# wrapper; pyqueue_c calls pyqueue's exported functions directly.
# pyqueue_inline (pyqueue_inline.h, no adapter): the queue is inlined into the
# loop, so only the whole loop is counted ("-"): its loop is pyqueue_c's, the
# same source, whose "loop" columns are the nearest estimate of that share.
printf '%-16s %12s %12s %12s %12s %10s %10s\n' queue "write Ir/msg" "read Ir/msg" "write own" \
    "read own" "loop w" "loop r"
# A spec ending in :each counts that row under publish each (a scanning
# reader, one message a write and a read: the path a round trip and the Python
# one-thread pair pay, DESIGN §3.3); its label ends in /each.  Proposed targets
# for pyqueue_c/0/each: write <= 40 Ir own, read <= 25 -- a minimal ring's
# ~10-15 a side plus what each needs beyond it: the header word zeroed ahead for
# the scanning reader and the publish store.  Measured 144.3 write own, 47.5
# read own on main bb8595f; 91.2 and 38.5 after the cuts of e666d09-5ed03a9 (DESIGN §8.6).
for spec in ${PYQ_INSTR_QUEUES:-pyqueue:0 mutex:0 ck:0 dpdk:0 dpdk:32 rwq:0 boost:0 boost:32 atomic_queue:0 pyqueue:32 pyqueue_c:0 pyqueue_c:32 pyqueue_inline:0 pyqueue_inline:32 pyqueue_c:0:each pyqueue_inline:0:each}; do
    pub=${PYQ_INSTR_PUBLISH:-max}; tag=
    case $spec in *:*:each) spec=${spec%:each}; pub=each; tag=/each ;; esac
    name=${spec%:*}; burst=${spec#*:}
    cg="$out/cg.$name.$burst$(echo "$tag" | tr / .)"
    if ! PYQ_INSTR_PUBLISH=$pub valgrind --tool=callgrind --callgrind-out-file="$cg" \
         "$out/instr_count" "$name" "$peers" "$burst" "$rounds" >/dev/null 2>&1; then
        printf '%-16s %s\n' "$name/$burst$tag" "not installed or failed"; continue
    fi
    ir() { # ir inclusive|self FUNCTION: its Ir in the profile, 0 when absent
        callgrind_annotate --inclusive=$1 "$cg" 2>/dev/null |
            awk -v f=":$2 " '$0 ~ f {gsub(",","",$1); v=$1; exit} END {print v+0}'
    }
    per() { echo "($1) / $msgs" | bc -l; }
    case $name in
        pyqueue_inline)
            w=$(ir yes run_writes_inline); r=$(ir yes run_polls_inline)
            printf '%-16s %12.1f %12.1f %12s %12s %10s %10s\n' "inline/$burst$tag" "$(per "$w")" \
                "$(per "$r")" - - - -
            continue ;;
        pyqueue_c) fw=run_writes_c; fr=run_polls_c ;;
        *) fw=run_writes; fr=run_polls ;;
    esac
    w=$(ir yes $fw); r=$(ir yes $fr)
    lw=$(ir no $fw); lr=$(echo "$(ir no $fr) + $(ir yes check)" | bc)
    printf '%-16s %12.1f %12.1f %12.1f %12.1f %10.1f %10.1f\n' "$name/$burst$tag" "$(per "$w")" \
        "$(per "$r")" "$(per "$w - $lw")" "$(per "$r - $lr")" "$(per "$lw")" "$(per "$lr")"
done
