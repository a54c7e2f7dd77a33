#!/bin/bash
# time-limit: 90
# The agent's log as a journal and a terminal hold it: Debian's own systemd-journald (in a
# private mount namespace, its journal in the test's directory) takes the agent's stderr as a
# service's stream (JOURNAL_STREAM set as systemd sets it). Each event is one structured entry:
# MESSAGE a short human line (the hang: job, time without progress, culprit), PRIORITY 4 for a
# hang, FTBPF_EVENT / FTBPF_JOB fields, and FTBPF_EVENT_JSON the whole event, byte for byte the
# log file's line, however long (the hang with every rank's kernel stack: several KB, before cut
# at 1 KB and no longer JSON); journalctl reads them back. No line of the stream is JSON; the
# ready line says the soft timeout as `ftbpf status` and ftbpf-top do.
. "$(dirname "$0")/lib.sh"
command -v journalctl >/dev/null && [ -x /lib/systemd/systemd-journald ] || { log "SKIP: no systemd-journald"; finish; }
J=$T/journal
mkdir -p "$J" "$T/run"
AGENT_ARGS="--socket $SOCK --state-dir $T/state --pin-dir $PIN --log-file $LOG --soft-timeout 3 --action report"
cat >"$T/ns.sh" <<NS
mount -t tmpfs tmpfs /run/systemd 2>/dev/null || { mkdir -p /run/systemd && mount -t tmpfs tmpfs /run/systemd; }
mkdir -p /run/log/journal && mount --bind "$J" /run/log/journal
[ -d /var/log/journal ] && mount -t tmpfs tmpfs /var/log/journal
/lib/systemd/systemd-journald & JD=\$!
for i in \$(seq 50); do [ -S /run/systemd/journal/stdout ] && break; sleep 0.1; done
systemd-cat -t ftbpfd-stream sh -c 'export JOURNAL_STREAM=\$(stat -L -c %d:%i /proc/self/fd/2); exec "$FTBPFD" $AGENT_ARGS' &
AG=\$!
while [ ! -e "$T/stop" ]; do sleep 0.2; done
kill \$AG; wait \$AG
journalctl --directory="$J" --sync >/dev/null 2>&1; sleep 0.5
kill \$JD; wait \$JD
touch "$T/ns.done"
NS
unshare -m --propagation private bash "$T/ns.sh" >"$T/ns.out" 2>&1 &
NSPID=$!
WORKLOAD_PIDS+=($NSPID)
wait_until 30 "$B/ftbpf" --socket "$SOCK" version >/dev/null 2>&1 && pass "the agent runs with its stderr on journald's stream" ||
	{ fail "no agent: $(cat "$T/ns.out")"; touch "$T/stop"; finish; }
ring_job jhang 4 --fault sleep --fault-rank 2 --fault-after 1
wait_until 20 has_event hang '.job == "jhang"' && pass "jhang is hung" || fail "no hang"
sleep 1
jr() { journalctl --directory="$J" --no-pager --all "$@"; } # --all: fields over 4 KB too
wait_until 10 bash -c "journalctl --directory='$J' --no-pager -o json FTBPF_EVENT=hang 2>/dev/null | grep -q ." ||
	fail "no hang entry in the journal: $(jr -n 20 2>&1 | tail -5)"
E=$(jr -o json FTBPF_EVENT=hang | tail -1)
FILE=$(grep "\"type\":\"hang\"" "$LOG" | tail -1) # the raw line, not re-encoded
log "journal: $(echo "$E" | jq -r .MESSAGE)"
echo "$E" | jq -e '.PRIORITY == "4" and .SYSLOG_IDENTIFIER == "ftbpfd" and .FTBPF_JOB == "jhang" and
	(.MESSAGE | test("^hang job jhang: no progress for [0-9.]+s, culprit rank 2; .*rank 2 is not")) and
	(.MESSAGE | length) < 400' >/dev/null &&
	pass "the hang: one short line at priority 4 (warning), FTBPF_EVENT and FTBPF_JOB fields" ||
	fail "hang entry: $(echo "$E" | jq -c '{MESSAGE, PRIORITY, SYSLOG_IDENTIFIER, FTBPF_JOB}')"
JS=$(echo "$E" | jq -r .FTBPF_EVENT_JSON)
[ "$JS" = "$FILE" ] && [ "${#JS}" -gt 1500 ] &&
	pass "FTBPF_EVENT_JSON is the log file's line byte for byte (${#JS} bytes), nothing cut" ||
	fail "FTBPF_EVENT_JSON: ${#JS} bytes, file ${#FILE}; $(echo "$JS" | head -c 200)"
echo "$JS" | jq -e '.type == "hang" and (.ranks | length) == 4 and (.ranks[0].kernel_stack | length) > 0' >/dev/null &&
	pass "... and valid JSON with every rank and its kernel stack" || fail "not the whole hang: $(echo "$JS" | head -c 300)"
N=$(jr -o json FTBPF_EVENT=adopt | grep -c .)
[ "$N" -eq 4 ] && pass "every event is an entry (4 adopt entries, with FTBPF_JOB, FTBPF_RANK, FTBPF_PID)" || fail "$N adopt entries"
jr -o json FTBPF_EVENT=adopt | jq -e -s 'map(.FTBPF_RANK) | sort == ["0","1","2","3"]' >/dev/null || fail "adopt entries' ranks"
STREAM=$(jr -o json _TRANSPORT=stdout)
[ -n "$STREAM" ] && ! echo "$STREAM" | jq -r .MESSAGE | grep -q '{"' &&
	pass "no line of the stderr stream is JSON ($(echo "$STREAM" | grep -c .) lines)" || fail "stream: $(echo "$STREAM" | jq -r .MESSAGE | grep '{"' | head -2 | cut -c1-150)"
READY=$(echo "$STREAM" | jq -r .MESSAGE | grep -m1 ' ready on ')
TOP=$("$B/ftbpf-top" --socket "$SOCK" --once | head -1)
echo "$READY" | grep -q "(soft 3s, hard 600s" && ftbpf status | head -1 | grep -q "soft 3s, hard 600s" &&
	echo "$TOP" | grep -q "soft 3s hard 600s" &&
	pass "the soft timeout in one wording: '$READY', ftbpf status and ftbpf-top" || fail "ready: '$READY' / $(ftbpf status | head -1) / $TOP"
touch "$T/stop"
wait_until 15 test -e "$T/ns.done" || fail "the namespace did not end: $(tail -3 "$T/ns.out")"
finish
