#!/bin/bash
# Countdown timers through libftbpf's slot: a process that keeps making syscalls is signalled
# by the BPF program at syscall entry; a blocked or spinning one by the agent; release in time
# means no signal; nested and concurrent scopes; beyond 16 scopes the socket takes over; exit
# clears; pings count as progress; the kernel keeps enforcing while no agent runs, and a
# restarted agent resumes the slots. (Decisions are off: every run here is a separate
# process of one job, and the timers kill them; coordinated restarts are the decide_ tests'.)
. "$(dirname "$0")/lib.sh"
start_agent --soft-timeout 3 --hard-timeout 300 --action report --decisions off || exit 1
export FTBPF_SOCKET=$SOCK
C=$B/workloads/timer_client
run() { # run MODE [EXPIRY] -> sets RC, OUT, MS
	local s=$(date +%s%N)
	OUT=$(timeout 20 "$C" "$@" 2>&1); RC=$?
	MS=$(( ($(date +%s%N) - s) / 1000000 ))
}
run syscalls
[ $RC -eq 137 ] && pass "syscall-making process killed (SIGKILL) after ${MS} ms" || fail "syscalls: rc=$RC $OUT"
wait_until 3 has_event timer_expired '.scope=="syscalls" and .enforced_by=="kernel" and .syscall=="getppid" and .late_ms < 50' &&
	pass "enforced by the BPF program at syscall entry, < 50 ms late (the next syscall after the deadline; a loaded host delays that)" || fail "not kernel-enforced: $(events_of timer_expired | tail -1)"
for m in blocked spin; do
	run $m
	[ $RC -eq 137 ] && pass "$m process killed after ${MS} ms" || fail "$m: rc=$RC $OUT"
	wait_until 3 has_event timer_expired ".scope==\"$m\" and .enforced_by==\"agent\" and .late_ms < 200" &&
		pass "$m: enforced by the agent within its scan interval (0.2 s)" || fail "$m: $(events_of timer_expired | tail -1)"
done
has_event timer_expired '.scope=="blocked" and .syscall=="clock_nanosleep" and .wchan != null and (.kernel_stack|length) > 0' &&
	pass "diagnosis before the kill: syscall, wchan, kernel stack" || fail "no diagnosis"
run release; [ $RC -eq 0 ] && pass "1000 acquire/release pairs, never signalled" || fail "release: rc=$RC $OUT"
run nested; [ $RC -eq 143 ] && has_event timer_expired '.scope=="inner2" and .signal==15' &&
	pass "nested scopes: inner released in time, inner2 fired with its own signal (SIGTERM)" || fail "nested: rc=$RC"
has_event timer_expired '.scope=="inner" or .scope=="outer"' && fail "a released scope fired" || pass "released scopes never fired"
run threads; [ $RC -eq 0 ] && pass "8 threads x nested scopes x 2000 rounds: no signal, slot empty after" || fail "threads: rc=$RC $OUT"
run overflow
[ $RC -eq 137 ] && echo "$OUT" | grep -q "remote 4" && pass "16 scopes in the slot, 4 more through the socket; a socket timer fires too" || fail "overflow: rc=$RC $OUT"
has_event timer_expired '.source=="ctl" and (.scope | startswith("by-socket"))' && pass "socket timer reaped by the agent" || fail "no ctl expiry"
run exitearly; sleep 0.8
[ $RC -eq 0 ] && ! has_event timer_expired '.scope=="exitearly"' && pass "exit clears its timers" || fail "exitearly"
"$C" pinger >/dev/null 2>&1 & PG=$!; WORKLOAD_PIDS+=($PG)
sleep 6
jq_status ".ranks[] | select(.pid==$PG) | .hung == false and .state == \"blocked\"" && pass "pings are progress: a rank blocked 6 s (soft 3 s) but pinging is not hung" || fail "pinger flagged: $(status_json | jq -c ".ranks[] | select(.pid==$PG)")"
wait $PG

# the kernel enforces with no agent running; a restarted agent resumes the slots
"$C" syscalls 2 >"$T/nk.out" 2>&1 & NK=$!
# (8 s: the restarted agent must list it before it expires, and on a busy host the restart
# takes seconds)
"$C" blocked 8 >"$T/rb.out" 2>&1 & RB=$!
wait_until 5 bash -c "grep -q armed '$T/nk.out' && grep -q armed '$T/rb.out'"
kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null; AGENT_PID=
wait $NK; rc=$?
[ $rc -eq 137 ] && pass "killed at its deadline by the kernel while no agent ran" || fail "no-agent enforcement: rc=$rc"
start_agent --soft-timeout 3 --hard-timeout 300 --action report --decisions off || exit 1
ftbpf timers --json | jq -e ".timers[] | select(.pid==$RB and .source==\"slot\" and .scope==\"blocked\")" >/dev/null &&
	pass "restarted agent sees the slot timer" || fail "slot timer lost: $(ftbpf timers --json)"
wait $RB; rc=$?
[ $rc -eq 137 ] && pass "blocked process reaped after the agent restart" || fail "after restart rc=$rc"
has_event timer_expired ".pid==$RB and .enforced_by==\"agent\"" && pass "by the restarted agent" || fail "no event for $RB"

# escalation (timer_escalate): SIGTERM at expiry, SIGKILL after the grace if still alive
stop_agent
start_agent --soft-timeout 3 --hard-timeout 300 --action report --decisions off --timer-escalate 1 --grace 1 || exit 1
run syscalls; [ $RC -eq 143 ] && pass "escalation: SIGTERM from the kernel ends a normal process" || fail "esc syscalls rc=$RC"
for m in syscalls blocked; do
	run ignterm-$m
	[ $RC -eq 137 ] && [ $MS -ge 1200 ] && [ $MS -lt 3000 ] &&
		pass "escalation: a $m process deaf to SIGTERM got SIGKILL after the grace (${MS} ms)" || fail "esc $m rc=$RC ${MS}ms"
done
has_event action '.action=="timer_grace_expired" and .signal==9' && pass "grace expiry logged" || fail "no grace action"
finish
