#!/bin/bash
# time-limit: 90
# The waits-for graph on one host (issue #22): ranks blocked reading TCP sockets in a chain
# (rank 0 waits on rank 1, rank 1 on rank 2, rank 2 on a server outside the job that stopped
# answering). Every rank is "blocked in read" alike, so states alone name nobody; the graph,
# from the kernel's sockets (sock_diag, the blocked syscall's descriptor), names rank 2. The
# two-rank case too: rank 0 waits on rank 1, rank 1 on the server: rank 1.
. "$(dirname "$0")/lib.sh"
SOFT=3
start_agent --soft-timeout $SOFT --hard-timeout 300 --action report || exit 1
PORT=46110
chain() { # chain JOB N PORT: a server that stops answering after 2 s, N ranks
	local job=$1 n=$2 port=$3 r
	mkdir -p "$T/$job"
	"$B/workloads/sockchain" --serve --port $((port + n)) --fault-after 2 &
	WORKLOAD_PIDS+=($!)
	disown $!
	for r in $(seq $((n - 1)) -1 0); do
		FTBPF_JOB=$job FTBPF_RANK=$r FTBPF_WORLD_SIZE=$n "$B/workloads/sockchain" --rank "$r" \
			--world "$n" --port "$port" --dir "$T/$job" &
		WORKLOAD_PIDS+=($!)
		disown $!
	done
	wait_until 10 test -s "$T/$job/pid.0"
}
hang_of() { events_of hang | jq -c "select(.job==\"$1\")" | head -1; }
chain wfchain 3 $PORT
chain wfpair 2 $((PORT + 10))
T0=$(wall)
wait_until $((SOFT + 10)) bash -c "[ -n \"\$(jq -c 'select(.type==\"hang\" and .job==\"wfchain\")' '$LOG')\" ]" ||
	fail "no hang for the chain: $(status_json | jq -c '.jobs')"
H=$(hang_of wfchain)
echo "$H" | jq -e '.culprit_ranks == [2] and .evidence == "waits_for" and .culprit_state == "blocked"' >/dev/null &&
	pass "chain: rank 2 named by the waits-for graph: $(echo "$H" | jq -r .why)" ||
	fail "chain: $(echo "$H" | jq -c '{culprit_ranks, evidence, why}')"
echo "$H" | jq -e '.culprit_node != null and .culprit_here' >/dev/null && pass "it runs here (culprit_node $(echo "$H" | jq -r .culprit_node))" || fail "culprit_node: $(echo "$H" | jq -c '{culprit_node, culprit_here}')"
echo "$H" | jq -e '[.ranks[] | select(.culprit)] | map(.rank) == [2]' >/dev/null && pass "only rank 2 flagged culprit" || fail "flags: $(echo "$H" | jq -c '[.ranks[] | {rank, culprit, state, reason}]')"
wait_until 10 bash -c "[ -n \"\$(jq -c 'select(.type==\"hang\" and .job==\"wfpair\")' '$LOG')\" ]" || fail "no hang for the pair"
H=$(hang_of wfpair)
echo "$H" | jq -e '.culprit_ranks == [1] and .evidence == "waits_for"' >/dev/null &&
	pass "two ranks both waiting on communication: rank 1, the one rank 0 waits on" ||
	fail "pair: $(echo "$H" | jq -c '{culprit_ranks, evidence, why}')"
status_json | jq -e '.agent.counters.socket_dumps > 0' >/dev/null && pass "sock_diag used ($(status_json | jq .agent.counters.socket_dumps) dumps)" || fail "no socket dumps"
finish
