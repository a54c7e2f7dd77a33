#!/bin/bash
# time-limit: 150
# Global tables one user can fill (issue 19): nobody registers 1,100 jobs, one process each;
# the decision table keeps a user's share (64 jobs, a quarter of the table kept for root), so
# root's job, started after, is still followed: an operator's checkpoint is agreed and made.
. "$(dirname "$0")/lib.sh"
start_agent --soft-timeout 60 --hard-timeout 300 --action report || exit 1
export FTBPF_SOCKET=$SOCK
ATT=$(for_nobody "$B/workloads/attacker")
S=$(date +%s)
OUT=$(as_nobody "$ATT" register-many "$SOCK" spam 1100)
log "nobody: $OUT in $(( $(date +%s) - S ))s"
agent_alive || { fail "the agent died"; finish; }
R=$(status_json | jq '.agent.decisions.counters.jobs_refused // 0')
[ "${R:-0}" -gt 0 ] && pass "nobody's jobs beyond its share were not followed ($R refused)" ||
	fail "no job refused: $(status_json | jq -c .agent.decisions.counters)"
mkdir -p "$T/r"
for r in 0 1; do
	FTBPF_JOB=rjob FTBPF_RANK=$r FTBPF_WORLD_SIZE=2 "$B/examples/c_loop" --dir "$T/r" --rank $r \
		--step-ms 50 >"$T/r/out.$r" 2>&1 &
	WORKLOAD_PIDS+=($!)
done
wait_until 15 jq_status '[.ranks[] | select(.job=="rjob" and .uid==0 and (.exited|not))] | length == 2' ||
	fail "root's ranks not adopted"
wait_until 10 bash -c "'$B/ftbpf' --socket '$SOCK' checkpoint rjob >'$T/ck.out' 2>&1" &&
	pass "root's checkpoint request accepted: $(cat "$T/ck.out")" || fail "root's checkpoint refused: $(cat "$T/ck.out")"
wait_until 20 has_event decision '.kind=="checkpoint_complete" and .job=="rjob"' &&
	pass "root's checkpoint agreed and made despite nobody's 1,100 jobs" || fail "no checkpoint for root's job"
finish
