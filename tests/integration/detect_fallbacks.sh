#!/bin/bash
# The degraded paths a production kernel may force: raw_tp programs instead of tp_btf, /proc
# instead of the task iterator, the precise clock instead of jiffies. The same scenarios hold,
# and an Open MPI job launched by mpirun is adopted from its environment.
. "$(dirname "$0")/lib.sh"
SOFT=3
start_agent --soft-timeout $SOFT --hard-timeout 300 --action report \
	--bpf-programs raw_tp --task-iter off --syscall-clock ktime || exit 1
jq_status '.agent.features | .programs == "raw_tp" and .task_iter == false and .syscall_clock_hz == 0' &&
	pass "fallbacks in use" || fail "features: $(status_json | jq -c .agent.features)"
FTBPF_JOB=thr FTBPF_RANK=0 /usr/bin/python3 -c 'import threading,time
for _ in range(3): threading.Thread(target=time.sleep, args=(20,), daemon=True).start()
time.sleep(20)' &
THR=$!; WORKLOAD_PIDS+=($THR)
wait_until 5 jq_status ".ranks[] | select(.pid==$THR) | .threads == 4" && pass "thread count from /proc" || fail "threads: $(status_json | jq -c ".ranks[] | select(.pid==$THR) | .threads")"
ftbpf explain "$THR" --json | jq -e '.threads | length == 4 and all(.kernel_stack | length > 0)' >/dev/null &&
	pass "explain lists threads and stacks from /proc" || fail "explain threads on /proc"
JOB=fbjob
ring_job $JOB 3 --fault sleep --fault-rank 1 --fault-after 2
CUL=$(rank_pid $JOB 1)
wait_until 20 test -e "$T/$JOB/fault.ts" || fail "fault never started"
FAULT_TS=$(cat "$T/$JOB/fault.ts")
wait_until $((SOFT + 8)) jq_status ".jobs[] | select(.job==\"$JOB\") | .hung" && pass "hung" || fail "not hung"
HANG=$(events_of hang | jq -c "select(.job==\"$JOB\")" | head -1)
DELAY=$(awk "BEGIN{print $(date -d "$(echo "$HANG" | jq -r .ts)" +%s.%N) - $FAULT_TS}")
awk "BEGIN{exit !($DELAY <= $SOFT + 1)}" && pass "within soft + 1 s (${DELAY}s)" || fail "late: ${DELAY}s"
echo "$HANG" | jq -e ".culprits == [$CUL]" >/dev/null && pass "culprit named on raw_tp + /proc" || fail "culprit: $(echo "$HANG" | jq -c .why)"
echo "$HANG" | jq -e "[.ranks[] | select(.pid==$CUL) | .kernel_stack | length > 0] | all" >/dev/null &&
	pass "kernel stack from /proc" || fail "no kernel stack"
VICTIM=$(rank_pid $JOB 2)
/bin/kill -KILL "$VICTIM" & KILLER=$!; wait $KILLER
wait_until 5 has_event exit ".pid==$VICTIM and .signal==9 and .sender_pid==$KILLER and .sender_comm==\"kill\"" &&
	pass "SIGKILL attributed on raw_tp" || fail "attribution on raw_tp"
# Open MPI
if command -v mpirun >/dev/null; then
	mkdir -p "$T/mpi"
	mpirun --allow-run-as-root --oversubscribe -np 3 "$B/workloads/ring" --dir "$T/mpi" --seconds 8 \
		>"$T/mpi.out" 2>&1 &
	MPI=$!
	wait_until 20 jq_status '[.ranks[] | select(.source=="openmpi")] | length == 3' &&
		pass "mpirun ranks adopted as an Open MPI job" || fail "mpi ranks: $(status_json | jq -c '[.ranks[] | {pid,job,source}]')"
	jq_status '[.ranks[] | select(.source=="openmpi") | .job] | unique | length == 1 and (.[0] | startswith("ompi:"))' &&
		pass "one job id for the mpirun job" || fail "mpi job ids"
	wait $MPI && pass "mpirun job ended cleanly" || fail "mpirun failed: $(tail -3 "$T/mpi.out")"
else
	fail "mpirun missing"
fi
finish
