#!/bin/bash
# time-limit: 90
# Issue 34: processes that register (the Python binding) into one job without a rank, no
# launcher's variables, each get their own rank, the lowest the job's live ranks here leave
# free, said as source "assigned" in status and adopt events, one metrics series each (before:
# every one was rank 0, one series); a rank freed by an exit is given again, the others keep
# theirs; a rank a client names is kept, source "client".
. "$(dirname "$0")/lib.sh"
MPORT=$((27000 + RANDOM % 1000))
M=http://127.0.0.1:$MPORT/metrics
# decisions off: a rank killed would have the job restarted (its other ranks ended), not here
start_agent --soft-timeout 60 --hard-timeout 300 --action report --decisions off \
	--metrics-listen "127.0.0.1:$MPORT" || exit 1
export FTBPF_SOCKET=$SOCK PYTHONPATH=$B/python
# py N: a Python process of job pyjob (FTBPF_JOB, no FTBPF_RANK) that registers and idles
py() {
	FTBPF_JOB=pyjob /usr/bin/python3 "$ROOT/tests/workloads/py_timer.py" once-then-idle 60 \
		>"$T/py.$1" 2>&1 &
	PY[$1]=$!
	WORKLOAD_PIDS+=($!)
	disown $!
	wait_until 20 grep -q idle "$T/py.$1" || fail "python $1 did not start: $(cat "$T/py.$1")"
}
# the live ranks of pyjob as "pid:rank:source", by pid
live() { status_json | jq -c '[.ranks[] | select(.job=="pyjob" and .state!="exited") |
	"\(.pid):\(.rank):\(.source)"] | sort'; }
rank_of() { status_json | jq -r ".ranks[] | select(.pid==$1 and .state!=\"exited\") | .rank"; }
for i in 0 1 2; do py $i; done
want="[\"${PY[0]}:0:assigned\",\"${PY[1]}:1:assigned\",\"${PY[2]}:2:assigned\"]"
got() { [ "$(live)" = "$(echo "$want" | jq -c 'sort')" ]; }
wait_until 5 got && pass "three processes naming no rank: ranks 0, 1, 2, source assigned" ||
	fail "ranks: $(live), want $want"
has_event adopt ".job==\"pyjob\" and .pid==${PY[2]} and .rank==2 and .source==\"assigned\" and .how==\"register\"" &&
	pass "the adopt event says the rank was assigned" || fail "adopt: $(events_of adopt | grep pyjob)"
series() { curl -s "$M" | grep '^ftbpf_rank_hung{training_job="pyjob"' | grep -o 'rank="[0-9]*"' | sort -u | tr '\n' ' '; }
[ "$(series)" = 'rank="0" rank="1" rank="2" ' ] && pass "one metrics series per rank: $(series)" ||
	fail "rank series: $(series)"
# rank 1 exits: a newcomer gets 1, the others keep theirs
kill -KILL "${PY[1]}"
wait_until 5 jq_status "[.ranks[] | select(.pid==${PY[1]} and .state==\"exited\")] | length == 1" ||
	fail "the killed rank not seen exited: $(live)"
py 3
wait_until 5 bash -c "[ \"\$(FTBPF_SOCKET=$SOCK $B/ftbpf status --json | jq -r '.ranks[] | select(.pid==${PY[3]}) | .rank')\" = 1 ]" &&
	pass "a newcomer takes the freed rank 1" || fail "newcomer: $(live)"
[ "$(rank_of "${PY[0]}")" = 0 ] && [ "$(rank_of "${PY[2]}")" = 2 ] && pass "ranks 0 and 2 kept theirs" ||
	fail "after the exit: $(live)"
# a rank named is kept as named (source client); the next naming none gets the lowest free
"$B/workloads/attacker" register "$SOCK" pyjob 30 >"$T/named.out" 2>&1 &
WORKLOAD_PIDS+=($!)
wait_until 5 grep -q '"rank":3' "$T/named.out" && grep -q '"source":"client"' "$T/named.out" &&
	pass "a client naming rank 3 is rank 3, source client: $(cat "$T/named.out")" ||
	fail "named: $(cat "$T/named.out")"
py 4
wait_until 5 bash -c "[ \"\$(FTBPF_SOCKET=$SOCK $B/ftbpf status --json | jq -r '.ranks[] | select(.pid==${PY[4]}) | .rank')\" = 4 ]" &&
	pass "the next gets 4 (0-3 held)" || fail "fifth: $(live)"
has_event hang '.job=="pyjob"' && fail "pyjob flagged hung" || pass "no hang"
finish
