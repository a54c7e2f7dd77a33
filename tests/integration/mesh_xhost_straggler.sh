#!/bin/bash
# time-limit: 420
# A straggler judged over the whole job, across hosts (issue #23 with #22's job view): a torch
# DDP job over gloo, ranks 0-1 on host 1 and rank 2 alone on host 2 (network namespaces on a
# bridge, one agent each with --only-netns 1, the mesh up, torchrun's defaults by hand). From
# 20 s on rank 2 does 30% more CPU work per step. Host 2 sees one rank: on its own it has no
# median to judge it by; with the others' cadence parts, BOTH agents emit `straggler` for rank
# 2 on host 2 within 30 s (host 2's says here, host 1's names host 2's mesh address), no other
# rank is named, no hang, and host 1's status lists it among the job's stragglers with its
# host. Lying cadence parts (a stranger with the key) are counted and name nobody. Then it
# keeps pace again: both say straggler_recovered.
. "$(dirname "$0")/lib.sh"
command -v ip >/dev/null || { log "SKIP: no ip(8)"; finish; }
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || { log "SKIP: no python3-torch"; finish; }
. "$(dirname "$0")/xhnet.sh"
SOFT=30
NET=10.88.73
xh_up xhs $NET 2 || finish
xh_agent 1 --node-name host1
xh_agent 2 --node-name host2
wait_until 15 xh_all_alive && pass "two agents see each other" || fail "mesh not up: $(xf 1 peers --json | jq -c .cluster.peers)"
PORT=29500
D=$T/run; mkdir -p "$D"
for r in 0 1 2; do
	ip netns exec "xhs$((r / 2 + 1))" env MASTER_ADDR=$NET.1 MASTER_PORT=$PORT RANK=$r \
		WORLD_SIZE=3 LOCAL_RANK=$((r % 2)) TORCHELASTIC_RUN_ID=none GLOO_SOCKET_IFNAME=eth0 \
		/usr/bin/python3 "$ROOT/tests/workloads/ddp.py" --seconds 300 --dir "$D" \
		--slow-rank 2 --slow-pct 30 --slow-after 20 --slow-for 60 >"$D/out.$r" 2>&1 &
	WORKLOAD_PIDS+=($!)
	disown $!
done
JOB="torch:$NET.1:$PORT"
adopted() { xf 1 status --json | jq -e "[.ranks[] | select(.job==\"$JOB\" and (.exited|not))] | length == 2" >/dev/null &&
	xf 2 status --json | jq -e "[.ranks[] | select(.job==\"$JOB\" and (.exited|not))] | length == 1" >/dev/null; }
wait_until 90 adopted && pass "host 1 adopted ranks 0-1, host 2 rank 2" || fail "adoption: $(xf 2 status --json | jq -c '[.ranks[] | {job, rank}]')"
wait_until 40 bash -c "'$B/ftbpf' --socket '$T/n1/s.sock' status --json | jq -e '.jobs[] | select(.job==\"$JOB\") | .step_s > 0' >/dev/null" &&
	pass "host 1 knows the job's pace: $(xf 1 status --json | jq -c ".jobs[] | select(.job==\"$JOB\") | {step_s, step_rate}")" || fail "no cadence on host 1"
ev() { xev "$1" "$2" | jq -c "select(.job==\"$JOB\")"; }
# both agents name rank 2 (host 2: here; host 1: on host 2's mesh address)
named_both() { [ -n "$(ev 1 straggler | jq -c 'select(.rank==2)')" ] && [ -n "$(ev 2 straggler | jq -c 'select(.rank==2)')" ]; }
wait_until 90 test -s "$D/slow.ts" || fail "the slowdown never began: $(tail -2 "$D/out.2")"
[ -z "$( (ev 1 straggler; ev 2 straggler) | jq -c "select(.ts < \"$(date -u -d @"$(cut -d. -f1 "$D/slow.ts")" +%Y-%m-%dT%H:%M:%S)\")")" ] &&
	pass "no straggler before the slowdown" || fail "named before the slowdown: $( (ev 1 straggler; ev 2 straggler) | head -2)"
if wait_until 40 named_both; then
	for i in 1 2; do
		e=$(ev $i straggler | jq -c 'select(.rank==2)' | head -1)
		d=$(awk -v h="$(date -d "$(echo "$e" | jq -r .ts)" +%s.%N)" -v f="$(cat "$D/slow.ts")" 'BEGIN{printf "%.1f", h - f}')
		awk -v d="$d" 'BEGIN{exit !(d <= 30)}' && pass "host $i names rank 2 ${d} s after it slowed (limit 30 s): $(echo "$e" | jq -c '{node, here, slowdown, reason, ranks}')" ||
			fail "host $i named it after ${d} s (limit 30 s)"
	done
	ev 2 straggler | jq -e 'select(.rank==2) | .here and .node == "host2" and .reason == "compute" and .slowdown >= 1.1' >/dev/null &&
		pass "host 2's event: here, its node name, reason compute" || fail "host 2's event: $(ev 2 straggler | head -1)"
	ev 1 straggler | jq -e "select(.rank==2) | (.here | not) and .node == \"$NET.2:7946\" and .slowdown >= 1.1 and .ranks == [2]" >/dev/null &&
		pass "host 1's event: rank 2 elsewhere, on $NET.2:7946" || fail "host 1's event: $(ev 1 straggler | head -1)"
else
	fail "not named by both: host 1 $(ev 1 straggler | head -1); host 2 $(ev 2 straggler | head -1); host 2 sees $(xf 2 status --json | jq -c "[.ranks[] | select(.job==\"$JOB\") | {rank, slowdown, straggler}]"), host 1 $(xf 1 status --json | jq -c "[.jobs[] | select(.job==\"$JOB\") | .ranks_elsewhere]")"
fi
[ -z "$( (ev 1 straggler; ev 2 straggler) | jq -c 'select(.rank!=2)')" ] && pass "no other rank named" ||
	fail "others named: $( (ev 1 straggler; ev 2 straggler) | jq -c 'select(.rank!=2) | {rank, slowdown}')"
xf 1 status --json | jq -e ".jobs[] | select(.job==\"$JOB\") | .stragglers == [2] and .straggler_nodes == [{\"rank\": 2, \"node\": \"$NET.2:7946\", \"here\": false}]" >/dev/null &&
	pass "host 1's status: the job's stragglers [2], on $NET.2:7946" ||
	fail "host 1's status: $(xf 1 status --json | jq -c ".jobs[] | select(.job==\"$JOB\") | {stragglers, straggler_nodes}")"
xf 1 status | grep -q "stragglers: rank 2 on $NET.2:7946" && pass "ftbpf status on host 1: stragglers: rank 2 on $NET.2:7946" ||
	fail "ftbpf status: $(xf 1 status | grep -i -A2 steps)"
xf 1 status --json | jq -e ".jobs[] | select(.job==\"$JOB\") | [.ranks_elsewhere[]? | select(.rank==2 and .straggler and .slowdown >= 1.1)] | length == 1" >/dev/null &&
	pass "host 1's status: rank 2 among the job's remote ranks, straggler" ||
	fail "host 1's remote ranks: $(xf 1 status --json | jq -c ".jobs[] | select(.job==\"$JOB\") | .ranks_elsewhere")"
for i in 1 2; do
	xf $i status --json | jq -e '.agent.counters.cadence_parts_accepted > 0 and .agent.counters.cadence_claim_our_ranks == 0 and .agent.counters.cadence_rank_conflict == 0' >/dev/null ||
		fail "host $i counters: $(xf $i status --json | jq -c '.agent.counters | with_entries(select(.key | startswith("cadence")))')"
done
# lying peers (with the cluster key), meanwhile: a cadence part from a stranger saying host 1's
# rank 0 computes 99% of the time, one for a rank beyond the world, one claiming rank 2 (host
# 2's), one of a job not here: counted, nobody named
PS="$B/workloads/part_send"
# (from an address of host 2's other than its agent's: a sender must be where it says it is)
ip netns exec xhs2 "$PS" "$T/key" $NET.1:7946 cadclaim $NET.2:7999 "$JOB" 3 0
ip netns exec xhs2 "$PS" "$T/key" $NET.1:7946 cadrange $NET.2:7999 "$JOB" 3 0
ip netns exec xhs2 "$PS" "$T/key" $NET.1:7946 cadclaim $NET.2:7999 "$JOB" 3 2
ip netns exec xhs2 "$PS" "$T/key" $NET.1:7946 cadclaim $NET.2:7999 "torch:$NET.1:1" 3 1
sleep 12 # longer than straggler_window: a believed lie would have been named by now
C=$(xf 1 status --json | jq -c '.agent.counters')
echo "$C" | jq -e '.cadence_claim_our_ranks >= 1 and .parts_bad_field >= 1 and .cadence_rank_conflict >= 1 and .cadence_not_ours >= 1' >/dev/null &&
	pass "lying cadence parts counted: $(echo "$C" | jq -c '{cadence_claim_our_ranks, parts_bad_field, cadence_rank_conflict, cadence_not_ours}')" ||
	fail "counters: $(echo "$C" | jq -c 'with_entries(select(.key | startswith("cadence") or . == "parts_bad_field"))')"
[ -z "$( (ev 1 straggler; ev 2 straggler) | jq -c 'select(.rank!=2)')" ] &&
	xf 1 status --json | jq -e ".jobs[] | select(.job==\"$JOB\") | .straggler_nodes == [{\"rank\": 2, \"node\": \"$NET.2:7946\", \"here\": false}]" >/dev/null &&
	pass "nobody named for the lies; rank 2 still on host 2" ||
	fail "after the lies: $(xf 1 status --json | jq -c ".jobs[] | select(.job==\"$JOB\") | {stragglers, straggler_nodes}")"
kill -0 "${XAG[1]}" && pass "agent 1 alive" || fail "agent 1 died"
# it keeps pace again 80 s in: both say it recovered
wait_until 100 test -s "$D/slow_end.ts" || fail "the slowdown never ended"
rec_both() { [ -n "$(ev 1 straggler_recovered | jq -c 'select(.rank==2)')" ] && [ -n "$(ev 2 straggler_recovered | jq -c 'select(.rank==2)')" ]; }
wait_until 60 rec_both && pass "both agents: straggler_recovered for rank 2" ||
	fail "recovery: host 1 $(ev 1 straggler_recovered | head -1); host 2 $(ev 2 straggler_recovered | head -1)"
[ -z "$( (ev 1 hang; ev 2 hang) | head -1)" ] && pass "no hang on either host" || fail "hang: $( (ev 1 hang; ev 2 hang) | jq -c '{why}' | head -2)"
finish
