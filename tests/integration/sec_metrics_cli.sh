#!/bin/bash
# time-limit: 150
# What one local user can do to the metrics endpoint and to root's terminal (issue 19):
#   - with metrics_token_file, a scrape without the token is 401 and shows nothing;
#   - nobody holding 16 slow connections (a header line every 2 s) does not keep root's
#     scrapes out: beyond its share its connections are ended at once, the rest within the
#     request deadline, and every scrape of root's answers within a second;
#   - a job name with a byte that is not UTF-8 keeps the scrape valid UTF-8;
#   - a rank whose name carries terminal escape sequences: `ftbpf status`, `events` and
#     `explain` print no escape or control byte (as root and as the user);
#   - on a Unix socket (unix:/PATH), a user holds at most 4 connections.
. "$(dirname "$0")/lib.sh"
MPORT=$((27000 + RANDOM % 1000))
M=http://127.0.0.1:$MPORT/metrics
head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$T/token"; chmod 600 "$T/token"
TOKEN=$(cat "$T/token")
start_agent --soft-timeout 60 --hard-timeout 300 --action report --metrics-listen "127.0.0.1:$MPORT" \
	--metrics-token-file "$T/token" || exit 1
scrape() { curl -s -m 5 -H "Authorization: Bearer $TOKEN" "$M"; }

# 1. the token
[ "$(curl -s -o "$T/noauth" -w '%{http_code}' "$M")" = 401 ] && ! grep -q ftbpf_ "$T/noauth" &&
	pass "no token: 401, no metrics" || fail "without the token: $(head -c 200 "$T/noauth")"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrong-token-0123456789' "$M")" = 401 ] &&
	pass "a wrong token: 401" || fail "a wrong token was accepted"
scrape | grep -q '^ftbpf_agent_up\|^# TYPE ftbpf_' && pass "with the token: the metrics" || fail "with the token: $(scrape | head -3)"

# 2. a job name that is not UTF-8 (json-c keeps the byte), and a rank named with escapes
mkdir -p "$T/bin"; cp /bin/sleep "$T/bin/x"$'\e]0;pwned\a\e[2J'; chmod 755 "$T/bin"/*
ESCBIN=$(ls "$T/bin"/x*)
$NOBODY env FTBPF_JOB=njob FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$ESCBIN" 60 & NR=$!; WORKLOAD_PIDS+=($NR)
wait_until 10 jq_status "[.ranks[] | select(.pid==$NR)] | length == 1" || fail "nobody's rank not adopted"
ATT=$(for_nobody "$B/workloads/attacker")
$NOBODY "$ATT" register "$SOCK" 'bad\u00ff\u001b[2Jname' 60 >/dev/null 2>&1 & WORKLOAD_PIDS+=($!)
sleep 1
scrape >"$T/m.txt"
/usr/bin/python3 -c '
import sys
from prometheus_client.parser import text_string_to_metric_families
t = open(sys.argv[1], "rb").read().decode("utf-8")   # raises on a byte that is not UTF-8
print(sum(len(f.samples) for f in text_string_to_metric_families(t)))' "$T/m.txt" >"$T/p" 2>&1 &&
	pass "the scrape is valid UTF-8 and parses ($(cat "$T/p") samples)" || fail "scrape: $(tail -2 "$T/p")"
FTN=$(for_nobody "$B/ftbpf")
for who in root nobody; do
	run() { if [ $who = root ]; then "$B/ftbpf" --socket "$SOCK" "$@"; else as_nobody "$FTN" --socket "$SOCK" "$@"; fi; }
	{ run status; run events --limit 200; run explain "$NR"; } >"$T/cli.$who" 2>&1
	if LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]' "$T/cli.$who"; then
		fail "$who's CLI output has control bytes: $(LC_ALL=C grep -P '[\x00-\x08\x0b-\x1f\x7f]' "$T/cli.$who" | head -2 | cat -v)"
	else
		grep -q 'x\\x1b]0;pwned\\x07' "$T/cli.$who" && pass "$who's ftbpf status/events/explain: escapes shown as \\x1b, none raw" ||
			fail "$who: the rank's name not shown escaped: $(grep -c njob "$T/cli.$who") lines with njob"
	fi
done
run() { "$B/ftbpf" --socket "$SOCK" "$@"; }
run status --json | /usr/bin/python3 -c 'import json, sys; json.load(sys.stdin)' 2>/dev/null &&
	pass "status --json is still JSON" || fail "status --json does not parse"

# 3. nobody's slow connections (a header line every 2 s) against root's scrapes
cat >"$T/slow.py" <<'PY'
import socket, sys, time
port, n, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
conns, ended, opened = [], 0, 0
end = time.time() + secs
while time.time() < end:
    while len(conns) < n:      # keep n open: reconnect what the server ended
        s = socket.create_connection(("127.0.0.1", port)); s.send(b"GET /metrics HTTP/1.1\r\n")
        conns.append(s); opened += 1
    time.sleep(2)
    for s in list(conns):
        try:
            s.send(b"X-Slow: 1\r\n")
            s.setblocking(False)
            if s.recv(1) == b"":
                raise OSError
        except BlockingIOError:
            pass
        except OSError:
            conns.remove(s); ended += 1
        s.setblocking(True)
print(opened, ended)
PY
$NOBODY /usr/bin/python3 "$T/slow.py" "$MPORT" 16 12 >"$T/slow.out" 2>&1 & SLOW=$!; WORKLOAD_PIDS+=($SLOW)
sleep 1
worst=0; bad=0
for i in $(seq 10); do
	s=$(date +%s%N); code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$M"); e=$(date +%s%N)
	ms=$(( (e - s) / 1000000 )); [ $ms -gt $worst ] && worst=$ms
	[ "$code" = 200 ] || bad=$((bad + 1))
	sleep 0.8
done
wait $SLOW
[ $bad = 0 ] && [ $worst -lt 1000 ] && pass "10 scrapes beside 16 slow connections: all 200, slowest ${worst} ms" ||
	fail "root's scrapes: $bad failed, slowest ${worst} ms"
read -r opened ended <"$T/slow.out"
[ "${ended:-0}" -ge 12 ] && pass "nobody's slow connections were ended: $ended of $opened ($(status_json | jq -c '.agent.counters | {metrics_refused, metrics_timed_out}'))" ||
	fail "slow connections ended: $(cat "$T/slow.out")"
stop_agent

# 4. on a Unix socket: a user holds at most 4 connections
start_agent --soft-timeout 60 --hard-timeout 300 --action report --metrics-listen "unix:$T/metrics.sock" || exit 1
[ "$(curl -s --unix-socket "$T/metrics.sock" -o /dev/null -w '%{http_code}' http://x/metrics)" = 200 ] &&
	pass "unix:PATH serves /metrics" || fail "unix socket scrape failed"
cat >"$T/hold.py" <<'PY'
import socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
cs = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX); s.connect(path); cs.append(s)
time.sleep(1)
alive = 0
for s in cs:
    s.setblocking(False)
    try:
        alive += s.recv(1) != b""
    except BlockingIOError:
        alive += 1
    except OSError:
        pass
print(alive)
PY
A=$(as_nobody /usr/bin/python3 "$T/hold.py" "$T/metrics.sock" 8)
[ "$A" = 4 ] && pass "nobody holds 4 of 8 connections on the Unix socket" || fail "nobody holds $A of 8"
finish
