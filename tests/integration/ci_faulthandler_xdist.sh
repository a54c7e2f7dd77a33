#!/bin/bash
# time-limit: 150
# ftbpf-ci's diagnosis as CI logs and their parsers expect it (issues 20, 24): Python stacks in
# faulthandler's layout, line for line what faulthandler itself dumps of the same hung process
# (thread ids included); each thread its own stack in --report; under pytest-xdist the hung
# test named per worker; and in a `make check` whose helper server waits in accept(2), the
# headline names the deadlocked test program, not the server (nor make, nor the shell).
. "$(dirname "$0")/lib.sh"
CI=$B/ftbpf-ci
cd "$T" || exit 1

# ---- faulthandler's own dump against ours: Debian's 3.11, and 3.12 / 3.13 where the host has
# them (pyenv builds, /usr/local; their layouts come from CPython's headers) ----
cat >"$T/hang.py" <<'EOF'
import faulthandler, sys, threading, time

def reader():
    time.sleep(3600)

def train():
    time.sleep(3600)

threading.Thread(target=reader, daemon=True).start()
time.sleep(0.3)
faulthandler.dump_traceback_later(1.5, exit=False, file=open(sys.argv[1], "w"))
train()
EOF
cat >"$T/compare.py" <<'EOF'
# the dump faulthandler wrote, thread by thread, must appear verbatim in ftbpf-ci's output
import re, sys
theirs = open(sys.argv[1]).read().split("\n\n")
ours = open(sys.argv[2]).read()
# faulthandler starts with "Timeout (0:00:01.500000)!": its own line, not a stack's
blocks = ["\n".join(l for l in b.strip("\n").split("\n") if not l.startswith("Timeout (")) for b in theirs if b.strip()]
assert len(blocks) == 2, blocks
for b in blocks:
    lines = b.split("\n")
    assert re.match(r"^Thread 0x[0-9a-f]{16} \(most recent call first\):$", lines[0]), lines[0]
    assert all(re.match(r'^  File ".*", line \d+ in .+$', l) for l in lines[1:]), lines
    assert b in ours, "not in ours:\n" + b
EOF
PYS=(/usr/bin/python3)
for py in /usr/bin/python3.1[23] /usr/local/bin/python3.1[23] "$HOME"/.pyenv/versions/3.1[23]*/bin/python3.1[23]; do
	[ -x "$py" ] && PYS+=("$py")
done
[ ${#PYS[@]} -gt 1 ] || log "no CPython 3.12 or 3.13 on this host: only 3.11 checked"
for py in "${PYS[@]}"; do
	V=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	rm -f "$T/faulthandler.txt"
	"$CI" --hang-timeout 3 --grace 1 --report "$T/fh.json" -- "$py" "$T/hang.py" "$T/faulthandler.txt" >/dev/null 2>"$T/fh.err"; rc=$?
	[ $rc -eq 124 ] && [ -s "$T/faulthandler.txt" ] && jq -e --arg v "$V" '[.processes[] | select(.cause)][0].python_version == $v' "$T/fh.json" >/dev/null &&
		pass "CPython $V ($py): hang caught, version read; faulthandler dumped its own view too" ||
		fail "CPython $V: rc=$rc $(jq -c '[.processes[] | {python_version, python_stack_error}]' "$T/fh.json" 2>/dev/null) $(head -3 "$T/fh.err")"
	/usr/bin/python3 "$T/compare.py" "$T/faulthandler.txt" "$T/fh.err" &&
		pass "CPython $V: ftbpf-ci's Python stacks are faulthandler's own dump, line for line (thread ids too)" ||
		fail "CPython $V: layout differs: $(cat "$T/faulthandler.txt"; grep -A8 'faulthandler' "$T/fh.err")"
done
jq -e '[.processes[] | select(.cause)][0] | (.python_threads | length) == 2 and ([.python_threads[] | .stack[0].function] | sort) == ["reader", "train"] and (.python_stack[0].function == "train") and ([.python_threads[] | .tid > 0 and (.thread_id | startswith("0x"))] | all)' "$T/fh.json" >/dev/null &&
	pass "--report: each thread its own stack, with thread id, tid and name" || fail "report threads: $(jq -c '[.processes[] | select(.cause)][0].python_threads' "$T/fh.json" | head -c 600)"

# ---- pytest-xdist: the hung test of each worker ----
if /usr/bin/python3 -c 'import xdist' 2>/dev/null; then
	cat >"$T/test_two.py" <<'EOF'
import threading, time


def test_sleeps():
    time.sleep(3600)


def test_waits_forever():
    threading.Event().wait()
EOF
	"$CI" --hang-timeout 5 --grace 2 --report "$T/x.json" -- /usr/bin/python3 -m pytest -q -p no:cacheprovider -n 2 "$T/test_two.py" >/dev/null 2>"$T/x.err"; rc=$?
	[ $rc -eq 124 ] && pass "xdist: hang caught" || fail "xdist: rc=$rc"
	jq -e '[.tests[] | select(.xdist_worker)] | map(.test) | sort == ["test_two.py::test_sleeps", "test_two.py::test_waits_forever"]' "$T/x.json" >/dev/null &&
		pass "xdist: both workers' hung tests named: $(jq -c '[.tests[] | {test: (.test | split("/") | last), pid, line}]' "$T/x.json")" ||
		fail "xdist tests: $(jq -c .tests "$T/x.json")"
	[ "$(grep -c "^ftbpf-ci: hung tests: .*test_two.py::test_.*(pytest-xdist worker)" "$T/x.err")" -eq 2 ] &&
		pass "xdist: the headline names each worker's test" || fail "xdist headline: $(grep 'hung test' "$T/x.err")"
else
	fail "xdist: python3-pytest-xdist is not installed (make deps installs it)"
fi

# ---- make check: a helper server in accept(2) and a deadlocked test ----
cat >"$T/server.py" <<'EOF'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
s.accept()
EOF
cp "$B/workloads/deadlock" "$T/deadlock"
printf 'check:\n\t/usr/bin/python3 server.py & sleep 0.5; ./deadlock\n' >"$T/Makefile"
"$CI" --hang-timeout 4 --grace 1 --report "$T/mk.json" -- make -s check >/dev/null 2>"$T/mk.err"; rc=$?
[ $rc -eq 124 ] && jq -e '[.processes[] | select(.cause)][0].comm == "deadlock"' "$T/mk.json" >/dev/null &&
	grep -q "most likely cause: pid [0-9]* (deadlock)" "$T/mk.err" &&
	pass "make check: the headline names the deadlock, not the server waiting in accept: $(grep 'most likely' "$T/mk.err")" ||
	fail "make check: rc=$rc $(grep 'most likely' "$T/mk.err"); $(jq -c '[.processes[] | {comm, syscall, cause}]' "$T/mk.json")"
finish
