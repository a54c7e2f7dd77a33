#!/bin/bash
# (d) a rank is SIGSTOPped (by another process) while the others wait for it.
. "$(dirname "$0")/lib.sh"
SOFT=3
start_agent --soft-timeout $SOFT --hard-timeout 300 --action report || exit 1
JOB=stopjob
ring_job $JOB 3
sleep 2
CUL=$(rank_pid stopjob 2)
T0=$(wall)
/bin/kill -STOP "$CUL"
wait_until $((SOFT + 8)) jq_status '.jobs[] | select(.job=="stopjob") | .hung' && pass "job flagged hung" || fail "job not flagged hung"
HANG=$(events_of hang | jq -c "select(.job==\"$JOB\")" | head -1)
DELAY=$(awk "BEGIN{print $(date -d "$(echo "$HANG" | jq -r .ts)" +%s.%N) - $T0}")
log "hang reported ${DELAY}s after SIGSTOP"
awk "BEGIN{exit !($DELAY <= $SOFT + 1)}" && pass "within soft + 1 s" || fail "late: ${DELAY}s"
echo "$HANG" | jq -e ".culprit_ranks == [2]" >/dev/null && pass "stopped rank is the culprit" || fail "culprit: $(echo "$HANG" | jq -c .why)"
jq_status ".ranks[] | select(.pid==$CUL) | .state==\"stopped\" and .culprit" && pass "state stopped" || fail "state wrong"
has_event signal ".pid==$CUL and .signal==19 and .sender_comm==\"kill\"" &&
	pass "SIGSTOP logged with its sender" || fail "no signal event for SIGSTOP"
kill -CONT "$CUL"
wait_until 5 jq_status '.jobs[] | select(.job=="stopjob") | .hung | not' && pass "job recovers after SIGCONT" || fail "no recovery"
wait_until 3 test -n "$(events_of recovered)" && pass "recovered event" || fail "no recovered event"
finish
