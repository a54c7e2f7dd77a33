#!/bin/bash
# time-limit: 120
# The tools and the Python binding as scripts and training loops meet them:
#   CLI       --version everywhere; `ftbpf version` is a line, not JSON; a bad --limit and a bad
#             signal name are usage errors that name the value; no agent: exit 3 with a hint;
#             `ftbpf status --check` exits 0 when all is well and 4 when a job is hung
#   Python    fails open: with no agent, import is fast and does not import torch, ping, step,
#             timers and checkpoints are no-ops, said once on stderr; with an agent,
#             job_status() tells this rank's job, state and armed timers
. "$(dirname "$0")/lib.sh"
export PYTHONPATH=$B/python

# ---- CLI ----
for t in ftbpf ftbpf-ci ftbpf-top ftbpfd; do
	V=$("$B/$t" --version 2>&1); RC=$?
	[ $RC -eq 0 ] && echo "$V" | grep -q "0\.[0-9]" && pass "$t --version: $V" || fail "$t --version: rc $RC $V"
done
OUT=$("$B/ftbpf" --socket "$T/nope.sock" status 2>&1); RC=$?
[ $RC -eq 3 ] && echo "$OUT" | grep -q "Is the agent running" && echo "$OUT" | grep -q FTBPF_SOCKET &&
	pass "no agent: exit 3 with a hint (start it, or --socket/FTBPF_SOCKET)" || fail "no agent: rc $RC $OUT"
start_agent --soft-timeout 2 --hard-timeout 300 --action report || exit 1
OUT=$(ftbpf version); echo "$OUT" | grep -qE '^ftbpfd [0-9.]+ \(control protocol v1\); ftbpf ' &&
	pass "ftbpf version: $OUT" || fail "ftbpf version: $OUT"
ftbpf version --json | jq -e '.version' >/dev/null && pass "ftbpf version --json is JSON" || fail "version --json"
OUT=$(ftbpf events --limit abc 2>&1); RC=$?
[ $RC -eq 2 ] && echo "$OUT" | grep -q -- "--limit needs a number" && pass "--limit abc: usage error" || fail "--limit abc: rc $RC $OUT"
sleep 100 & S=$!; WORKLOAD_PIDS+=($S)
OUT=$(ftbpf signal $S FOO 2>&1); RC=$?
[ $RC -ne 0 ] && echo "$OUT" | grep -q "'FOO' is not a signal" && pass "signal PID FOO names the value: $OUT" || fail "signal FOO: rc $RC $OUT"
ftbpf status --check >/dev/null; RC=$?
[ $RC -eq 0 ] && pass "status --check: 0 with nothing wrong" || fail "status --check healthy: rc $RC"
FTBPF_JOB=hungjob FTBPF_RANK=0 sleep 100 & H=$!; WORKLOAD_PIDS+=($H)
wait_until 15 jq_status '.jobs[] | select(.job=="hungjob") | .hung' || fail "hungjob not hung"
ftbpf status --check >/dev/null; RC=$?
[ $RC -eq 4 ] && pass "status --check: 4 with a hung job" || fail "status --check hung: rc $RC"
kill -9 $H

# ---- Python, no agent ----
OUT=$(FTBPF_SOCKET=$T/nope.sock timeout 30 /usr/bin/python3 -c '
import sys, time
t = time.monotonic(); import ftbpf; dt = time.monotonic() - t
ftbpf.ping(); ftbpf.step(3)
with ftbpf.expires(after=1):
    pass
ftbpf.release(ftbpf.acquire("x", 5))
print("import_s %.3f torch %s save %s gen %d status %s avail %s" % (dt, "torch" in sys.modules,
      ftbpf.should_save(4), ftbpf.generation(), ftbpf.job_status(), ftbpf.agent_available()))
' 2>"$T/py.err"); RC=$?
echo "$OUT" | grep -q "torch False save False gen 0 status {'agent': False} avail False" && [ $RC -eq 0 ] &&
	pass "Python without an agent: every call a no-op ($OUT)" || fail "Python no agent: rc $RC $OUT $(cat "$T/py.err")"
awk '{print $2}' <<<"$OUT" | awk '{exit !($1 < 0.5)}' && pass "import ftbpf without torch in $(awk '{print $2}' <<<"$OUT") s" ||
	fail "import took $(awk '{print $2}' <<<"$OUT") s"
[ "$(grep -c 'ftbpf: no agent' "$T/py.err")" = 1 ] && pass "said once on stderr: $(cat "$T/py.err")" ||
	fail "stderr: $(cat "$T/py.err")"
OUT=$(FTBPF_SOCKET=$T/nope.sock timeout 60 /usr/bin/python3 -c '
import ftbpf
from torch.distributed.elastic.timer.api import TimerClient
print(issubclass(ftbpf.TimerClient, TimerClient))' 2>/dev/null)
[ "$OUT" = True ] && pass "ftbpf.TimerClient is a torch TimerClient (torch imported on first use)" || fail "TimerClient: $OUT"

# ---- Python, with the agent ----
OUT=$(timeout 30 env FTBPF_SOCKET=$SOCK FTBPF_JOB=pyjob FTBPF_RANK=3 /usr/bin/python3 -c '
import ftbpf
tid = ftbpf.acquire("work", 60)
s = ftbpf.job_status()
print(s["agent"], s["job"], s["rank"], s["timers"], s["hung"], s["culprit"], ftbpf.agent_available())
ftbpf.release(tid)' 2>&1)
[ "$OUT" = "True pyjob 3 1 False False True" ] && pass "job_status(): this rank's job, rank, one armed timer, not hung" ||
	fail "job_status: $OUT"
finish
