#!/bin/bash
# (e) a rank is SIGKILLed by another process: the exit is attributed to that process (pid and
# comm), and the job, left waiting, is hung with the dead rank as culprit.
. "$(dirname "$0")/lib.sh"
SOFT=3
start_agent --soft-timeout $SOFT --hard-timeout 300 --action report || exit 1
ring_job killjob 3 --hang-on-peer-loss 1
sleep 2
VICTIM=$(rank_pid killjob 1)
/bin/kill -KILL "$VICTIM" &
KILLER=$!
wait $KILLER
wait_until 5 test -n "$(events_of exit)" || fail "no exit event"
EXIT=$(events_of exit | jq -c "select(.pid==$VICTIM)" | head -1)
log "exit event: $EXIT"
echo "$EXIT" | jq -e ".signal==9 and .exit_code==null and .sender_pid==$KILLER and .sender_comm==\"kill\"" >/dev/null &&
	pass "exit attributed to pid $KILLER (kill)" || fail "wrong attribution"
wait_until 3 jq_status ".ranks[] | select(.pid==$VICTIM) | .state==\"exited\" and .signal==9 and .sender_pid==$KILLER and .sender_comm==\"kill\"" &&
	pass "status shows signal and sender" || fail "status exit fields wrong"
wait_until $((SOFT + 6)) jq_status '.jobs[] | select(.job=="killjob") | .hung' && pass "job hung" || fail "job not hung"
jq_status ".jobs[] | select(.job==\"killjob\") | .culprits == [$VICTIM]" && pass "dead rank is the culprit" || fail "culprit wrong"
has_event job_failed ".job==\"killjob\" and .culprit_pid==$VICTIM" &&
	pass "job_failed event names the dead rank" || fail "no job_failed event"
finish
