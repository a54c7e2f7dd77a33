#!/bin/bash
# time-limit: 300
# Restart decisions on one node, with the C example (docs/examples/c_loop.c) under a launcher
# that acts as torchrun does (tests/workloads/launcher.py: on a worker's failure it stops the
# others with SIGTERM and starts them all again). A worker killed from outside is a failure:
# generation 1 is decided (cause rank_died, resume from the last agreed checkpoint), the other
# workers exit 42, and the launcher's SIGTERMs are not taken for a preemption; the restarted
# workers learn generation 1 and resume after that checkpoint. With max_restarts 1 the next
# failure spends the budget: the decision is to stop, the workers and the launcher exit 93.
. "$(dirname "$0")/lib.sh"
start_agent --soft-timeout 60 --hard-timeout 600 --action report --max-restarts 1 || exit 1
export FTBPF_SOCKET=$SOCK
JOB=cjob
D=$T/c; mkdir -p "$D"
/usr/bin/python3 "$ROOT/tests/workloads/launcher.py" --nproc 3 --dir "$D" --max-restarts 1 --job $JOB \
	-- "$B/examples/c_loop" --dir "$D" --rank "{rank}" --step-ms 50 &
LAUNCHER=$!
WORKLOAD_PIDS+=($LAUNCHER)
starts() { for r in 0 1 2; do [ "$(grep -cs START "$D/log.$r" || true)" -ge "$1" ] 2>/dev/null || return 1; done; }
worker() { awk -v r="$2" '{print $(r + 1)}' "$D/pids.$1"; }
wait_until 20 starts 1 || fail "workers did not start"
for p in $(cat "$D/pids.0"); do WORKLOAD_PIDS+=($p); done
sleep 1
ftbpf checkpoint $JOB >/dev/null || fail "checkpoint request refused"
wait_until 20 has_event decision ".kind==\"checkpoint_complete\" and .job==\"$JOB\"" || fail "checkpoint not complete"
CK=$(events_of decision | jq -r "select(.kind==\"checkpoint_complete\" and .job==\"$JOB\") | .step" | tail -1)
pass "agreed checkpoint at step $CK"
sleep 1
kill -KILL "$(worker 0 2)"
wait_until 20 starts 2 || fail "the launcher did not restart the workers"
for p in $(cat "$D/pids.1" 2>/dev/null); do WORKLOAD_PIDS+=($p); done
[ "$(cat "$D/rc.0.0")" = 42 ] && [ "$(cat "$D/rc.0.1")" = 42 ] &&
	pass "worker 2 killed: workers 0 and 1 exited 42 for the restart" ||
	fail "exit codes after the failure: $(cat "$D"/rc.0.*)"
G1=$(events_of decision | jq -c "select(.kind==\"generation\" and .job==\"$JOB\" and .generation==1)" | head -1)
echo "$G1" | jq -e ".cause==\"rank_died\" and .resume_step==$CK and (.stop|not)" >/dev/null &&
	pass "generation 1 decided: rank_died, resume from $CK ($(echo "$G1" | jq -r .why))" || fail "generation 1: $G1"
has_event decision ".kind==\"checkpoint\" and .cause==\"preemption\" and .job==\"$JOB\"" &&
	fail "the launcher's SIGTERMs after the failure were taken for a preemption" ||
	pass "the launcher's SIGTERMs after the failure are not a preemption"
grep START "$D/log.2" | tail -1 | grep -q "generation 1 from step $((CK + 1))" &&
	pass "restarted workers: $(grep START "$D/log.2" | tail -1)" || fail "restart: $(grep START "$D/log.2" | tail -1)"
jq_status ".jobs[] | select(.job==\"$JOB\") | .generation == 1" && pass "status shows generation 1" || fail "status generation"
PYG=$(timeout 20 env FTBPF_JOB=$JOB FTBPF_RANK=7 PYTHONPATH=$ROOT/python /usr/bin/python3 -c '
import ftbpf
try:
    ftbpf.should_save(-1); bad = "accepted"
except ValueError as e:
    bad = "ValueError"
print(ftbpf.generation(), ftbpf.restart_info()["cause"], bad)' 2>&1)
[ "$PYG" = "1 rank_died ValueError" ] &&
	pass "a Python rank of the job: ftbpf.generation() is 1, restart_info cause rank_died; should_save(-1) raises ValueError" ||
	fail "Python: $PYG"
sleep 1
kill -KILL "$(worker 1 1)"
wait $LAUNCHER; RC=$?
[ "$(cat "$D/rc.1.0")" = 93 ] && [ "$(cat "$D/rc.1.2")" = 93 ] && [ $RC = 93 ] &&
	pass "budget spent: the workers and the launcher exited 93 (do not requeue)" ||
	fail "exit codes after the second failure: launcher $RC, workers $(cat "$D"/rc.1.* | tr '\n' ' ')"
has_event decision ".kind==\"generation\" and .job==\"$JOB\" and .generation==2 and .stop" &&
	pass "generation 2 is a stop" || fail "no stop decision"
ftbpf decisions | grep -q "generation (stop)" && pass "ftbpf decisions shows the stop" || fail "ftbpf decisions: $(ftbpf decisions)"

# a relaunch of the job (a new launcher, after the stop) is a new run: its own budget,
# history and stop; `ftbpf decisions reset` forgets them all
RUN1=$(events_of decision | jq -r "select(.job==\"$JOB\" and .stop) | .run" | tail -1)
D3=$T/rerun; mkdir -p "$D3"
/usr/bin/python3 "$ROOT/tests/workloads/launcher.py" --nproc 2 --dir "$D3" --job $JOB \
	-- "$B/examples/c_loop" --dir "$D3" --rank "{rank}" --step-ms 50 &
L3=$!; WORKLOAD_PIDS+=($L3)
wait_until 20 bash -c "grep -qs START '$D3/log.0' && grep -qs START '$D3/log.1'" || fail "the relaunch did not start"
sleep 2
grep -q "START.*generation 0 from step $((CK + 1))" "$D3/log.0" && kill -0 $L3 2>/dev/null &&
	pass "relaunched after the stop: a new run (generation 0, from the job's last complete checkpoint, step $((CK + 1))), it trains" ||
	fail "relaunch: $(cat "$D3/log.0"); launcher alive: $(kill -0 $L3 2>/dev/null && echo yes || echo no)"
RUN2=$(status_json | jq "[.jobs[] | select(.job==\"$JOB\") | .run][0]")
[ "$RUN2" -gt "$RUN1" ] 2>/dev/null && pass "status: run $RUN2 (the stopped one was run $RUN1)" || fail "runs: $RUN1 then $RUN2"
kill -TERM $L3; wait $L3 2>/dev/null
sleep 2 # what the stop of the relaunch decided is in the store
ftbpf decisions reset $JOB >"$T/reset.out" 2>&1 && ! ftbpf decisions --json | jq -e ".decisions[] | select(.job==\"$JOB\")" >/dev/null &&
	pass "ftbpf decisions reset $JOB: no decision of it left" || fail "reset: $(cat "$T/reset.out"); $(ftbpf decisions --json | jq -c '.decisions | length')"

# ranks run by hand from a batch script (`#!`, run as a program, as sbatch runs one: its comm
# is the script's name, not a shell's): ranks it starts again after a failure are of the new
# generation (not ended as old ones), and the stop ends the ranks but never the script (a
# program that is a shell is not a launcher, whatever its name)
D2=$T/byhand; mkdir -p "$D2"
cat >"$T/train-batch" <<EOS
#!/bin/bash
for phase in 1 2; do
	for r in 0 1; do FTBPF_JOB=byhand "$B/examples/c_loop" --dir "$D2" --rank \$r --step-ms 50 >>"$D2/out" 2>&1 & done
	wait; echo "phase \$phase over" >>"$D2/out"
done
sleep 60
EOS
chmod +x "$T/train-batch"
"$T/train-batch" </dev/null >/dev/null 2>&1 & SCRIPT=$!; WORKLOAD_PIDS+=($SCRIPT)
cl() { pgrep -a -x c_loop | awk -v m="--dir $D2 --rank $1 " 'index($0 " ", m) {print $1; exit}'; }
running() { [ -n "$(cl 0)" ] && [ -n "$(cl 1)" ]; }
wait_until 10 running && sleep 1
[ "$(cat /proc/$SCRIPT/comm)" = train-batch ] || fail "the batch script's comm: $(cat /proc/$SCRIPT/comm)"
kill -KILL "$(cl 0)"
wait_until 20 grep -q "phase 1 over" "$D2/out" || fail "phase 1 did not end: $(cat "$D2/out")"
wait_until 10 running && sleep 1.5
P2=$(cl 1)
has_event action ".pid==$P2" && fail "a rank started after the failure was ended as an old one" ||
	pass "ranks started again after the failure are of generation 1"
kill -KILL "$(cl 0)"
wait_until 20 grep -q "phase 2 over" "$D2/out" || fail "phase 2 did not end: $(cat "$D2/out")"
wait_until 5 has_event decision '.kind=="generation" and .job=="byhand" and .stop' || fail "no stop for byhand"
sleep 1
alive $SCRIPT && ! has_event action ".pid==$SCRIPT" && pass "the stop ended the ranks, not the script that ran them" ||
	fail "the script was signalled: $(events_of action | grep -c "$SCRIPT")"
pkill -KILL -P $SCRIPT; pkill -KILL -x c_loop

# an agent restart never promotes a rank told to exit into the new generation: the slot says
# which generation the process runs in, not only the job's
D4=$T/promo; mkdir -p "$D4"
cat >"$T/promo.py" <<'EOP'
import sys, time, ftbpf
ftbpf.install_preemption_handler()  # survives the agent's SIGTERM: it must learn from its slot
while True:
    with open(sys.argv[1], "a") as f:
        f.write("%d %s\n" % (ftbpf.generation(), ftbpf.action()))
    time.sleep(0.1)
EOP
FTBPF_JOB=promo FTBPF_RANK=0 FTBPF_WORLD_SIZE=2 PYTHONPATH=$B/python /usr/bin/python3 "$T/promo.py" "$D4/a" &
PP=$!; WORKLOAD_PIDS+=($PP)
FTBPF_JOB=promo FTBPF_RANK=1 FTBPF_WORLD_SIZE=2 "$B/examples/c_loop" --dir "$D4" --rank 1 --step-ms 50 &
PQ=$!; WORKLOAD_PIDS+=($PQ)
wait_until 20 bash -c "grep -qs START '$D4/log.1' && [ -s '$D4/a' ]" || fail "the promo job did not start"
sleep 1
kill -KILL $PQ
wait_until 10 bash -c "tail -1 '$D4/a' | grep -q restart" || fail "the promo rank was not told to exit: $(tail -1 "$D4/a")"
stop_agent
start_agent --soft-timeout 60 --hard-timeout 600 --action report --max-restarts 1 || exit 1
sleep 3
tail -1 "$D4/a" | grep -q restart && alive $PP &&
	pass "after an agent restart the rank told to exit is still told to: $(tail -1 "$D4/a")" ||
	fail "after an agent restart: $(tail -1 "$D4/a") (alive: $(alive $PP && echo yes || echo no))"
# the restarted agent carries the generation out again: SIGTERM, and SIGKILL after the grace (a
# pending SIGKILL of the earlier agent is not lost with it)
gone() { ! alive "$1"; }
wait_until 15 gone $PP && pass "and it is ended after the grace" ||
	fail "the rank told to exit outlived the grace after the agent restart"
kill -9 $PP 2>/dev/null
finish
