#!/bin/bash
# (f) the agent is kill -9'ed mid-job and restarted: it resumes every rank with its history
# from the pinned maps, and learns what happened while it was down.
. "$(dirname "$0")/lib.sh"
start_agent --soft-timeout 30 --hard-timeout 300 --action report || exit 1
ring_job restartjob 3 --hang-on-peer-loss 1
sleep 2
wait_until 5 jq_status '[.ranks[] | select(.job=="restartjob")] | length == 3' || fail "ranks not adopted"
BEFORE=$(status_json | jq '[.ranks[] | select(.job=="restartjob") | .syscalls] | add')
PIDS=$(status_json | jq -c '[.ranks[] | select(.job=="restartjob") | .pid] | sort')
kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null; AGENT_PID=
# while no agent runs, the pinned programs keep tracking: kill rank 2 now
VICTIM=$(rank_pid restartjob 2)
/bin/kill -KILL "$VICTIM" & KILLER=$!; wait $KILLER
sleep 1
start_agent --soft-timeout 30 --hard-timeout 300 --action report || exit 1
jq_status '.agent.features.resumed' && pass "pinned state resumed" || fail "not resumed"
wait_until 5 jq_status "[.ranks[] | select(.job==\"restartjob\") | .pid] | sort == $PIDS" &&
	pass "all 3 ranks known after restart" || fail "ranks lost: $(status_json | jq -c '[.ranks[].pid]')"
AFTER=$(status_json | jq '[.ranks[] | select(.job=="restartjob" and .exited==false) | .syscalls] | add')
log "syscalls before restart (3 ranks): $BEFORE, after (2 live ranks): $AFTER"
[ "$AFTER" -gt 0 ] && pass "per-thread history kept" || fail "history lost"
jq_status "[.ranks[] | select(.job==\"restartjob\")] | all(.adopted_s_ago > 2)" && pass "adoption time kept" || fail "adoption time reset"
wait_until 5 jq_status ".ranks[] | select(.pid==$VICTIM) | .exited and .signal==9 and .sender_comm==\"kill\"" &&
	pass "exit during downtime attributed (sender kill)" || fail "exit during downtime lost"
[ "$(events_of adopt | jq -r 'select(.how=="resume") | .pid' | sort -u | wc -l)" -ge 3 ] && pass "resume events logged" || fail "no resume events"
finish
