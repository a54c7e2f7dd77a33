#!/bin/bash
# time-limit: 150
# A part is bound to the job's membership (issue 31: a host holding its own valid node key
# could send parts claiming ranks of any job). Three namespaces, a real etcd, node keys; agents
# on nodes 1 and 2; node 3 is a rogue with the cluster key and its own listed node key, and no
# agent. A job of two C ranks that use the client library (members/ records in etcd with their
# mesh addresses), rank 0 on node 1 and rank 1 on node 2, chained over TCP to a server on node 2
# that stops answering. From node 3's own address, signed with its own key, the rogue says
# every 300 ms that rank 1 runs and progressed: node 1 refuses it (no member of the job's run:
# parts_not_member, a part_refused event naming it), takes node 2's parts, and flags the hang.
. "$(dirname "$0")/lib.sh"
command -v etcd >/dev/null || { fail "etcd not installed (make deps)"; finish; }
. "$(dirname "$0")/cluster.sh"
NET=10.79.8
CLUSTER_NODE_KEYS=1 cluster_up dfpm $NET 25491 || finish
for i in 1 2; do
	start_node $i --soft-timeout 4 --hard-timeout 120
done
alive1() { f "$1" peers --json | jq -e '[.cluster.peers[] | select(.state=="alive")] | length >= 1' >/dev/null; }
wait_until 15 bash -c "$(declare -f f alive1); B='$B' T='$T'; alive1 1 && alive1 2" &&
	pass "nodes 1 and 2 see each other" || fail "the mesh did not form"
D=$T/pm; mkdir -p "$D"
PORT=46600
ip netns exec dfpm2 "$B/workloads/sockchain" --serve --listen $NET.2 --port $((PORT + 2)) --fault-after 4 &
WORKLOAD_PIDS+=($!)
for r in 1 0; do
	h=$((r + 1))
	FTBPF_SOCKET=$T/n$h/s.sock ip netns exec "dfpm$h" env FTBPF_JOB=pm FTBPF_RANK=$r FTBPF_WORLD_SIZE=2 \
		"$B/workloads/sockchain" --ftbpf --rank $r --world 2 --port $PORT --dir "$D" \
		--listen $NET.$h --next $NET.2 2>>"$D/err" &
	WORKLOAD_PIDS+=($!)
done
wait_until 10 test -s "$D/pid.0" || fail "the chain did not start: $(cat "$D/err")"
wait_until 10 bash -c "'$B/ftbpf' --socket '$T/n1/s.sock' status --json | jq -e '.jobs[] | select(.job==\"pm\") | .generation == 0' >/dev/null" &&
	pass "job pm followed by the decisions (generation 0)" || fail "job pm: $(f 1 status --json | jq -c '[.jobs[] | {job, generation}]')"
# the rogue: node 3's own address and key, "rank 1 runs", every 300 ms
ip netns exec dfpm3 env PART_SEND_NODE_KEY="$T/node3.key" PART_SEND_EVERY_MS=300 PART_SEND_FOR_S=15 \
	"$B/workloads/part_send" "$T/key" $NET.1:7946 progress $NET.3:7946 pm 2 1 >"$T/rogue.out" 2>&1 &
WORKLOAD_PIDS+=($!)
flagged() { nev 1 hang | jq -e 'select(.job=="pm")' >/dev/null; }
wait_until 20 flagged && pass "node 1 flags the hang while node 3 claims rank 1 progresses" ||
	fail "no hang on node 1: $(f 1 status --json | jq -c '.agent.counters | {parts_accepted, parts_not_member, parts_rank_conflict}')"
took() { f 1 status --json | jq -e '.agent.counters | .parts_not_member >= 3 and .parts_accepted >= 1' >/dev/null; }
wait_until 10 took
C=$(f 1 status --json | jq -c '.agent.counters')
echo "$C" | jq -e '.parts_not_member >= 3 and .parts_accepted >= 1' >/dev/null &&
	pass "the rogue's parts refused as no member of the run, node 2's taken: $(echo "$C" | jq -c '{parts_not_member, parts_accepted, parts_bad_signature, parts_bad_source}')" ||
	fail "counters: $(echo "$C" | jq -c '{parts_rx, parts_accepted, parts_not_member, cadence_parts_accepted}') node 2: $(f 2 status --json | jq -c '.agent.counters | {parts_tx, parts_rx, parts_accepted, parts_not_member}') job: $(f 1 status --json | jq -c '.jobs[] | select(.job=="pm") | del(.ranks)' | cut -c1-600) ($(tail -2 "$T/rogue.out"))"
E=$(nev 1 part_refused | head -1)
echo "$E" | jq -e ".uid == 0 and .job == \"pm\" and .from == \"$NET.3:7946\" and (.why | test(\"member\"))" >/dev/null &&
	pass "root is told: $E" || fail "part_refused event: '$E'"
[ "$(nev 1 part_refused | wc -l)" -le 1 ] && pass "one part_refused event a minute at most" ||
	fail "part_refused events: $(nev 1 part_refused | wc -l)"
L=$(f 1 status --json | jq -c '.jobs[] | select(.job=="pm") | [.ranks_elsewhere[]? | select(.rank==1)]')
echo "$L" | jq -e "length == 1 and .[0].node == \"$NET.2:7946\" and .[0].pid != 4242" >/dev/null &&
	pass "rank 1 is node 2's: $L" || fail "rank 1 elsewhere: $L"
finish
