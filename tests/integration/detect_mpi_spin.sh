#!/bin/bash
# time-limit: 900
# Open MPI + mpi4py as it is started on a cluster: one rank per core (mpirun -np 2 on this
# 2-core host, no --oversubscribe), so Open MPI busy-polls its shared-memory transport inside
# MPI_Allreduce without a syscall; the agent sees the ranks' progress only through its MPI
# probes (libmpi.so's collectives: a return is progress). With the agent's defaults:
#   healthy   2 ms of compute and an all-reduce a step (hundreds of steps a second) for
#             MPI_HEALTHY_SECONDS (75; 600 for the 10-minute runs of docs/benchmarks.md), while
#             the jobs below run beside it: never flagged hung (it was at 60 s before)
#   spin, sleep, stop   rank 1 spins on its CPU, sleeps, or stops itself after 8 s: named within
#             max(4 s, 3 x the job's step p99) of it, from the MPI counts, with the others in
#             state mpi
#   slow      then alone: 20 ms of compute a step, rank 1 30% slower from 8 s: named a straggler
#             within 30 s (reason compute; skipped on the busy host, where the hogs make every
#             rank's step vary more than that)
. "$(dirname "$0")/lib.sh"
SECS=${MPI_HEALTHY_SECONDS:-75}
command -v mpirun >/dev/null && /usr/bin/python3 -c 'import mpi4py' 2>/dev/null ||
	{ fail "mpirun or mpi4py missing (make deps)"; finish; }
start_agent --action report || exit 1
jq_status '.agent.features.uprobes' || { log "SKIP: no uprobes with attach cookies here"; finish; }
# mpijob NAME ARGS...: a 2-rank Open MPI job of mpi_steps.py; its id (ompi:NAMESPACE) in job_of
mpijob() {
	local name=$1; shift
	mkdir -p "$T/$name"
	mpirun --allow-run-as-root -np 2 /usr/bin/python3 "$ROOT/tests/workloads/mpi_steps.py" \
		--dir "$T/$name" "$@" >"$T/$name/out" 2>&1 &
	WORKLOAD_PIDS+=($!)
	echo $! >"$T/$name/mpirun.pid"
}
job_of() { wait_until 20 test -s "$T/$1/pid.0" && status_json | jq -r ".ranks[] | select(.pid==$(cat "$T/$1/pid.0")) | .job"; }
stop_mpi() {
	for f in "$T/$1"/pid.*; do kill -9 "$(cat "$f")" 2>/dev/null; done
	kill "$(cat "$T/$1/mpirun.pid")" 2>/dev/null
}
mpijob healthy --seconds "$SECS" --compute-ms 2
JH=$(job_of healthy)
[ -n "$JH" ] && pass "healthy: adopted as $JH" || fail "healthy: not adopted"
wait_until 30 jq_status "[.agent.gpu_libs[] | select(.kind==\"mpi\")] | length >= 1" &&
	pass "libmpi probed: $(status_json | jq -c '[.agent.gpu_libs[] | select(.kind=="mpi") | {path: (.path | split("/") | last), functions}]')" ||
	fail "libmpi not probed: $(status_json | jq -c .agent.gpu_libs)"
wait_until 20 jq_status "[.ranks[] | select(.job==\"$JH\") | .nccl[0].seq > 100] | all" &&
	pass "healthy: its MPI_Allreduce calls are counted: $(status_json | jq -c "[.ranks[] | select(.job==\"$JH\") | .nccl[0] | {seq, last_op}]")" ||
	fail "healthy: no MPI counts: $(status_json | jq -c "[.ranks[] | select(.job==\"$JH\") | .nccl]")"

for f in spin sleep stop; do
	mpijob $f --seconds 120 --compute-ms 2 --fault $f --fault-rank 1 --fault-after 8
	J=$(job_of $f)
	wait_until 30 test -s "$T/$f/fault.ts" || { fail "$f: the fault never began"; stop_mpi $f; continue; }
	P99=$(status_json | jq ".jobs[] | select(.job==\"$J\") | .step_p99_s")
	LIM=$(awk -v p="$P99" 'BEGIN{l = 3 * p; if (l < 4) l = 4; print l + 1.5}')
	if wait_until 20 has_event hang ".job==\"$J\""; then
		H=$(events_of hang | jq -c "select(.job==\"$J\")" | head -1)
		D=$(awk -v h="$(date -d "$(echo "$H" | jq -r .ts)" +%s.%N)" -v f="$(cat "$T/$f/fault.ts")" 'BEGIN{printf "%.2f", h - f}')
		awk -v d="$D" -v l="$LIM" 'BEGIN{exit !(d >= 0 && d <= l)}' &&
			pass "$f: flagged ${D} s after the fault (step p99 ${P99} s: limit ${LIM} s)" || fail "$f: flagged after ${D} s (limit ${LIM} s)"
		echo "$H" | jq -e '.culprit_ranks == [1]' >/dev/null && echo "$H" | jq -r .why | grep -q "on an MPI communicator" &&
			pass "$f: rank 1 named: $(echo "$H" | jq -r .why)" || fail "$f: $(echo "$H" | jq -c '{culprit_ranks, why}')"
		echo "$H" | jq -e '[.ranks[] | select(.rank==0) | .state] == ["mpi"]' >/dev/null &&
			pass "$f: rank 0 waits in state mpi" || fail "$f: rank 0: $(echo "$H" | jq -c '[.ranks[] | select(.rank==0) | {state, reason}]')"
	else
		fail "$f: not flagged in 20 s: $(status_json | jq -c ".jobs[] | select(.job==\"$J\") | {soft_timeout_s, paced_by, why}")"
	fi
	stop_mpi $f
done

wait_until $((SECS + 30)) bash -c "grep -o 'rank [0-9]* done' '$T/healthy/out' | wc -l | grep -qx 2" || fail "healthy: did not finish: $(tail -3 "$T/healthy/out")"
[ -z "$(events_of hang | jq -c "select(.job==\"$JH\")")" ] && pass "healthy: never flagged in ${SECS} s ($(grep -o 'after [0-9]* steps' "$T/healthy/out" | head -1))" ||
	fail "healthy: flagged: $(events_of hang | jq -c "select(.job==\"$JH\") | {soft_timeout_s, why}" | head -2)"
[ -z "$(events_of straggler | jq -c "select(.job==\"$JH\")")" ] && pass "healthy: no straggler" ||
	fail "healthy: straggler: $(events_of straggler | jq -c "select(.job==\"$JH\") | {rank, evidence}" | head -1)"
if [ -z "${BUSY:-}" ]; then
	mpijob slow --seconds 60 --compute-ms 20 --slow-rank 1 --slow-pct 30 --slow-after 8
	J=$(job_of slow)
	wait_until 20 test -s "$T/slow/slow.ts" || fail "slow: never slowed"
	if wait_until 35 has_event straggler ".job==\"$J\" and .rank==1"; then
		E=$(events_of straggler | jq -c "select(.job==\"$J\" and .rank==1)" | head -1)
		D=$(awk -v h="$(date -d "$(echo "$E" | jq -r .ts)" +%s.%N)" -v f="$(cat "$T/slow/slow.ts")" 'BEGIN{printf "%.1f", h - f}')
		awk -v d="$D" 'BEGIN{exit !(d <= 30)}' && echo "$E" | jq -e '.reason == "compute"' >/dev/null &&
			pass "slow: rank 1 named ${D} s after it slowed: $(echo "$E" | jq -r .evidence)" ||
			fail "slow: after ${D} s: $(echo "$E" | jq -c '{reason, evidence}')"
	else
		fail "slow: rank 1 not named: $(status_json | jq -c "[.ranks[] | select(.job==\"$J\") | {rank, slowdown, late_s, straggler_basis}]")"
	fi
	stop_mpi slow
fi

finish
