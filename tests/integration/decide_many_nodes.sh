#!/bin/bash
# time-limit: 120
# A job's decisions over more hosts than the old cap of 64 (issue 32): the store (here
# state_dir's decisions.json, written before the agent starts) holds the job's run and the
# member records of 100 other hosts, each with 2 ranks, whose names sort before this node's.
# Two C ranks here (docs/examples/c_loop.c under tests/workloads/launcher.py, as torchrun on the
# last of 101 nodes: a world of 202) join that run. An
# operator's checkpoint counts all 101 member hosts (status: checkpoint.nodes), not 64; it is
# not bound while the other hosts' ranks have acknowledged nothing; none of the 100 is lost (no
# generation), nothing is refused, and this node's own member (the 101st in key order) is read.
. "$(dirname "$0")/lib.sh"
JOB=manyjob
NOW=$(($(date +%s) * 1000))
mkdir -p "$T/state"
{
	printf '{"jobs/0/%s/run/%020d":"{\\"run\\":1,\\"resume_step\\":-1,\\"by\\":\\"h00001\\",\\"at_ms\\":%s}"' \
		"$JOB" 1 "$NOW"
	for i in $(seq 1 100); do
		printf ',"jobs/0/%s/runs/1/members/h%05d":"{\\"ranks\\":2,\\"generation\\":0}"' "$JOB" "$i"
	done
	echo '}'
} >"$T/state/decisions.json"
jq -e 'length == 101' "$T/state/decisions.json" >/dev/null || { fail "decisions.json: $(head -c 300 "$T/state/decisions.json")"; finish; }
start_agent --soft-timeout 60 --hard-timeout 600 --action report --node-name zznode || exit 1
export FTBPF_SOCKET=$SOCK
D=$T/c; mkdir -p "$D"
/usr/bin/python3 "$ROOT/tests/workloads/launcher.py" --nproc 2 --nnodes 101 --node-rank 100 --dir "$D" --job $JOB \
	-- "$B/examples/c_loop" --dir "$D" --rank "{rank}" --step-ms 50 &
WORKLOAD_PIDS+=($!)
started() { for r in 0 1; do grep -qs START "$D/log.$r" || return 1; done; }
wait_until 20 started || fail "workers did not start"
for p in $(cat "$D/pids.0" 2>/dev/null); do WORKLOAD_PIDS+=($p); done
sleep 1
ftbpf checkpoint $JOB >"$T/ck.out" 2>&1 && pass "checkpoint requested: $(cat "$T/ck.out")" ||
	fail "checkpoint request refused: $(cat "$T/ck.out")"
nodes() { status_json | jq -r ".jobs[] | select(.job==\"$JOB\") | .checkpoint.nodes // empty" | head -1; }
has_nodes() { [ "$(nodes)" = "$1" ]; }
wait_until 10 has_nodes 101 &&
	pass "the request counts 101 member hosts" ||
	fail "member hosts counted: $(nodes) (status: $(status_json | jq -c ".jobs[] | select(.job==\"$JOB\")" | head -c 600))"
sleep 3
STATE=$(status_json | jq -r ".jobs[] | select(.job==\"$JOB\") | .checkpoint.state" | head -1)
[ "$STATE" = pending ] && pass "not bound while 100 hosts acknowledged nothing (pending)" ||
	fail "checkpoint state $STATE with 100 silent hosts"
has_event decision ".kind==\"checkpoint_complete\" and .job==\"$JOB\"" &&
	fail "a checkpoint completed without the other hosts' saves" ||
	pass "no checkpoint complete without the other hosts' saves"
has_event decision ".kind==\"generation\" and .job==\"$JOB\"" &&
	fail "a generation was decided: $(events_of decision | grep generation | head -2)" ||
	pass "no host lost, no generation"
REFUSED=$(status_json | jq -r '.agent.decisions.counters.records_refused // 0')
[ "$REFUSED" = 0 ] && pass "no record refused" || fail "records refused: $REFUSED ($(events_of decision_record_refused | head -3))"
finish
