#!/bin/bash
# time-limit: 150
# A key holder is one host, not the cluster (issue 31: a host holding the cluster key could
# forge job parts from a made-up address, and another host's claim of progress cleared a hang
# that this host's ranks showed waiting on it). Three namespaces; agents on hosts 1 and 3 with
# node keys (node_key_file, node_keys_file listing hosts 1-3, lines from --print-node-key);
# host 2 is a liar with the cluster key and its own node key, and no agent. A job of three C
# ranks chained over TCP: rank 0 on host 1 reads rank 1's socket (host 3), rank 1 reads rank
# 2's (host 2), rank 2 asks a server on host 2 that stops answering. While it stalls, the liar
# sends parts signed with its own key saying its rank 2 runs and progressed a moment ago: both
# agents still flag the hang within soft + 3 s and name host 2 (the ranks here wait on it: its
# word is not corroborated). The liar's parts from a made-up sender, unsigned, or signed with a
# key not its own are refused and counted; hosts 1 and 3 take each other's signed parts.
. "$(dirname "$0")/lib.sh"
command -v ip >/dev/null || { log "SKIP: no ip(8)"; finish; }
. "$(dirname "$0")/xhnet.sh"
SOFT=4
NET=10.88.74
xh_up xhk $NET 3 || finish
: >"$T/nodes"
for i in 1 2 3; do
	head -c 32 /dev/urandom | xxd -p -c 64 >"$T/node$i.key" && chmod 600 "$T/node$i.key"
	"$FTBPFD" --bind $NET.$i:7946 --key-file "$T/key" --node-key-file "$T/node$i.key" \
		--node-keys-file "$T/nodes" --print-node-key >>"$T/nodes" || fail "--print-node-key"
done
head -c 32 /dev/urandom | xxd -p -c 64 >"$T/stranger.key" && chmod 600 "$T/stranger.key"
log "node keys: $(cut -c1-40 "$T/nodes" | paste -sd'|')"
for i in 1 3; do xh_agent $i --node-key-file "$T/node$i.key" --node-keys-file "$T/nodes"; done
wait_until 15 bash -c "$(declare -f xf); B='$B' T='$T'; xf 1 peers --json | jq -e '[.cluster.peers[] | select(.state==\"alive\")] | length >= 1' >/dev/null" ||
	fail "hosts 1 and 3 do not see each other"
JOB=kchain
mkdir -p "$T/$JOB"
host_of() { case $1 in 0) echo 1 ;; 1) echo 3 ;; *) echo 2 ;; esac; }
ip netns exec xhk2 "$B/workloads/sockchain" --serve --listen $NET.2 --port 46403 --fault-after 3 &
WORKLOAD_PIDS+=($!)
for r in 2 1 0; do
	h=$(host_of $r); nh=$(host_of $((r + 1)))
	ip netns exec "xhk$h" env FTBPF_JOB=$JOB FTBPF_RANK=$r FTBPF_WORLD_SIZE=3 \
		"$B/workloads/sockchain" --rank $r --world 3 --port 46400 --dir "$T/$JOB" \
		--listen $NET.$h --next $NET.$nh &
	WORKLOAD_PIDS+=($!)
done
wait_until 10 test -s "$T/$JOB/pid.0" || fail "the chain did not start"
T0=$(wall)
# the liar: host 2's own address and key, "rank 2 runs", every 300 ms while the job stalls
PS="$B/workloads/part_send"
for i in 1 3; do
	ip netns exec xhk2 env PART_SEND_NODE_KEY="$T/node2.key" PART_SEND_EVERY_MS=300 PART_SEND_FOR_S=20 \
		"$PS" "$T/key" $NET.$i:7946 progress $NET.2:7946 "$JOB" 3 2 >"$T/liar$i.out" 2>&1 &
	WORKLOAD_PIDS+=($!)
done
named() {
	local i e
	for i in 1 3; do
		e=$(xev $i hang | jq -c "select(.job==\"$JOB\")" | head -1)
		[ -n "$e" ] || return 1
		echo "$e" | jq -e ".culprit_node == \"$NET.2:7946\"" >/dev/null 2>&1 || return 1
	done
}
if wait_until $((SOFT + 12)) named; then
	for i in 1 3; do
		d=$(awk -v a="$T0" -v b="$(date -d "$(xev $i hang | jq -r "select(.job==\"$JOB\") | .ts" | head -1)" +%s.%N)" 'BEGIN{printf "%.1f", b - a - 3}')
		awk -v d="$d" -v s=$SOFT 'BEGIN{exit !(d <= s + 3)}' && pass "host $i flags the hang ${d} s after the server stopped, naming host 2, while host 2 claims progress: $(xev $i hang | jq -r "select(.job==\"$JOB\") | .why" | head -1 | cut -c1-140)" ||
			fail "host $i late: ${d} s"
	done
else
	fail "the liar kept the hang from being flagged: $(for i in 1 3; do xev $i hang | jq -c '{culprit_ranks, culprit_node, why}'; done) $(xf 1 status --json | jq -c '.agent.counters | {parts_accepted, parts_bad_signature, parts_bad_source}')"
fi
# the liar's word was taken in (its rank 2 "runs"), and still judged
L=$(xf 1 status --json | jq -c ".jobs[] | select(.job==\"$JOB\") | [.ranks_elsewhere[]? | select(.rank==2)]")
echo "$L" | jq -e 'length == 1 and .[0].state == "running"' >/dev/null &&
	pass "host 1 took the liar's signed part (rank 2 \"running\" on host 2) and flagged the hang all the same" ||
	fail "the liar's part was not taken in: $L"
C0=$(xf 1 status --json | jq -c '.agent.counters')
ip netns exec xhk2 "$PS" "$T/key" $NET.1:7946 progress $NET.9:7946 "$JOB" 3 2 2>/dev/null   # a made-up sender
ip netns exec xhk2 "$PS" "$T/key" $NET.1:7946 progress $NET.2:7946 "$JOB" 3 2 2>/dev/null   # unsigned
ip netns exec xhk2 env PART_SEND_NODE_KEY="$T/stranger.key" "$PS" "$T/key" $NET.1:7946 progress $NET.2:7946 "$JOB" 3 2 2>/dev/null # not its key
ip netns exec xhk2 env PART_SEND_NODE_KEY="$T/node2.key" "$PS" "$T/key" $NET.1:7946 progress $NET.2:7999 "$JOB" 3 2 2>/dev/null # another port: no key listed
sleep 1
C=$(xf 1 status --json | jq -c '.agent.counters')
echo "$C" | jq -e --argjson c0 "$C0" '.parts_bad_source >= $c0.parts_bad_source + 1 and .parts_bad_signature >= $c0.parts_bad_signature + 3' >/dev/null &&
	pass "made-up sender, unsigned, not its key, an address without a key: refused and counted $(echo "$C" | jq -c '{parts_bad_source, parts_bad_signature}')" ||
	fail "counters: before $C0 after $C"
# its own key and address, a part that leaves the world unsaid, claiming rank 7 of a world of 3
ip netns exec xhk2 env PART_SEND_NODE_KEY="$T/node2.key" "$PS" "$T/key" $NET.1:7946 progress $NET.2:7946 "$JOB" -1 7 2>/dev/null
sleep 1
C2=$(xf 1 status --json | jq -c '.agent.counters')
E=$(xev 1 part_refused | head -1)
echo "$C2" | jq -e --argjson c "$C" '.parts_outside_world >= $c.parts_outside_world + 1' >/dev/null &&
	echo "$E" | jq -e ".uid == 0 and .from == \"$NET.2:7946\" and (.why | test(\"world\"))" >/dev/null &&
	pass "a rank outside the job's world refused, counted, root told: $E" ||
	fail "outside the world: $(echo "$C2" | jq -c '{parts_outside_world, parts_accepted}') event '$E'"
xf 1 status --json | jq -e '.agent.counters.parts_accepted > 0' >/dev/null && xf 3 status --json | jq -e '.agent.counters.parts_accepted > 0' >/dev/null &&
	pass "hosts 1 and 3 take each other's signed parts: $(xf 1 status --json | jq -c '.agent.counters | {parts_tx, parts_accepted}')" ||
	fail "parts: $(xf 1 status --json | jq -c '.agent.counters | {parts_tx, parts_rx, parts_accepted, parts_bad_signature}')"
# a wrong key for this node: the agent refuses to start
ip netns exec xhk1 "$FTBPFD" --socket "$T/bad.sock" --state-dir "$T/bad" --pin-dir "$PIN-bad" --log-file "$T/bad.log" \
	--bind $NET.1:7947 --node-name $NET.1:7946 --key-file "$T/key" --node-key-file "$T/stranger.key" \
	--node-keys-file "$T/nodes" >"$T/bad.out" 2>&1
[ $? -ne 0 ] && grep -q "node_keys_file" "$T/bad.out" && pass "an agent whose key is not the one listed for it does not start: $(tail -1 "$T/bad.out" | cut -c1-120)" ||
	fail "started with a key not listed: $(tail -2 "$T/bad.out")"
rm -rf "$PIN-bad"
finish
