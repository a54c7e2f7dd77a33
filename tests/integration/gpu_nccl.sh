#!/bin/bash
# CUDA/NCCL uprobes: real multi-rank workloads (tests/workloads/nccl_job.c) on mock
# libcuda.so.1 / libnccl.so.2 that export the real names and signatures (and the aliases the
# real libnccl has) and wait the way the real driver does: spinning, with a driver ioctl a
# second (GPU-FACTS.md). In two phases, so that the spinning ranks of the hung jobs do not
# starve a 2-core machine:
#   healthy   never flagged; communicators identified from ncclCommInitRank, sequence numbers
#   skip      rank 2 skips one all-reduce: hung, rank 2 named from its lagging sequence number
#   hangsync  rank 1's kernel never finishes: it blocks in cuStreamSynchronize before the
#             collective; state gpu_sync, named culprit
#   skipstep  two ranks (as two NCCL ranks on one GPU): rank 1 stalls before a step's two
#             all-reduces (200 vs 202 collectives, as measured on an H100); the why names #201,
#             the first it missed, with its real element count, not the others' latest
. "$(dirname "$0")/lib.sh"
SOFT=3
start_agent --soft-timeout $SOFT --hard-timeout 300 --action report --gpu-majors 1 || exit 1
jq_status '.agent.features.uprobes' || { log "SKIP: no uprobes with attach cookies here"; finish; }

# nccl_run JOB N FAULT_RANK "FAULT_ENV" "FAULT_ARGS" [common args]: start N ranks; the fault
# rank gets FAULT_ENV (VAR=value) and FAULT_ARGS (workload flags) on top
nccl_run() {
	local job=$1 n=$2 frank=$3 fenv=$4 fargs=$5; shift 5
	mkdir -p "$T/$job"
	for r in $(seq 0 $((n - 1))); do
		local e=(X=1) a=()
		[ "$r" = "$frank" ] && { e=($fenv); a=($fargs); }
		env FTBPF_JOB=$job FTBPF_RANK=$r FTBPF_WORLD_SIZE=$n FTBPF_MOCK_DIR="$T/$job" "${e[@]}" \
			"$B/workloads/nccl_job" --rank "$r" --world "$n" --dir "$T/$job" --init-delay-ms 1000 \
			"$@" "${a[@]}" >"$T/$job/out.$r" 2>&1 &
		WORKLOAD_PIDS+=($!)
	done
}
stop_job() { for f in "$T/$1"/pid.*; do kill -9 "$(cat "$f")" 2>/dev/null; done; }
nccl_run healthy 3 - "" "" --steps 300 --interval-ms 20
nccl_run skip 3 2 "X=1" "--skip-at 60" --interval-ms 20
wait_until 20 test -e "$T/healthy/pid.2" -a -e "$T/skip/pid.2" || fail "jobs did not start: $(cat "$T"/*/out.* | head -5)"

jq_status '[.agent.gpu_libs[] | .kind] | sort == ["cuda","nccl"]' &&
	pass "libcuda and libnccl probed once each: $(status_json | jq -c '[.agent.gpu_libs[] | {path: (.path | split("/") | last), functions}]')" ||
	fail "gpu_libs: $(status_json | jq -c .agent.gpu_libs)"
wait_until 10 jq_status '[.ranks[] | select(.job=="healthy") | .nccl[0] | .comm != null and .nranks == 3 and .seq > 0] | length == 3 and all' &&
	pass "communicator identified on every rank (ncclCommInitRank probed: id, rank, nranks)" ||
	fail "healthy comms: $(status_json | jq -c '[.ranks[] | select(.job=="healthy") | .nccl]')"
jq_status '[.ranks[] | select(.job=="healthy") | .nccl[0].comm] | unique | length == 1' &&
	pass "the same communicator id on all 3 ranks" || fail "comm ids differ"
jq_status '[.ranks[] | select(.job=="healthy") | .nccl[0].rank] | sort == [0,1,2]' &&
	pass "ranks in the communicator 0..2" || fail "comm ranks wrong"

# skip: hung, rank 2 culprit from the sequence numbers
if wait_until $((SOFT + 15)) jq_status '.jobs[] | select(.job=="skip") | .hung'; then pass "skip: job flagged hung"; else fail "skip: not flagged hung"; fi
SKIP2=$(rank_pid skip 2)
jq_status ".jobs[] | select(.job==\"skip\") | .culprits == [$SKIP2] and .culprit_ranks == [2]" &&
	pass "skip: rank 2 named culprit" || fail "skip: culprit: $(status_json | jq -c '.jobs[] | select(.job=="skip") | .culprit_ranks, .why')"
WHY=$(status_json | jq -r '.jobs[] | select(.job=="skip") | .why')
log "why: $WHY"
echo "$WHY" | grep -q "rank 2 issued 121 collectives on an NCCL communicator, the others 122" &&
	pass "skip: the lagging sequence number is the evidence (121 vs 122)" || fail "skip: why: $WHY"
jq_status "[.ranks[] | select(.job==\"skip\") | .state == \"gpu_sync\" and .gpu_call == \"cuStreamSynchronize\"] | all" &&
	pass "skip: every rank waits in cuStreamSynchronize (state gpu_sync)" || fail "skip: states: $(status_json | jq -c '[.ranks[] | select(.job=="skip") | .state]')"
jq_status "[.ranks[] | select(.job==\"skip\") | .nccl[0].seq] | sort == [121,122,122]" &&
	pass "skip: per-rank sequence numbers in status" || fail "skip: seqs: $(status_json | jq -c '[.ranks[] | select(.job=="skip") | .nccl[0].seq]')"
wait_until 5 has_event hang ".job==\"skip\" and .culprit_ranks == [2]" &&
	pass "skip: hang event names rank 2" || fail "skip: hang event"
ftbpf explain "$SKIP2" >"$T/explain.txt" && grep -q "never entered ncclAllReduce #122" "$T/explain.txt" &&
	pass "skip: ftbpf explain shows the evidence" || fail "skip: explain: $(head -5 "$T/explain.txt")"

stop_job skip
nccl_run hangsync 3 1 "FTBPF_MOCK_HANG_AT_LAUNCH=60" "" --interval-ms 20
nccl_run skipstep 2 1 "X=1" "--stall-step 100" --interval-ms 10
wait_until 20 test -e "$T/hangsync/pid.2" -a -e "$T/skipstep/pid.1" || fail "phase 2 did not start"

# skipstep: the first collective rank 1 missed, with its count (the others' latest is the loss)
if wait_until $((SOFT + 15)) jq_status '.jobs[] | select(.job=="skipstep") | .hung'; then pass "skipstep: job flagged hung"; else fail "skipstep: not flagged hung"; fi
WHY=$(status_json | jq -r '.jobs[] | select(.job=="skipstep") | .why')
echo "$WHY" | grep -q "rank 1 issued 200 collectives on an NCCL communicator, the others 202: it never entered ncclAllReduce #201 (1024 x float32)" &&
	pass "skipstep: $WHY" || fail "skipstep: why: $WHY"

# hangsync: rank 1 stuck in cuStreamSynchronize before the collective
if wait_until $((SOFT + 15)) jq_status '.jobs[] | select(.job=="hangsync") | .hung'; then pass "hangsync: job flagged hung"; else fail "hangsync: not flagged hung"; fi
HS1=$(rank_pid hangsync 1)
jq_status ".jobs[] | select(.job==\"hangsync\") | .culprit_ranks == [1]" &&
	pass "hangsync: rank 1 named culprit" || fail "hangsync: culprit: $(status_json | jq -c '.jobs[] | select(.job=="hangsync") | .culprit_ranks, .why')"
jq_status ".ranks[] | select(.pid==$HS1) | .state == \"gpu_sync\" and .gpu_call == \"cuStreamSynchronize\" and .gpu_call_s >= $SOFT" &&
	pass "hangsync: rank 1 in a GPU synchronisation (cuStreamSynchronize) since the hang" ||
	fail "hangsync: state: $(status_json | jq -c ".ranks[] | select(.pid==$HS1) | {state, reason, gpu_call, gpu_call_s}")"
jq_status ".jobs[] | select(.job==\"hangsync\") | .why | test(\"rank 1 issued 118 collectives.*the others 120\")" &&
	pass "hangsync: it lags by the step's two all-reduces" || fail "hangsync: why: $(status_json | jq -r '.jobs[] | select(.job=="hangsync") | .why')"

stop_job hangsync
stop_job skipstep
# healthy: finishes, never flagged
for r in 0 1 2; do wait_until 60 grep -q done "$T/healthy/out.$r" || fail "healthy rank $r did not finish: $(cat "$T/healthy/out.$r")"; done
[ -z "$(jq -c 'select((.type=="hang" or .type=="job_failed") and .job=="healthy")' "$LOG")" ] &&
	pass "healthy: never flagged" || fail "healthy flagged: $(jq -c 'select(.type=="hang" and .job=="healthy") | .why' "$LOG" | head -2)"
jq_status '[.ranks[] | select(.job=="healthy") | .exit_code == 0] | all' && pass "healthy: exit codes 0" || fail "healthy: exits"
jq_status '.agent.counters.gpu_api_calls > 0' && pass "probe hits counted: $(status_json | jq .agent.counters.gpu_api_calls)" || fail "no probe hits"
finish
