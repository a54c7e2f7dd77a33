#!/bin/bash
# time-limit: 90
# Countdown timers alone never enroll a process in hang detection or decisions: a Python
# script that used ftbpf.expires() once and then idles (no rank variables, no job named) is
# listed with its timers only, never flagged hung past the soft and hard timeouts, never
# killed by the hard action; one whose timer kills it logs the timer's expiry, and no
# job_failed, no job_end, no decision.
. "$(dirname "$0")/lib.sh"
start_agent --soft-timeout 2 --hard-timeout 4 --action terminate --grace 1 || exit 1
export FTBPF_SOCKET=$SOCK PYTHONPATH=$B/python
P="/usr/bin/python3 $ROOT/tests/workloads/py_timer.py"
$P once-then-idle 9 >"$T/idle.out" 2>&1 & IDLE=$!
WORKLOAD_PIDS+=($IDLE)
wait_until 20 grep -q idle "$T/idle.out" || fail "the script did not start: $(cat "$T/idle.out")"
wait_until 5 jq_status ".ranks[] | select(.pid==$IDLE) | .timers_only" &&
	pass "listed with its timers only" || fail "not listed as timers-only: $(status_json | jq -c ".ranks[] | select(.pid==$IDLE)")"
jq_status "[.jobs[] | select(.job == \"client:$IDLE\")] | length == 0" &&
	pass "no job for it" || fail "a job: $(status_json | jq -c '.jobs')"
wait $IDLE; rc=$?
[ $rc -eq 0 ] && pass "idle 9 s (soft 2 s, hard 4 s): never killed, exited 0" || fail "idle script rc=$rc"
has_event hang "true" && fail "hang reported: $(events_of hang | jq -c '{job, why}' | head -2)" || pass "never flagged hung"
has_event action "true" && fail "an action was taken: $(events_of action | head -2)" || pass "no action"
$P expires-blocked >"$T/b.out" 2>&1; rc=$?
[ $rc -eq 137 ] && pass "a timer kills a blocked script (137)" || fail "expires-blocked rc=$rc $(cat "$T/b.out")"
wait_until 3 has_event timer_expired '.source=="slot"' && pass "the timer's expiry is logged" || fail "no timer_expired"
sleep 1
for e in job_failed job_end decision; do
	has_event $e "true" && fail "$e logged for a timers-only process: $(events_of $e | head -1)" || pass "no $e"
done
finish
