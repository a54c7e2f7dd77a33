#!/bin/bash
# The fault-injection suite's long mode (make test-faults): FAULT_RUNS randomized runs of each
# fault kind of tests/integration/decide_faults.sh, its kinds shared out over FAULT_SLOTS copies
# that run side by side (each its own three namespaces, etcd, proxy and agents: FAULT_SLOT), so
# that 50 runs of each kind take about 40 minutes on a 2-core machine instead of 90. The host is
# busier for it, as a training node is: the invariants must hold all the same.
#   FAULT_RUNS (50)  FAULT_SLOTS (3)  FAULT_KINDS (all)  FAULT_REPORT (the table, a file)
# Takes the machine's integration-test lock for the whole run; prints each slot's FAIL lines and
# the table (kind, runs, runs with a violation); exits 1 when a run broke an invariant or a slot
# failed.
set -u
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "run-faults: needs root (namespaces, BPF)"; exit 1; }
RUNS=${FAULT_RUNS:-50}
SLOTS=${FAULT_SLOTS:-3}
case $SLOTS in [1-9]) ;; *) echo "run-faults: FAULT_SLOTS is 1..9, not '$SLOTS'"; exit 2 ;; esac
ALL=$(sed -n 's/^KINDS=\${FAULT_KINDS:-\(.*\)}$/\1/p' tests/integration/decide_faults.sh)
[ -n "$ALL" ] || { echo "run-faults: cannot read the kinds from decide_faults.sh"; exit 2; }
KINDS=${FAULT_KINDS:-$ALL}
for k in $KINDS; do
	echo " $ALL " | grep -q " $k " || { echo "run-faults: no fault kind '$k' (kinds: $ALL)"; exit 2; }
done
OUT=$(mktemp -d /tmp/ftbpf-faults.XXXXXX)
exec {LOCK}>/tmp/ftbpf-it.lock && flock "$LOCK"
export FTBPF_IT_LOCKED=1
# round robin: slot i takes kinds i, i + SLOTS, ...
declare -a SK PIDS
i=0
for k in $KINDS; do SK[$((i % SLOTS))]="${SK[$((i % SLOTS))]:-} $k"; i=$((i + 1)); done
start=$SECONDS
# stopped (Ctrl-C, a CI timeout): the slots go with it (each cleans up its namespaces on TERM)
trap 'kill -TERM "${PIDS[@]}" 2>/dev/null; wait; exit 130' INT TERM
for s in $(seq 0 $((SLOTS - 1))); do
	[ -n "${SK[$s]:-}" ] || continue
	echo "slot $s:${SK[$s]} ($RUNS runs each)"
	FAULT_SLOT=$s FAULT_RUNS=$RUNS FAULT_KINDS="${SK[$s]# }" FAULT_REPORT="$OUT/report.$s" \
		tests/integration/decide_faults.sh >"$OUT/log.$s" 2>&1 &
	PIDS[$s]=$!
done
bad=0
for s in "${!PIDS[@]}"; do
	wait "${PIDS[$s]}" || { bad=1; echo "slot $s failed (log: $OUT/log.$s):"; grep 'FAIL' "$OUT/log.$s" | head -40; }
	[ -s "$OUT/report.$s" ] || { bad=1; echo "slot $s wrote no report (log: $OUT/log.$s)"; tail -5 "$OUT/log.$s"; }
done
cat "$OUT"/report.* 2>/dev/null >"$OUT/report"
echo "fault kind / runs / runs with a violation ($SLOTS slots side by side, $((SECONDS - start)) s):"
column -t "$OUT/report"
awk '{r += $2; v += $3} END {printf "%d runs, %d with a violation\n", r, v}' "$OUT/report"
[ -n "${FAULT_REPORT:-}" ] && cp "$OUT/report" "$FAULT_REPORT"
awk '$3 != 0 {b = 1} END {exit b}' "$OUT/report" || bad=1
exit $bad
