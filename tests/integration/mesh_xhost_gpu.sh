#!/bin/bash
# time-limit: 360
# Mocked GPU jobs across two hosts (network namespaces on a bridge, an agent each with the mesh up
# and its defaults), whose clocks differ: host 2's agent runs 30 ms ahead of host 1's on the wire
# (FTBPF_TEST_CLOCK_SKEW_MS: the namespaces share one CLOCK_MONOTONIC). Ranks 0-1 on host 1,
# rank 2 alone on host 2 (tests/workloads/gpu_train.c, the H200's shape):
#   clocks    each agent estimates the other's offset from the parts' round trips: 30 ms, within
#             its error bound, both ways
#   slow      from 15 s rank 2 does 40% more GPU work a step: BOTH agents name it a straggler
#             within 30 s (host 2 by its arrivals against host 1's first arrivals converted into
#             its clock; host 1 from host 2's summary), reason gpu; nobody before the slowdown
#             (a 30 ms clock error uncorrected would be a third of a step)
#   hangs     other jobs, a rank's stall at 12 s: rank 0 (host 1) sleeps before its step's
#             all-reduces, rank 2 (host 2)'s kernel never ends, rank 1 (host 1) stops: both agents
#             flag each job hung at its collective pace (the union's counts), within max(4 s,
#             3 x p99) + 2.5 s (the parts' way), the right rank named
. "$(dirname "$0")/lib.sh"
command -v ip >/dev/null || { log "SKIP: no ip(8)"; finish; }
. "$(dirname "$0")/xhnet.sh"
SOFT=auto
NET=10.88.75
xh_up xhg $NET 2 || finish
xh_agent 1 --gpu-majors 1 --node-name host1
export FTBPF_TEST_CLOCK_SKEW_MS=30
xh_agent 2 --gpu-majors 1 --node-name host2
unset FTBPF_TEST_CLOCK_SKEW_MS
xf 1 status --json | jq -e '.agent.features.uprobes' >/dev/null || { log "SKIP: no uprobes with attach cookies here"; finish; }
wait_until 15 xh_all_alive && pass "two agents see each other" || fail "mesh not up"
# xtrain JOB ARGS...: ranks 0-1 on host 1, rank 2 on host 2
xtrain() {
	local job=$1 r; shift
	mkdir -p "$T/$job"
	for r in 0 1 2; do
		ip netns exec "xhg$((r / 2 + 1))" env FTBPF_JOB=$job FTBPF_RANK=$r FTBPF_WORLD_SIZE=3 FTBPF_MOCK_DIR="$T/$job" \
			"$B/workloads/gpu_train" --rank $r --world 3 --dir "$T/$job" --init-delay-ms 1000 "$@" \
			>"$T/$job/out.$r" 2>&1 &
		WORKLOAD_PIDS+=($!)
		disown $!
	done
}
stop_job() { for f in "$T/$1"/pid.*; do kill -9 "$(cat "$f")" 2>/dev/null; done; }
xtrain slow --seconds 100 --slow-rank 2 --slow-pct 40 --slow-after 15 --slow-kind gpu
wait_until 20 test -e "$T/slow/pid.2" || fail "slow: did not start: $(cat "$T/slow"/out.* | head -3)"
# the clocks, from the cadence parts' round trips
clock_ok() { # I WANT_MS: agent I's estimate of the other within its bound (+0.5 ms) of WANT
	xf "$1" status --json | jq -e "[.agent.peer_clocks[] | select(((.offset_ms - ($2)) | fabs) <= .error_ms + 0.5 and .error_ms < 5)] | length == 1" >/dev/null
}
wait_until 30 bash -c "$(declare -f clock_ok xf); B='$B' T='$T'; clock_ok 1 30 && clock_ok 2 -30" &&
	pass "clocks: host 1 sees host 2 $(xf 1 status --json | jq -c '.agent.peer_clocks[0] | {offset_ms, error_ms}'), host 2 sees host 1 $(xf 2 status --json | jq -c '.agent.peer_clocks[0] | {offset_ms, error_ms}')" ||
	fail "clocks: $(xf 1 status --json | jq -c .agent.peer_clocks) / $(xf 2 status --json | jq -c .agent.peer_clocks)"
ev() { xev "$1" "$2" | jq -c "select(.job==\"$3\")"; }
named_both() { [ -n "$(ev 1 straggler slow | jq -c 'select(.rank==2)')" ] && [ -n "$(ev 2 straggler slow | jq -c 'select(.rank==2)')" ]; }
wait_until 30 test -s "$T/slow/slow.ts" || fail "slow: the slowdown never began"
[ -z "$( (ev 1 straggler slow; ev 2 straggler slow) | jq -c "select(.ts < \"$(date -u -d @"$(cut -d. -f1 "$T/slow/slow.ts")" +%Y-%m-%dT%H:%M:%S)\")")" ] &&
	pass "slow: no straggler before the slowdown" || fail "slow: named before: $( (ev 1 straggler slow; ev 2 straggler slow) | head -2)"
if wait_until 40 named_both; then
	for i in 1 2; do
		e=$(ev $i straggler slow | jq -c 'select(.rank==2)' | head -1)
		d=$(awk -v h="$(date -d "$(echo "$e" | jq -r .ts)" +%s.%N)" -v f="$(cat "$T/slow/slow.ts")" 'BEGIN{printf "%.1f", h - f}')
		awk -v d="$d" 'BEGIN{exit !(d <= 30)}' && pass "slow: host $i names rank 2 ${d} s after it slowed: $(echo "$e" | jq -c '{node, here, reason, slowdown}')" ||
			fail "slow: host $i named it after ${d} s (limit 30 s)"
	done
	ev 2 straggler slow | jq -e 'select(.rank==2) | .here and .reason == "gpu"' >/dev/null &&
		pass "slow: host 2's evidence: $(ev 2 straggler slow | jq -r 'select(.rank==2) | .evidence' | head -1)" || fail "slow: host 2's event $(ev 2 straggler slow | head -1)"
	ev 1 straggler slow | jq -e "select(.rank==2) | (.here | not) and .node == \"$NET.2:7946\" and .reason == \"gpu\"" >/dev/null &&
		pass "slow: host 1's event: rank 2 on $NET.2:7946, reason gpu" || fail "slow: host 1's event $(ev 1 straggler slow | head -1)"
else
	fail "slow: not named by both: host 1 $(xf 1 status --json | jq -c '[.jobs[] | select(.job=="slow") | .ranks_elsewhere]'), host 2 $(xf 2 status --json | jq -c '[.ranks[] | select(.job=="slow") | {rank, slowdown, late_s, late_err_s, collectives_compared}]')"
fi
xf 2 status --json | jq -e '[.ranks[] | select(.job=="slow" and .rank==2) | .late_err_s > 0 and .late_err_s < 0.005] == [true]' >/dev/null &&
	pass "slow: rank 2's lateness carries host 1's clock bound: $(xf 2 status --json | jq -c '.ranks[] | select(.job=="slow" and .rank==2) | {late_s, late_err_s}')" ||
	fail "slow: $(xf 2 status --json | jq -c '.ranks[] | select(.job=="slow") | {rank, late_s, late_err_s}')"
[ -z "$( (ev 1 straggler slow; ev 2 straggler slow) | jq -c 'select(.rank!=2)')" ] && pass "slow: no other rank named" ||
	fail "slow: others named: $( (ev 1 straggler slow; ev 2 straggler slow) | jq -c 'select(.rank!=2) | {rank, node, evidence}' | head -2)"
stop_job slow

# hangs of one rank: a sleep on host 1, a kernel that never ends alone on host 2, SIGSTOP on
# host 1; each job's collective p99 sets the limit (plus the parts' way between the hosts)
both_hung() { [ -n "$(ev 1 hang "$1")" ] && [ -n "$(ev 2 hang "$1")" ]; }
xhang() { # JOB FAULT RANK STALL-FILE
	local job=$1 f=$2 want=$3 ts=$4 p99 lim e d i
	xtrain "$job" --seconds 100 --fault "$f" --fault-rank "$want" --fault-after 12
	wait_until 40 test -s "$T/$job/$ts" || { fail "$job: the fault never began"; stop_job "$job"; return; }
	p99=$(xf 1 status --json | jq ".jobs[] | select(.job==\"$job\") | .collective_interval_p99_s")
	lim=$(awk -v p="$p99" 'BEGIN{l = 3 * p; if (l < 4) l = 4; print l + 2.5}')
	if wait_until 30 both_hung "$job"; then
		for i in 1 2; do
			e=$(ev $i hang "$job" | head -1)
			d=$(awk -v h="$(date -d "$(echo "$e" | jq -r .ts)" +%s.%N)" -v f="$(cat "$T/$job/$ts")" 'BEGIN{printf "%.1f", h - f}')
			awk -v d="$d" -v l="$lim" 'BEGIN{exit !(d >= 0 && d <= l)}' && echo "$e" | jq -e ".culprit_ranks == [$want]" >/dev/null &&
				pass "$job: host $i flagged it ${d} s after the stall (limit ${lim} s), rank $want named: $(echo "$e" | jq -r .why)" ||
				fail "$job: host $i after ${d} s (limit ${lim} s): $(echo "$e" | jq -c '{soft_timeout_s, culprit_ranks, why}')"
		done
	else
		fail "$job: not flagged by both: $(xf 1 status --json | jq -c ".jobs[] | select(.job==\"$job\") | {soft_timeout_s, paced_by, no_progress_s}") / $(xf 2 status --json | jq -c ".jobs[] | select(.job==\"$job\") | {soft_timeout_s, paced_by, no_progress_s}")"
	fi
	stop_job "$job"
}
xhang sleep0 sleep 0 fault.ts
xhang gpuhang2 gpu-hang 2 hang.ts
xhang stop1 stop 1 fault.ts
finish
