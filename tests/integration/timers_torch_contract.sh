#!/bin/bash
# time-limit: 180
# torch's timer contract where it differs from a plain kill, with torch's own, unmodified
# FileTimerClient against ftbpfd's FIFO: FileTimerClient(signal=0) means "expire, do not kill"
# (the expiry is logged, no signal is sent, the worker lives on, its timers are cleared); a FIFO
# removed under the agent (a /tmp cleaner; torchrun with TORCHELASTIC_ENABLE_FILE_TIMER=1
# removes it at its start and stop) is made again with its owner and mode and served; a FIFO
# put in its place (torch's own FileTimerServer constructor does that) is served.
. "$(dirname "$0")/lib.sh"
# in a directory of nobody's, so that torch's server running as nobody may replace the FIFO
mkdir "$T/run" && chown nobody:nogroup "$T/run"
FIFO=$T/run/timer.fifo
PY=/usr/bin/python3
W=$(for_nobody "$ROOT/tests/workloads/torch_timer.py")
# the FIFO is nobody's: the agent serves it for nobody's workers, as a user's own FIFO
mkfifo -m 0600 "$FIFO" && chown nobody:nogroup "$FIFO"
start_agent --soft-timeout 60 --hard-timeout 600 --action report --timer-fifo "$FIFO" || exit 1

# signal 0: expire, do not kill
as_nobody $PY "$W" "$FIFO" 0 outlive 1 >"$T/zero.out" 2>&1; rc=$?
[ $rc -eq 0 ] && grep -q survived "$T/zero.out" && pass "signal=0: the worker outlived its expired timer (exit 0)" ||
	fail "signal 0: rc=$rc $(cat "$T/zero.out")"
wait_until 3 has_event timer_expired '.scope=="outlive" and .signal==0 and (.result | startswith("not sent"))' &&
	pass "signal=0: the expiry is logged, with no signal sent" || fail "signal 0 event: $(events_of timer_expired)"
ftbpf timers --json | jq -e '.timers | length == 0' >/dev/null && pass "signal=0: its timers are cleared, as in torch" ||
	fail "timers left: $(ftbpf timers --json)"
has_event action '.signal==0' && fail "an action with signal 0 was logged" || pass "no action logged for a signal-0 expiry"

# a FIFO removed under the agent is made again, nobody's, 0600, and served
rm -f "$FIFO"
wait_until 3 test -p "$FIFO" && pass "removed FIFO made again" || fail "FIFO not made again"
[ "$(stat -c '%U %a' "$FIFO" 2>/dev/null)" = "nobody 600" ] && pass "with its owner and mode (nobody, 600)" ||
	fail "owner/mode: $(stat -c '%U %a' "$FIFO")"
as_nobody $PY "$W" "$FIFO" 15 blocked 1 >"$T/again.out" 2>&1; rc=$?
[ $rc -eq 143 ] && pass "served again: nobody's blocked worker reaped with SIGTERM" || fail "after remove: rc=$rc $(cat "$T/again.out")"
grep -q 'was removed' "$T/agent.out" && pass "the agent said so" || fail "no log line"

# torch's own FileTimerServer takes the path (its constructor removes the FIFO and makes its
# own, as under torchrun with TORCHELASTIC_ENABLE_FILE_TIMER=1); it is not started, so the agent
# is the only reader; its stop() removes the path again
cat >"$T/server.py" <<PYEOF
import sys, time
from torch.distributed.elastic.timer import FileTimerServer
s = FileTimerServer(file_path=sys.argv[1], max_interval=0.1)
print("replaced", flush=True)
sys.stdin.readline()
s.stop()
print("stopped", flush=True)
PYEOF
mkfifo "$T/ctl"
$NOBODY $PY "$T/server.py" "$FIFO" <"$T/ctl" >"$T/server.out" 2>&1 &
SRV=$!
exec 7>"$T/ctl"
wait_until 30 grep -q replaced "$T/server.out" || fail "server: $(cat "$T/server.out")"
wait_until 3 grep -q 'replaced by another' "$T/agent.out" && pass "a FIFO put in its place is noticed" || fail "replacement not noticed"
as_nobody $PY "$W" "$FIFO" 15 blocked 1 >"$T/repl.out" 2>&1; rc=$?
[ $rc -eq 143 ] && pass "and served: worker reaped through torch's server's FIFO" || fail "after replace: rc=$rc $(cat "$T/repl.out")"
echo >&7; exec 7>&-
wait "$SRV"
[ ! -e "$FIFO" ] || wait_until 3 test -p "$FIFO"
wait_until 3 test -p "$FIFO" && [ "$(stat -c '%U' "$FIFO")" = nobody ] && pass "removed by torch's stop(): made again" || fail "after stop: $(ls -l "$FIFO" 2>&1)"
as_nobody $PY "$W" "$FIFO" 9 blocked 1 >"$T/last.out" 2>&1; rc=$?
[ $rc -eq 137 ] && pass "served after that too (SIGKILL, torch's default)" || fail "last: rc=$rc $(cat "$T/last.out")"
agent_alive && pass "agent alive" || fail "agent died"
finish
