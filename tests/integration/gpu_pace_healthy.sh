#!/bin/bash
# time-limit: 900
# Healthy mocked GPU jobs under the agent's defaults (soft_timeout = auto, stragglers on): never
# flagged, no straggler named, for GPU_HEALTHY_SECONDS (130 here; 600 for the 10-minute runs of
# docs/benchmarks.md), quiet or busy (make test runs it in the busy pass too):
#   phases  2 ranks of the H200-shaped job (tests/workloads/gpu_train.c, ~80 ms steps, the host
#           spinning in the loss synchronisation) with a 30 s evaluation every 100 steps (every
#           rank: kernels and synchronisations, no collective) and a 20 s checkpoint save every
#           250 steps (rank 0 writes while the others wait at the barrier after it: their
#           collective counts differ the whole time)
#   graphs  2 ranks replaying a CUDA graph each step (no NCCL call on the host)
. "$(dirname "$0")/lib.sh"
SECS=${GPU_HEALTHY_SECONDS:-130}
start_agent --gpu-majors 1 --action report || exit 1
jq_status '.agent.features.uprobes' || { log "SKIP: no uprobes with attach cookies here"; finish; }
train() {
	local job=$1 n=$2; shift 2
	mkdir -p "$T/$job"
	for r in $(seq 0 $((n - 1))); do
		env FTBPF_JOB=$job FTBPF_RANK=$r FTBPF_WORLD_SIZE=$n FTBPF_MOCK_DIR="$T/$job" \
			"$B/workloads/gpu_train" --rank "$r" --world "$n" --dir "$T/$job" --init-delay-ms 1000 \
			--seconds "$SECS" "$@" >"$T/$job/out.$r" 2>&1 &
		WORKLOAD_PIDS+=($!)
	done
}
train phases 2 --eval-every 100 --eval-seconds 30 --save-every 250 --save-seconds 20
train graphs 2 --graph 1
# the pace is learnt: the collective rule is armed (its p99 known) while the job steps
wait_until 60 jq_status '.jobs[] | select(.job=="phases") | .collective_interval_p99_s > 0' &&
	pass "phases: collective pace known: $(status_json | jq -c '.jobs[] | select(.job=="phases") | {collective_interval_p99_s, collectives_per_step, collective_step_s, soft_timeout_s}')" ||
	fail "phases: no collective pace: $(status_json | jq -c '.jobs[] | select(.job=="phases")')"

for j in phases graphs; do
	wait_until $((SECS + 60)) test -s "$T/$j/steps.0" || fail "$j: did not finish: $(tail -2 "$T/$j/out.0")"
done
for j in phases graphs; do
	[ -z "$(events_of hang | jq -c "select(.job==\"$j\")")" ] && pass "$j: never flagged in ${SECS} s" ||
		fail "$j: flagged: $(events_of hang | jq -c "select(.job==\"$j\") | {soft_timeout_s, why}" | head -2)"
	[ -z "$(events_of straggler | jq -c "select(.job==\"$j\")")" ] && pass "$j: no straggler" ||
		fail "$j: straggler: $(events_of straggler | jq -c "select(.job==\"$j\") | {rank, evidence}" | head -2)"
done
STEPS=$(cat "$T/phases/steps.0" 2>/dev/null || echo 0)
[ "$STEPS" -ge 250 ] && pass "phases: $STEPS steps: $((STEPS / 100)) evaluations of 30 s and $((STEPS / 250)) saves of 20 s" ||
	fail "phases: only $STEPS steps (an evaluation and a save need 250)"
log "graphs: $(cat "$T/graphs/steps.0" 2>/dev/null) steps; agent counters: $(status_json | jq -c '.agent.counters | {gpu_api_calls, gpu_returns_lost}')"
finish
