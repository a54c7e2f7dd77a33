#!/bin/bash
# A rank's children belong to it (tracked from fork, shown by explain, their exits logged with
# the sender), and `ftbpf events --follow` streams events as they happen, filtered per user.
. "$(dirname "$0")/lib.sh"
start_agent --soft-timeout 30 --hard-timeout 300 --action report || exit 1
ftbpf events --follow --json >"$T/follow.out" 2>&1 &
FOLLOW=$!
WORKLOAD_PIDS+=($FOLLOW)
FTBPF_JOB=kids FTBPF_RANK=0 bash -c 'sleep 30 & sleep 31 & wait' &
RANK=$!
WORKLOAD_PIDS+=($RANK)
wait_until 10 jq_status "[.ranks[] | select(.pid==$RANK)] | length == 1" && pass "bash rank adopted" || fail "rank not adopted"
wait_until 10 bash -c "[ \$(jq -s '[.[] | select(.type==\"child\" and .owner_pid==$RANK)] | length' '$LOG') -ge 2 ]" &&
	pass "two child events owned by the rank" || fail "child events: $(events_of child)"
wait_until 5 bash -c "'$B/ftbpf' --socket '$SOCK' explain $RANK --json | jq -e '[.children[] | select(.comm==\"sleep\" and .exited==false)] | length == 2' >/dev/null" &&
	pass "explain lists both children by their exec'd name" || fail "explain children: $(ftbpf explain $RANK --json | jq -c .children)"
CHILD=$(ftbpf explain "$RANK" --json | jq '.children[0].pid')
ftbpf explain "$CHILD" --json | jq -e ".rank.pid == $RANK" >/dev/null && pass "explain of a child explains its rank" || fail "child explain"
jq_status "[.ranks[] | select(.pid==$CHILD)] | length == 0" && pass "children are not ranks" || fail "child listed as a rank"
/bin/kill -TERM "$CHILD" & KILLER=$!; wait $KILLER
wait_until 5 has_event child_exit ".pid==$CHILD and .owner_pid==$RANK and .signal==15 and .sender_pid==$KILLER and .sender_comm==\"kill\"" &&
	pass "child exit logged with signal and sender" || fail "child exit: $(events_of child_exit)"
wait_until 5 bash -c "grep -q '\"type\":\"child_exit\"' '$T/follow.out'" && pass "events --follow streamed the child exit" || fail "follow: $(tail -3 "$T/follow.out")"
grep -q "\"type\":\"adopt\".*\"pid\":$RANK" "$T/follow.out" && pass "events --follow streamed the adoption" || fail "no adopt in follow output"
kill -0 $FOLLOW && pass "follower still connected" || fail "follower gone"
NBEV=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$B/ftbpf" --socket "$SOCK" events --json | jq -s "[.[] | select(.pid==$RANK)] | length")
[ "$NBEV" = 0 ] && pass "another user does not see these events" || fail "nobody sees $NBEV events of root's rank"
ftbpf events | grep -q "adopt.*pid=$RANK" && pass "human events output" || fail "events text"
finish
