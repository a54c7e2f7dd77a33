#!/bin/bash
# time-limit: 300
# soft_timeout = auto (docs/detection.md), an agent at that setting and nothing else:
#   stall   torch DDP over gloo, 3 ranks in sub-second steps; after 30 s rank 1 stops (sleeps):
#           flagged hung within max(3 x the job's p99 step, 5 s) of the stall, rank 1 named
#   phases  the same job shape with a 30 s evaluation pass every 100 steps and a 20 s
#           checkpoint save (rank 0 writes, the others wait in a barrier): never flagged
. "$(dirname "$0")/lib.sh"
start_agent --node-name itnode --soft-timeout auto --hard-timeout 600 --action report || exit 1
jq_status '.agent.soft_timeout_auto' && pass "the agent runs with soft_timeout auto" || fail "not auto: $(status_json | jq -c .agent)"
ddp() { # NAME ARGS...: a 3-rank DDP job; its id in $JOB
	local name=$1 port=$((32600 + RANDOM % 900)); shift
	mkdir -p "$T/$name"
	for r in 0 1 2; do
		MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r LOCAL_RANK=$r WORLD_SIZE=3 \
			/usr/bin/python3 "$ROOT/tests/workloads/ddp.py" --dir "$T/$name" "$@" >"$T/$name/out.$r" 2>&1 &
		WORKLOAD_PIDS+=($!)
	done
	JOB="torch:127.0.0.1:$port@itnode"  # a loopback master: this host's job
}
ddp phases --seconds 150 --eval-every 100 --eval-seconds 30 --save-every 150 --save-seconds 20
JP=$JOB
ddp stall --seconds 300 --fault sleep --fault-rank 1 --fault-after 30
JS=$JOB
wait_until 120 test -s "$T/stall/fault.ts" || fail "stall: the fault never began: $(tail -3 "$T/stall/out.0")"
P99=$(status_json | jq ".jobs[] | select(.job==\"$JS\") | .step_p99_s")
STEP=$(status_json | jq ".jobs[] | select(.job==\"$JS\") | .step_s")
LIM=$(awk -v p="$P99" 'BEGIN{l = 3 * p; if (l < 5) l = 5; print l}')
log "stall: step ${STEP} s, p99 ${P99} s before the stall: limit ${LIM} s"
awk -v p="$P99" 'BEGIN{exit !(p > 0 && p < 1)}' && pass "stall: the job's pace was known: p99 ${P99} s" || fail "stall: p99 $P99"
wait_until 20 has_event hang ".job==\"$JS\"" || fail "stall: not flagged in 20 s"
HANG=$(events_of hang | jq -c "select(.job==\"$JS\")" | head -1)
D=$(awk -v h="$(date -d "$(echo "$HANG" | jq -r .ts)" +%s.%N)" -v f="$(cat "$T/stall/fault.ts")" 'BEGIN{printf "%.2f", h - f}')
awk -v d="$D" -v l="$LIM" 'BEGIN{exit !(d <= l)}' && pass "stall: flagged ${D} s after the stall (limit ${LIM} s; soft timeout applied $(echo "$HANG" | jq .soft_timeout_s) s)" ||
	fail "stall: flagged after ${D} s (limit ${LIM} s): $(echo "$HANG" | jq -c '{soft_timeout_s, why}')"
echo "$HANG" | jq -e ".culprit_ranks == [1]" >/dev/null && pass "stall: rank 1 named: $(echo "$HANG" | jq -r .why)" || fail "stall: culprits $(echo "$HANG" | jq -c '{culprit_ranks, why}')"
# phases: two evaluation passes and a save, each longer than the paced timeout, never a hang
for r in 0 1 2; do [ -e "$T/stall/pid.$r" ] && kill "$(cat "$T/stall/pid.$r")" 2>/dev/null; done
wait_until 160 test -s "$T/phases/steps.0" || fail "phases: the job did not finish: $(tail -3 "$T/phases/out.0")"
log "phases: $(cat "$T/phases/steps.0" 2>/dev/null) steps; status: $(status_json | jq -c ".jobs[] | select(.job==\"$JP\") | {state, step_s, step_p99_s}")"
[ -z "$(events_of hang | jq -c "select(.job==\"$JP\")")" ] && pass "phases: 30 s evaluation passes and a 20 s save never flagged" ||
	fail "phases: flagged: $(events_of hang | jq -c "select(.job==\"$JP\") | {why, soft_timeout_s}" | head -2)"
N_EVAL=$(( $(cat "$T/phases/steps.0" 2>/dev/null || echo 0) / 100 ))
[ "$N_EVAL" -ge 2 ] && pass "phases: $N_EVAL evaluation passes ran" || fail "phases: only $N_EVAL evaluation passes"
finish
