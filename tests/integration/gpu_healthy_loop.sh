#!/bin/bash
# time-limit: 200
# A healthy GPU rank (2 ms kernels + cuCtxSynchronize_v2, no other syscall: its only progress is
# the probed call's return) is never flagged hung, however the agent's probes come and go: each
# run starts a fresh rank, then an agent (which attaches the probes while the rank is inside its
# synchronisations), and stops the agent while the rank is still mid-call (its links, and the
# return probe of the call in flight, go). The kernel side must end a call whose return it never
# saw (bpf/gpu.bpf.h); such calls are counted (gpu_returns_lost). Once, a healthy job like this
# was SIGTERMed by the hard timeout in about 1 run of 9 (the entry probe was attached before the
# return probe). GPU_LOOP_RUNS=N runs it N times (default 10; docs/benchmarks.md: 200 runs).
. "$(dirname "$0")/lib.sh"
RUNS=${GPU_LOOP_RUNS:-10}
PIN0=$PIN
export LD_LIBRARY_PATH=$B/mock
flagged=0 killed=0 lost=0 calls=0
for i in $(seq "$RUNS"); do
	mkdir -p "$T/h$i"
	FTBPF_JOB=h$i FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 FTBPF_MOCK_DIR="$T/h$i" \
		"$B/workloads/ring" --work 0 --interval-ms 0 --gpu-kernel-us 2000 --rank 0 --world 1 \
		--dir "$T/h$i" --seconds 60 >"$T/h$i/out" 2>&1 &
	RP=$!
	WORKLOAD_PIDS+=($RP)
	wait_until 10 test -s "$T/h$i/pid.0" || { fail "run $i: the rank did not start"; continue; }
	sleep "0.$((RANDOM % 4))"
	PIN=$PIN0-$i # a fresh agent: it does not resume the earlier runs' ranks
	start_agent --soft-timeout 1.5 --hard-timeout 2 --action terminate --grace 1 --gpu-majors 1 || exit 1
	if [ "$i" = 1 ] && ! jq_status '.agent.features.uprobes'; then log "SKIP: no uprobes with attach cookies here"; finish; fi
	wait_until 10 jq_status ".ranks[] | select(.job==\"h$i\") | .gpu_api_calls > 10" ||
		fail "run $i: no probed calls seen: $(status_json | jq -c "[.ranks[] | select(.job==\"h$i\")]")"
	sleep 2.5 # longer than the soft timeout, and the hard one
	S=$(status_json)
	calls=$((calls + $(echo "$S" | jq "[.ranks[] | select(.job==\"h$i\") | .gpu_api_calls] | add // 0")))
	lost=$((lost + $(echo "$S" | jq '.agent.counters.gpu_returns_lost // 0')))
	stop_agent # while the rank is inside a synchronisation
	rm -rf "$PIN"
	if [ -n "$(jq -c "select((.type==\"hang\" or .type==\"hard_timeout\") and .job==\"h$i\")" "$LOG")" ]; then
		flagged=$((flagged + 1))
		fail "run $i: flagged: $(jq -c "select(.type==\"hang\" and .job==\"h$i\") | .why" "$LOG" | head -1)"
	fi
	# alive: no hard action reached it (then it is ours to end)
	if kill -0 "$RP" 2>/dev/null; then kill -9 "$RP"; wait "$RP" 2>/dev/null
	else killed=$((killed + 1)); fail "run $i: the healthy rank ended: $(cat "$T/h$i/out" | tail -2)"; fi
done
log "$RUNS runs: $flagged flagged hung, $killed healthy ranks killed, $calls probed calls watched, $lost returns never seen (counted, ended by the kernel side)"
[ "$flagged" = 0 ] && [ "$killed" = 0 ] && pass "$RUNS runs of a healthy GPU loop under a starting and stopping agent: never flagged"
finish
