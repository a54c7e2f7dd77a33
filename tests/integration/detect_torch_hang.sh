#!/bin/bash
# A real torch DDP job over gloo where rank 1 stops (sleeps) mid-training: rank 0 waits in the
# all-reduce; the agent flags the job within soft + 1 s and names rank 1.
. "$(dirname "$0")/lib.sh"
SOFT=5
start_agent --soft-timeout $SOFT --hard-timeout 300 --action report --node-name itnode || exit 1
PORT=$((30500 + RANDOM % 1000))
mkdir -p "$T/ddp"
for r in 0 1; do
	MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 \
		/usr/bin/python3 "$ROOT/tests/workloads/ddp.py" --seconds 300 --fault sleep --fault-rank 1 \
		--fault-after 8 --dir "$T/ddp" >"$T/ddp/out.$r" 2>&1 &
	WORKLOAD_PIDS+=($!); disown $!
done
JOB="torch:127.0.0.1:$PORT@itnode" # a loopback master: this host's job
wait_until 90 test -e "$T/ddp/fault.ts" || fail "fault never started: $(tail -3 "$T/ddp/out.0")"
FAULT_TS=$(cat "$T/ddp/fault.ts")
CUL=$(cat "$T/ddp/pid.1")
wait_until $((SOFT + 10)) jq_status ".jobs[] | select(.job==\"$JOB\") | .hung" && pass "torch job flagged hung" || fail "not flagged"
HANG=$(events_of hang | jq -c "select(.job==\"$JOB\")" | head -1)
DELAY=$(awk "BEGIN{print $(date -d "$(echo "$HANG" | jq -r .ts)" +%s.%N) - $FAULT_TS}")
log "hang reported ${DELAY}s after rank 1 stopped; why: $(echo "$HANG" | jq -r .why)"
awk "BEGIN{exit !($DELAY <= $SOFT + 1)}" && pass "within soft + 1 s" || fail "late: ${DELAY}s"
echo "$HANG" | jq -e ".culprits == [$CUL] and .culprit_ranks == [1]" >/dev/null && pass "rank 1 named culprit" || fail "culprit wrong"
# the Python stacks: where the culprit stopped (ddp.py's main, in time.sleep's caller line)
echo "$HANG" | jq -e ".ranks[] | select(.pid==$CUL) | .python_stack | map(select(.file != null and (.file | endswith(\"ddp.py\")) and .function == \"main\")) | length > 0" >/dev/null &&
	pass "the hang report has the culprit's Python stack: $(echo "$HANG" | jq -c "[.ranks[] | select(.pid==$CUL) | .python_stack[] | select(.file != null) | \"\(.function):\(.line)\"][:3]")" ||
	fail "no Python stack of the culprit: $(echo "$HANG" | jq -c ".ranks[] | select(.pid==$CUL) | {python_stack, python_stack_error}" | head -c 600)"
ftbpf explain "$CUL" --json | jq -e '.python_stack | length > 0' >/dev/null && pass "ftbpf explain has it too" || fail "explain: no Python stack"
finish
