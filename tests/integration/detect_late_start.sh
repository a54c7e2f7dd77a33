#!/bin/bash
# The agent starts after the job hung (a first install on a running host, a restart without
# pinned state): what each rank is blocked in comes from the kernel's view at adoption, and the
# verdict is the one it would have reached watching from the start (the sleeping rank named, not
# "the cause may be outside this host"); a rank's existing children are taken in. Then restarts:
# a restarted agent does not report the same hang again, does not act at once on a job whose
# hard timeout passed while it was away, and never blames a rank its own action killed.
. "$(dirname "$0")/lib.sh"
SOFT=3
GRACE=4
# ---- a hung job before any agent ----
ring_job late 3 --fault sleep --fault-rank 1 --fault-after 1
CUL=$(rank_pid late 1)
FTBPF_JOB=kids FTBPF_RANK=0 bash -c 'sleep 60 & sleep 61 & wait' &
KIDS=$!; WORKLOAD_PIDS+=($KIDS)
wait_until 10 test -e "$T/late/fault.ts" || fail "fault never started"
sleep 2
S=$(date +%s.%N)
start_agent --soft-timeout $SOFT --hard-timeout 20 --action terminate --grace $GRACE || exit 1
wait_until $((SOFT + 4)) jq_status '.jobs[] | select(.job=="late") | .hung' || fail "not flagged hung"
HANG=$(events_of hang | jq -c 'select(.job=="late")' | head -1)
D=$(awk -v h="$(echo "$HANG" | jq -r .ts | xargs -r -I{} date -d {} +%s.%N)" -v s="$S" 'BEGIN{printf "%.2f", h - s}')
awk -v d="$D" 'BEGIN{exit !(d <= '$((SOFT + 1))')}' && pass "flagged ${D} s after the agent started (soft $SOFT s)" || fail "flagged after ${D} s"
echo "$HANG" | jq -e ".culprits == [$CUL]" >/dev/null && pass "the sleeping rank named: $(echo "$HANG" | jq -r .why)" ||
	fail "culprit: $(echo "$HANG" | jq -c '{culprits, why}')"
jq_status ".ranks[] | select(.pid==$CUL) | .state == \"blocked\" and .syscall == \"clock_nanosleep\"" &&
	pass "its state: blocked in clock_nanosleep, as the kernel had it" || fail "state: $(status_json | jq -c ".ranks[] | select(.pid==$CUL) | {state, reason}")"
wait_until 5 bash -c "'$B/ftbpf' --socket '$SOCK' explain $KIDS --json | jq -e '[.children[] | select(.comm==\"sleep\")] | length == 2' >/dev/null" &&
	pass "a rank's children from before the agent are its children" || fail "children: $(ftbpf explain $KIDS --json | jq -c .children)"

# ---- a restart: the hang is not reported twice ----
kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null; AGENT_PID=
start_agent --soft-timeout $SOFT --hard-timeout 20 --action terminate --grace $GRACE || exit 1
sleep $((SOFT + 2))
N=$(events_of hang | jq -c 'select(.job=="late")' | wc -l)
[ "$N" = 1 ] && pass "restarted: the hang reported once, not again" || fail "hang events for the job: $N"

# ---- the hard timeout passes while no agent runs: a grace before acting ----
kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null; AGENT_PID=
sleep 16 # past the 20 s hard timeout
S=$(date +%s.%N)
start_agent --soft-timeout $SOFT --hard-timeout 20 --action terminate --grace $GRACE || exit 1
wait_until $((GRACE + 5)) has_event hard_timeout '.job=="late"' || fail "no hard timeout after the restart"
A=$(events_of action | jq -c 'select(.job=="late" and .action=="hard_timeout")' | head -1)
D=$(awk -v h="$(echo "$A" | jq -r .ts | xargs -r -I{} date -d {} +%s.%N)" -v s="$S" 'BEGIN{printf "%.2f", h - s}')
awk -v d="$D" 'BEGIN{exit !(d >= '$GRACE')}' && pass "acted ${D} s after the restart, not at once (grace $GRACE s)" || fail "acted after ${D} s"
wait_until $((GRACE + 5)) jq_status '[.ranks[] | select(.job=="late") | .exited] | all' || fail "ranks not terminated"
sleep 1
has_event job_failed '.job=="late"' && fail "job_failed blames a rank our action killed: $(events_of job_failed | jq -c 'select(.job=="late") | .why')" ||
	pass "the ranks our action killed are not 'the first to die'"
# and not after one more restart either
kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null; AGENT_PID=
start_agent --soft-timeout $SOFT --hard-timeout 20 --action terminate --grace $GRACE || exit 1
sleep 2
has_event job_failed '.job=="late"' && fail "after a restart, job_failed blames our kill" || pass "nor after a restart"
finish
