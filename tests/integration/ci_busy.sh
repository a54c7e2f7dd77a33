#!/bin/bash
# time-limit: 400
# ftbpf-ci on a busy CI runner: a CPU hog per core and an unrelated process running /bin/true
# every 0.3 s elsewhere on the host. A two-line Python deadlock under --hang-timeout 5 is caught
# within hang-timeout + 1 s, 20 runs of 20 (CI_RUNS to change). And a ftbpf-ci killed with
# SIGKILL (what a CI job timeout does) leaves no BPF program attached and nothing pinned.
. "$(dirname "$0")/lib.sh"
CI=$B/ftbpf-ci
RUNS=${CI_RUNS:-20}
HT=5
cd "$T" || exit 1
links() { bpftool link show 2>/dev/null | grep -cE "prog [0-9]+ +(tracing|raw_tracepoint)|tp '(sys_enter|sys_exit)'"; }

# SIGKILL leaves nothing behind
L0=$(links)
"$CI" --hang-timeout 60 -- sleep 100 >/dev/null 2>&1 &
CIP=$!
wait_until 10 bash -c "[ \$(bpftool link show 2>/dev/null | grep -cE \"prog [0-9]+ +(tracing|raw_tracepoint)|tp '(sys_enter|sys_exit)'\") -gt $L0 ]" ||
	fail "ftbpf-ci attached nothing?"
L1=$(links)
kill -9 $CIP; wait $CIP 2>/dev/null; pkill -9 -f "^sleep 100$"
wait_until 5 bash -c "[ \$(bpftool link show 2>/dev/null | grep -cE \"prog [0-9]+ +(tracing|raw_tracepoint)|tp '(sys_enter|sys_exit)'\") -le $L0 ]" &&
	pass "killed with SIGKILL: its $((L1 - L0)) links are gone with it" || fail "links left attached: $L0 before, $(links) after"
ls -d /sys/fs/bpf/ftbpf-ci-* >/dev/null 2>&1 && fail "pins left: $(ls -d /sys/fs/bpf/ftbpf-ci-*)" || pass "nothing pinned under /sys/fs/bpf"

# the busy runner
for _ in $(seq "$(nproc)"); do sh -c 'while :; do :; done' & WORKLOAD_PIDS+=($!); done
sh -c 'while :; do /bin/true; sleep 0.3; done' & WORKLOAD_PIDS+=($!)
printf 'import threading\nl = threading.Lock(); l.acquire(); l.acquire()\n' >"$T/deadlock.py"
OK=0; WORST=0
for i in $(seq "$RUNS"); do
	timeout 60 "$CI" --hang-timeout $HT --grace 1 --report "$T/r$i.json" -- /usr/bin/python3 "$T/deadlock.py" >/dev/null 2>"$T/r$i.err"; rc=$?
	E=$(jq -r '.elapsed_s // 999' "$T/r$i.json" 2>/dev/null || echo 999)
	WORST=$(awk -v a="$E" -v b="$WORST" 'BEGIN{print (a > b) ? a : b}')
	if [ $rc -eq 124 ] && awk -v e="$E" 'BEGIN{exit !(e <= '$((HT + 1))')}'; then OK=$((OK + 1)); else log "run $i: rc=$rc caught after ${E} s"; fi
done
[ $OK -eq "$RUNS" ] && pass "busy runner: the deadlock caught within $HT + 1 s in $OK of $RUNS runs (slowest ${WORST} s)" ||
	fail "busy runner: caught in time in $OK of $RUNS runs (slowest ${WORST} s)"
finish
