#!/bin/bash
# time-limit: 120
# ftbpf-ci as pytest-timeout users expect (issue 24): settings from the environment for CI
# templates that fix the command line (flag > variable > default; a bad value is a clear error;
# the variables do not reach the command), and a process in a debugger is not a hang unless
# asked: a pdb prompt on a terminal (driven through a pty) and a process stopped by ptrace are
# left alone past --hang-timeout; --count-debugger / FTBPF_CI_COUNT_DEBUGGER=1 count them.
. "$(dirname "$0")/lib.sh"
CI=$B/ftbpf-ci
cd "$T" || exit 1

# ---- the environment ----
FTBPF_CI_HANG_TIMEOUT=2 FTBPF_CI_GRACE=1 FTBPF_CI_REPORT="$T/env.json" FTBPF_CI_HANG_EXIT_CODE=77 \
	"$CI" -- sleep 60 2>"$T/env.err"; rc=$?
[ $rc -eq 77 ] && jq -e '.hang_timeout_s == 2 and .verdict == "hang"' "$T/env.json" >/dev/null &&
	pass "FTBPF_CI_HANG_TIMEOUT=2, _GRACE, _REPORT, _HANG_EXIT_CODE=77 taken: exit 77 after a 2 s hang" ||
	fail "env: rc=$rc $(head -3 "$T/env.err")"
S=$(date +%s)
FTBPF_CI_HANG_TIMEOUT=1 "$CI" --hang-timeout 4 --grace 1 -- sleep 60 2>"$T/flag.err"; rc=$?
D=$(( $(date +%s) - S ))
[ $rc -eq 124 ] && [ $D -ge 4 ] && grep -q -- "--hang-timeout 4" "$T/flag.err" && pass "the flag wins over the variable (hang after ${D} s, not 1)" ||
	fail "precedence: rc=$rc after ${D} s"
for bad in "FTBPF_CI_HANG_TIMEOUT=abc" "FTBPF_CI_TIMEOUT=-1" "FTBPF_CI_HANG_EXIT_CODE=300" "FTBPF_CI_COUNT_DEBUGGER=maybe" "FTBPF_CI_HANG_TIMEOUT=0.1"; do
	env "$bad" "$CI" -- true 2>"$T/bad.err"; rc=$?
	[ $rc -eq 122 ] && grep -q "${bad%%=*}=" "$T/bad.err" && pass "$bad: a clear error, exit 122: $(head -1 "$T/bad.err")" ||
		fail "$bad: rc=$rc $(cat "$T/bad.err")"
done
FTBPF_CI_HANG_TIMEOUT= "$CI" -- true; [ $? -eq 0 ] && pass "an empty variable is unset" || fail "empty variable"
OUT=$(FTBPF_CI_TIMEOUT=30 FTBPF_CI_QUIET=1 "$CI" -- env)
echo "$OUT" | grep -q '^FTBPF_CI_' && fail "the command saw $(echo "$OUT" | grep '^FTBPF_CI_' | head -1)" ||
	pass "the FTBPF_CI_* variables do not reach the command"
FTBPF_CI_HANG_TIMEOUT=0 FTBPF_CI_TIMEOUT=3 "$CI" --grace 1 -- sleep 60 2>"$T/off.err"; rc=$?
[ $rc -eq 125 ] && pass "FTBPF_CI_HANG_TIMEOUT=0: no hang detection, --timeout still bounds the run (125)" || fail "hang timeout 0: rc=$rc"

# ---- pdb at a terminal, through a pty ----
cat >"$T/pdbt.py" <<'EOF'
x = 41
breakpoint()
print("after pdb", x + 1)
EOF
cat >"$T/drive.py" <<'EOF'
# Run argv[2:] on a pty; after argv[1] seconds answer the pdb prompt with "c"; print whether a
# prompt came, the exit code, and the tail of what the terminal showed.
import os, pty, select, sys, time
wait_s, argv = float(sys.argv[1]), sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
out = b""
def pump(t):
    global out
    end = time.time() + t
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                d = os.read(fd, 4096)
            except OSError:
                return
            if not d:
                return
            out += d
pump(wait_s)
prompt = b"(Pdb)" in out
os.write(fd, b"c\n")
pump(4)
_, st = os.waitpid(pid, 0)
print("prompt=%d rc=%d" % (prompt, os.waitstatus_to_exitcode(st)))
print(out.decode(errors="replace")[-400:])
EOF
/usr/bin/python3 "$T/drive.py" 6 "$CI" --hang-timeout 2 --grace 1 -- /usr/bin/python3 "$T/pdbt.py" >"$T/pdb.out" 2>&1
grep -q "prompt=1 rc=0" "$T/pdb.out" && grep -q "after pdb 42" "$T/pdb.out" && grep -q "waits at a terminal prompt" "$T/pdb.out" &&
	pass "a pdb prompt 6 s past a 2 s --hang-timeout is left alone; 'c' continues it, exit 0" || fail "pdb: $(cat "$T/pdb.out")"
FTBPF_CI_COUNT_DEBUGGER=1 /usr/bin/python3 "$T/drive.py" 6 "$CI" --hang-timeout 2 --grace 1 -- /usr/bin/python3 "$T/pdbt.py" >"$T/pdb2.out" 2>&1
grep -q "rc=124" "$T/pdb2.out" && pass "FTBPF_CI_COUNT_DEBUGGER=1: the pdb prompt is a hang (124)" || fail "count debugger: $(head -3 "$T/pdb2.out")"

# ---- a process stopped by ptrace (a debugger at a breakpoint) ----
"$CI" --hang-timeout 2 --grace 1 -- sh -c 'sleep 6.01; echo slept' >"$T/tr.out" 2>"$T/tr.err" & CIP=$!
wait_until 5 pgrep -f '^sleep 6.01$' >/dev/null; SP=$(pgrep -f '^sleep 6.01$' | head -1)
"$B/workloads/tracestop" "$SP" 8 >"$T/ts.out" 2>&1 & TS=$!
wait $CIP; rc=$?; wait $TS
[ $rc -eq 0 ] && grep -q slept "$T/tr.out" && grep -q "stopped by a debugger" "$T/tr.err" &&
	pass "a process in a ptrace stop for 8 s, 6 s past a 2 s --hang-timeout is left alone (exit 0)" ||
	fail "ptrace stop: rc=$rc $(cat "$T/ts.out" "$T/tr.err" | head -5)"
"$CI" --count-debugger --hang-timeout 2 --grace 1 -- sleep 30.01 >/dev/null 2>"$T/tr2.err" & CIP=$!
wait_until 5 pgrep -f '^sleep 30.01$' >/dev/null; SP=$(pgrep -f '^sleep 30.01$' | head -1)
"$B/workloads/tracestop" "$SP" 8 >/dev/null 2>&1 & TS=$!
wait $CIP; rc=$?; kill $TS 2>/dev/null; wait $TS 2>/dev/null
[ $rc -eq 124 ] && pass "--count-debugger: the ptrace-stopped process is a hang (124)" || fail "--count-debugger: rc=$rc"
finish
