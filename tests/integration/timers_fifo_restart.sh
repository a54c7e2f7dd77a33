#!/bin/bash
# time-limit: 150
# torch's own FileTimerClient (torch 1.13) through agent restarts: a worker looping over
# expires() (a request every 10 ms) keeps running while the agent is stopped and started again
# (SIGTERM, a 3 s gap), and while it is killed -9 and started again: no BrokenPipeError (before,
# the worker died as soon as no agent held the FIFO). Without systemd a holder process
# (ftbpf-fifohold) keeps the FIFO; under a service manager (tests/workloads/fdstore.py plays
# systemd: NOTIFY_SOCKET, FDSTORE=1, LISTEN_FDS) the FIFO goes into the file descriptor store
# and comes back with the next start, and no holder is started. After the restarts the
# worker's overrun timer still fires (SIGTERM, `timer_expired` from the FIFO); torch's 7 of 7.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
W=$ROOT/tests/workloads/torch_timer_loop.py
FIFO=$T/timer.fifo
ARGS=(--soft-timeout 60 --hard-timeout 600 --action report --timer-fifo "$FIFO")
worker() { # worker NAME SECONDS: the loop in the background; WPID its pid
	$PY "$W" "$FIFO" "$2" >"$T/$1.out" 2>&1 & WPID=$!
	WORKLOAD_PIDS+=($WPID)
}
worker_ok() { # worker_ok NAME PID: it looped, its overrun timer killed it, no broken pipe
	local rc
	wait "$2"; rc=$?
	[ $rc -eq 143 ] && grep -q "^looped [1-9]" "$T/$1.out" && ! grep -q "BrokenPipe\|Error" "$T/$1.out" &&
		pass "$1: the worker $(grep -o 'looped [0-9]*' "$T/$1.out") times through the restarts, then its overrun timer killed it (143)" ||
		fail "$1: rc=$rc $(tail -5 "$T/$1.out")"
}
holder_pid() { jq -r .pid "$T/state/timer-fifo.holder" 2>/dev/null; }

# 1. no service manager (make run, a shell): the holder
start_agent "${ARGS[@]}" || exit 1
worker plain 22
wait_until 10 test -e "$T/state/timer-fifo.holder" &&
	[ "$(cat "/proc/$(holder_pid)/comm" 2>/dev/null)" = ftbpf-fifohold ] &&
	pass "a holder keeps the FIFO (pid $(holder_pid), ftbpf-fifohold)" || fail "no holder: $(cat "$T/state/timer-fifo.holder" 2>&1)"
H=$(holder_pid)
sleep 3
stop_agent
sleep 3 # an upgrade's gap: the worker keeps asking meanwhile
start_agent "${ARGS[@]}" || exit 1
[ "$(holder_pid)" = "$H" ] && pass "the restarted agent keeps the same holder" || fail "holder $(holder_pid), was $H"
sleep 3
kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null; AGENT_PID=
sleep 2
start_agent "${ARGS[@]}" || exit 1
worker_ok plain "$WPID"
wait_until 5 has_event timer_expired '.scope | test("final")' && pass "the overrun after the restarts is the agent's: timer_expired (fifo)" ||
	fail "no timer_expired: $(events_of timer_expired | tail -2)"
stop_agent
kill "$H"
wait_until 5 bash -c "! kill -0 $H 2>/dev/null" || fail "holder $H still there"

# 2. under a service manager: the file descriptor store, no holder
rm -f "$T/state/timer-fifo.holder"
mkdir -p "$T/sd"
$PY "$ROOT/tests/workloads/fdstore.py" "$T/sd" -- "$FTBPFD" --socket "$SOCK" --state-dir "$T/state" \
	--pin-dir "$PIN" --log-file "$LOG" "${ARGS[@]}" >>"$T/agent.out" 2>&1 &
SD=$!
WORKLOAD_PIDS+=($SD)
wait_until 20 grep -q "stored timer-fifo" "$T/sd/log" && pass "the agent stores the FIFO (FDSTORE=1, FDNAME=timer-fifo)" ||
	fail "nothing stored: $(cat "$T/sd/log")"
AGENT_PID=$(cat "$T/sd/pid")
worker store 16
sleep 3
touch "$T/sd/restart" # systemctl restart: SIGTERM, 2 s, a new start with the stored fds
wait_until 20 grep -q "started .* with timer-fifo" "$T/sd/log" && pass "restarted with the FIFO passed back (LISTEN_FDNAMES=timer-fifo)" ||
	fail "restart: $(cat "$T/sd/log")"
wait_until 20 bash -c "[ \$(grep -c 'stored timer-fifo' '$T/sd/log') -ge 2 ]" || fail "the new agent did not store it again: $(cat "$T/sd/log")"
AGENT_PID=$(cat "$T/sd/pid")
[ ! -e "$T/state/timer-fifo.holder" ] && pass "no holder process under a service manager" || fail "a holder under the service manager"
worker_ok store "$WPID"
touch "$T/sd/stop"
wait "$SD" 2>/dev/null
AGENT_PID=
finish
