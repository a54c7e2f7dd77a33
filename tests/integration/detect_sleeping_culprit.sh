#!/bin/bash
# (b) one rank sleeps while the others block in the collective: the job is flagged hung within
# soft timeout + 1 s and the sleeping rank is named culprit.
. "$(dirname "$0")/lib.sh"
SOFT=3
start_agent --soft-timeout $SOFT --hard-timeout 300 --action report || exit 1
JOB=sleepjob
ring_job $JOB 4 --fault sleep --fault-rank 2 --fault-after 2
CUL=$(rank_pid sleepjob 2)
wait_until 20 test -e "$T/sleepjob/fault.ts" || fail "fault never started"
FAULT_TS=$(cat "$T/sleepjob/fault.ts")
if wait_until $((SOFT + 8)) jq_status '.jobs[] | select(.job=="sleepjob") | .hung'; then
	pass "job flagged hung"
else
	fail "job not flagged hung"
fi
HANG=$(events_of hang | jq -c "select(.job==\"$JOB\")" | head -1)
[ -n "$HANG" ] || fail "no hang event in the log"
HANG_TS=$(echo "$HANG" | jq -r '.ts' | xargs -I{} date -d {} +%s.%N)
DELAY=$(awk "BEGIN{print $HANG_TS - $FAULT_TS}")
log "hang reported ${DELAY}s after the fault (soft timeout ${SOFT}s)"
awk "BEGIN{exit !($DELAY <= $SOFT + 1)}" && pass "within soft + 1 s" || fail "hang reported after ${DELAY}s > soft + 1"
echo "$HANG" | jq -e ".culprits == [$CUL] and .culprit_ranks == [2]" >/dev/null &&
	pass "hang event names rank 2 (pid $CUL)" || fail "wrong culprit in hang event: $(echo "$HANG" | jq -c '.culprits, .why')"
jq_status ".ranks[] | select(.pid==$CUL) | .culprit and .hung and .state==\"blocked\" and .syscall==\"clock_nanosleep\"" &&
	pass "status: culprit blocked in clock_nanosleep" || fail "status of the culprit is wrong"
jq_status "[.ranks[] | select(.job==\"sleepjob\" and .pid!=$CUL) | .culprit] | all | not" &&
	pass "no other rank blamed" || fail "another rank blamed"
jq_status '[.ranks[] | select(.job=="sleepjob") | has("pid","rank","job","state","reason","state_for_s","hung","culprit")] | all' &&
	pass "status has the contract fields" || fail "status fields missing"
echo "$HANG" | jq -e "[.ranks[] | select(.pid==$CUL) | .kernel_stack | length > 0] | all" >/dev/null &&
	pass "hang report has the culprit's kernel stack" || fail "no kernel stack in the hang report"
ftbpf explain "$CUL" > "$T/explain.txt" && grep -q "clock_nanosleep" "$T/explain.txt" &&
	pass "ftbpf explain shows the culprit's syscall" || fail "explain output wrong: $(head -5 "$T/explain.txt")"
finish
