#!/bin/bash
# time-limit: 60
# systemd's notify protocol, as a unit with Type=notify and WatchdogSec runs the agent:
# READY=1 (with STATUS) once it serves, WATCHDOG=1 from its scan at half the watchdog interval,
# STOPPING=1 on SIGTERM. The test plays systemd's part: a datagram socket in NOTIFY_SOCKET.
. "$(dirname "$0")/lib.sh"
/usr/bin/python3 - "$T/notify" "$T/msgs" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(0.5)
end = time.time() + 20
with open(sys.argv[2], "w", buffering=1) as out:
    while time.time() < end:
        try:
            m = s.recv(4096).decode()
        except socket.timeout:
            continue
        out.write("%.3f %s\n" % (time.time(), m.replace("\n", "|")))
        if "STOPPING=1" in m:
            break
PY
L=$!; WORKLOAD_PIDS+=($L)
wait_until 5 test -S "$T/notify" || fail "no notify socket"
NOTIFY_SOCKET=$T/notify WATCHDOG_USEC=1000000 start_agent --soft-timeout 60 --hard-timeout 300 --action report || exit 1
wait_until 5 grep -q READY=1 "$T/msgs" && pass "READY=1: $(grep READY=1 "$T/msgs" | cut -c1-120)" || fail "no READY=1: $(cat "$T/msgs")"
sleep 3
N=$(grep -c WATCHDOG=1 "$T/msgs")
[ "$N" -ge 3 ] && [ "$N" -le 12 ] && pass "WATCHDOG=1 $N times in about 3 s (every half of WatchdogSec=1s)" || fail "watchdog pings: $N"
stop_agent
wait_until 5 grep -q STOPPING=1 "$T/msgs" && pass "STOPPING=1 on SIGTERM" || fail "no STOPPING=1"
finish
