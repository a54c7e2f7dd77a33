#!/bin/bash
# The control socket against a hostile local user (nobody): it cannot crash the agent, make it
# adopt or signal another user's process through a reused pid, starve root of answers or
# descriptors, or join root's job to hide its hang and read its ranks.
. "$(dirname "$0")/lib.sh"
ATT=$(for_nobody "$B/workloads/attacker")
# the agent may not raise its descriptor limit here: a small one must still hold
start_agent() {
	prlimit --nofile=1024:1024 "$FTBPFD" --socket "$SOCK" --state-dir "$T/state" \
		--pin-dir "$PIN" --log-file "$LOG" --verbose 1 "$@" >>"$T/agent.out" 2>&1 &
	AGENT_PID=$!
	for _ in $(seq 100); do
		[ -S "$SOCK" ] && "$B/ftbpf" --socket "$SOCK" version >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "agent did not start:"; cat "$T/agent.out"; return 1
}
start_agent --soft-timeout 3 --hard-timeout 300 --action report --only-jobs '[sr]*' || exit 1

# 1. events --follow then register on one connection, closed at once: the follower was freed
#    by the event broadcast while its own request was being handled (use after free)
for _ in 1 2 3; do as_nobody "$ATT" follow-register "$SOCK"; done
sleep 0.5
agent_alive && pass "follow + register + close, 3 times: the agent lives" ||
	{ fail "the agent died: $(tail -3 "$T/agent.out")"; finish; }

# 2. a socket handed to a child, the parent exits, a root process takes its pid: register
#    must not adopt it nor hand out its slot (the child armed an expired timer in it)
mkdir -m 777 "$T/h"
$NOBODY "$ATT" handoff "$SOCK" "$T/h" &
wait_until 5 test -s "$T/h/parent.pid"
P=$(cat "$T/h/parent.pid")
wait_until 5 bash -c "! kill -0 $P 2>/dev/null"
take_pid "$P" sleep 60
VICTIM=$TAKEN_PID
if [ -z "$VICTIM" ]; then
	fail "could not start a root process at pid $P"
else
	touch "$T/h/go"
	wait_until 5 test -s "$T/h/reply" || fail "no reply to the child's register"
	sleep 1.5
	alive "$VICTIM" && pass "root process at the reused pid $P is alive" ||
		fail "root process at the reused pid $P was killed"
	grep -q '"ok":false' "$T/h/reply" && pass "register from the handed-over socket refused: $(jq -r .error "$T/h/reply")" ||
		fail "register answered: $(cat "$T/h/reply")"
	jq_status "[.ranks[] | select(.pid==$VICTIM)] | length == 0" && pass "the root process was not adopted" ||
		fail "adopted the root process at the reused pid"
fi

# 3. root's job "shared" (3 ranks, rank 1 sleeps after 2 s) while nobody registers into
#    "shared" and keeps making progress, and starts a rank of its own with FTBPF_JOB=shared
ring_job shared 3 --fault sleep --fault-rank 1 --fault-after 2
CUL=$(rank_pid shared 1)
$NOBODY "$ATT" register "$SOCK" shared 30 >"$T/reg.out" 2>&1 &
INTR=$!; WORKLOAD_PIDS+=($INTR)
mkdir -m 777 "$T/nb"
$NOBODY env FTBPF_JOB=shared FTBPF_RANK=2 FTBPF_WORLD_SIZE=3 /bin/sh -c 'while :; do sleep 0.05; done' &
WORKLOAD_PIDS+=($!)
wait_until 15 has_event hang '.job=="shared" and .uid==0' && pass "root's job flagged hung despite the intruder" ||
	fail "root's job not flagged: $(status_json | jq -c '.jobs')"
has_event hang ".job==\"shared\" and .uid==0 and .culprits==[$CUL]" && pass "culprit is root's sleeping rank" ||
	fail "hang: $(events_of hang | jq -c '{uid,culprits,why}')"
jq_status '[.jobs[] | select(.job=="shared")] | length == 2 and (map(.uid) | sort) == [0, 65534]' &&
	pass "two jobs named shared: one per user" || fail "jobs: $(status_json | jq -c '[.jobs[] | {job,uid,ranks}]')"
jq_status '[.jobs[] | select(.job=="shared" and .uid==0) | .ranks] == [3]' && pass "root's job has its 3 ranks" ||
	fail "root's job ranks: $(status_json | jq -c '.jobs')"
NB=$(as_nobody "$B/ftbpf" --socket "$SOCK" status --json)
echo "$NB" | jq -e "[.ranks[] | select(.uid==0)] | length == 0" >/dev/null && pass "nobody's status shows no root rank" ||
	fail "nobody sees root ranks: $(echo "$NB" | jq -c '[.ranks[] | select(.uid==0) | .pid]')"
echo "$NB" | jq -e '[.jobs[] | select(.uid==0)] | length == 0' >/dev/null && pass "nobody's status shows no root job" || fail "nobody sees root's job"
as_nobody "$B/ftbpf" --socket "$SOCK" events --json >"$T/nbev.out"
jq -s -e "[.[] | select(.uid==0 or .pid==$CUL)] | length == 0" "$T/nbev.out" >/dev/null &&
	pass "nobody's events show nothing of root's job" || fail "nobody sees: $(jq -c 'select(.uid==0) | .type' "$T/nbev.out" | sort | uniq -c | head)"
as_nobody "$B/ftbpf" --socket "$SOCK" explain "$CUL" >/dev/null 2>&1 && fail "nobody may explain root's rank" ||
	pass "nobody may not explain root's rank"
as_nobody "$B/ftbpf" --socket "$SOCK" signal "$CUL" KILL >/dev/null 2>&1; sleep 0.3
alive "$CUL" && pass "nobody may not signal root's rank" || fail "nobody killed root's rank"

# 4. --only-jobs holds for register too
OUT=$(as_nobody "$ATT" request "$SOCK" '{"v":1,"cmd":"register","job":"evil"}')
echo "$OUT" | jq -e '.ok == false' >/dev/null && pass "register outside --only-jobs refused: $(echo "$OUT" | jq -r .error)" ||
	fail "register outside --only-jobs: $OUT"
jq_status '[.jobs[] | select(.job=="evil")] | length == 0' && pass "no job evil" || fail "job evil adopted"

# 5. invalid UTF-8 in a request is not echoed raw
printf '{"v":1,"cmd":"\xff\xfe\xfd"}' >"$T/bad.req"
OUT=$(as_nobody "$ATT" request "$SOCK" "$(cat "$T/bad.req")")
echo "$OUT" | /usr/bin/python3 -c 'import sys,json; json.loads(sys.stdin.buffer.read().decode("utf-8"))' 2>/dev/null &&
	pass "error about invalid UTF-8 is valid UTF-8 JSON: $(echo "$OUT" | jq -r .error)" || fail "reply not UTF-8 JSON: $OUT"

# 6. 2,000 idle connections and 2,000 socket timers from nobody, under a 1,024-descriptor
#    limit: root still gets answers, its own timers work, and a root job started meanwhile is
#    adopted; the agent does not spin
for i in $(seq 8); do # 8 processes: a limit per process alone does not hold
	$NOBODY "$ATT" timers "$SOCK" 250 30 >"$T/timers.$i.out" 2>&1 &
	WORKLOAD_PIDS+=($!)
done
wait_until 20 bash -c "[ \$(cat '$T'/timers.*.out | grep -c 'timers acquired') -eq 8 ]"
$NOBODY "$ATT" idle "$SOCK" 2000 25 >"$T/idle.out" 2>&1 &
WORKLOAD_PIDS+=($!)
wait_until 10 grep -q connected "$T/idle.out"
log "nobody: $(cat "$T/idle.out"); timers acquired: $(cat "$T"/timers.*.out | awk '{s += $3} END {print s}') of 2000"
CPU0=$(awk '{print $14 + $15}' "/proc/$AGENT_PID/stat")
sleep 2
CPU1=$(awk '{print $14 + $15}' "/proc/$AGENT_PID/stat")
[ $((CPU1 - CPU0)) -lt 100 ] && pass "the agent is not spinning ($((CPU1 - CPU0)) ticks in 2 s)" || fail "the agent spins: $((CPU1 - CPU0)) ticks in 2 s"
WORST=0
for _ in $(seq 10); do M=$(ms ftbpf status --json); [ "$M" -gt "$WORST" ] && WORST=$M; done
ftbpf status --json >/dev/null && [ "$WORST" -le 1000 ] && pass "root's status answers (worst of 10: ${WORST} ms)" ||
	fail "root's status: worst ${WORST} ms"
C=$(status_json | jq '.agent.counters | .ctl_refused_user + .ctl_refused_full + .ctl_refused_fds')
[ "$C" -gt 0 ] && pass "nobody's connections past its limit refused ($C)" || fail "no connection refused"
jq_status '.agent.counters.timers_rejected_user > 0' && pass "nobody's timers past its limit rejected ($(status_json | jq .agent.counters.timers_rejected_user))" ||
	fail "no timer rejected: $(status_json | jq -c '.agent.counters | {timers_active, timers_rejected_user}')"
ring_job rootjob 2
R0=$(rank_pid rootjob 0)
wait_until 10 jq_status "[.ranks[] | select(.pid==$R0)] | length == 1" && pass "a root job started meanwhile is adopted" ||
	fail "root job not adopted: $(tail -3 "$T/agent.out")"
FTBPF_JOB=rootpy FTBPF_RANK=0 FTBPF_SOCKET=$SOCK PYTHONPATH=$B/python /usr/bin/python3 -c '
import ftbpf, time
with ftbpf.expires(0.5):
    time.sleep(3)
print("survived")' >"$T/py.out" 2>&1; rc=$?
[ $rc -eq 137 ] && pass "root's ftbpf.expires() still enforced" || fail "root's timer: rc=$rc $(cat "$T/py.out")"

# 7. twenty clients pipelining requests without reading their replies: bounded memory
RSS0=$(agent_rss_kb)
as_nobody "$ATT" pipeline "$SOCK" 20 10 >"$T/pipe.out" 2>&1
RSS1=$(agent_rss_kb)
log "agent RSS ${RSS0} kB before, ${RSS1} kB after 10 s of pipelining"
[ "$RSS1" -le $((RSS0 + 32768)) ] && pass "RSS grew by $(( (RSS1 - RSS0) / 1024 )) MB at most" ||
	fail "RSS grew from $RSS0 kB to $RSS1 kB"
agent_alive && pass "the agent lives" || fail "the agent died"
finish
