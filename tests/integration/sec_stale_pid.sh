#!/bin/bash
# Process incarnations: state kept for a process (its slot, its rank record) never applies to a
# later process that reuses its pid. A registered rank with an armed timer is killed while the
# agent is down; another rank forks a child that gets the same pid and makes syscalls past the
# old deadline: the kernel must not signal it through the stale slot. And a new rank at the pid
# of an exited one is adopted as a new rank.
. "$(dirname "$0")/lib.sh"
export FTBPF_SOCKET=$SOCK PYTHONPATH=$B/python
start_agent --soft-timeout 30 --hard-timeout 300 --action report || exit 1

# ---- a stale slot at a reused pid ----
FTBPF_JOB=stale FTBPF_RANK=0 /usr/bin/python3 -c '
import ftbpf, time
ftbpf.acquire("deadline", 4)
print("armed", flush=True)
time.sleep(100)' >"$T/r.out" 2>&1 &
R=$!; WORKLOAD_PIDS+=($R)
wait_until 10 grep -q armed "$T/r.out" || fail "the rank did not arm its timer: $(cat "$T/r.out")"
ls "$PIN" | grep -q "slot_$R" && pass "rank $R has a pinned slot" || fail "no slot pinned for $R"
# another rank, adopted before the agent stops, will fork a child with the next pid steered to
# R (it steers it itself, just before its fork, and tries again until the child has pid R); the
# child makes syscalls for 8 s
FTBPF_JOB=other FTBPF_RANK=0 /usr/bin/python3 -c '
import os, sys, time
d, r = sys.argv[1], int(sys.argv[2])
while not os.path.exists(d + "/go"):
    time.sleep(0.02)
got = "none"
give_up = time.time() + 8  # a busy host forks too: keep trying, and wait while r is taken
while time.time() < give_up:
    if os.path.exists("/proc/%d" % r):
        try:
            got = "none (pid %d is held by %s)" % (r, open("/proc/%d/comm" % r).read().strip())
        except OSError:
            pass
        time.sleep(0.05)
        continue
    open("/proc/sys/kernel/ns_last_pid", "w").write(str(r - 1))
    pid = os.fork()
    if pid == 0:
        end = time.time() + 8
        while time.time() < end:
            os.getppid(); time.sleep(0.005)
        os._exit(0)
    if pid == r:
        got = str(pid)
        break
    os.kill(pid, 9); os.waitpid(pid, 0)
open(d + "/child.pid", "w").write(got)
time.sleep(30)' "$T" "$R" &
X=$!; WORKLOAD_PIDS+=($X)
wait_until 10 jq_status "[.ranks[] | select(.pid==$X)] | length == 1" || fail "the other rank was not adopted"
stop_agent
kill -9 $R; wait $R 2>/dev/null
: >"$T/go"
wait_until 12 test -s "$T/child.pid"
C=$(cat "$T/child.pid" 2>/dev/null)
[ "$C" = "$R" ] && OK=1 || OK=
if [ -z "$OK" ]; then
	fail "could not start a process at pid $R: ${C:-the forking rank wrote nothing}"
else
	log "child $C of rank $X has the dead rank's pid; its old deadline passes meanwhile"
	sleep 5
	alive "$C" && pass "the process at the reused pid was not killed through the stale slot" ||
		fail "the kernel killed the process at the reused pid $C"
fi

# ---- the restarted agent: the stale slot goes, the child is its rank's ----
start_agent --soft-timeout 30 --hard-timeout 300 --action report || exit 1
wait_until 5 bash -c "! ls '$PIN' | grep -q 'slot_$R\$'" && pass "the stale slot was removed" || fail "slot_$R still pinned"

# ---- a new rank at the pid of an exited rank ----
FTBPF_JOB=first FTBPF_RANK=0 sleep 100 &
A=$!; WORKLOAD_PIDS+=($A)
wait_until 10 jq_status "[.ranks[] | select(.pid==$A and .job==\"first\")] | length == 1" || fail "first rank not adopted"
kill -9 $A; wait $A 2>/dev/null
wait_until 5 jq_status ".ranks[] | select(.pid==$A) | .exited" || fail "exit not seen"
take_pid "$A" env FTBPF_JOB=second FTBPF_RANK=0 sleep 60
if [ -z "$TAKEN_PID" ]; then
	fail "could not start a process at pid $A"
else
	wait_until 10 jq_status "[.ranks[] | select(.pid==$A and .job==\"second\" and (.exited|not))] | length == 1" &&
		pass "a new rank at an exited rank's pid is adopted" || fail "not adopted: $(status_json | jq -c "[.ranks[] | select(.pid==$A) | {job,exited}]")"
	jq_status "[.ranks[] | select(.pid==$A and .job==\"first\" and .exited)] | length == 1" &&
		pass "the exited rank is still listed" || fail "the exited rank is gone"
fi
finish
