#!/bin/bash
# time-limit: 420
# One verdict for a job from every host (issue #22): a torch DDP job over gloo across two hosts
# (network namespaces on a bridge, one agent each with --only-netns 1, the mesh up), ranks 0-1
# on host 1 and 2-3 on host 2, MASTER_ADDR on host 1, RANK/WORLD_SIZE by hand and torchrun's
# run id default. Healthy: no hang. Rank 3 stopped (SIGSTOP): EVERY agent's hang event names
# rank 3 on host 2, stopped, within soft + 2 s; status, explain and metrics say so; forged,
# replayed and lying parts meanwhile are counted and change nothing. SIGCONT: both recover.
# Rank 3 killed: both agents' job_failed names it, on host 2. A new job's rank 3 sleeps
# mid-training, another's spins: both agents' hang names it. XH_LONG=1 also runs a healthy job
# for XH_HEALTHY_S (180) seconds.
. "$(dirname "$0")/lib.sh"
command -v ip >/dev/null || { log "SKIP: no ip(8)"; finish; }
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || { log "SKIP: no python3-torch"; finish; }
. "$(dirname "$0")/xhnet.sh"
SOFT=5
NET=10.88.71
xh_up xhd $NET 2 || finish
xh_agent 1 --metrics-listen "$NET.1:9471"
xh_agent 2
wait_until 15 xh_all_alive && pass "two agents see each other" || fail "mesh not up: $(xf 1 peers --json | jq -c .cluster.peers)"
PORT=29500
# ddp RUN PORT [ddp.py args]: ranks 0-1 on host 1, 2-3 on host 2
ddp() {
	local run=$1 port=$2 r; shift 2
	mkdir -p "$T/$run"
	for r in 0 1 2 3; do
		ip netns exec "xhd$((r / 2 + 1))" env MASTER_ADDR=$NET.1 MASTER_PORT=$port RANK=$r \
			WORLD_SIZE=4 LOCAL_RANK=$((r % 2)) TORCHELASTIC_RUN_ID=none GLOO_SOCKET_IFNAME=eth0 \
			/usr/bin/python3 "$ROOT/tests/workloads/ddp.py" --seconds 900 --dir "$T/$run" "$@" \
			>"$T/$run/out.$r" 2>&1 &
		WORKLOAD_PIDS+=($!)
		disown $!
	done
	wait_until 120 bash -c "for r in 0 1 2 3; do test -s '$T/$run/pid.'\$r || exit 1; done" ||
		fail "$run: ranks did not start: $(tail -2 "$T/$run/out.3")"
}
adopted() { # adopted JOB: each agent watches its two ranks
	local i
	for i in 1 2; do xf $i status --json | jq -e "[.ranks[] | select(.job==\"$1\" and (.exited|not))] | length == 2" >/dev/null || return 1; done
}
nhang() { xev "$1" hang | wc -l; }
JOB="torch:$NET.1:$PORT"
ddp run1 $PORT
wait_until 30 adopted "$JOB" && pass "each agent adopted its two ranks of $JOB" || fail "adoption: $(xf 1 status --json | jq -c '[.ranks[] | {job, rank}]')"
# (a rank that waits for slower ones to import torch may be flagged at the start: a busy
# 2-core host; what counts is the running job)
n1=$(nhang 1); n2=$(nhang 2)
sleep 12
[ "$(nhang 1)" = "$n1" ] && [ "$(nhang 2)" = "$n2" ] && pass "healthy cross-host job: no hang on either host" || fail "hang while healthy: $( (xev 1 hang; xev 2 hang) | jq -c '{job, why}')"
xf 1 status --json | jq -e ".jobs[] | select(.job==\"$JOB\") | .state == \"ok\"" >/dev/null && pass "job ok on host 1" || fail "job state: $(xf 1 status --json | jq -c .jobs)"

# rank 3 stopped
P3=$(cat "$T/run1/pid.3")
T0=$(wall)
kill -STOP "$P3"
if wait_until $((SOFT + 10)) every_names "$JOB" hang 3 stopped; then
	d1=$(delay_of 1 "$JOB" hang "$T0"); d2=$(delay_of 2 "$JOB" hang "$T0")
	pass "SIGSTOP: both agents' hang names rank 3 on $NET.2:7946, stopped (after ${d1}s and ${d2}s)"
	awk -v a="$d1" -v b="$d2" -v s=$SOFT 'BEGIN{exit !(a <= s + 2 && b <= s + 2)}' && pass "within soft + 2 s" || fail "late: ${d1}s, ${d2}s (soft $SOFT)"
else
	fail "SIGSTOP: $(for i in 1 2; do xev $i hang | jq -c '{culprit_ranks, culprit_node, culprit_state, why, missing_ranks}'; done)"
fi
H1=$(xev 1 hang | tail -1); H2=$(xev 2 hang | tail -1)
echo "$H1" | jq -e '(.culprit_here | not) and .hosts == 2 and .evidence != null' >/dev/null &&
	echo "$H2" | jq -e '.culprit_here and ([.ranks[] | select(.culprit) | .rank] == [3])' >/dev/null &&
	pass "host 2 says the culprit runs there and flags its rank 3; host 1 names it elsewhere" ||
	fail "flags: $(echo "$H1" | jq -c '{culprit_here, hosts, evidence}') $(echo "$H2" | jq -c '{culprit_here, r: [.ranks[] | {rank, culprit}]}')"
echo "$H1" | jq -e '[.ranks[] | select(.culprit)] | length == 0' >/dev/null && pass "host 1 flags none of its ranks" || fail "host 1 flags: $(echo "$H1" | jq -c '[.ranks[] | {rank, culprit}]')"
[ "$(nhang 1)" = $((n1 + 1)) ] && [ "$(nhang 2)" = $((n2 + 1)) ] && pass "one hang event per host" || fail "hang events: $(nhang 1) (was $n1), $(nhang 2) (was $n2)"
xf 1 status | grep -q "rank 3 on $NET.2:7946" && pass "ftbpf status on host 1: rank 3 on $NET.2:7946" || fail "status: $(xf 1 status | head -12)"
xf 1 status | grep -qE "rank 3 on $NET.2:7946 pid $P3 +stopped" && pass "status lists the ranks elsewhere" || fail "ranks elsewhere: $(xf 1 status | grep -A6 JOB)"
xf 1 explain "$(cat "$T/run1/pid.0")" | grep -q "job-wide culprit: rank 3 on $NET.2:7946 (stopped)" && pass "ftbpf explain of rank 0 names it" || fail "explain: $(xf 1 explain "$(cat "$T/run1/pid.0")" | head -8)"
ip netns exec xhd1 curl -s "http://$NET.1:9471/metrics" 2>/dev/null | grep -q "ftbpf_job_culprit_node{.*rank=\"3\",node=\"$NET.2:7946\",state=\"stopped\"} 1" &&
	pass "Prometheus: ftbpf_job_culprit_node on host 1" || fail "metrics: $(ip netns exec xhd1 curl -s "http://$NET.1:9471/metrics" | grep culprit)"

# bad input while it is hung: counted, never acted on
PS="$B/workloads/part_send"
before=$(xf 1 status --json | jq -c '.agent.counters')
# a liar with the cluster key sends from an address of its own host (port 7999); one claiming a
# made-up sender ($NET.9) is refused for that alone (the datagram came from elsewhere)
LIAR=$NET.2:7999
for m in garbage forged replay range seq; do ip netns exec xhd2 "$PS" "$T/key" $NET.1:7946 $m $LIAR "$JOB" 4 3; done
ip netns exec xhd2 "$PS" "$T/key" $NET.1:7946 claim $LIAR "$JOB" 4 3   # another host's rank
ip netns exec xhd2 "$PS" "$T/key" $NET.1:7946 claim $LIAR "$JOB" 4 0   # host 1's own rank
ip netns exec xhd2 "$PS" "$T/key" $NET.1:7946 claim $LIAR "torch:$NET.1:1" 4 0 # a job not here
ip netns exec xhd2 "$PS" "$T/key" $NET.1:7946 claim $NET.9:7946 "$JOB" 4 3 2>/dev/null # a made-up sender
head -c 200 /dev/urandom | ip netns exec xhd2 bash -c "cat > /dev/udp/$NET.1/7946"
sleep 1.5
C=$(xf 1 status --json | jq -c '.agent.counters')
echo "$C" | jq -e '.parts_bad_mac >= 1 and .parts_replayed >= 1 and .parts_bad_field >= 2 and .parts_rank_conflict >= 1 and .parts_claim_our_ranks >= 1 and .parts_not_ours >= 1 and .parts_bad_source >= 1' >/dev/null &&
	pass "forged, replayed, garbage, lying and made-up-sender parts counted: $(echo "$C" | jq -c '{parts_bad_mac, parts_bad_size, parts_replayed, parts_bad_field, parts_rank_conflict, parts_claim_our_ranks, parts_not_ours, parts_bad_source}')" ||
	fail "counters: before $before after $C"
xf 1 status --json | jq -e ".jobs[] | select(.job==\"$JOB\") | .culprit_ranks == [3] and .culprit_node == \"$NET.2:7946\" and ([.ranks_elsewhere[] | select(.rank==3) | .pid] == [$P3])" >/dev/null &&
	pass "the verdict is unchanged (rank 3, host 2, its real pid)" || fail "verdict after bad input: $(xf 1 status --json | jq -c ".jobs[] | select(.job==\"$JOB\") | {culprit_ranks, culprit_node, ranks_elsewhere}")"
kill -0 "${XAG[1]}" && pass "agent 1 alive" || fail "agent 1 died"

# SIGCONT: both recover
kill -CONT "$P3"
wait_until 15 bash -c "$(declare -f xev); T='$T'; [ -n \"\$(xev 1 recovered)\" ] && [ -n \"\$(xev 2 recovered)\" ]" &&
	pass "SIGCONT: both agents report recovered" || fail "no recovery: $(xf 1 status --json | jq -c ".jobs[] | {state, why}")"

# rank 3 killed: both name it in job_failed
sleep 3
T0=$(wall)
kill -KILL "$P3"
if wait_until 15 every_names "$JOB" job_failed 3 exited; then
	pass "SIGKILL: both agents' job_failed names rank 3 on $NET.2:7946 (after $(delay_of 1 "$JOB" job_failed "$T0")s and $(delay_of 2 "$JOB" job_failed "$T0")s)"
else
	fail "SIGKILL: $(for i in 1 2; do xev $i job_failed | jq -c '{culprit_ranks, culprit_node, culprit_state, why}'; done)"
fi
xev 1 job_failed | head -1 | jq -e '.why | test("first to die") and test("SIGKILL")' >/dev/null && pass "why: $(xev 1 job_failed | head -1 | jq -r .why)" || fail "why: $(xev 1 job_failed | head -1 | jq -c .why)"

# a rank that sleeps mid-training (the reported case), then one that spins (new jobs)
for f in sleep spin; do
	PORT=$((PORT + 1)); JOB="torch:$NET.1:$PORT"
	ddp "run-$f" $PORT --fault $f --fault-rank 3 --fault-after 8
	wait_until 60 test -s "$T/run-$f/fault.ts" || fail "$f: no fault"
	T0=$(cat "$T/run-$f/fault.ts")
	st=$([ $f = sleep ] && echo blocked || echo spinning)
	if wait_until $((SOFT + 12)) every_names "$JOB" hang 3 $st; then
		pass "$f: both agents name rank 3 on host 2 ($st) after $(delay_of 1 "$JOB" hang "$T0")s and $(delay_of 2 "$JOB" hang "$T0")s"
	else
		fail "$f: $(for i in 1 2; do xev $i hang | jq -c "select(.job==\"$JOB\") | {culprit_ranks, culprit_node, culprit_state, why}"; done)"
	fi
	kill -9 $(cat "$T/run-$f"/pid.*) 2>/dev/null
done
if [ -n "${XH_LONG:-}" ]; then
	PORT=$((PORT + 1)); JOB="torch:$NET.1:$PORT"
	ddp run-healthy $PORT
	wait_until 30 adopted "$JOB" || fail "healthy run not adopted"
	sleep "${XH_HEALTHY_S:-180}"
	n=$( (xev 1 hang; xev 2 hang) | jq -c "select(.job==\"$JOB\")" | wc -l)
	[ "$n" = 0 ] && pass "healthy cross-host job for ${XH_HEALTHY_S:-180} s: no hang" || fail "$n hang events while healthy"
	xf 1 status --json | jq -e '.agent.counters.parts_tx' >/dev/null && log "parts sent by host 1 over the whole run: $(xf 1 status --json | jq .agent.counters.parts_tx)"
fi
finish
