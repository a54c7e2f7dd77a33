#!/bin/bash
# time-limit: 120
# Python stacks of a CPython 3.11 that lives in a shared libpython (a C program embedding
# Debian's libpython3.11.so.1.0, as pyenv builds and the official python:3.11 images are): the
# version is read as 3.11 (it was "3.11." from the library's name, and refused); the hung rank's
# stacks are in the hang event, in `ftbpf explain`'s human output (faulthandler's layout) and in
# its --json, every thread with its own stack, thread id and name. CPython 3.12 and 3.13 too,
# where the host has them (not on a plain Debian 12).
. "$(dirname "$0")/lib.sh"
start_agent --soft-timeout 3 --hard-timeout 300 --action report || exit 1
cat >"$T/train.py" <<'EOF'
import threading, time

def prefetch():
    time.sleep(3600)

def load_batch():
    time.sleep(3600)

threading.Thread(target=prefetch, name="prefetch", daemon=True).start()
load_batch()
EOF
FTBPF_JOB=pyembed FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$B/workloads/pyembed" "$T/train.py" &
P=$!; WORKLOAD_PIDS+=($P)
wait_until 10 grep -q 'libpython3.11.so.1.0' "/proc/$P/maps" && ! grep -q 'python3.11$' "/proc/$P/maps" &&
	pass "the rank runs CPython from libpython3.11.so.1.0 (not a python executable)" || fail "no shared libpython in $P's maps"
wait_until 20 has_event hang '.job=="pyembed"' || fail "no hang event"
HANG=$(events_of hang | jq -c 'select(.job=="pyembed")' | head -1)
echo "$HANG" | jq -e --arg f "$T/train.py" '.ranks[0] | .python_version == "3.11" and .python_stack[0].file == $f and .python_stack[0].line == 7 and .python_stack[0].function == "load_batch" and .python_stack[1].function == "<module>"' >/dev/null &&
	pass "hang event: CPython 3.11, main thread at train.py:7 load_batch" ||
	fail "hang event: $(echo "$HANG" | jq -c '.ranks[0] | {python_version, python_stack, python_stack_error}' | head -c 800)"
echo "$HANG" | jq -e '.ranks[0].python_threads | length == 2 and ([.[] | select(.stack[0].function == "prefetch" and .stack[0].line == 4)] | length == 1) and (map(.thread_id | test("^0x[0-9a-f]+$")) | all) and (map(.tid > 0) | all)' >/dev/null &&
	pass "hang event: both threads, each its own stack (prefetch at line 4), with thread ids" ||
	fail "threads: $(echo "$HANG" | jq -c '.ranks[0].python_threads' | head -c 800)"
S=$(date +%s%N)
ftbpf explain "$P" >"$T/explain.txt" 2>&1
E=$(( ($(date +%s%N) - S) / 1000000 ))
[ "$E" -lt 2500 ] && pass "explain answered in $E ms" || fail "explain took $E ms"
grep -q "^python stacks (CPython 3.11):" "$T/explain.txt" &&
	grep -qE '^  Thread 0x[0-9a-f]{16} \(most recent call first\):$' "$T/explain.txt" &&
	grep -qF "    File \"$T/train.py\", line 7 in load_batch" "$T/explain.txt" &&
	grep -qF "    File \"$T/train.py\", line 4 in prefetch" "$T/explain.txt" &&
	pass "ftbpf explain (human output): both threads in faulthandler's layout" ||
	fail "explain: $(cat "$T/explain.txt" | head -60)"
ftbpf explain "$P" --json | jq -e '.python_version == "3.11" and (.python_threads | length) == 2 and .python_stack[0].function == "load_batch"' >/dev/null &&
	pass "ftbpf explain --json: python_threads and python_stack" || fail "explain --json: $(ftbpf explain "$P" --json | jq -c '{python_version, python_stack_error}')"
# CPython 3.12 and 3.13 where the host has them (pyenv builds are shared-libpython builds too)
for py in /usr/bin/python3.1[23] /usr/local/bin/python3.1[23] "$HOME"/.pyenv/versions/3.1[23]*/bin/python3.1[23]; do
	[ -x "$py" ] || continue
	V=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	FTBPF_JOB=py$V FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$py" "$T/train.py" &
	Q=$!; WORKLOAD_PIDS+=($Q)
	wait_until 10 jq_status ".ranks[] | select(.pid == $Q)" || fail "CPython $V: not adopted"
	sleep 1
	ftbpf explain "$Q" --json >"$T/ex$V.json"
	jq -e --arg v "$V" --arg f "$T/train.py" '.python_version == $v and .python_stack[0].file == $f and .python_stack[0].line == 7 and .python_stack[0].function == "load_batch" and ([.python_threads[] | select(.stack[0].function == "prefetch" and .stack[0].line == 4)] | length == 1)' "$T/ex$V.json" >/dev/null &&
		pass "CPython $V ($py): explain has both threads' stacks (train.py:7 load_batch, :4 prefetch)" ||
		fail "CPython $V: $(jq -c '{python_version, python_stack_error, python_stack}' "$T/ex$V.json" | head -c 500)"
	kill -9 "$Q" 2>/dev/null
done
agent_alive && pass "agent alive" || fail "agent died"
finish
