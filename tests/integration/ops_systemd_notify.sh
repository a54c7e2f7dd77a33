#!/bin/bash
# time-limit: 90
# systemd's notify protocol, as a unit with Type=notify and WatchdogSec=2 runs the agent:
# READY=1 (with STATUS) once it serves; WATCHDOG=1 from a timer of its own at a quarter of the
# interval, and every gap between two pings at most half the interval (what systemd asks) for
# 20 s on a busy host (a CPU hog per core and a fork loop, started by this test, while a job is
# watched and status is asked for); STOPPING=1 on SIGTERM. The test plays systemd's part: a
# datagram socket in NOTIFY_SOCKET.
. "$(dirname "$0")/lib.sh"
/usr/bin/python3 - "$T/notify" "$T/msgs" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(0.5)
end = time.time() + 60
with open(sys.argv[2], "w", buffering=1) as out:
    while time.time() < end:
        try:
            m = s.recv(4096).decode()
        except socket.timeout:
            continue
        out.write("%.3f %s\n" % (time.monotonic(), m.replace("\n", "|")))
        if "STOPPING=1" in m:
            break
PY
L=$!; WORKLOAD_PIDS+=($L)
wait_until 5 test -S "$T/notify" || fail "no notify socket"
NOTIFY_SOCKET=$T/notify WATCHDOG_USEC=2000000 start_agent --soft-timeout 60 --hard-timeout 300 --action report || exit 1
wait_until 5 grep -q READY=1 "$T/msgs" && pass "READY=1: $(grep READY=1 "$T/msgs" | cut -c1-120)" || fail "no READY=1: $(cat "$T/msgs")"
# the busy host, and work for the agent: a 4-rank job, status requests
for _ in $(seq "$(nproc)"); do sh -c 'while :; do :; done' & WORKLOAD_PIDS+=($!); done
sh -c 'while :; do /bin/true; sleep 0.05; done' & WORKLOAD_PIDS+=($!)
ring_job wd 4
FROM=$(awk 'END {print $1}' "$T/msgs")
for _ in $(seq 40); do ftbpf status --json >/dev/null; sleep 0.5; done
TO=$(awk 'END {print $1}' "$T/msgs")
# the gaps between pings over those 20 s (from the last ping before them)
GAPS=$(awk -v from="$FROM" -v to="$TO" '/WATCHDOG=1/ && $1 >= from && $1 <= to {if (p) print $1 - p; p = $1}' "$T/msgs")
N=$(echo "$GAPS" | grep -c .)
MAX=$(echo "$GAPS" | sort -g | tail -1)
log "$N pings in $(awk -v a="$FROM" -v b="$TO" 'BEGIN {printf "%.1f", b - a}') s on a busy host; largest gap ${MAX} s"
awk -v a="$FROM" -v b="$TO" 'BEGIN {exit !(b - a >= 19)}' || fail "the busy window was short: $FROM..$TO"
[ "$N" -ge 30 ] && pass "WATCHDOG=1 about every 0.5 s (a quarter of WatchdogSec=2s): $N pings" || fail "pings: $N"
awk -v m="$MAX" 'BEGIN {exit !(m <= 1.0)}' && pass "every gap <= half the interval (1 s): largest ${MAX} s" || fail "a gap of ${MAX} s"
stop_agent
wait_until 5 grep -q STOPPING=1 "$T/msgs" && pass "STOPPING=1 on SIGTERM" || fail "no STOPPING=1"
finish
