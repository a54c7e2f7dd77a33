#!/bin/bash
# time-limit: 600
# A 1,024-rank job on one host (the C ring workload, mostly asleep between steps): every rank is
# adopted into the one job (no cap on ranks per job), and when one rank stops answering the
# collective the hang is flagged with that rank, and only it, as the culprit.
. "$(dirname "$0")/lib.sh"
N=${BIG_RANKS:-1024}
CUL_RANK=$((N * 3 / 4 + 9))
SOFT=5
JOB=bigjob
# rank 0 holds a socket to every other rank
ulimit -n $((N + 256)) || { fail "cannot raise the open-file limit to $((N + 256))"; finish; }
start_agent --soft-timeout $SOFT --hard-timeout 600 --action report || exit 1
mkdir -p "$T/$JOB"
STARTED=$(date +%s)
for r in $(seq 0 $((N - 1))); do
	FTBPF_JOB=$JOB FTBPF_RANK=$r FTBPF_WORLD_SIZE=$N \
		"$B/workloads/ring" --rank "$r" --world "$N" --dir "$T/$JOB" --work 1000 \
		--interval-ms 500 --fault sleep --fault-rank $CUL_RANK --fault-after 60 \
		>/dev/null 2>&1 &
	WORKLOAD_PIDS+=($!)
	disown $!
done
log "$N ranks started in $(($(date +%s) - STARTED)) s"
job_ranks() { status_json | jq "[.ranks[] | select(.job==\"$JOB\" and (.exited | not))] | length"; }
if wait_until 50 jq_status ".jobs[] | select(.job==\"$JOB\") | .ranks == $N and .live == $N"; then
	pass "all $N ranks adopted into job $JOB ($(($(date +%s) - STARTED)) s after the first start)"
else
	fail "job $JOB has $(job_ranks) of $N ranks"
fi
jq_status ".jobs[] | select(.job==\"$JOB\") | .hung | not" && pass "not flagged while healthy" ||
	fail "flagged before the fault"
CUL=$(cat "$T/$JOB/pid.$CUL_RANK" 2>/dev/null)
wait_until 120 test -e "$T/$JOB/fault.ts" || fail "the fault never started"
if wait_until $((SOFT + 30)) has_event hang ".job==\"$JOB\""; then
	HANG=$(events_of hang | jq -c "select(.job==\"$JOB\")" | head -1)
	echo "$HANG" | jq -e ".culprit_ranks == [$CUL_RANK] and .culprits == [$CUL]" >/dev/null &&
		pass "hang flagged with rank $CUL_RANK (pid $CUL) as the only culprit" ||
		fail "wrong culprit: $(echo "$HANG" | jq -c '.culprit_ranks, .why')"
	echo "$HANG" | jq -e ".ranks | length == $N" >/dev/null &&
		pass "the hang report lists all $N ranks ($(echo "$HANG" | wc -c) bytes)" ||
		fail "the hang report lists $(echo "$HANG" | jq '.ranks | length') ranks"
else
	fail "no hang event for $JOB"
fi
jq_status ".jobs[] | select(.job==\"$JOB\") | .hung and .culprit_ranks == [$CUL_RANK]" &&
	pass "status: the job is hung, culprit rank $CUL_RANK" || fail "status disagrees"
agent_alive || fail "the agent died"
log "agent RSS $(agent_rss_kb) kB with $N ranks"
finish
