#!/bin/bash
# (c) a rank spins on the CPU without syscalls while the others block in the collective.
. "$(dirname "$0")/lib.sh"
SOFT=3
start_agent --soft-timeout $SOFT --hard-timeout 300 --action report || exit 1
JOB=spinjob
ring_job $JOB 3 --fault spin --fault-rank 1 --fault-after 2
CUL=$(rank_pid spinjob 1)
wait_until 20 test -e "$T/spinjob/fault.ts" || fail "fault never started"
FAULT_TS=$(cat "$T/spinjob/fault.ts")
wait_until $((SOFT + 8)) jq_status '.jobs[] | select(.job=="spinjob") | .hung' && pass "job flagged hung" || fail "job not flagged hung"
HANG=$(events_of hang | jq -c "select(.job==\"$JOB\")" | head -1)
DELAY=$(awk "BEGIN{print $(date -d "$(echo "$HANG" | jq -r .ts)" +%s.%N) - $FAULT_TS}")
log "hang reported ${DELAY}s after the fault"
awk "BEGIN{exit !($DELAY <= $SOFT + 1)}" && pass "within soft + 1 s" || fail "late: ${DELAY}s"
echo "$HANG" | jq -e ".culprit_ranks == [1]" >/dev/null && pass "rank 1 is the culprit" || fail "culprit: $(echo "$HANG" | jq -c .why)"
# a busy host gives a spinning rank less than a core: its CPU share proves nothing, its
# runnable state without a syscall does
jq_status ".ranks[] | select(.pid==$CUL) | .state==\"spinning\" and .culprit and .cpu > 0.05" &&
	pass "culprit state spinning" || fail "culprit state wrong"
finish
