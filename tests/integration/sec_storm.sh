#!/bin/bash
# time-limit: 600
# Event floods by an unprivileged rank: 15 s of each kind (signals to itself, forks, execs,
# threads). Meanwhile, for other users: a 1 s timer fires on time (late <= 100 ms), another
# job's hang is flagged within soft + 1 s with the right culprit, the storm adds <= 5 MB of
# logs, the agent stays <= 64 MB, and root's status answers within 100 ms throughout (a client
# on the socket asks every 200 ms). STORM_SECONDS shortens it for development.
. "$(dirname "$0")/lib.sh"
ATT=$(for_nobody "$B/workloads/attacker")
SECS=${STORM_SECONDS:-15}
SOFT=3
start_agent --soft-timeout $SOFT --hard-timeout 300 --action report || exit 1
export FTBPF_SOCKET=$SOCK PYTHONPATH=$B/python
logbytes() { cat "$LOG"* 2>/dev/null | wc -c; }

for KIND in signals forks execs threads; do
	B0=$(logbytes); RSSMAX=0; F0=$(status_json | jq '(.agent.counters.events_folded // 0) + (.agent.counters.exec_events_folded // 0)')
	$NOBODY env FTBPF_JOB=storm-$KIND FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$ATT" storm $KIND "$SECS" >"$T/storm.$KIND" 2>&1 &
	STORM=$!; WORKLOAD_PIDS+=($STORM)
	/usr/bin/python3 "$ROOT/tests/workloads/status_probe.py" "$SOCK" $((SECS - 2)) >"$T/probe.$KIND" 2>&1 &
	PROBE=$!
	sleep 2
	# another job of root's: 3 ranks, rank 1 sleeps 2 s from now
	ring_job hang-$KIND 3 --fault sleep --fault-rank 1 --fault-after 2
	CUL=$(rank_pid hang-$KIND 1)
	# root's 1 s timer in a process that sleeps: the agent must act on it on time
	FTBPF_JOB=timer-$KIND FTBPF_RANK=0 /usr/bin/python3 -c '
import ftbpf, time
with ftbpf.expires(1):
    time.sleep(5)' >/dev/null 2>&1 &
	TP=$!
	for _ in $(seq $((SECS - 4))); do
		R=$(agent_rss_kb); [ "${R:-0}" -gt "$RSSMAX" ] && RSSMAX=$R
		sleep 1
	done
	wait $TP 2>/dev/null; TRC=$?
	wait $PROBE; read -r WORST NPROBE <"$T/probe.$KIND"
	wait $STORM 2>/dev/null
	LATE=$(events_of timer_expired | jq -s "[.[] | select(.pid==$TP)][0].late_ms // 999999")
	FAULT_TS=$(cat "$T/hang-$KIND/fault.ts" 2>/dev/null || echo 0)
	HANG=$(events_of hang | jq -c "select(.job==\"hang-$KIND\")" | head -1)
	HANG_TS=$(echo "$HANG" | jq -r '.ts // empty' | xargs -r -I{} date -d {} +%s.%N)
	DELAY=$(awk -v h="${HANG_TS:-0}" -v f="$FAULT_TS" 'BEGIN{printf "%.2f", h ? h - f : 999}')
	GROWTH=$(( $(logbytes) - B0 ))
	F1=$(status_json | jq '(.agent.counters.events_folded // 0) + (.agent.counters.exec_events_folded // 0)')
	log "storm=$KIND $(cat "$T/storm.$KIND") folded=$((F1 - F0)) timer_late_ms=$LATE hang_after_fault_s=$DELAY log_growth_kb=$((GROWTH / 1024)) rss_max_mb=$((RSSMAX / 1024)) status_worst_ms=$WORST status_asked=$NPROBE"
	[ $TRC -eq 137 ] && awk -v l="$LATE" 'BEGIN{exit !(l <= 100)}' && pass "$KIND: root's 1 s timer fired ${LATE} ms late" ||
		fail "$KIND: timer rc=$TRC late_ms=$LATE"
	awk -v d="$DELAY" -v s=$SOFT 'BEGIN{exit !(d <= s + 1)}' && pass "$KIND: the other job's hang flagged ${DELAY} s after the fault" ||
		fail "$KIND: hang flagged after ${DELAY} s"
	echo "$HANG" | jq -e ".culprits == [$CUL]" >/dev/null && pass "$KIND: culprit right" || fail "$KIND: culprit $(echo "$HANG" | jq -c .culprits)"
	[ $GROWTH -le $((5 * 1024 * 1024)) ] && pass "$KIND: log grew $((GROWTH / 1024)) kB" || fail "$KIND: log grew $((GROWTH / 1024)) kB"
	[ $RSSMAX -le $((64 * 1024)) ] && pass "$KIND: agent RSS at most $((RSSMAX / 1024)) MB" || fail "$KIND: RSS $((RSSMAX / 1024)) MB"
	awk -v w="$WORST" 'BEGIN{exit !(w <= 100)}' && [ "${NPROBE:-0}" -gt 10 ] && pass "$KIND: root's status answered within ${WORST} ms ($NPROBE asks)" ||
		fail "$KIND: status worst ${WORST} ms over ${NPROBE} asks"
	for p in $(cat "$T"/hang-$KIND/pid.*); do kill -9 "$p" 2>/dev/null; done
done
agent_alive && pass "the agent lives" || fail "the agent died"
finish
