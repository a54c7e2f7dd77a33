#!/bin/bash
# time-limit: 240
# A preemption whose first save fails is not lost (issue 32: "a save refused as stale leaves the
# request stuck"). Two torch DDP ranks (gloo) run docs/examples/ddp_checkpoint.py on one node;
# their checkpoint directory holds a newer fencing token than theirs (another run committed
# there), so ftbpf.checkpoint refuses every commit. A SIGTERM to rank 1 is a preemption: the
# agreed save fails on both ranks, which say so; the request ends without a checkpoint
# (checkpoint_failed) instead of waiting for saves that never come, and the preemption asks
# for another one. Once the directory is repaired (the operator removes the stray token) a
# request completes: both ranks save one step and exit 42, and the preemption is not reported
# lost. Before the fix the ranks waited at await_checkpoint for the first request, forever.
. "$(dirname "$0")/lib.sh"
start_agent --soft-timeout 60 --hard-timeout 600 --action report --node-name itnode || exit 1
export PYTHONPATH=$B/python FTBPF_SOCKET=$SOCK
PORT=$((29500 + RANDOM % 1000))
JOB="torch:127.0.0.1:$PORT@itnode"
D=$T/ddp; mkdir -p "$D"; chmod 777 "$D"
# a newer token than any this job's run can have: every commit here is refused as stale
echo '{"step": 1, "generation": 0, "token": 1099511627776000}' >"$D/.ftbpf-fence"
for r in 0 1; do
	MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 \
		/usr/bin/python3 "$ROOT/docs/examples/ddp_checkpoint.py" --dir "$D" >>"$D/out.$r" 2>&1 &
	RANK_PID[$r]=$!
	WORKLOAD_PIDS+=($!)
done
wait_until 60 bash -c "grep -qs START '$D/log.0' && grep -qs START '$D/log.1'" || fail "ranks did not start: $(tail -3 "$D/out.0")"
wait_until 20 jq_status ".jobs[] | select(.job==\"$JOB\") | .generation == 0" || fail "job not adopted: $(status_json | jq -c .jobs)"
sleep 2
kill -TERM ${RANK_PID[1]}
TERM_AT=$(date +%s.%N)
wait_until 60 has_event checkpoint_failed ".job==\"$JOB\"" &&
	pass "the request whose saves were refused ended: $(events_of checkpoint_failed | head -1 | jq -r .why)" ||
	fail "no checkpoint_failed: $(tail -2 "$D/log.0" "$D/log.1" | tr '\n' ';')"
grep -q '^STALE' "$D/log.0" && grep -q '^STALE' "$D/log.1" &&
	pass "both ranks' commits were refused (StaleTokenError)" || fail "ranks: $(tail -2 "$D/log.0" "$D/log.1" | tr '\n' ';')"
kill -0 ${RANK_PID[0]} 2>/dev/null && kill -0 ${RANK_PID[1]} 2>/dev/null &&
	pass "the ranks train on after the failed request (await_checkpoint returned)" || fail "a rank exited"
# the operator repairs the directory: the preemption's next request completes
rm -f "$D/.ftbpf-fence"
wait ${RANK_PID[0]}; RC0=$?
wait ${RANK_PID[1]}; RC1=$?
[ $RC0 = 42 ] && [ $RC1 = 42 ] &&
	pass "both ranks exited 42, $(awk -v a="$TERM_AT" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s after the SIGTERM" ||
	fail "exit codes $RC0 $RC1: $(tail -3 "$D/out.0" "$D/out.1")"
S0=$(grep -h '^SAVED' "$D/log.0" | tail -1 | awk '{print $2}')
S1=$(grep -h '^SAVED' "$D/log.1" | tail -1 | awk '{print $2}')
[ -n "$S0" ] && [ "$S0" = "$S1" ] && has_event decision ".kind==\"checkpoint_complete\" and .job==\"$JOB\" and .step==$S0" &&
	pass "a later request of the same preemption completed: both ranks saved step $S0" ||
	fail "saved steps '$S0' '$S1': $(events_of decision | jq -c 'select(.kind=="checkpoint_complete")')"
! has_event preemption_not_checkpointed ".job==\"$JOB\"" && pass "the preemption is not reported lost" ||
	fail "the preemption was reported lost: $(events_of preemption_not_checkpointed)"
N=$(status_json | jq .agent.decisions.counters.checkpoints_failed)
[ "$N" -ge 1 ] 2>/dev/null && pass "checkpoints_failed counter: $N" || fail "checkpoints_failed counter: $N"
finish
