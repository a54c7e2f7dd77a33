#!/bin/bash
# time-limit: 300
# Stragglers of mocked GPU jobs (tests/workloads/gpu_train.c, shaped as a DDP job on an H200: the
# host spins in a CUDA synchronisation ~98% of every step, slow rank or not), with the agent's
# defaults: a rank that arrives at its job's collectives late by 10% of the step or more, for
# the straggler window, is named with where its excess went. From 12 s on:
#   gpu40   2 ranks, rank 1 does 40% more GPU work a step (an extra kernel it synchronises on,
#           as measured): named within 30 s, reason gpu
#   gpu15   3 ranks, rank 0 15% more GPU work: named within 60 s, reason gpu
#   cpu40   2 ranks, rank 1 40% more CPU work: named within 30 s, reason compute
#   data40  2 ranks reading their input from a loader's pipe, rank 1's loader 40% slower than
#           a step: named within 30 s, reason data
# No other rank is named, no job is flagged hung.
. "$(dirname "$0")/lib.sh"
start_agent --gpu-majors 1 --action report || exit 1
jq_status '.agent.features.uprobes' || { log "SKIP: no uprobes with attach cookies here"; finish; }
train() {
	local job=$1 n=$2; shift 2
	mkdir -p "$T/$job"
	for r in $(seq 0 $((n - 1))); do
		env FTBPF_JOB=$job FTBPF_RANK=$r FTBPF_WORLD_SIZE=$n FTBPF_MOCK_DIR="$T/$job" \
			"$B/workloads/gpu_train" --rank "$r" --world "$n" --dir "$T/$job" --init-delay-ms 1000 \
			--seconds 150 "$@" >"$T/$job/out.$r" 2>&1 &
		WORKLOAD_PIDS+=($!)
	done
}
stop_job() { for f in "$T/$1"/pid.*; do kill -9 "$(cat "$f")" 2>/dev/null; done; }
# named JOB RANK REASON LIMIT: a straggler event for RANK of JOB within LIMIT s of its slow.ts
named() {
	local job=$1 rank=$2 reason=$3 lim=$4 e d
	wait_until 20 test -s "$T/$job/slow.ts" || { fail "$job: never slowed: $(tail -2 "$T/$job/out.0")"; return; }
	if ! wait_until $((lim + 5)) has_event straggler ".job==\"$job\" and .rank==$rank"; then
		fail "$job: rank $rank not named: $(status_json | jq -c "[.ranks[] | select(.job==\"$job\") | {rank, slowdown, late_s, late_gpu_s, late_cpu_s, late_read_s, straggler_basis}], [.jobs[] | select(.job==\"$job\") | {collective_step_s, collectives_per_step}]")"
		return
	fi
	e=$(events_of straggler | jq -c "select(.job==\"$job\" and .rank==$rank)" | head -1)
	d=$(awk -v h="$(date -d "$(echo "$e" | jq -r .ts)" +%s.%N)" -v f="$(cat "$T/$job/slow.ts")" 'BEGIN{printf "%.1f", h - f}')
	awk -v d="$d" -v l="$lim" 'BEGIN{exit !(d <= l)}' && pass "$job: rank $rank named ${d} s after it slowed (at most ${lim} s)" ||
		fail "$job: named after ${d} s (at most ${lim} s)"
	echo "$e" | jq -e ".reason == \"$reason\"" >/dev/null && pass "$job: reason $reason: $(echo "$e" | jq -r .evidence)" ||
		fail "$job: reason $(echo "$e" | jq -c '{reason, evidence}')"
	echo "$d" >"$T/$job/delay"
}

train gpu40 2 --slow-rank 1 --slow-pct 40 --slow-after 12 --slow-kind gpu
train gpu15 3 --slow-rank 0 --slow-pct 15 --slow-after 12 --slow-kind gpu
named gpu40 1 gpu 30
named gpu15 0 gpu 60
stop_job gpu40; stop_job gpu15
train cpu40 2 --slow-rank 1 --slow-pct 40 --slow-after 12 --slow-kind cpu
train data40 2 --slow-rank 1 --slow-pct 40 --slow-after 12 --slow-kind data
named cpu40 1 compute 30
named data40 1 data 30
stop_job cpu40; stop_job data40
N=$(events_of straggler | jq -s '[.[] | select((.job=="gpu40" and .rank!=1) or (.job=="gpu15" and .rank!=0) or (.job=="cpu40" and .rank!=1) or (.job=="data40" and .rank!=1))] | length')
[ "$N" = 0 ] && pass "no other rank named" || fail "others named: $(events_of straggler | jq -c '{job, rank, evidence}' | head -3)"
[ -z "$(events_of hang)" ] && pass "no job flagged hung" || fail "hang: $(events_of hang | jq -c '{job, why}' | head -2)"
log "named after (s): $(for j in gpu40 gpu15 cpu40 data40; do printf '%s %s  ' $j "$(cat "$T/$j/delay" 2>/dev/null)"; done)"
finish
