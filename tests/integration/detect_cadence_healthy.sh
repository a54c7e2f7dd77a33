#!/bin/bash
# time-limit: 900
# Healthy jobs are never a straggler nor a hang under soft_timeout auto: a 3-rank torch DDP job
# (gloo) and a 3-rank Open MPI job (mpi4py) side by side for CADENCE_SECONDS (90; the 10-minute
# runs, quiet and busy, are in docs/benchmarks.md). Their cadence is known meanwhile.
. "$(dirname "$0")/lib.sh"
S=${CADENCE_SECONDS:-90}
start_agent --node-name itnode --soft-timeout auto --hard-timeout 600 --action report || exit 1
PORT=$((33600 + RANDOM % 900))
mkdir -p "$T/ddp" "$T/mpi"
for r in 0 1 2; do
	MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT RANK=$r LOCAL_RANK=$r WORLD_SIZE=3 \
		/usr/bin/python3 "$ROOT/tests/workloads/ddp.py" --seconds "$S" --dir "$T/ddp" >"$T/ddp/out.$r" 2>&1 &
	WORKLOAD_PIDS+=($!)
done
JD="torch:127.0.0.1:$PORT@itnode"  # a loopback master: this host's job
HAVE_MPI=0
if command -v mpirun >/dev/null && /usr/bin/python3 -c 'import mpi4py' 2>/dev/null; then
	HAVE_MPI=1
	mpirun --allow-run-as-root --oversubscribe -np 3 /usr/bin/python3 "$ROOT/tests/workloads/mpi_steps.py" \
		--seconds "$S" --compute-ms 20 --dir "$T/mpi" >"$T/mpi/out" 2>&1 &
	WORKLOAD_PIDS+=($!)
	wait_until 60 test -s "$T/mpi/pid.2" || fail "mpi: did not start: $(head -3 "$T/mpi/out")"
	wait_until 30 jq_status "[.ranks[] | select(.pid==$(cat "$T/mpi/pid.2" 2>/dev/null || echo 0))] | length == 1" ||
		fail "mpi: rank 2 not adopted: $(status_json | jq -c '[.ranks[] | {job, rank, pid}]')"
	JM=$(status_json | jq -r ".ranks[] | select(.pid==$(cat "$T/mpi/pid.2" 2>/dev/null || echo 0)) | .job")
else
	fail "mpi: mpirun or mpi4py missing (make deps)"
fi
wait_until 60 jq_status "[.ranks[] | select(.job==\"$JD\")] | length == 3" || fail "ddp: not adopted"
sleep 30
for j in "$JD" ${JM:+"$JM"}; do
	jq_status ".jobs[] | select(.job==\"$j\") | .step_s > 0 and .step_p99_s > 0" &&
		pass "$j: cadence $(status_json | jq -c ".jobs[] | select(.job==\"$j\") | {step_s, step_rate, step_spread, step_p99_s, rank_imbalance, soft_timeout_s}")" ||
		fail "$j: no cadence: $(status_json | jq -c ".jobs[] | select(.job==\"$j\")")"
	log "$j ranks: $(status_json | jq -c "[.ranks[] | select(.job==\"$j\") | {rank, slowdown, compute_s, wait_s, read_s}]")"
done
MAXS=0
END=$(( $(date +%s) + S - 40 ))
while [ "$(date +%s)" -lt "$END" ]; do
	m=$(status_json | jq "[.ranks[] | select(.job==\"$JD\" or .job==\"${JM:-none}\") | .slowdown] | max // 0")
	MAXS=$(awk -v a="$MAXS" -v b="$m" 'BEGIN{print (b > a ? b : a)}')
	sleep 2
done
log "highest slowdown seen: $MAXS"
wait_until 60 test -s "$T/ddp/steps.0" || fail "ddp: did not finish: $(tail -3 "$T/ddp/out.0")"
BAD="select((.type==\"hang\" or .type==\"straggler\") and (.job==\"$JD\" or .job==\"${JM:-none}\"))"
[ -z "$(jq -c "$BAD" "$LOG")" ] && pass "${S} s of healthy DDP and MPI jobs: 0 straggler, 0 hang" ||
	fail "flagged: $(jq -c "$BAD | {type, job, rank, slowdown, why, evidence}" "$LOG" | head -3)"
finish
