#!/bin/bash
# time-limit: 150
# The waits-for graph across hosts (issue #22): three agents in network namespaces (the mesh
# up), a job of four C ranks chained over TCP (socket per peer, blocking reads, as MPI's TCP
# transport and NCCL's bootstrap do): ranks 0-1 on host 1, rank 2 on host 2, rank 3 on host 3,
# which asks a server that stops answering. Every rank is blocked reading a socket; the edge of
# rank 2 names an endpoint on host 3 that host 3's agent resolves to its rank 3: all three
# agents name rank 3 on host 3 within soft + 2 s; at the hard timeout (terminate-culprit) only
# host 3's agent acts, on its rank 3. Then host 3's agent is down (killed) and a
# new job stalls the same way: hosts 1 and 2 still give a verdict, name host 3 as where the
# ranks they wait on are, and say which part is missing.
. "$(dirname "$0")/lib.sh"
command -v ip >/dev/null || { log "SKIP: no ip(8)"; finish; }
. "$(dirname "$0")/xhnet.sh"
SOFT=4
NET=10.88.72
xh_up xhc $NET 3 || finish
for i in 1 2 3; do xh_agent $i --action terminate-culprit --hard-timeout 10 --grace 2; done
wait_until 15 xh_all_alive && pass "three agents see each other" || fail "mesh not up"
host_of() { case $1 in 0|1) echo 1 ;; 2) echo 2 ;; *) echo 3 ;; esac; }
# chain JOB PORT: the server (host 3) stops answering 3 s after the first question
chain() {
	local job=$1 port=$2 r h nh
	mkdir -p "$T/$job"
	ip netns exec xhc3 "$B/workloads/sockchain" --serve --listen $NET.3 --port $((port + 4)) --fault-after 3 &
	WORKLOAD_PIDS+=($!)
	disown $!
	for r in 3 2 1 0; do
		h=$(host_of $r); nh=$(host_of $((r + 1)))
		ip netns exec "xhc$h" env FTBPF_JOB=$job FTBPF_RANK=$r FTBPF_WORLD_SIZE=4 \
			"$B/workloads/sockchain" --rank $r --world 4 --port "$port" --dir "$T/$job" \
			--listen $NET.$h --next $NET.$nh &
		WORKLOAD_PIDS+=($!)
		disown $!
	done
	wait_until 10 test -s "$T/$job/pid.0"
}
named() { # named JOB I...: hosts I... name rank 3 on host 3
	local job=$1 i e; shift
	for i in "$@"; do
		e=$(xev $i hang | jq -c "select(.job==\"$job\")" | head -1)
		[ -n "$e" ] || return 1
		echo "$e" | jq -e ".culprit_ranks == [3] and .culprit_node == \"$NET.3:7946\" and .evidence == \"waits_for\"" >/dev/null 2>&1 || return 1
	done
}
T0=$(wall)
chain xchain 46300
if wait_until $((SOFT + 15)) named xchain 1 2 3; then
	pass "every agent names rank 3 on host 3 by the waits-for graph: $(xev 1 hang | jq -r .why)"
	for i in 1 2 3; do
		d=$(awk -v a="$T0" -v b="$(date -d "$(xev $i hang | jq -r .ts | head -1)" +%s.%N)" 'BEGIN{printf "%.1f", b - a - 3}')
		awk -v d="$d" -v s=$SOFT 'BEGIN{exit !(d <= s + 2)}' && pass "host $i: ${d}s after the server stopped (soft $SOFT)" || fail "host $i late: ${d}s"
	done
else
	fail "cross-host chain: $(for i in 1 2 3; do xev $i hang | jq -c '{culprit_ranks, culprit_node, evidence, why, missing_ranks}'; done)"
fi
xev 3 hang | head -1 | jq -e '.culprit_here and ([.ranks[] | select(.culprit) | .rank] == [3])' >/dev/null && pass "host 3 flags its rank 3" || fail "host 3: $(xev 3 hang | head -1 | jq -c '{culprit_here, r: [.ranks[] | {rank, culprit}]}')"
# the hard action: the job-wide verdict, acted on by the culprit's own host only
P3=$(cat "$T/xchain/pid.3")
acted() { [ -n "$(xev 3 action | jq -c "select(.pid==$P3 and .action==\"hard_timeout\")")" ]; }
if wait_until 15 acted; then
	pass "hard timeout: host 3 terminates its rank 3 ($(xev 3 action | jq -r "select(.pid==$P3) | \"SIG\(.signal_name) \(.result)\"" | head -1))"
else
	fail "no action on host 3: $(xev 3 hard_timeout) $(xev 3 action)"
fi
sleep 1
for i in 1 2; do
	[ -n "$(xev $i hard_timeout | jq -c 'select(.job=="xchain")')" ] && [ -z "$(xev $i action)" ] &&
		pass "host $i: hard timeout seen, no rank of its own signalled" || fail "host $i: $(xev $i hard_timeout) $(xev $i action)"
done
xf 1 status --json | jq -e '.agent.counters.parts_accepted > 0 and .agent.counters.parts_bad_mac == 0' >/dev/null && pass "parts exchanged: $(xf 1 status --json | jq -c '.agent.counters | {parts_tx, parts_rx, parts_accepted}')" || fail "parts: $(xf 1 status --json | jq -c .agent.counters)"
for p in "$T"/xchain/pid.*; do kill -9 "$(cat "$p")" 2>/dev/null; done

# host 3's agent down: the others still judge, and say what is missing
kill -9 "${XAG[3]}"; wait "${XAG[3]}" 2>/dev/null; XAG[3]=
wait_until 15 bash -c "$(declare -f xf); B='$B' T='$T'; xf 1 peers --json | jq -e '.cluster.peers[] | select(.addr==\"$NET.3:7946\") | .state == \"dead\"' >/dev/null" ||
	log "host 3 not yet dead in host 1's view"
T0=$(wall)
chain xchain2 46320
down_named() {
	local i e
	for i in 1 2; do
		e=$(xev $i hang | jq -c 'select(.job=="xchain2")' | head -1)
		[ -n "$e" ] || return 1
		echo "$e" | jq -e ".culprit_node == \"$NET.3:7946\" and (.missing_ranks | test(\"^3\"))" >/dev/null 2>&1 || return 1
	done
}
if wait_until $((SOFT + 15)) down_named; then
	pass "agent of host 3 down: hosts 1 and 2 name host 3 and the missing part: $(xev 1 hang | jq -r 'select(.job=="xchain2") | "\(.why) [missing: \(.missing_ranks)]"')"
else
	fail "agent down: $(for i in 1 2; do xev $i hang | jq -c 'select(.job=="xchain2") | {culprit_ranks, culprit_node, missing_ranks, why}'; done)"
fi
finish
