#!/bin/bash
# time-limit: 180
# The newcomer's path, README.md's first run and quick tour followed as written, each statement
# checked: `make run` started in the background of a terminal (a pty, as `script` makes) says
# what to type next, and then the terminal gets human lines only (the hang with its culprit, one
# line), never a raw JSON event line; the tour's torch job (docs/examples/ddp_hang.py, two DDP
# ranks launched as torchrun would, rank 1 stuck in load_batch after 20 s, as the README has it)
# is flagged at the 10 s soft timeout of its last progress ("20 s in, then the 10 s soft
# timeout"), rank 1 the culprit; `ftbpf status` shows the header, the job row and its why line,
# the ranks' table (rank 0 in futex, rank 1 in clock_nanosleep, the culprit) as the README
# does; `ftbpf explain` the culprit's threads and the other rank; the hang report rank 1's
# Python stack (load_batch); the job id carries the host's node name.
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
		/usr/bin/python3 docs/examples/ddp_hang.py --hang-rank 1 --hang-after 20 >"$T/rank$r.out" 2>&1 &
	WORKLOAD_PIDS+=($!)
	disown $!
done
# torchrun's loopback master names no host: the job is this host's, its node after the '@'
JOB="torch:127.0.0.1:$PORT@"
STARTED=$(date +%s)
wait_until 100 bash -c "FTBPF_SOCKET='$SOCK' ftbpf status --json | jq -e '.jobs[] | select(.job | startswith(\"$JOB\")) | .hung' >/dev/null" &&
	pass "the tour's torch job is flagged hung (soft 10 s)" || fail "not hung: $(FTBPF_SOCKET=$SOCK ftbpf status)"
# "once the hang is named: 20 s in, then the 10 s soft timeout" (and python's start before it)
H=$(jq -c "select(.type==\"hang\" and (.job | startswith(\"$JOB\")))" "$LOG" | head -1)
AT=$(date -d "$(echo "$H" | jq -r .ts)" +%s)
NP=$(echo "$H" | jq '.no_progress_s // 0')
awk -v n="$NP" 'BEGIN{exit !(n >= 10 && n <= 12)}' && [ $((AT - STARTED)) -ge 30 ] && [ $((AT - STARTED)) -le 50 ] &&
	pass "named $((AT - STARTED)) s after the ranks started (20 s in, then 10 s; python's start before), ${NP} s without progress" ||
	fail "named $((AT - STARTED)) s after the start, ${NP} s without progress (the README: 20 s in, then the 10 s soft timeout)"
JOB=$(FTBPF_SOCKET=$SOCK ftbpf status --json | jq -r ".jobs[] | select(.job | startswith(\"$JOB\")) | .job" | head -1)
log "job $JOB"
FTBPF_SOCKET=$SOCK ftbpf status --json | jq -e ".jobs[] | select(.job==\"$JOB\") | .culprit_ranks == [1]" >/dev/null &&
	pass "culprit: rank 1" || fail "culprit: $(FTBPF_SOCKET=$SOCK ftbpf status --json | jq -c '.jobs')"
FTBPF_SOCKET=$SOCK ftbpf status >"$T/status.txt" && log "ftbpf status:" && sed 's/^/    /' "$T/status.txt"
# the README's status, line by line (its figures: soft 10s, hard 600s (report), rank 1, the why)
grep -qE "^ftbpfd pid [0-9]+, version [0-9.]+, up [0-9]+s, programs [a-z_]+, soft 10s, hard 600s \(report\)" "$T/status.txt" &&
	pass "status header as in the README: $(head -1 "$T/status.txt")" || fail "status header: $(head -1 "$T/status.txt")"
grep -E "^$JOB +2 +2 hung +[0-9.]+s +rank 1 on ${JOB##*@}\$" "$T/status.txt" >/dev/null &&
	pass "the job's row: 2 ranks, 2 live, hung, rank 1 on this host" || fail "job row: $(grep "^torch" "$T/status.txt" | head -1)"
grep -qE "^  why: rank 1 is where no other rank waits: blocked in clock_nanosleep for [0-9.]+s \(wchan hrtimer_nanosleep\)" "$T/status.txt" &&
	pass "the why line: $(grep -m1 "why:" "$T/status.txt" | cut -c1-110)" || fail "why: $(grep -m1 "why:" "$T/status.txt")"
grep -qE "^$JOB +0 +[0-9]+ blocked +[0-9.]+s yes +- +blocked in futex" "$T/status.txt" &&
	grep -qE "^$JOB +1 +[0-9]+ blocked +[0-9.]+s yes +YES +blocked in clock_nanosleep" "$T/status.txt" &&
	pass "the ranks' table: rank 0 waits in futex, rank 1 in clock_nanosleep, the culprit" ||
	fail "ranks' table: $(grep -A3 "^JOB *RANK" "$T/status.txt")"
case "$JOB" in *@"$(hostname)") pass "the job id carries the host's node name: $JOB" ;; *) fail "job id $JOB (the node: $(hostname))" ;; esac
CPID=$(FTBPF_SOCKET=$SOCK ftbpf status --json | jq ".jobs[] | select(.job==\"$JOB\") | .culprits[0]")
FTBPF_SOCKET=$SOCK ftbpf explain "$CPID" >"$T/explain.txt" 2>&1 && log "ftbpf explain $CPID: $(wc -l <"$T/explain.txt") lines" || fail "explain $CPID: $(cat "$T/explain.txt")"
grep -qE "^rank 1 of job $JOB, pid $CPID \(python3[^)]*\), uid 0" "$T/explain.txt" && grep -q "hung: yes; culprit: YES" "$T/explain.txt" &&
	grep -qE "^  tid $CPID .*syscall clock_nanosleep" "$T/explain.txt" && grep -qE "^  rank 0 pid [0-9]+ blocked +blocked in futex" "$T/explain.txt" &&
	pass "explain as in the README: the culprit's threads, syscall, and the other rank" || fail "explain: $(head -12 "$T/explain.txt")"
FTBPF_SOCKET=$SOCK ftbpf events --json | grep '"hang"' | grep -q load_batch &&
	pass "ftbpf events --json | grep '\"hang\"': the hang report, with load_batch" || fail "ftbpf events --json has no hang with load_batch"
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
