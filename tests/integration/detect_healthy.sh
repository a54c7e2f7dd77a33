#!/bin/bash
# (a) healthy multi-rank jobs (a 2-rank torch DDP job over gloo and a 4-rank C job) run for
# minutes and are never flagged: not by an agent at the defaults, and not even by a second
# agent running side by side with a 5 s soft timeout.
. "$(dirname "$0")/lib.sh"
SECONDS_RUN=${HEALTHY_SECONDS:-90}
start_agent --node-name itnode || exit 1   # defaults (the node named for the job id)
# a second agent, side by side: own socket, state dir, pin dir, log
T2=$T/agent2; mkdir -p "$T2"
"$B/ftbpfd" --socket "$T2/s.sock" --state-dir "$T2/state" --pin-dir "$PIN-2" --log-file "$T2/events.jsonl" \
	--soft-timeout 5 --hard-timeout 10 --action report --node-name itnode --verbose 1 >"$T2/out" 2>&1 &
AGENT2=$!
wait_until 20 bash -c "'$B/ftbpf' --socket '$T2/s.sock' version >/dev/null 2>&1" || fail "second agent did not start"
PORT=$((29500 + RANDOM % 1000))
mkdir -p "$T/ddp"
for r in 0 1; do
	MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 \
		/usr/bin/python3 "$ROOT/tests/workloads/ddp.py" --seconds "$SECONDS_RUN" --dir "$T/ddp" >"$T/ddp/out.$r" 2>&1 &
	DDP[$r]=$!
done
ring_job healthyring 4 --seconds "$SECONDS_RUN"
DDPJOB="torch:127.0.0.1:$PORT@itnode" # a loopback master: this host's job
# other jobs on the machine may come and go: judge only ours
MINE=".job==\"healthyring\" or .job==\"$DDPJOB\""
wait_until 60 jq_status "[.ranks[] | select(.job==\"$DDPJOB\")] | length == 2" &&
	pass "torch DDP ranks adopted as job $DDPJOB" || fail "torch ranks not adopted: $(status_json | jq -c '[.ranks[] | {pid,job}]')"
jq_status "[.ranks[] | select(.job==\"$DDPJOB\") | .source == \"torchrun\" and .world_size == 2] | all" &&
	pass "adopted from torchrun variables" || fail "torch identity wrong"
flagged=0; samples=0
END=$(( $(date +%s) + SECONDS_RUN - 5 ))
while [ "$(date +%s)" -lt $END ]; do
	for s in "$SOCK" "$T2/s.sock"; do
		st=$("$B/ftbpf" --socket "$s" status --json) || { fail "status failed"; break; }
		echo "$st" | jq -e "[.jobs[] | select($MINE) | .hung or .failed] | any" >/dev/null && flagged=$((flagged + 1))
		echo "$st" | jq -e "[.ranks[] | select($MINE) | .hung or .culprit] | any" >/dev/null && flagged=$((flagged + 1))
	done
	samples=$((samples + 1))
	sleep 2
done
log "$samples status samples from each agent over ${SECONDS_RUN}s"
[ $flagged -eq 0 ] && pass "never flagged in status" || fail "flagged $flagged times"
wait "${DDP[0]}"; rc0=$?; wait "${DDP[1]}"; rc1=$?
[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && pass "DDP job finished cleanly ($(tail -1 "$T/ddp/out.0"))" || fail "DDP failed: $rc0 $rc1 $(tail -3 "$T/ddp/out.0")"
wait_until 15 jq_status "[.jobs[] | select(.job==\"healthyring\") | .state] == [\"finished\"]" && pass "C job finished" || fail "C job state"
BAD="select((.type==\"hang\" or .type==\"job_failed\") and ($MINE))"
[ -z "$(jq -c "$BAD" "$LOG")" ] && pass "no hang/failed event (default agent)" || fail "hang event at defaults: $(jq -c "$BAD | .why" "$LOG" | head -3)"
[ -z "$(jq -c "$BAD" "$T2/events.jsonl")" ] && pass "no hang/failed event (5 s soft timeout)" || fail "hang event at 5 s: $(jq -c "$BAD | .why" "$T2/events.jsonl" | head -3)"
jq_status "[.ranks[] | select(.job==\"$DDPJOB\") | .exit_code == 0] | all" && pass "torch rank exits recorded with code 0" || fail "exit codes"
kill $AGENT2; wait $AGENT2 2>/dev/null; rm -rf "$PIN-2"
finish
