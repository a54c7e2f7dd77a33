#!/bin/bash
# time-limit: 420
# An agent paused 1.6 s during a preemption (a GC-like stall, shorter than its 3 s lease): three
# agents in network namespaces with etcd, a launcher of two C ranks (docs/examples/c_loop.c,
# 50 ms steps) on each; node 3's agent is SIGSTOPped, a SIGTERM reaches rank 0 on node 1 at a
# random moment of the pause, node 3's agent is resumed 1.6 s after it stopped. Every rank of
# the job saves one step and exits 42: the step binds only once every rank acknowledged the
# request (node 3's acknowledgement comes after the pause), and no rank runs past it meanwhile
# (the ranks that acknowledged wait at their next step boundary). Node 3 is never left out
# (I6). Three rounds, each with its own random timing.
. "$(dirname "$0")/lib.sh"
command -v etcd >/dev/null || { fail "etcd not installed (make deps)"; finish; }
. "$(dirname "$0")/cluster.sh"
cluster_up dfip 10.79.1 24791 || finish
for i in 1 2 3; do start_node $i; done
wait_until 15 all_alive || fail "the mesh did not form"
for round in 1 2 3; do
	run $round 50 0 1 2 3
	wait_until 30 started $round 1 2 3 || { fail "round $round did not start"; break; }
	sleep 2
	A=$((RANDOM % 900)) # ms into the pause
	kill -STOP "${AG[3]}"
	sleep "0.$(printf %03d $A)"
	kill -TERM "$(worker $round 1 0)"
	sleep "$(printf '%d.%03d' $(((1600 - A) / 1000)) $(((1600 - A) % 1000)))" # 1.6 s in all
	kill -CONT "${AG[3]}"
	wait_launchers 1 2 3
	S=$(saved_all $round)
	if [ "${RCS[1]}${RCS[2]}${RCS[3]}" = 424242 ] && [ "$(echo "$S" | wc -l)" = 1 ] && [ "$(echo $S | awk '{print $1}')" = 6 ]; then
		pass "round $round: node 3's agent paused 1.6 s: all 6 ranks saved step $(echo $S | awk '{print $2}') and exited 42"
	else
		fail "round $round: exits ${RCS[*]}; saved: $(echo $S | tr '\n' ' '); $(grep -h 'EXIT\|SAVED\|STALE' "$T"/r$round/n*/log.* | tr '\n' ' ')"
	fi
	RUN=$(f 1 decisions --json | jq '[.decisions[] | .run] | max')
	f 1 decisions --json | jq -e "[.decisions[] | select(.run==$RUN and .kind==\"generation\" and .cause!=\"preemption\")] | length == 0" >/dev/null &&
		pass "round $round: no failure generation (node 3 was not left out)" ||
		fail "round $round: $(f 1 decisions --json | jq -c "[.decisions[] | select(.run==$RUN and .kind==\"generation\")]")"
done
finish
