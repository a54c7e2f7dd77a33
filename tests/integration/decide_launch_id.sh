#!/bin/bash
# time-limit: 300
# The launch id (docs/decisions.md, "Job and run") on two hosts (network namespaces, an agent
# each, one etcd): a torchrun-like launcher of two C ranks (docs/examples/c_loop.c) of job ljob
# on each, FTBPF_LAUNCH_ID set by whoever launches the job.
#   one       two hosts of launch L1: one run, one launches/ record
#   alone     host 2's launcher and ranks killed, host 2 relaunched alone with L1 (its own
#             heuristics would begin a run of its own: a new launcher where it launched in the
#             latest run): it stays in L1's run, no new run
#   relaunch  the whole job again with L2: exactly one new run, on both hosts
#   stale     host 2 relaunched with the old L1: launch_refused, no run of its own
. "$(dirname "$0")/lib.sh"
command -v etcd >/dev/null || { fail "etcd not installed (make deps)"; finish; }
. "$(dirname "$0")/cluster.sh"
cluster_up dfil 10.79.4 24797 || finish
for i in 1 2; do start_node $i; done
# launch ROUND NODE NODE_RANK LAUNCH_ID: host NODE's launcher of 2 ranks of the 2-host job
launch() {
	local round=$1 i=$2 k=$3 id=$4
	mkdir -p "$T/r$round/n$i"
	FTBPF_LAUNCH_ID=$id FTBPF_SOCKET=$T/n$i/s.sock ip netns exec "$CL_NAME$i" /usr/bin/python3 \
		"$ROOT/tests/workloads/launcher.py" --nproc 2 --dir "$T/r$round/n$i" --job ljob \
		--max-restarts 5 --nnodes 2 --node-rank "$k" -- "$B/examples/c_loop" \
		--dir "$T/r$round/n$i" --rank "{rank}" --step-ms 100 --epoch "$T/epoch.$round" \
		>>"$T/r$round/n$i/out" 2>&1 &
	LA[$i]=$!
	WORKLOAD_PIDS+=($!)
}
# end host NODE's launcher of ROUND and every rank it started, at once
end_host() { kill -9 "${LA[$2]}" $(cat "$T/r$1/n$2"/pids.* 2>/dev/null) 2>/dev/null; wait "${LA[$2]}" 2>/dev/null; }
run_of() { f "$1" status --json | jq '[.jobs[] | select(.job=="ljob") | .run][0]'; }
keys() { ETCDCTL_API=3 etcdctl --endpoints "$EP" get --prefix /ftbpf-it/ --keys-only | grep "$1"; }
nruns() { keys '/ljob/run/' | grep -c .; }

# ---- one: two hosts of launch L1 ----
launch 1 1 0 job-L1
launch 1 2 1 job-L1
wait_until 30 started 1 1 2 || fail "round 1 did not start: $(tail -2 "$T"/r1/n*/out)"
sleep 1
R1=$(run_of 1)
[ "$R1" != null ] && [ "$R1" -ge 1 ] && [ "$(run_of 2)" = "$R1" ] &&
	pass "two hosts of launch L1 are in one run ($R1)" || fail "runs: host 1 $(run_of 1), host 2 $(run_of 2)"
[ "$(keys '/ljob/launches/' | grep -c .)" = 1 ] && [ "$(nruns)" = 1 ] &&
	pass "one launches/ record, one run record: $(keys '/ljob/launches/' | sed 's|.*/ljob/||')" ||
	fail "records: $(keys /ljob/ | sed 's|.*/ljob/||' | tr '\n' ' ')"

# ---- alone: host 2 relaunched by itself with L1 ----
end_host 1 2
launch 2 2 1 job-L1
wait_until 30 started 2 2 || fail "host 2's relaunch did not start: $(tail -2 "$T"/r2/n2/out)"
sleep 1
[ "$(run_of 2)" = "$R1" ] && [ "$(run_of 1)" = "$R1" ] && [ "$(nruns)" = 1 ] &&
	pass "host 2 relaunched alone with L1 stays in run $R1 (no new run)" ||
	fail "after host 2's relaunch: host 1 run $(run_of 1), host 2 run $(run_of 2), $(nruns) runs"

# ---- relaunch: the whole job with L2 ----
end_host 1 1
end_host 2 2
launch 3 1 0 job-L2
launch 3 2 1 job-L2
wait_until 30 started 3 1 2 || fail "round 3 did not start: $(tail -2 "$T"/r3/n*/out)"
sleep 1
R2=$(run_of 1)
[ "$R2" = $((R1 + 1)) ] && [ "$(run_of 2)" = "$R2" ] && [ "$(nruns)" = 2 ] &&
	pass "the whole job relaunched with L2: one new run ($R2) on both hosts" ||
	fail "after the relaunch: host 1 run $(run_of 1), host 2 run $(run_of 2), $(nruns) runs"

# ---- stale: host 2 relaunched with the old L1 ----
end_host 3 2
launch 4 2 1 job-L1
wait_until 30 started 4 2 || fail "host 2's stale relaunch did not start: $(tail -2 "$T"/r4/n2/out)"
wait_until 10 bash -c "jq -e 'select(.type==\"launch_refused\")' '$T/n2/events.jsonl' >/dev/null" || true
E=$(nev 2 launch_refused | head -1)
[ -n "$E" ] && [ "$(echo "$E" | jq -r '.launch_id + " " + (.launch_run | tostring) + " " + (.run | tostring)')" = "ftbpf:job-L1 $R1 $R2" ] &&
	pass "host 2's stale L1 ranks refused: $(echo "$E" | jq -c '{job, launch_id, launch_run, run}')" ||
	fail "no launch_refused on host 2 as expected: $E"
[ "$(nruns)" = 2 ] && [ "$(run_of 2)" = "$R2" ] && [ "$(run_of 1)" = "$R2" ] &&
	pass "no run of its own: still $(nruns) runs, host 2 follows run $R2" ||
	fail "after the stale launch: host 1 run $(run_of 1), host 2 run $(run_of 2), $(nruns) runs"
[ "$(nev 2 launch_refused | wc -l)" = 1 ] && pass "refused once" || fail "$(nev 2 launch_refused | wc -l) launch_refused events"
end_host 4 2
end_host 3 1
finish
