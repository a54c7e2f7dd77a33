#!/bin/bash
# time-limit: 120
# A rank that sleeps between its steps (it waits on a timer, a data loader, the device) is not
# hung while it steps on: each new step it records through the client library
# (ftbpf_should_save, ftbpf_step) is progress. Two single-rank jobs of docs/examples/c_loop
# registered with the agent (soft timeout 2 s): one steps every 300 ms, sleeping in between,
# and is never flagged in 10 s; the other steps every 60 s, and is hung after the soft timeout
# (the control: sleeping alone is no progress). This was decide_faults' bystander, taken for
# hung after 600 s of 50 ms steps, and decided on.
. "$(dirname "$0")/lib.sh"
start_agent --soft-timeout 2 --hard-timeout 300 --action report || exit 1
for j in stepping stalled; do
	ms=300; [ $j = stalled ] && ms=60000
	mkdir -p "$T/$j"
	FTBPF_JOB=$j FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 FTBPF_SOCKET=$SOCK \
		"$B/examples/c_loop" --dir "$T/$j" --rank 0 --step-ms $ms >/dev/null 2>&1 &
	WORKLOAD_PIDS+=($!)
done
wait_until 10 jq_status '[.ranks[] | select(.job=="stepping" or .job=="stalled")] | length == 2' &&
	pass "both ranks adopted" || fail "ranks: $(status_json | jq -c '[.ranks[] | {pid, job}]')"
grep -qs "^START" "$T/stepping/log.0" && ! grep -qs "no agent" "$T/stepping/log.0" &&
	pass "the stepping rank registered with the agent" || fail "not registered: $(cat "$T/stepping/log.0")"
wait_until 15 jq_status '.jobs[] | select(.job=="stalled") | .state == "hung"' &&
	pass "the rank that sleeps 60 s between steps is hung after the soft timeout (the control)" ||
	fail "stalled: $(status_json | jq -c '.jobs[] | select(.job=="stalled") | {state, why}')"
flagged=0 absurd=0
# (and no duration in the view is absurd: a thread that entered its 1 ms sleep after the view's
# clock was read once showed in_syscall_s 18446744073.7)
ABSURD='[paths(numbers) as $p | select(($p[-1] | tostring) | test("_s(_ago)?$")) | getpath($p) | select(. > 1e8)] | length > 0'
for _ in $(seq 20); do
	jq_status '.jobs[] | select(.job=="stepping") | .state == "hung"' && flagged=$((flagged + 1))
	jq_status "$ABSURD" && absurd=$((absurd + 1))
	sleep 0.5
done
jq -s -e "$ABSURD" "$LOG" >/dev/null && absurd=$((absurd + 1))
[ $absurd = 0 ] && pass "no duration in 20 views or the events (hang: every thread) is absurd" ||
	fail "$absurd views or the events had a duration over 1e8 s"

[ $flagged = 0 ] && ! has_event hang '.job=="stepping"' &&
	pass "the rank stepping every 300 ms, asleep in between, is never hung (10 s, soft timeout 2 s)" ||
	fail "stepping flagged $flagged of 20 looks: $(events_of hang | grep stepping | head -2)"
finish
