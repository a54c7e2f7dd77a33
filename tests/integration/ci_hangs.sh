#!/bin/bash
# ftbpf-ci (issue #5): runs a command, catches a hang, explains it, fails cleanly.
. "$(dirname "$0")/lib.sh"
CI=$B/ftbpf-ci
cd "$T" || exit 1

# a command that passes and one that fails with 3: codes and output unchanged, nothing added
"$CI" -- sh -c 'echo out; echo err >&2; exit 0' >"$T/p.out" 2>"$T/p.err"; rc=$?
[ $rc -eq 0 ] && [ "$(cat "$T/p.out")" = out ] && [ "$(cat "$T/p.err")" = err ] &&
	pass "passing command: code 0, output unchanged" || fail "pass: rc=$rc out=$(cat "$T/p.out") err=$(cat "$T/p.err")"
"$CI" --junit "$T/f.xml" -- sh -c 'echo three; exit 3' >"$T/f.out" 2>"$T/f.err"; rc=$?
[ $rc -eq 3 ] && [ "$(cat "$T/f.out")" = three ] && [ ! -s "$T/f.err" ] &&
	pass "failing command: code 3, output unchanged" || fail "fail: rc=$rc $(cat "$T/f.err")"
grep -q 'failure type="exit" message="exit code 3"' "$T/f.xml" && pass "JUnit: exit-code failure" || fail "junit: $(cat "$T/f.xml")"
printf 'line1\nline2\n' | "$CI" -- cat >"$T/s.out"; [ "$(cat "$T/s.out")" = "$(printf 'line1\nline2')" ] &&
	pass "stdin passes through" || fail "stdin"
"$CI" -- /nonexistent/cmd 2>"$T/nf.err"; rc=$?
[ $rc -eq 127 ] && grep -q 'No such file' "$T/nf.err" && pass "command not found: 127" || fail "not found: rc=$rc"

"$CI" --hang-timeout abc -- true 2>"$T/bad.err"; rc=$?
[ $rc -eq 122 ] && grep -q "not a number of seconds" "$T/bad.err" && pass "bad option: clear error, 122" || fail "bad option: rc=$rc $(cat "$T/bad.err")"
"$CI" --frobnicate -- true 2>"$T/bad2.err"; rc=$?
[ $rc -eq 122 ] && grep -q "unknown option" "$T/bad2.err" && pass "unknown option: 122" || fail "unknown option: rc=$rc"
"$CI" --help | grep -q -- '--hang-timeout' && pass "--help" || fail "--help"

# a C program deadlocked between two threads
"$CI" --hang-timeout 3 --grace 2 --report "$T/d.json" --junit "$T/d.xml" -- "$B/workloads/deadlock" >"$T/d.out" 2>"$T/d.err"; rc=$?
[ $rc -eq 124 ] && pass "deadlock: hang detected, exit code 124" || fail "deadlock: rc=$rc $(tail -3 "$T/d.err")"
grep -q "HANG: no progress in the process tree" "$T/d.err" && pass "deadlock: diagnosis printed" || fail "deadlock: no diagnosis"
jq -e '.verdict == "hang" and .watch == "bpf" and (.processes | length) == 1 and .processes[0].cause and .processes[0].syscall == "futex"' "$T/d.json" >/dev/null &&
	pass "deadlock: report names the process, blocked in futex" || fail "deadlock report: $(jq -c '{verdict, watch, p: [.processes[] | {pid, cause, syscall}]}' "$T/d.json")"
jq -e '[.processes[0].user_stacks[].frames[]] | (map(test("take_ab")) | any) and (map(test("take_ba")) | any) and (map(test("pthread_mutex_lock")) | any)' "$T/d.json" >/dev/null &&
	pass "deadlock: user stacks (libdw) show both threads in pthread_mutex_lock" || fail "deadlock: user stacks: $(jq -c '.processes[0].user_stacks' "$T/d.json" | head -c 600)"
jq -e '.processes[0].kernel_stack | map(test("futex")) | any' "$T/d.json" >/dev/null && pass "deadlock: kernel stack" || fail "deadlock: kernel stack"
grep -q '<failure type="hang"' "$T/d.xml" && grep -q 'take_ab' "$T/d.xml" && pass "deadlock: JUnit failure with the diagnosis" || fail "deadlock: junit"

# a hanging pytest test: the report names the test file and line
cat >"$T/test_hang.py" <<'PY'
import time


def test_fine():
    assert True


def test_hangs():
    time.sleep(3600)
PY
"$CI" --hang-timeout 4 --grace 2 --report "$T/py.json" --junit "$T/py.xml" -- /usr/bin/python3 -m pytest -q -p no:cacheprovider "$T/test_hang.py" >"$T/py.out" 2>"$T/py.err"; rc=$?
[ $rc -eq 124 ] && pass "pytest: hang detected" || fail "pytest: rc=$rc"
jq -e "[.processes[] | select(.cause) | .python_stack[0] | .file == \"$T/test_hang.py\" and .line == 9 and .function == \"test_hangs\"] | any" "$T/py.json" >/dev/null &&
	pass "pytest: Python stack names test_hang.py line 9, test_hangs" || fail "pytest: $(jq -c '[.processes[] | {cause, py: .python_stack[0:2], err: .python_stack_error}]' "$T/py.json")"
grep -qx "  File \"$T/test_hang.py\", line 9 in test_hangs" "$T/py.err" && pass "pytest: printed in faulthandler's layout" || fail "pytest: text"
grep -q "^ftbpf-ci: hung test: test_hang.py::test_hangs (line 9)" "$T/py.err" && pass "pytest: the headline names the hung test" || fail "pytest: headline: $(grep 'hung test' "$T/py.err")"
# the id is pytest's own (relative to its rootdir), and the JUnit case is the hung test
ID=$(jq -r '.tests[0].test' "$T/py.json")
/usr/bin/python3 -m pytest --collect-only -q -p no:cacheprovider "$T/test_hang.py" 2>/dev/null | grep -qxF "$ID" &&
	pass "pytest: the id is the one pytest collects ($ID)" || fail "pytest: id $ID, pytest's: $(/usr/bin/python3 -m pytest --collect-only -q -p no:cacheprovider "$T/test_hang.py" 2>&1 | head -3)"
grep -q '<testsuite name="ftbpf-ci" tests="1" failures="1"' "$T/py.xml" &&
	grep -q '<testcase classname="test_hang" name="test_hangs"' "$T/py.xml" && grep -q '<failure type="hang" message="hang: test_hang.py::test_hangs hung' "$T/py.xml" &&
	pass "pytest: JUnit's failing case is the hung test, named as pytest's --junitxml names it" || fail "pytest: junit: $(head -c 600 "$T/py.xml")"

# a grandchild that hangs after its parent exits (reparented to ftbpf-ci)
"$CI" --hang-timeout 3 --grace 2 --report "$T/g.json" -- sh -c 'sh -c "exec sleep 3600" & echo parent-exits' >"$T/g.out" 2>"$T/g.err"; rc=$?
[ $rc -eq 124 ] && grep -q parent-exits "$T/g.out" && pass "orphaned grandchild: hang detected after its parent exited" || fail "grandchild: rc=$rc"
jq -e '[.processes[] | select(.cause) | .comm == "sleep" and .syscall == "clock_nanosleep"] | any' "$T/g.json" >/dev/null &&
	pass "orphaned grandchild: named" || fail "grandchild: $(jq -c '[.processes[] | {pid, ppid, comm, cause}]' "$T/g.json")"
jq -e '.why | test("^pid [0-9]+, the run.s only process: ")' "$T/g.json" >/dev/null &&
	pass "orphaned grandchild: the why fits one process: $(jq -r .why "$T/g.json" | cut -c1-80)" || fail "grandchild: why: $(jq -r .why "$T/g.json")"
pgrep -f 'slee[p] 3600' >/dev/null && fail "grandchild left running" || pass "orphaned grandchild: terminated"

# a busy loop
"$CI" --hang-timeout 4 --grace 1 --report "$T/b.json" -- sh -c 'while :; do :; done' 2>"$T/b.err"; rc=$?
[ $rc -eq 124 ] && jq -e '[.processes[] | select(.cause) | .state == "spinning"] | any' "$T/b.json" >/dev/null &&
	pass "busy loop: hang, the process is spinning" || fail "busy loop: rc=$rc $(jq -c '[.processes[] | {state, reason}]' "$T/b.json")"

# --timeout bounds a run that keeps making progress (a process started every 0.1 s)
"$CI" --timeout 2 --hang-timeout 60 --grace 1 -- sh -c 'while :; do sleep 0.1; done' 2>"$T/t.err"; rc=$?
[ $rc -eq 125 ] && grep -q TIMEOUT "$T/t.err" && pass "--timeout: exit code 125" || fail "timeout: rc=$rc"

# SIGINT to ftbpf-ci ends the tree cleanly
"$CI" --grace 2 -- sh -c 'sleep 3600 & sleep 3600; wait' & CIPID=$!
wait_until 5 pgrep -f 'slee[p] 3600' >/dev/null
sleep 0.5
kill -INT $CIPID; wait $CIPID; rc=$?
[ $rc -eq 130 ] && pass "SIGINT: forwarded, exit 130" || fail "SIGINT: rc=$rc"
wait_until 3 bash -c '! pgrep -f "slee[p] 3600" >/dev/null' && pass "SIGINT: no process left" || fail "SIGINT: processes left: $(pgrep -af 'slee[p] 3600')"

# the unprivileged fallback (/proc)
if id nobody >/dev/null 2>&1; then
	mkdir -p "$T/u" && chmod 777 "$T/u"
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$CI" --hang-timeout 3 --grace 1 --report "$T/u/u.json" -- sleep 3600 >"$T/u.out" 2>"$T/u.err"; rc=$?
	[ $rc -eq 124 ] && grep -q 'falling back to /proc polling' "$T/u.err" &&
		pass "unprivileged: says it falls back to /proc, hang detected" || fail "unprivileged: rc=$rc $(head -3 "$T/u.err")"
	jq -e '.watch == "proc" and ([.processes[] | select(.cause) | .comm == "sleep" and .syscall == "clock_nanosleep"] | any)' "$T/u/u.json" >/dev/null &&
		pass "unprivileged: process named, syscall from /proc" || fail "unprivileged report: $(jq -c . "$T/u/u.json" | head -c 400)"
fi
ls /sys/fs/bpf | grep -q ftbpf-ci && fail "pins left in /sys/fs/bpf" || pass "no BPF pins left behind"
finish
