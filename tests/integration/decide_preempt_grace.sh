#!/bin/bash
# time-limit: 240
# preempt_grace end to end (issue 32: "preempt_grace ends the preemption at the first save").
# An agent with preempt_grace 10 s; two torch DDP ranks (gloo) run
# docs/examples/ddp_checkpoint.py on one node. A SIGTERM to rank 1 is a preemption: its first
# agreed save completes and the ranks train on (not exit); before the grace ends a last save is
# claimed at a later step, both ranks save it, and only then exit 42 - about the grace after the
# signal, not at the first save. The preemption is not reported lost, and the next run of the
# job resumes from the last save, not the first.
. "$(dirname "$0")/lib.sh"
GRACE=10
start_agent --soft-timeout 60 --hard-timeout 600 --action report --node-name itnode \
	--preempt-grace $GRACE || exit 1
export PYTHONPATH=$B/python FTBPF_SOCKET=$SOCK
PORT=$((29500 + RANDOM % 1000))
JOB="torch:127.0.0.1:$PORT@itnode"
D=$T/ddp; mkdir -p "$D"; chmod 777 "$D"
# launch: two ranks of the job, RANK_PID set
launch() {
	for r in 0 1; do
		MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 \
			/usr/bin/python3 "$ROOT/docs/examples/ddp_checkpoint.py" --dir "$D" >>"$D/out.$r" 2>&1 &
		RANK_PID[$r]=$!
		WORKLOAD_PIDS+=($!)
	done
}
launch
wait_until 60 bash -c "grep -qs START '$D/log.0' && grep -qs START '$D/log.1'" || fail "ranks did not start: $(tail -3 "$D/out.0")"
wait_until 20 jq_status ".jobs[] | select(.job==\"$JOB\") | .generation == 0" || fail "job not adopted: $(status_json | jq -c .jobs)"
sleep 2
kill -TERM ${RANK_PID[1]}
TERM_AT=$(date +%s.%N)
wait_until 60 bash -c "grep -qs '^SAVED' '$D/log.0' && grep -qs '^SAVED' '$D/log.1'" || fail "no first save: $(tail -2 "$D"/log.*)"
FIRST=$(grep -h '^SAVED' "$D/log.0" | head -1 | awk '{print $2}')
wait_until 20 has_event decision ".kind==\"checkpoint_complete\" and .job==\"$JOB\" and .step==$FIRST" ||
	fail "the first save did not complete: $(events_of decision | tail -3)"
sleep 2
N0=$(grep -c '^SAVED' "$D/log.0")
kill -0 ${RANK_PID[0]} 2>/dev/null && kill -0 ${RANK_PID[1]} 2>/dev/null && [ "$N0" = 1 ] &&
	! grep -qs '^EXIT' "$D/log.0" "$D/log.1" &&
	pass "the first agreed save (step $FIRST) completed and the ranks train on inside the grace" ||
	fail "after the first save: saves $N0, $(tail -2 "$D"/log.* | tr '\n' ';')"
wait ${RANK_PID[0]}; RC0=$?
wait ${RANK_PID[1]}; RC1=$?
EXIT_AFTER=$(awk -v a="$TERM_AT" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
[ $RC0 = 42 ] && [ $RC1 = 42 ] &&
	awk -v e="$EXIT_AFTER" -v g=$GRACE 'BEGIN {exit !(e >= g - 3 && e <= g + 30)}' &&
	pass "both ranks exited 42, $EXIT_AFTER s after the SIGTERM (grace $GRACE s)" ||
	fail "exit codes $RC0 $RC1 after $EXIT_AFTER s: $(tail -3 "$D/out.0" "$D/out.1")"
L0=$(grep -h '^SAVED' "$D/log.0" | tail -1 | awk '{print $2}')
L1=$(grep -h '^SAVED' "$D/log.1" | tail -1 | awk '{print $2}')
[ -n "$L0" ] && [ "$L0" = "$L1" ] && [ "$L0" -gt "$FIRST" ] &&
	has_event decision ".kind==\"checkpoint_complete\" and .job==\"$JOB\" and .step==$L0" &&
	grep -q "^EXIT 42 after step $L0" "$D/log.0" && grep -q "^EXIT 42 after step $L0" "$D/log.1" &&
	pass "a last save at step $L0 (after the first, $FIRST) completed on both ranks; they exited after it" ||
	fail "last saves '$L0' '$L1' (first $FIRST): $(grep -h 'SAVED\|EXIT' "$D"/log.* | tr '\n' ';')"
! has_event preemption_not_checkpointed ".job==\"$JOB\"" && pass "the preemption is not reported lost" ||
	fail "the preemption was reported lost: $(events_of preemption_not_checkpointed)"
# the launcher (here: the test) starts the job again: it resumes from the last save
launch
wait_until 60 bash -c "[ \$(grep -c START '$D/log.0') -ge 2 ] && [ \$(grep -c START '$D/log.1') -ge 2 ]" ||
	fail "the relaunch did not start: $(tail -3 "$D/out.0")"
S=$(for r in 0 1; do grep START "$D/log.$r" | tail -1 | awk '{print $8}'; done | sort -u)
[ "$S" = "$((L0 + 1))" ] && pass "the next run of the job resumes from the last save: both ranks from step $S" ||
	fail "the relaunch started from '$S', not $((L0 + 1)): $(grep -h START "$D"/log.*)"
kill ${RANK_PID[0]} ${RANK_PID[1]} 2>/dev/null
finish
