#!/bin/bash
# time-limit: 120
# Files a rank names, against a hostile local user (issue 19): nobody's ranks map a file named
# like a CPython interpreter and then replace it by a FIFO, or by a symbolic link to a FIFO in a
# directory only root can enter. The agent reads Python stacks (a hang report, asked by nobody,
# and explain) from the file the rank maps (/proc/PID/map_files), never through the path: the
# FIFOs are never opened, explain answers at once, the hang reports come, and root's 2 s timer
# fires on time. (The agent before blocked forever in open(2) on the FIFO.)
. "$(dirname "$0")/lib.sh"
MAP=$(for_nobody "$B/workloads/mapper")
CLI=$(for_nobody "$B/ftbpf")
LIBPY=/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0
start_agent --soft-timeout 2 --hard-timeout 300 --action report || exit 1
export FTBPF_SOCKET=$SOCK PYTHONPATH=$B/python
mkdir -p "$T/n/d" && chown -R nobody "$T/n"
ROOTDIR=$(mktemp -d /tmp/ftbpf-rootonly.XXXXXX)
chmod 700 "$ROOTDIR" && mkfifo -m 600 "$ROOTDIR/fifo"
as_nobody cp "$LIBPY" "$T/n/python3.11"
as_nobody cp "$LIBPY" "$T/n/d/libpython3.11.so.1.0"
$NOBODY env FTBPF_JOB=fifo FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$MAP" "$T/n/python3.11" >"$T/m1.out" 2>&1 &
P1=$!; WORKLOAD_PIDS+=($P1)
$NOBODY env FTBPF_JOB=link FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$MAP" "$T/n/d/libpython3.11.so.1.0" >"$T/m2.out" 2>&1 &
P2=$!; WORKLOAD_PIDS+=($P2)
wait_until 10 grep -q mapped "$T/m1.out" && wait_until 10 grep -q mapped "$T/m2.out" || fail "mapper did not start"
# the files go; a FIFO, and a link to root's FIFO, take their names
as_nobody rm "$T/n/python3.11" && as_nobody mkfifo "$T/n/python3.11"
as_nobody rm "$T/n/d/libpython3.11.so.1.0" && as_nobody ln -s "$ROOTDIR/fifo" "$T/n/d/libpython3.11.so.1.0"
grep -q "python3.11 (deleted)" "/proc/$P1/maps" && pass "the maps name a path that is a FIFO now" || fail "maps: $(grep python "/proc/$P1/maps" | head -2)"
# root's timer, while the agent looks at nobody's ranks
FTBPF_JOB=timer FTBPF_RANK=0 /usr/bin/python3 -c '
import ftbpf, time
with ftbpf.expires(2):
    time.sleep(6)' >/dev/null 2>&1 &
TP=$!
for P in $P1 $P2; do
	S=$(date +%s%N)
	as_nobody timeout 10 "$CLI" --socket "$SOCK" explain "$P" --json >"$T/ex.$P" 2>&1; rc=$?
	E=$(( ($(date +%s%N) - S) / 1000000 ))
	[ $rc -eq 0 ] && [ $E -lt 3000 ] && pass "explain of nobody's rank $P (asked by nobody) answered in $E ms: $(jq -c '{python_stack_error}' "$T/ex.$P")" ||
		fail "explain $P: rc=$rc after $E ms: $(head -c 300 "$T/ex.$P")"
done
wait_until 15 has_event hang '.job=="fifo"' && wait_until 5 has_event hang '.job=="link"' &&
	pass "hang reports of both ranks (their Python stacks looked for) were emitted" || fail "no hang report"
wait $TP 2>/dev/null; TRC=$?
LATE=$(events_of timer_expired | jq -s "[.[] | select(.pid==$TP)][0].late_ms // 999999")
[ $TRC -eq 137 ] && awk -v l="$LATE" 'BEGIN{exit !(l <= 300)}' && pass "root's 2 s timer fired ${LATE} ms late" ||
	fail "root's timer: rc=$TRC late_ms=$LATE"
ls -l "/proc/$AGENT_PID/fd" 2>/dev/null | grep -q -e "$ROOTDIR" -e "$T/n/python3.11\$" && fail "the agent holds a FIFO open" ||
	pass "the agent holds neither FIFO"
# nobody reads the FIFOs: opening them for writing without blocking finds no reader
/usr/bin/python3 -c '
import os, sys
for f in sys.argv[1:]:
    try:
        os.close(os.open(f, os.O_WRONLY | os.O_NONBLOCK)); sys.exit(1)
    except OSError as e:
        assert e.errno == 6, e
' "$ROOTDIR/fifo" "$T/n/python3.11" && pass "no reader ever opened the FIFOs" || fail "a FIFO has a reader"
agent_alive && S=$(ms ftbpf status) && [ "$S" -lt 1000 ] && pass "the agent answers (status in $S ms)" || fail "the agent is stuck or dead"
rm -rf "$ROOTDIR"
finish
