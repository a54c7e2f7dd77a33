#!/bin/bash
# time-limit: 180
# The first run, as the README tells it: `make run` started in the background of a terminal
# (a pty, as `script` makes) says what to type next, and then the terminal gets human lines
# only (the hang with its culprit), never a raw JSON event line; the quick tour's torch job
# (docs/examples/ddp_hang.py, two DDP ranks launched as torchrun would, rank 1 stuck in
# load_batch) is flagged with rank 1 as culprit and its Python stack, through the tools on the
# PATH the hint gives.
. "$(dirname "$0")/lib.sh"
ARGS="--socket $SOCK --state-dir $T/state --pin-dir $PIN --log-file $LOG --soft-timeout 10 --action report"
script -qfec "make -s -C '$ROOT' run RUN_ARGS='$ARGS'" "$T/tty.log" </dev/null >/dev/null 2>&1 &
SCRIPT=$!; WORKLOAD_PIDS+=($SCRIPT)
wait_until 60 "$B/ftbpf" --socket "$SOCK" version >/dev/null 2>&1 || { fail "make run: no agent: $(tail -5 "$T/tty.log")"; finish; }
AGENT_PID=$(ftbpf status --json | jq .agent.pid)
grep -q "export PATH=$B:" "$T/tty.log" && grep -q 'ftbpf status' "$T/tty.log" &&
	pass "make run says what to type next: $(grep -c . "$T/tty.log") lines, the PATH and ftbpf status" || fail "no hint: $(head -12 "$T/tty.log")"
# the tour, as the README shows it (a free port instead of 29500)
PORT=$((29000 + RANDOM % 900))
cd "$ROOT" || exit 1
export PATH=$B:$PATH
for r in 0 1; do
	MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT WORLD_SIZE=2 RANK=$r \
		/usr/bin/python3 docs/examples/ddp_hang.py --hang-rank 1 --hang-after 5 >"$T/rank$r.out" 2>&1 &
	WORKLOAD_PIDS+=($!)
	disown $!
done
# torchrun's loopback master names no host: the job is this host's, its node after the '@'
JOB="torch:127.0.0.1:$PORT@"
wait_until 90 bash -c "FTBPF_SOCKET='$SOCK' ftbpf status --json | jq -e '.jobs[] | select(.job | startswith(\"$JOB\")) | .hung' >/dev/null" &&
	pass "the tour's torch job is flagged hung (soft 10 s)" || fail "not hung: $(FTBPF_SOCKET=$SOCK ftbpf status)"
JOB=$(FTBPF_SOCKET=$SOCK ftbpf status --json | jq -r ".jobs[] | select(.job | startswith(\"$JOB\")) | .job" | head -1)
log "job $JOB"
FTBPF_SOCKET=$SOCK ftbpf status --json | jq -e ".jobs[] | select(.job==\"$JOB\") | .culprit_ranks == [1]" >/dev/null &&
	pass "culprit: rank 1" || fail "culprit: $(FTBPF_SOCKET=$SOCK ftbpf status --json | jq -c '.jobs')"
FTBPF_SOCKET=$SOCK ftbpf status >"$T/status.txt" && log "ftbpf status:" && sed 's/^/    /' "$T/status.txt"
CPID=$(FTBPF_SOCKET=$SOCK ftbpf status --json | jq ".jobs[] | select(.job==\"$JOB\") | .culprits[0]")
FTBPF_SOCKET=$SOCK ftbpf explain "$CPID" >"$T/explain.txt" 2>&1 && log "ftbpf explain $CPID: $(wc -l <"$T/explain.txt") lines" || fail "explain $CPID: $(cat "$T/explain.txt")"
jq -s -e "[.[] | select(.type==\"hang\" and .job==\"$JOB\") | .ranks[] | select(.rank==1) | .python_stack[]? | select(.function==\"load_batch\")] | length > 0" "$LOG" >/dev/null &&
	pass "the hang report has rank 1's Python stack (load_batch)" || fail "no load_batch in the hang report"
wait_until 5 grep -q "hang job $JOB" "$T/tty.log" && pass "the terminal got the hang as a line: $(grep -m1 "hang job" "$T/tty.log" | cut -c1-150)" ||
	fail "no hang line on the terminal: $(tail -5 "$T/tty.log")"
JSON=$(grep -c '{"type"' "$T/tty.log")
[ "$JSON" -eq 0 ] && pass "no raw JSON event line on the terminal ($(grep -c . "$T/tty.log") lines in all)" || fail "$JSON JSON lines on the terminal: $(grep -m2 '{"type"' "$T/tty.log" | cut -c1-120)"
[ "$(wc -l <"$LOG")" -gt 3 ] && pass "the event log has every event ($(wc -l <"$LOG"))" || fail "event log: $(wc -l <"$LOG")"
stop_agent
wait_until 10 bash -c "! kill -0 $SCRIPT 2>/dev/null" && pass "make run ends with the agent" || fail "make run still running"
finish
