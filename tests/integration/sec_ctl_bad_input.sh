#!/bin/bash
# Bad input on the control socket (garbage, oversized, truncated, wrong version, unknown
# command, NUL bytes) and unprivileged clients: clear errors, counters, the agent keeps running.
. "$(dirname "$0")/lib.sh"
start_agent --soft-timeout 30 --hard-timeout 300 --action report || exit 1
ring_job rootjob 2
PY=/usr/bin/python3
cat >"$T/client.py" <<'PYEOF'
import json, socket, sys
path, mode = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(path)
def ask(b):
    s.sendall(b)
    buf = b""
    while not buf.endswith(b"\n"):
        d = s.recv(65536)
        if not d:
            break
        buf += d
    return buf.decode()
if mode == "garbage":
    print(ask(b"\x00\xffthis is not json}{\n"))
    print(ask(b"[1,2,3]\n"))
    print(ask(b'{"v":1,"cmd":42}\n'))
    print(ask(b'{"v":99,"cmd":"status"}\n'))
    print(ask(b'{"v":1,"cmd":"format_disk"}\n'))
    print(ask(b'{"v":1,"cmd":"explain","pid":"abc"}\n'))
    print(ask(b'{"v":1,"cmd":"signal","pid":1,"signal":"NOPE"}\n'))
    print(ask(b'{"v":1,"cmd":"status","x":' + b"[" * 100 + b"]" * 100 + b"}\n"))
    print(ask(b'{"v":1,"cmd":"version"}\n'))
elif mode == "oversized":
    print(ask(b"A" * 70000))
elif mode == "truncated":
    s.sendall(b'{"v":1,"cmd":"sta')
    s.close()
PYEOF
$PY "$T/client.py" "$SOCK" garbage >"$T/garbage.out" 2>&1
[ "$(grep -c '"ok":false' "$T/garbage.out")" -eq 8 ] && pass "8 malformed requests answered with errors" || fail "garbage answers: $(cat "$T/garbage.out")"
grep -q '"code":"version"' "$T/garbage.out" && grep -q '"code":"unknown_command"' "$T/garbage.out" && pass "version and unknown-command errors are specific" || fail "error codes"
grep -v '^$' "$T/garbage.out" | tail -1 | grep -q '"ok":true' && pass "same connection still served after errors" || fail "connection not usable after errors"
$PY "$T/client.py" "$SOCK" oversized >"$T/over.out" 2>&1
grep -q '"code":"too_long"' "$T/over.out" && pass "oversized request refused" || fail "oversized: $(cat "$T/over.out")"
$PY "$T/client.py" "$SOCK" truncated
sleep 0.3
C=$(status_json | jq -c .agent.counters)
log "counters: $C"
echo "$C" | jq -e '.ctl_bad_requests >= 8 and .ctl_oversized >= 1 and .ctl_truncated >= 1' >/dev/null && pass "counted" || fail "counters wrong"
kill -0 "$AGENT_PID" && pass "agent still running" || fail "agent died"

# unprivileged users
ROOTRANK=$(rank_pid rootjob 0)
NB() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
NB "$B/ftbpf" --socket "$SOCK" status --json >"$T/nb.json" && pass "nobody can ask for status" || fail "nobody status failed"
jq -e '.ranks | length == 0' "$T/nb.json" >/dev/null && pass "nobody sees no root ranks" || fail "nobody sees root ranks"
NB "$B/ftbpf" --socket "$SOCK" explain "$ROOTRANK" 2>"$T/nb.err"; rc=$?
[ $rc -eq 1 ] && grep -q permission_denied "$T/nb.err" && pass "explain of a root rank denied" || fail "explain not denied ($rc): $(cat "$T/nb.err")"
NB "$B/ftbpf" --socket "$SOCK" signal "$ROOTRANK" KILL 2>"$T/nb.err"; rc=$?
[ $rc -eq 1 ] && grep -q permission_denied "$T/nb.err" && kill -0 "$ROOTRANK" && pass "signal to a root rank denied, rank alive" || fail "signal not denied"
# nobody's own ranks
mkdir -p "$T/nbjob" && chmod 777 "$T/nbjob"
RING=$(for_nobody "$B/workloads/ring") # the checkout may be in a 0700 home
for r in 0 1; do # (setpriv itself, not the NB function: $! is the rank, which cleanup kills)
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env FTBPF_JOB=nbjob FTBPF_RANK=$r "$RING" --rank $r --world 2 --dir "$T/nbjob" &
	WORKLOAD_PIDS+=($!); disown $!
done
wait_until 10 bash -c "test -s '$T/nbjob/pid.0' && test -s '$T/nbjob/pid.1'"
NBRANK=$(cat "$T/nbjob/pid.0")
wait_until 5 bash -c "setpriv --reuid=nobody --regid=nogroup --clear-groups '$B/ftbpf' --socket '$SOCK' status --json | jq -e '[.ranks[].job] | unique == [\"nbjob\"]' >/dev/null" &&
	pass "nobody sees exactly its own job" || fail "nobody's view wrong"
NB "$B/ftbpf" --socket "$SOCK" explain "$NBRANK" >/dev/null && pass "nobody can explain its own rank" || fail "own explain failed"
NB "$B/ftbpf" --socket "$SOCK" signal "$NBRANK" TERM >/dev/null && wait_until 5 bash -c "! kill -0 $NBRANK 2>/dev/null" &&
	pass "nobody can signal its own rank" || fail "own signal failed"
status_json | jq -e '.agent.counters.ctl_denied >= 2' >/dev/null && pass "denials counted" || fail "denials not counted"
has_event action ".action==\"client_signal\" and .pid==$NBRANK and .requester_uid==$(id -u nobody)" && pass "client signal logged with requester" || fail "client signal not logged"
kill -0 "$AGENT_PID" && pass "agent still running" || fail "agent died"
finish
