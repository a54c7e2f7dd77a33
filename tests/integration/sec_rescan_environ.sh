#!/bin/bash
# time-limit: 150
# The /proc walks are off the event loop (issue 31: a walk read every process's environment, up
# to 256 KiB each, on the loop whenever exec events were folded; a user with 10,000 cheap
# processes and an exec loop stalled timers and status every 2 s). As nobody: 10,000 sleeping
# processes with a 240 KB environment each (a walk reads ~2.4 GB) and an exec loop past the
# user's exec budget (256 a second), so the agent walks /proc every 2 s. Meanwhile root's 1 s
# timer fires at most 100 ms late, root's status answers within 500 ms, and root's job started
# during it is adopted (its 3 ranks listed).
. "$(dirname "$0")/lib.sh"
N=${SLEEPERS:-10000}
start_agent --soft-timeout 30 --hard-timeout 300 --action report || exit 1
export FTBPF_SOCKET=$SOCK PYTHONPATH=$B/python
# nobody's sleepers: each pid written down, so that only they are ended after
cat >"$T/sleepers.sh" <<'SH'
PAD=$(head -c 120000 /dev/zero | tr '\0' x)
PAD2=$PAD
export PAD PAD2
for i in $(seq "$1"); do sleep 90 & echo $! >>"$2"; done
echo started
wait
SH
chmod 755 "$T/sleepers.sh"
touch "$T/sleepers.pids" && chmod 666 "$T/sleepers.pids"
$NOBODY bash "$T/sleepers.sh" "$N" "$T/sleepers.pids" >"$T/sleepers.out" 2>&1 &
WORKLOAD_PIDS+=($!)
wait_until 90 grep -q started "$T/sleepers.out" || fail "the sleepers did not start"
R0=$(status_json | jq '.agent.counters.proc_rescans')
F0=$(status_json | jq '.agent.counters.exec_events_folded // 0')
$NOBODY bash -c 'while :; do /bin/true; done' >/dev/null 2>&1 &
EL=$!; WORKLOAD_PIDS+=($EL)
/usr/bin/python3 "$ROOT/tests/workloads/status_probe.py" "$SOCK" 16 >"$T/probe.out" 2>&1 &
PROBE=$!
sleep 3
FTBPF_JOB=rtimer FTBPF_RANK=0 /usr/bin/python3 -c '
import ftbpf, time
with ftbpf.expires(1):
    time.sleep(5)' >/dev/null 2>&1 &
TP=$!
ring_job rjob 3
wait $TP 2>/dev/null; TRC=$?
wait $PROBE; read -r WORST NPROBE <"$T/probe.out"
R1=$(status_json | jq '.agent.counters.proc_rescans')
C=$(status_json | jq -c '.agent.counters | {proc_rescans, exec_events_folded, adopted}')
kill -9 "$EL" 2>/dev/null
log "$N sleepers of nobody's with a 240 KB environment, an exec loop: $C; status worst $WORST ms ($NPROBE asks)"
[ $((R1 - R0)) -ge 3 ] && pass "the agent walked /proc $((R1 - R0)) times (the attack took effect)" ||
	fail "walks: $R0 -> $R1 ($C): the attack did not take effect"
LATE=$(events_of timer_expired | jq -s "[.[] | select(.pid==$TP)][0].late_ms // 999999")
[ $TRC -eq 137 ] && awk -v l="$LATE" 'BEGIN{exit !(l <= 100)}' && pass "root's 1 s timer fired ${LATE} ms late" ||
	fail "root's timer: rc=$TRC late_ms=$LATE"
if agent_sanitized; then
	log "an ASan agent: its status time (${WORST} ms) is ASan's; bounded in the plain build"
else
	awk -v w="$WORST" 'BEGIN{exit !(w <= 500)}' && [ "${NPROBE:-0}" -gt 10 ] &&
		pass "root's status answered within ${WORST} ms ($NPROBE asks)" ||
		fail "status worst ${WORST} ms over ${NPROBE} asks"
fi
jq_status '[.ranks[] | select(.job=="rjob")] | length == 3' && pass "root's job started meanwhile adopted (3 ranks)" ||
	fail "root's job: $(status_json | jq -c '[.ranks[] | select(.job=="rjob") | {pid, rank}]')"
while read -r p; do kill -9 "$p" 2>/dev/null; done <"$T/sleepers.pids"
agent_alive && pass "the agent lives" || fail "the agent died"
finish
