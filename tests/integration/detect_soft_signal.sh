#!/bin/bash
# The soft signal (--soft-signal USR1, "for a Python faulthandler dump") goes only to ranks
# that catch it: a rank without a handler would die of SIGUSR1's default action, and the
# report-only stage would kill the job. A Python rank that registered faulthandler gets its dump.
. "$(dirname "$0")/lib.sh"
SOFT=3
start_agent --soft-timeout $SOFT --hard-timeout 300 --action report --soft-signal USR1 --soft-signal-all 1 || exit 1
ring_job plain 2 --fault sleep --fault-rank 1 --fault-after 1
P1=$(rank_pid plain 1)
FTBPF_JOB=py FTBPF_RANK=0 /usr/bin/python3 -c '
import faulthandler, signal, sys, time
faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
print("ready", flush=True)
time.sleep(60)' >"$T/py.out" 2>"$T/py.err" &
PY=$!; WORKLOAD_PIDS+=($PY)
wait_until $((SOFT + 8)) has_event action ".pid==$P1 and .action==\"soft_timeout\"" || fail "no soft-timeout action for the C rank"
sleep 1
alive "$P1" && pass "the C rank without a handler was not killed by the soft signal" || fail "the soft signal killed the C rank"
has_event action ".pid==$P1 and .action==\"soft_timeout\" and (.result | test(\"not sent\"))" &&
	pass "the event says why: $(events_of action | jq -r "select(.pid==$P1) | .result" | head -1)" || fail "event: $(events_of action | jq -c "select(.pid==$P1)")"
wait_until $((SOFT + 8)) has_event action ".pid==$PY and .action==\"soft_timeout\" and .result==\"sent\"" &&
	pass "the Python rank with faulthandler for USR1 got the signal" || fail "python: $(events_of action | jq -c "select(.pid==$PY)")"
wait_until 3 grep -q "File" "$T/py.err" && alive "$PY" && pass "its dump is on its stderr and it lives on" || fail "python stderr: $(head -3 "$T/py.err")"
finish
