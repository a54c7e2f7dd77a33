#!/bin/bash
# torchrun's defaults: TORCHELASTIC_RUN_ID is "none" unless --rdzv-id or --standalone gave one.
# Two independent 2-rank torch DDP jobs started that way (different master ports) are two
# jobs; when rank 1 of the second stops, that job (and only it) is flagged, with its rank 1.
. "$(dirname "$0")/lib.sh"
SOFT=5
start_agent --soft-timeout $SOFT --hard-timeout 300 --action report --node-name itnode || exit 1
PA=$((31500 + RANDOM % 500)); PB=$((PA + 500))
for j in a b; do
	mkdir -p "$T/$j"
	P=$PA; F=(); [ $j = b ] && { P=$PB; F=(--fault sleep --fault-rank 1 --fault-after 8); }
	for r in 0 1; do
		TORCHELASTIC_RUN_ID=none TORCHELASTIC_RESTART_COUNT=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$P \
			RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 GROUP_RANK=0 LOCAL_WORLD_SIZE=2 \
			/usr/bin/python3 "$ROOT/tests/workloads/ddp.py" --seconds 300 "${F[@]}" \
			--dir "$T/$j" >"$T/$j/out.$r" 2>&1 &
		WORKLOAD_PIDS+=($!); disown $!
	done
done
JA="torch:127.0.0.1:$PA@itnode"; JB="torch:127.0.0.1:$PB@itnode"
wait_until 90 test -e "$T/b/fault.ts" || fail "fault never started: $(tail -3 "$T/b/out.0")"
jq_status "[.jobs[] | select(.job==\"$JA\" or .job==\"$JB\") | .ranks] == [2, 2]" &&
	pass "two jobs of 2 ranks each ($JA, $JB), not one torch:none of 4" ||
	fail "jobs: $(status_json | jq -c '[.jobs[] | {job, ranks}]')"
wait_until $((SOFT + 10)) jq_status ".jobs[] | select(.job==\"$JB\") | .hung" && pass "job b flagged hung" || fail "job b not flagged"
HANG=$(events_of hang | jq -c "select(.job==\"$JB\")" | head -1)
DELAY=$(awk "BEGIN{print $(date -d "$(echo "$HANG" | jq -r .ts)" +%s.%N) - $(cat "$T/b/fault.ts")}")
awk "BEGIN{exit !($DELAY <= $SOFT + 1)}" && pass "within soft + 1 s (${DELAY} s)" || fail "late: ${DELAY} s"
echo "$HANG" | jq -e ".culprits == [$(cat "$T/b/pid.1")] and .culprit_ranks == [1]" >/dev/null &&
	pass "job b's rank 1 named" || fail "culprit: $(echo "$HANG" | jq -c '{culprits, why}')"
sleep 2
[ -z "$(events_of hang | jq -c "select(.job==\"$JA\")")" ] && jq_status ".jobs[] | select(.job==\"$JA\") | .hung | not" &&
	pass "job a not flagged" || fail "job a flagged"
finish
