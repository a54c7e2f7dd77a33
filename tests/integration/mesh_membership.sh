#!/bin/bash
# Heartbeat mesh (issue #6): three agents in their own network namespaces (veth pairs on a
# bridge made here), real UDP. A node killed (-9) is declared dead by the others within the
# bound; restarted, it is seen as restarted; partitioned (its link down) it is suspected, then
# dead, and rejoins when healed; garbage, forged, replayed and oversized packets change nothing
# and are counted; a hung job on one node shows in the others' cluster view.
. "$(dirname "$0")/lib.sh"
command -v ip >/dev/null || { log "SKIP: no ip(8)"; finish; }
. "$(dirname "$0")/netns.sh"
cleanup_net() {
	for i in 1 2 3; do [ -n "${AG[$i]:-}" ] && { kill -9 "${AG[$i]}"; wait "${AG[$i]}"; } 2>/dev/null; done
	netns3_down ftm
	for i in 1 2 3; do rm -rf "$PIN-n$i"; done
}
trap 'cleanup_net; cleanup' EXIT
cleanup_net
netns3_up ftm 10.77.0 || finish
head -c 48 /dev/urandom >"$T/key"; chmod 600 "$T/key"
PEERS=10.77.0.1:7946,10.77.0.2:7946,10.77.0.3:7946
declare -A AG
start_node() { # start_node I: agent of node I in its namespace (adopts only jobs node$I-*)
	local i=$1
	mkdir -p "$T/n$i"
	ip netns exec "ftm$i" "$B/ftbpfd" --socket "$T/n$i/s.sock" --state-dir "$T/n$i/state" \
		--pin-dir "$PIN-n$i" --log-file "$T/n$i/events.jsonl" --only-jobs "node$i-*" \
		--soft-timeout 3 --hard-timeout 300 --action report \
		--bind "10.77.0.$i:7946" --peers "$PEERS" --key-file "$T/key" --verbose 1 >>"$T/n$i/out" 2>&1 &
	AG[$i]=$!
	wait_until 20 bash -c "'$B/ftbpf' --socket '$T/n$i/s.sock' version >/dev/null 2>&1" || fail "node $i did not start: $(tail -3 "$T/n$i/out")"
}
peers() { "$B/ftbpf" --socket "$T/n$1/s.sock" peers --json; }
# peer_state I ADDR: node I's view of ADDR
peer_is() { peers "$1" | jq -e ".cluster.peers[] | select(.addr==\"$2\") | .state == \"$3\"" >/dev/null 2>&1; }
nevents() { jq -s "[.[] | select(.type==\"$2\" and .peer==\"$3\")] | length" "$T/n$1/events.jsonl" 2>/dev/null; }
for i in 1 2 3; do start_node $i; done
all_alive() { for i in 1 2 3; do for j in 1 2 3; do [ $i = $j ] && continue; peer_is $i "10.77.0.$j:7946" alive || return 1; done; done; }
wait_until 15 all_alive && pass "three nodes see each other alive" || fail "not all alive: $(peers 1 | jq -c '[.cluster.peers[] | {addr, state}]')"

# a hung job on node 2 appears in node 1's cluster view
FTBPF_JOB=node2-hang FTBPF_RANK=0 FTBPF_WORLD_SIZE=2 ring_job node2-hang 2 --fault sleep --fault-rank 1 --fault-after 1 >/dev/null
wait_until 20 bash -c "'$B/ftbpf' --socket '$T/n1/s.sock' peers --json | jq -e '.cluster.peers[] | select(.addr==\"10.77.0.2:7946\") | .health.hung >= 1 and .health.culprit_rank == 1' >/dev/null" &&
	pass "node 2's hung job (culprit rank 1) is in node 1's cluster view" || fail "cluster view: $(peers 1 | jq -c '.cluster.peers[] | {addr, health}')"
"$B/ftbpf" --socket "$T/n1/s.sock" status --cluster | grep -q "10.77.0.2:7946 *alive .* rank 1" && pass "status --cluster shows it" || fail "status --cluster: $("$B/ftbpf" --socket "$T/n1/s.sock" status --cluster | tail -3)"
"$B/ftbpf-top" --socket "$T/n1/s.sock" --once > "$T/top1.txt"
grep -q "^Peers 2 alive, 0 suspect, 0 dead, 0 left; 1 with hung ranks" "$T/top1.txt" &&
	grep -qE "^\* 10\.77\.0\.2:7946 +alive .* rank 1$" "$T/top1.txt" &&
	pass "ftbpf-top: peer counts in the header, node 2 marked with its culprit" ||
	fail "ftbpf-top --once: $(grep -iA4 peers "$T/top1.txt")"

# hostile packets: counted, nothing changes
before=$(peers 2 | jq -c '[.cluster.peers[] | {addr, state, incarnation}]')
for mode in garbage oversized; do ip netns exec ftm1 "$B/workloads/mesh_send" "$T/key" 10.77.0.2:7946 $mode; done
ip netns exec ftm1 "$B/workloads/mesh_send" "$T/key" 10.77.0.2:7946 forged 10.77.0.1:7946
ip netns exec ftm1 "$B/workloads/mesh_send" "$T/key" 10.77.0.2:7946 forged 10.77.0.9:7946
ip netns exec ftm1 "$B/workloads/mesh_send" "$T/key" 10.77.0.2:7946 replay 10.77.0.1:7946
# captures replayed: one of node 1 to node 3 sent to node 2; one to an earlier life of node 2;
# a first contact from 10 minutes ago (all under the right key: what a capture is)
ip netns exec ftm1 "$B/workloads/mesh_send" "$T/key" 10.77.0.2:7946 misdirected 10.77.0.1:7946 10.77.0.3:7946
ip netns exec ftm1 "$B/workloads/mesh_send" "$T/key" 10.77.0.2:7946 stale 10.77.0.1:7946
ip netns exec ftm1 "$B/workloads/mesh_send" "$T/key" 10.77.0.2:7946 old 10.77.0.9:7946
sleep 1
C=$(peers 2 | jq -c .cluster.counters)
echo "$C" | jq -e '.bad_magic + .bad_size >= 2 and .bad_mac >= 2 and .replayed >= 1' >/dev/null &&
	pass "garbage, oversized, forged and replayed packets counted: $(echo "$C" | jq -c '{bad_size, bad_magic, bad_mac, replayed}')" || fail "counters: $C"
echo "$C" | jq -e '.misdirected >= 1 and .stale >= 2' >/dev/null &&
	pass "a capture replayed to another node, to a restarted node, or 10 minutes late: refused $(echo "$C" | jq -c '{misdirected, stale}')" ||
	fail "replays accepted: $C"
after=$(peers 2 | jq -c '[.cluster.peers[] | {addr, state, incarnation}]')
[ "$before" = "$after" ] && pass "they changed nothing (no new member, no state change)" || fail "changed: $before -> $after"
kill -0 "${AG[2]}" && pass "node 2 alive" || fail "node 2 died"

# kill -9 node 3: declared dead by both others within the bound
BOUND=8
T0=$(date +%s.%N); kill -9 "${AG[3]}"; wait "${AG[3]}" 2>/dev/null; AG[3]=
if wait_until $BOUND bash -c "$(declare -f peers peer_is); B='$B' T='$T'; peer_is 1 10.77.0.3:7946 dead && peer_is 2 10.77.0.3:7946 dead"; then
	pass "killed node declared dead by both others in $(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s (bound ${BOUND}s)"
else
	fail "killed node not dead within ${BOUND}s: $(peers 1 | jq -c '[.cluster.peers[] | {addr, state}]')"
fi
# restarted: a new boot id
start_node 3
wait_until 15 bash -c "$(declare -f nevents); T='$T'; [ \"\$(nevents 1 peer_restarted 10.77.0.3:7946)\" -ge 1 ] && [ \"\$(nevents 2 peer_restarted 10.77.0.3:7946)\" -ge 1 ]" &&
	pass "the restarted node is seen as restarted (peer_restarted)" || fail "restart not seen: $(jq -c 'select(.peer=="10.77.0.3:7946") | .type' "$T/n1/events.jsonl" | tr '\n' ' ')"
wait_until 10 peer_is 1 10.77.0.3:7946 alive && pass "and alive again" || fail "restarted node not alive"

# partition node 2 (its link down): suspected, then dead; heal: rejoins
ip link set veth-ftm2 down
wait_until 10 bash -c "$(declare -f nevents); T='$T'; [ \"\$(nevents 1 peer_suspect 10.77.0.2:7946)\" -ge 1 ]" && pass "partitioned node suspected" || fail "not suspected"
wait_until 10 bash -c "$(declare -f peers peer_is); B='$B' T='$T'; peer_is 1 10.77.0.2:7946 dead && peer_is 3 10.77.0.2:7946 dead" &&
	pass "then declared dead (by both others)" || fail "not dead: node 1 $(peers 1 | jq -c '[.cluster.peers[] | {addr, state}]'), node 3 $(peers 3 | jq -c '[.cluster.peers[] | {addr, state}]')"
wait_until 10 peer_is 2 10.77.0.1:7946 dead && pass "the partitioned node holds the others dead" || fail "node 2 view: $(peers 2 | jq -c '[.cluster.peers[] | {addr, state}]')"
ip link set veth-ftm2 up
if wait_until 30 all_alive; then
	pass "healed: the partitioned node rejoins, all alive again"
else
	fail "not rejoined: 1: $(peers 1 | jq -c '[.cluster.peers[] | {addr, state}]') 2: $(peers 2 | jq -c '[.cluster.peers[] | {addr, state}]')"
fi
[ "$(nevents 1 peer_alive 10.77.0.2:7946)" -ge 1 ] && pass "peer_alive event on rejoin" || fail "no peer_alive event"
peers 2 | jq -e '.cluster.incarnation >= 1' >/dev/null && pass "it refuted its death with a higher incarnation" || fail "incarnation"
finish
