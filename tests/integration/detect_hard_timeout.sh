#!/bin/bash
# (g) at the hard timeout the hung job's ranks are terminated: SIGTERM through pidfds, then
# SIGKILL after the grace period for a rank that ignores SIGTERM.
. "$(dirname "$0")/lib.sh"
start_agent --soft-timeout 2 --hard-timeout 4 --action terminate --grace 2 || exit 1
ring_job hardjob 3 --hang-on-peer-loss 1 --fault sleep-ignore-term --fault-rank 1 --fault-after 1
P0=$(rank_pid hardjob 0); P1=$(rank_pid hardjob 1); P2=$(rank_pid hardjob 2)
wait_until 20 test -e "$T/hardjob/fault.ts" || fail "fault never started"
gone() { ! kill -0 $P0 2>/dev/null && ! kill -0 $P1 2>/dev/null && ! kill -0 $P2 2>/dev/null; }
# 'ring' ranks are children of this shell (disowned); they are reaped by init only if we wait.
wait_until 15 bash -c "for p in $P0 $P1 $P2; do [ \"\$(awk '{print \$3}' /proc/\$p/stat 2>/dev/null)\" = Z ] || [ ! -e /proc/\$p ] || exit 1; done" &&
	pass "every rank of the hung job is gone" || fail "ranks still alive"
AGENT=$AGENT_PID
has_event action ".pid==$P0 and .signal==15 and .action==\"hard_timeout\"" && pass "SIGTERM sent at hard timeout" || fail "no SIGTERM action"
has_event action ".pid==$P1 and .signal==9 and .action==\"grace_expired\"" && pass "SIGKILL after grace for the rank ignoring SIGTERM" || fail "no escalation"
wait_until 5 test -n "$(events_of exit | jq -c "select(.pid==$P1)")"
has_event exit ".pid==$P1 and .signal==9 and .sender_pid==$AGENT and .sender_comm==\"ftbpfd\"" &&
	pass "the kill is attributed to ftbpfd" || fail "exit attribution: $(events_of exit | jq -c "select(.pid==$P1)")"
has_event hard_timeout '.job=="hardjob" and .action=="terminate"' && pass "hard_timeout event" || fail "no hard_timeout event"
[ -z "$(events_of recovered | jq -c 'select(.job=="hardjob")')" ] && pass "a terminated job is not reported as recovered" || fail "recovered after termination"
finish
