#!/bin/bash
# Countdown timers through the torch FileTimerServer protocol: the FileTimerClient of Debian's
# python3-torch, unchanged, pointed at ftbpfd's FIFO. Expiry reaps the worker with the requested
# signal whether it blocks, spins or makes syscalls; release in time means no signal; exit
# clears timers; malformed lines and forged pids are refused and counted.
. "$(dirname "$0")/lib.sh"
FIFO=$T/timer.fifo
start_agent --soft-timeout 60 --hard-timeout 600 --action report --timer-fifo "$FIFO" || exit 1
[ -p "$FIFO" ] && pass "FIFO created" || fail "no FIFO"
PY=/usr/bin/python3
W="$ROOT/tests/workloads/torch_timer.py"

$PY "$W" "$FIFO" 9 release 0.5 >"$T/rel.out" 2>&1; rc=$?
[ $rc -eq 0 ] && grep -q survived "$T/rel.out" && pass "released timers never fire" || fail "release: rc=$rc $(cat "$T/rel.out")"

for mode in blocked spin syscalls; do
	start=$(date +%s%N)
	$PY "$W" "$FIFO" 15 $mode 1 >"$T/$mode.out" 2>&1; rc=$?
	el=$(( ($(date +%s%N) - start) / 1000000 ))
	[ $rc -eq 143 ] && pass "$mode worker reaped with SIGTERM (the requested signal) after ${el} ms" ||
		fail "$mode: rc=$rc $(cat "$T/$mode.out")"
	wait_until 3 has_event timer_expired ".scope==\"$mode\" and .signal==15 and .result==\"sent\"" &&
		pass "$mode: timer_expired event" || fail "$mode: no event"
done
LATE=$(jq -s '[.[] | select(.type=="timer_expired") | .late_ms] | max' "$LOG")
log "worst lateness after the deadline: ${LATE} ms"
awk "BEGIN{exit !($LATE < 100)}" && pass "expiry acted on at the deadline (timerfd), not at a scan" || fail "late: $LATE ms"
has_event timer_expired '.scope=="blocked" and .wchan != null and (.kernel_stack | length > 0)' &&
	pass "diagnosis (wchan, kernel stack) logged with the expiry" || fail "no diagnosis"

# exit clears timers; ftbpf timers lists them while they live
$PY "$W" "$FIFO" 9 hold >"$T/hold.out" 2>&1 &
HOLD=$!
wait_until 5 grep -q started "$T/hold.out"
sleep 0.2
ftbpf timers --json | jq -e ".timers[] | select(.pid==$HOLD and .scope==\"held\" and .time_left_s > 3000 and .signal==9 and .comm==\"python3\")" >/dev/null &&
	pass "ftbpf timers shows the timer, time left and owner" || fail "timers: $(ftbpf timers --json)"
ftbpf timers | grep -q held && pass "ftbpf timers (text)" || fail "timers text"
wait $HOLD
wait_until 3 bash -c "'$B/ftbpf' --socket '$SOCK' timers --json | jq -e '.timers | length == 0' >/dev/null" &&
	pass "exit cleared the timer" || fail "timer left after exit"

# the agent is kill -9'ed and restarted: the armed timer survives and fires on time
$PY "$W" "$FIFO" 15 blocked 4 >"$T/restart.out" 2>&1 &
RW=$!
wait_until 5 grep -q started "$T/restart.out"
ARMED=$(date +%s%N)
kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null; AGENT_PID=
sleep 1
start_agent --soft-timeout 60 --hard-timeout 600 --action report --timer-fifo "$FIFO" || exit 1
ftbpf timers --json | jq -e ".timers[] | select(.pid==$RW and .scope==\"blocked\" and .time_left_s > 1)" >/dev/null &&
	pass "timer known to the restarted agent" || fail "timer lost in restart: $(ftbpf timers --json)"
wait $RW; rc=$?
el=$(( ($(date +%s%N) - ARMED) / 1000000 ))
[ $rc -eq 143 ] && [ $el -ge 3500 ] && [ $el -lt 6000 ] && pass "it fired after the restart, on time (${el} ms after arming, expiry 4 s)" ||
	fail "after restart: rc=$rc el=${el}ms"

# malformed lines
printf 'garbage\n{"version": 2, "pid": 1, "scope_id": "x", "expiration_time": 1, "signal": 9}\n{"version":1,"pid":"1","scope_id":"x","expiration_time":1}\n[1]\n' >"$FIFO"
head -c 5000 /dev/zero | tr '\0' 'x' >"$FIFO"; printf '\n' >"$FIFO"
sleep 0.3
C=$(status_json | jq -c '.agent.counters | {fifo_bad, fifo_oversized}')
log "counters: $C"
echo "$C" | jq -e '.fifo_bad >= 4 and .fifo_oversized >= 1' >/dev/null && pass "malformed lines refused and counted" || fail "counters $C"
kill -0 "$AGENT_PID" && pass "agent alive" || fail "agent died"

# forged pids: a FIFO owned by nobody may only target nobody's processes
stop_agent
FIFO2=$T/nobody.fifo
mkfifo -m 0600 "$FIFO2" && chown nobody "$FIFO2"
start_agent --soft-timeout 60 --hard-timeout 600 --action report --timer-fifo "$FIFO2" || exit 1
sleep 30 & VICTIM=$!; WORKLOAD_PIDS+=($VICTIM)
NOW=$(date +%s)
printf '{"version": 1, "pid": %d, "scope_id": "forged", "expiration_time": %d, "signal": 9}\n' $VICTIM $NOW >"$FIFO2"
sleep 0.5
kill -0 $VICTIM && pass "forged request against root's process refused" || fail "victim killed"
status_json | jq -e '.agent.counters.fifo_denied >= 1' >/dev/null && pass "refusal counted" || fail "not counted"
setpriv --reuid=nobody --regid=nogroup --clear-groups sleep 30 & OWN=$!; WORKLOAD_PIDS+=($OWN)
sleep 0.2
printf '{"version": 1, "pid": %d, "scope_id": "own", "expiration_time": %d, "signal": 9}\n' $OWN $NOW >"$FIFO2"
wait_until 3 bash -c "! kill -0 $OWN 2>/dev/null" && pass "the FIFO owner's own process is reaped" || fail "own process not reaped"

# control socket: an unprivileged process cannot set a timer on another user's process
cat >"$T/acq.py" <<'PYEOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall((json.dumps({"v": 1, "cmd": "timer_acquire", "scope": "x", "expires_in": 0.1,
                       "pid": int(sys.argv[2])}) + "\n").encode())
print(s.recv(4096).decode().strip())
PYEOF
OUT=$(setpriv --reuid=nobody --regid=nogroup --clear-groups $PY "$T/acq.py" "$SOCK" $VICTIM)
echo "$OUT" | grep -q permission_denied && pass "ctl timer on another user's process denied" || fail "ctl: $OUT"
sleep 0.4
kill -0 $VICTIM && pass "victim alive" || fail "victim killed via ctl"
OUT=$($PY "$T/acq.py" "$SOCK" $VICTIM)
echo "$OUT" | grep -q '"ok":true' && wait_until 3 bash -c "! kill -0 $VICTIM 2>/dev/null" &&
	pass "root may set a timer through the socket; it fires" || fail "root ctl timer: $OUT"
finish
