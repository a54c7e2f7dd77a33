#!/bin/bash
# time-limit: 600
# Stragglers in real jobs (docs/detection.md), from the kernel alone, no code in the loop:
#   slow30   torch DDP over gloo, 3 ranks: from 20 s on, rank 1 does 30% more CPU work per step:
#            a `straggler` event names it within 30 s (reason compute), status and metrics say so;
#            after 60 s of it the rank keeps pace again: `straggler_recovered` within 45 s
#   stall    the same job shape, rank 2 blocked 200 ms in read(2) before each step: named with
#            reason data
#   slow10   rank 0 10% slower: named within 60 s
#   mpi      an Open MPI job (mpi4py, mpirun), 3 ranks, rank 2 30% slower: named
# And before each slowdown, and on the other ranks, no straggler; never a hang.
. "$(dirname "$0")/lib.sh"
MPORT=$((9300 + RANDOM % 300))
start_agent --node-name itnode --soft-timeout 60 --hard-timeout 600 --action report --metrics-listen "127.0.0.1:$MPORT" || exit 1
# ddp NAME [ddp.py args]: a 3-rank DDP job; its job id in $JOB, its pids in $T/NAME/pids
ddp() {
	local name=$1 port=$((31000 + RANDOM % 1500)); shift
	mkdir -p "$T/$name"
	for r in 0 1 2; do
		MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r LOCAL_RANK=$r WORLD_SIZE=3 \
			/usr/bin/python3 "$ROOT/tests/workloads/ddp.py" --dir "$T/$name" "$@" >"$T/$name/out.$r" 2>&1 &
		WORKLOAD_PIDS+=($!); echo $! >>"$T/$name/pids"
	done
	JOB="torch:127.0.0.1:$port@itnode"  # a loopback master: this host's job
}
# named NAME JOB RANK TSFILE LIMIT REASON: a straggler event for RANK of JOB within LIMIT s of TSFILE
named() {
	local name=$1 job=$2 rank=$3 ts=$4 limit=$5 reason=$6 ev d
	wait_until 90 test -s "$T/$name/$ts" || { fail "$name: the slowdown never began: $(tail -2 "$T/$name/out.0")"; return 1; }
	if ! wait_until $((limit + 5)) has_event straggler ".job==\"$job\" and .rank==$rank"; then
		fail "$name: rank $rank not named in $((limit + 5)) s: $(status_json | jq -c "[.ranks[] | select(.job==\"$job\") | {rank, slowdown, wait_frac, straggler}]")"
		return 1
	fi
	ev=$(events_of straggler | jq -c "select(.job==\"$job\" and .rank==$rank)" | head -1)
	d=$(awk -v h="$(date -d "$(echo "$ev" | jq -r .ts)" +%s.%N)" -v f="$(cat "$T/$name/$ts")" 'BEGIN{printf "%.1f", h - f}')
	awk -v d="$d" -v l="$limit" 'BEGIN{exit !(d <= l)}' && pass "$name: rank $rank named ${d} s after it slowed (limit $limit s): $(echo "$ev" | jq -c '{slowdown, reason, step_s, evidence}')" ||
		fail "$name: named after ${d} s (limit $limit s)"
	echo "$ev" | jq -e ".reason==\"$reason\" and .slowdown >= 1.1 and (.ranks | index($rank)) != null and (.node | length) > 0 and (.since | length) > 0 and (.evidence | length) > 0" >/dev/null &&
		pass "$name: event fields (reason $reason, ranks, node, since, evidence)" || fail "$name: event: $ev"
	[ -z "$(events_of straggler | jq -c "select(.job==\"$job\" and .rank!=$rank)")" ] && pass "$name: no other rank named" ||
		fail "$name: others named: $(events_of straggler | jq -c "select(.job==\"$job\" and .rank!=$rank) | {rank, slowdown}")"
	LAST_EV=$ev
}
# a job's processes (started here), ended before the next pair
stop_job() { local p; for p in $(cat "$T/$1/pids"); do kill "$p" 2>/dev/null; done; }

# two jobs at a time: slow30 and stall, then slow10 and mpi
ddp slow30 --seconds 200 --slow-rank 1 --slow-pct 30 --slow-after 20 --slow-for 60
J30=$JOB
ddp stall --seconds 200 --stall-rank 2 --stall-ms 200 --stall-after 20
JS=$JOB
wait_until 60 jq_status "[.ranks[] | select(.job==\"$J30\")] | length == 3" || fail "slow30: not adopted"
wait_until 25 jq_status ".jobs[] | select(.job==\"$J30\") | .step_s > 0" &&
	pass "slow30: cadence before the slowdown: $(status_json | jq -c ".jobs[] | select(.job==\"$J30\") | {step_s, step_rate, step_spread, step_p99_s}")" ||
	fail "slow30: no cadence: $(status_json | jq -c ".jobs[] | select(.job==\"$J30\")")"
log "slow30 ranks: $(status_json | jq -c "[.ranks[] | select(.job==\"$J30\") | {rank, step_s, compute_s, wait_s, slowdown}]")"
named slow30 "$J30" 1 slow.ts 30 compute
jq_status ".ranks[] | select(.job==\"$J30\" and .rank==1) | .straggler and .slowdown >= 1.1" &&
	pass "slow30: status: $(status_json | jq -c "[.ranks[] | select(.job==\"$J30\") | {rank, straggler, slowdown, compute_s, wait_s}]")" ||
	fail "slow30: status: $(status_json | jq -c "[.ranks[] | select(.job==\"$J30\") | {rank, straggler, slowdown}]")"
jq_status ".jobs[] | select(.job==\"$J30\") | .stragglers == [1]" && pass "slow30: job stragglers [1]" || fail "slow30: job: $(status_json | jq -c ".jobs[] | select(.job==\"$J30\")")"
M=$(curl -s "http://127.0.0.1:$MPORT/metrics" | grep -E '^ftbpf_rank_slowdown\{' | grep "job=\"$J30\"" | grep 'rank="1"')
awk -v v="${M##* }" 'BEGIN{exit !(v >= 1.1)}' && pass "slow30: metric $M" || fail "slow30: ftbpf_rank_slowdown: '$M'"
named stall "$JS" 2 stall.ts 40 data
# slow30's rank 1 keeps pace again 80 s in: recovered, its peak said, status no longer says so
if wait_until 100 test -s "$T/slow30/slow_end.ts" &&
	wait_until 50 has_event straggler_recovered ".job==\"$J30\" and .rank==1"; then
	ev=$(events_of straggler_recovered | jq -c "select(.job==\"$J30\" and .rank==1)" | head -1)
	d=$(awk -v h="$(date -d "$(echo "$ev" | jq -r .ts)" +%s.%N)" -v f="$(cat "$T/slow30/slow_end.ts")" 'BEGIN{printf "%.1f", h - f}')
	awk -v d="$d" 'BEGIN{exit !(d <= 45)}' && echo "$ev" | jq -e '.peak_slowdown >= 1.1' >/dev/null &&
		pass "slow30: straggler_recovered ${d} s after rank 1 kept pace again: $(echo "$ev" | jq -c '{slowdown, peak_slowdown, since}')" ||
		fail "slow30: recovered after ${d} s (limit 45 s): $ev"
	jq_status ".ranks[] | select(.job==\"$J30\" and .rank==1) | .straggler | not" &&
		jq_status ".jobs[] | select(.job==\"$J30\") | .stragglers == []" &&
		pass "slow30: status: no straggler any more" ||
		fail "slow30: status after recovery: $(status_json | jq -c "[.ranks[] | select(.job==\"$J30\") | {rank, straggler, slowdown}]")"
else
	fail "slow30: no straggler_recovered: $(status_json | jq -c "[.ranks[] | select(.job==\"$J30\") | {rank, straggler, slowdown}]")"
fi
stop_job slow30
stop_job stall

ddp slow10 --seconds 200 --slow-rank 0 --slow-pct 10 --slow-after 20
J10=$JOB

if command -v mpirun >/dev/null && /usr/bin/python3 -c 'import mpi4py' 2>/dev/null; then
	mkdir -p "$T/mpi"
	FTBPF_JOB=mpisteps mpirun --allow-run-as-root --oversubscribe -np 3 -x FTBPF_JOB \
		/usr/bin/python3 "$ROOT/tests/workloads/mpi_steps.py" --seconds 200 --compute-ms 20 \
		--slow-rank 2 --slow-pct 30 --slow-after 20 --dir "$T/mpi" >"$T/mpi/out" 2>&1 &
	WORKLOAD_PIDS+=($!); echo $! >"$T/mpi/pids"
	wait_until 30 test -s "$T/mpi/pid.2" || fail "mpi: did not start: $(head -5 "$T/mpi/out")"
	wait_until 30 jq_status "[.ranks[] | select(.pid==$(cat "$T/mpi/pid.2"))] | length == 1" ||
		fail "mpi: rank 2 not adopted: $(status_json | jq -c '[.ranks[] | {job, rank, pid}]')"
	JM=$(status_json | jq -r ".ranks[] | select(.pid==$(cat "$T/mpi/pid.2")) | .job")
	log "mpi job id: $JM"
else
	fail "mpi: mpirun or mpi4py missing (make deps)"
fi
named slow10 "$J10" 0 slow.ts 60 compute
[ -n "${JM:-}" ] && named mpi "$JM" 2 slow.ts 40 compute
stop_job slow10
[ -n "${JM:-}" ] && stop_job mpi
BAD="select(.type==\"hang\" and (.job==\"$J30\" or .job==\"$JS\" or .job==\"$J10\"))"
[ -z "$(jq -c "$BAD" "$LOG")" ] && pass "no hang in any of them" || fail "hang: $(jq -c "$BAD | .why" "$LOG" | head -2)"
finish
