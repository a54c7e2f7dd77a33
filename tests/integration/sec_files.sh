#!/bin/bash
# Files the agent writes and reads, against a hostile local user: the event log is root's alone,
# the timer FIFO acts only for its owner and only while no one else can write it, paths in
# directories others can write are refused (no planted symlink makes root truncate or append to
# a file), a regular file is never taken for a stale socket, key and config files are checked
# before anything is loaded, and a bad mesh address is a usage error.
. "$(dirname "$0")/lib.sh"
ATT=$(for_nobody "$B/workloads/attacker")

# ---- the event log: 0600, or 0640 for a chosen group ----
start_agent --soft-timeout 30 --hard-timeout 300 --action report || exit 1
[ "$(stat -c %a "$LOG")" = 600 ] && pass "event log is mode 600" || fail "event log mode $(stat -c %a "$LOG")"
as_nobody cat "$LOG" >/dev/null 2>&1 && fail "nobody can read the event log" || pass "nobody cannot read the event log"
stop_agent
getent group adm >/dev/null || groupadd -r adm
start_agent --soft-timeout 30 --hard-timeout 300 --action report --log-group adm || exit 1
[ "$(stat -c '%a %G' "$LOG")" = "640 adm" ] && pass "with --log-group adm: mode 640, group adm" ||
	fail "log: $(stat -c '%a %G' "$LOG")"
stop_agent

# ---- the timer FIFO ----
FIFO=$T/timer.fifo
start_agent --soft-timeout 30 --hard-timeout 300 --action report --timer-fifo "$FIFO" || exit 1
sleep 60 & VICTIM=$!; WORKLOAD_PIDS+=($VICTIM)
printf '{"version": 1, "pid": %d, "scope_id": "far", "expiration_time": 1e12, "signal": 9}\n' "$VICTIM" >"$FIFO"
sleep 1.5
alive $VICTIM && pass "expiration_time 1e12 is a far deadline, not an immediate kill" || fail "expiration_time 1e12 killed at once"
[ "$(stat -c %a "$FIFO")" = 600 ] && pass "FIFO created 600" || fail "FIFO mode $(stat -c %a "$FIFO")"
chmod 666 "$FIFO"
printf '{"version": 1, "pid": %d, "scope_id": "x", "expiration_time": 1, "signal": 9}\n' "$VICTIM" |
	as_nobody tee "$FIFO" >/dev/null
sleep 1
alive $VICTIM && pass "a request written while others could write the FIFO is not acted on" ||
	fail "nobody killed a root process through a 0666 FIFO"
jq_status '.agent.counters.fifo_denied > 0' && pass "counted as denied" || fail "fifo_denied: $(status_json | jq .agent.counters.fifo_denied)"
stop_agent
if timeout 20 "$B/ftbpfd" --socket "$SOCK" --state-dir "$T/state" --pin-dir "$PIN" --log-file "$LOG" \
	--timer-fifo "$FIFO" >"$T/fifo.out" 2>&1; then
	fail "started with a 0666 FIFO"
else
	grep -q "writable by users other than its owner" "$T/fifo.out" && pass "a 0666 FIFO is refused at start: $(tail -1 "$T/fifo.out")" ||
		fail "0666 FIFO: $(cat "$T/fifo.out")"
fi
ln -s "$FIFO" "$T/fifo.link"
timeout 20 "$B/ftbpfd" --socket "$SOCK" --state-dir "$T/state" --pin-dir "$PIN" --log-file "$LOG" \
	--timer-fifo "$T/fifo.link" >"$T/fifo2.out" 2>&1 && fail "started on a FIFO symlink" ||
	pass "a symbolic link as the FIFO is refused: $(tail -1 "$T/fifo2.out")"

# ---- paths in a directory other users can write ----
D=$(mktemp -d /tmp/ftbpf-sticky.XXXXXX)
chmod 1777 "$D"
echo secret >"$T/secret"; chmod 600 "$T/secret"
echo other >"$T/other"; chmod 600 "$T/other"
as_nobody mkdir "$D/state"
as_nobody ln -s "$T/secret" "$D/state/ftbpfd.lock"
as_nobody ln -s "$T/other" "$D/events.jsonl"
timeout 20 "$B/ftbpfd" --socket "$SOCK" --state-dir "$D/state" --pin-dir "$PIN" --log-file "$LOG" >"$T/p1.out" 2>&1 &&
	fail "started with a state dir owned by nobody" || pass "state dir owned by nobody refused: $(tail -1 "$T/p1.out")"
timeout 20 "$B/ftbpfd" --socket "$SOCK" --state-dir "$T/state" --pin-dir "$PIN" --log-file "$D/events.jsonl" >"$T/p2.out" 2>&1 &&
	fail "started with the log in a world-writable dir" || pass "log in a world-writable dir refused: $(tail -1 "$T/p2.out")"
[ "$(cat "$T/secret")" = secret ] && [ "$(cat "$T/other")" = other ] && pass "root's files untouched" ||
	fail "root's files changed: $(cat "$T/secret" "$T/other" | head -c 200)"
echo precious >"$T/regular"
timeout 20 "$B/ftbpfd" --socket "$T/regular" --state-dir "$T/state" --pin-dir "$PIN" --log-file "$LOG" >"$T/p3.out" 2>&1 &&
	fail "started on a regular file as the socket" || pass "a regular file as --socket refused: $(tail -1 "$T/p3.out")"
[ "$(cat "$T/regular")" = precious ] && pass "the regular file is still there" || fail "the regular file was removed"
rm -rf "$D"

# ---- mesh key file, config file, addresses: checked before anything is loaded (exit 2) ----
head -c 32 /dev/urandom >"$T/key"; chmod 640 "$T/key"
timeout 10 "$B/ftbpfd" --socket "$SOCK" --state-dir "$T/state" --pin-dir "$PIN" --log-file "$LOG" \
	--bind 127.0.0.1:17946 --key-file "$T/key" >"$T/k1.out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "readable or writable by others" "$T/k1.out" && pass "group-readable key refused (exit 2)" ||
	fail "group-readable key: rc=$rc $(cat "$T/k1.out")"
mkfifo -m 600 "$T/keyfifo"
S=$(date +%s)
timeout 10 "$B/ftbpfd" --socket "$SOCK" --state-dir "$T/state" --pin-dir "$PIN" --log-file "$LOG" \
	--bind 127.0.0.1:17946 --key-file "$T/keyfifo" >"$T/k2.out" 2>&1; rc=$?
[ $rc -eq 2 ] && [ $(($(date +%s) - S)) -le 3 ] && pass "a FIFO as key file: exit 2 at once ($(tail -1 "$T/k2.out"))" ||
	fail "FIFO key: rc=$rc after $(($(date +%s) - S)) s"
chmod 600 "$T/key"
S=$(date +%s%N)
timeout 10 "$B/ftbpfd" --socket "$SOCK" --state-dir "$T/state" --pin-dir "$PIN" --log-file "$LOG" \
	--bind 127.0.0.1:17946 --key-file "$T/key" --peers 127.0.0.1:1,notanaddress >"$T/k3.out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q notanaddress "$T/k3.out" && pass "bad --peers: exit 2 in $(( ($(date +%s%N) - S) / 1000000 )) ms" ||
	fail "bad peers: rc=$rc $(cat "$T/k3.out")"
timeout 10 "$B/ftbpfd" --socket "$SOCK" --state-dir "$T/state" --pin-dir "$PIN" --log-file "$LOG" \
	--bind 127.0.0.1:99999 --key-file "$T/key" >"$T/k4.out" 2>&1; rc=$?
[ $rc -eq 2 ] && pass "bad --bind: exit 2" || fail "bad bind: rc=$rc $(cat "$T/k4.out")"
"$B/ftbpfd" --config /tmp --print-config >"$T/c1.out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "not a regular file" "$T/c1.out" && pass "--config on a directory refused" || fail "--config /tmp: rc=$rc $(cat "$T/c1.out")"
printf 'hard_timeout = 30\n' >"$T/c.conf"
"$B/ftbpfd" --config "$T/c.conf" --soft-timeout 10 --print-config >"$T/c2.out" 2>&1 &&
	grep -q "hard_timeout = 30" "$T/c2.out" && pass "file hard_timeout 30 with flag --soft-timeout 10 accepted" ||
	fail "cross check before flags: $(cat "$T/c2.out")"
chmod 666 "$T/c.conf"
"$B/ftbpfd" --config "$T/c.conf" --print-config >"$T/c3.out" 2>&1 && fail "a world-writable config accepted" ||
	pass "a world-writable config refused: $(tail -1 "$T/c3.out")"
finish
