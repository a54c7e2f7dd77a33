#!/bin/bash
# time-limit: 90
# `ftbpf stacks JOB|PID`, what users run py-spy dump for: every thread's kernel stack and the
# Python stacks of each live rank of a job, now, with no hang needed (three Python ranks, each
# in its own function), in text and JSON; `stacks PID` of any process the caller owns, a rank
# or not (a plain Python process); as `nobody`: root's process is refused (permission_denied,
# counted in ctl_denied), root's job is not found, nobody's own process works; a process that
# is not CPython (sleep) has its kernel stacks and no Python fields.
. "$(dirname "$0")/lib.sh"
start_agent --soft-timeout 60 --action report || exit 1
cat >"$T/rank.py" <<'PY'
import os, time
def step_of_rank_0(): time.sleep(600)
def step_of_rank_1(): time.sleep(600)
def step_of_rank_2(): time.sleep(600)
globals()["step_of_rank_" + os.environ["FTBPF_RANK"]]()
PY
chmod 644 "$T/rank.py"
for r in 0 1 2; do
	FTBPF_JOB=pyjob FTBPF_RANK=$r FTBPF_WORLD_SIZE=3 /usr/bin/python3 "$T/rank.py" &
	WORKLOAD_PIDS+=($!)
done
wait_until 10 jq_status '[.ranks[] | select(.job == "pyjob" and (.exited | not))] | length == 3' || fail "ranks not adopted"
sleep 1 # each in its function
S=$(ms ftbpf stacks pyjob --json)
ftbpf stacks pyjob --json >"$T/s.json"; rc=$?
[ $rc -eq 0 ] && jq -e '.job == "pyjob" and (.processes | length) == 3' "$T/s.json" >/dev/null &&
	pass "stacks pyjob: the 3 ranks (${S} ms)" || fail "stacks pyjob rc=$rc: $(head -c 300 "$T/s.json")"
for r in 0 1 2; do
	jq -e ".processes[] | select(.rank == $r) | (.threads[0].kernel_stack | length) > 0 and
		([.python_threads[].stack[]?.function] | index(\"step_of_rank_$r\"))" "$T/s.json" >/dev/null &&
		pass "rank $r: its kernel stack ($(jq -r ".processes[] | select(.rank == $r) | .threads[0].kernel_stack[0]" "$T/s.json")) and Python stack (step_of_rank_$r)" ||
		fail "rank $r: $(jq -c ".processes[] | select(.rank == $r) | {threads: [.threads[] | .kernel_stack], python_threads, python_stack_error}" "$T/s.json" | head -c 400)"
done
ftbpf stacks pyjob >"$T/s.txt"
grep -q "^rank 1 of job pyjob, pid" "$T/s.txt" && grep -q "step_of_rank_1" "$T/s.txt" && grep -q "hrtimer_nanosleep\|do_nanosleep\|clock_nanosleep" "$T/s.txt" &&
	pass "the text: a header per rank, its kernel frames, its Python stack ($(wc -l <"$T/s.txt") lines)" || fail "text: $(head -20 "$T/s.txt")"
# a process that is no rank, the caller's own
/usr/bin/python3 -c 'import time
def plain_wait(): time.sleep(600)
plain_wait()' & PLAIN=$!
WORKLOAD_PIDS+=($PLAIN)
sleep 1
ftbpf stacks $PLAIN --json | jq -e ".processes[0].pid == $PLAIN and .processes[0].rank == null and
	(.processes[0].threads[0].kernel_stack | length) > 0 and ([.processes[0].python_threads[].stack[]?.function] | index(\"plain_wait\"))" >/dev/null &&
	pass "stacks PID of a process that is no rank: kernel and Python stacks" || fail "plain: $(ftbpf stacks $PLAIN --json | head -c 400)"
sleep 600 & SL=$!
WORKLOAD_PIDS+=($SL)
# the child is bash until it has run exec: ask once it is sleep
is_sleep() { [ "$(cat /proc/$SL/comm 2>/dev/null)" = sleep ]; }
wait_until 5 is_sleep || fail "sleep did not start"
ftbpf stacks $SL --json | jq -e '.processes[0].comm == "sleep" and (.processes[0].threads[0].kernel_stack | length) > 0 and
	(.processes[0] | has("python_threads") or has("python_stack_error") | not)' >/dev/null &&
	pass "not CPython (sleep): its kernel stack, no Python stack and no error for it" ||
	fail "sleep: $(ftbpf stacks $SL --json | head -c 300)"
# another user
NB() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
D0=$(status_json | jq .agent.counters.ctl_denied)
OUT=$(NB "$B/ftbpf" --socket "$SOCK" stacks "$PLAIN" 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$OUT" | grep -q "another user" && [ "$(status_json | jq .agent.counters.ctl_denied)" -gt "$D0" ] &&
	pass "nobody: stacks of root's process refused ($OUT), counted" || fail "nobody got root's stacks: rc=$rc $OUT"
OUT=$(NB "$B/ftbpf" --socket "$SOCK" stacks "$(jq '.processes[0].pid' "$T/s.json")" 2>&1); rc=$?
[ $rc -eq 1 ] && pass "nobody: stacks of root's rank refused" || fail "nobody: root's rank: rc=$rc $OUT"
OUT=$(NB "$B/ftbpf" --socket "$SOCK" stacks pyjob 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$OUT" | grep -qi "no job" && pass "nobody: root's job is not found" || fail "nobody: root's job: rc=$rc $OUT"
$NOBODY /usr/bin/python3 -c 'import time
def nobodys_wait(): time.sleep(600)
nobodys_wait()' & NBP=$!
WORKLOAD_PIDS+=($NBP)
sleep 1
NB "$B/ftbpf" --socket "$SOCK" stacks "$NBP" --json | jq -e '[.processes[0].python_threads[].stack[]?.function] | index("nobodys_wait")' >/dev/null &&
	pass "nobody: stacks of its own process" || fail "nobody's own: $(NB "$B/ftbpf" --socket "$SOCK" stacks "$NBP" --json 2>&1 | head -c 300)"
ftbpf stacks 2>/dev/null; [ $? -eq 2 ] && pass "no JOB or PID: usage error (2)" || fail "usage"
ftbpf stacks no-such-job >/dev/null 2>&1; [ $? -eq 1 ] && pass "an unknown job: 1" || fail "unknown job"
finish
