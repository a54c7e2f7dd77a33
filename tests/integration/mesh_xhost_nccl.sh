#!/bin/bash
# time-limit: 120
# NCCL evidence across hosts (issue #22): three ranks of a data-parallel job on the mock
# libcuda/libnccl (tests/mock, as a GPU host measures them), ranks 0-1 on host 1 and rank 2 on
# host 2 (network namespaces, an agent each, the mesh up). Rank 2 skips one all-reduce: every
# rank then waits in cuStreamSynchronize. Neither host alone can tell (host 1's two ranks agree,
# host 2 has one rank); the collective sequence numbers compared over the whole job name rank 2
# on host 2, on both hosts.
. "$(dirname "$0")/lib.sh"
command -v ip >/dev/null || { log "SKIP: no ip(8)"; finish; }
. "$(dirname "$0")/xhnet.sh"
SOFT=3
NET=10.88.74
xh_up xhn $NET 2 || finish
xh_agent 1 --gpu-majors 1
xh_agent 2 --gpu-majors 1
xf 1 status --json | jq -e '.agent.features.uprobes' >/dev/null || { log "SKIP: no uprobes with attach cookies here"; finish; }
wait_until 15 xh_all_alive && pass "two agents see each other" || fail "mesh not up"
JOB=xnccl
mkdir -p "$T/$JOB"
for r in 0 1 2; do
	a=(); [ $r = 2 ] && a=(--skip-at 60)
	ip netns exec "xhn$((r / 2 + 1))" env FTBPF_JOB=$JOB FTBPF_RANK=$r FTBPF_WORLD_SIZE=3 FTBPF_MOCK_DIR="$T/$JOB" \
		"$B/workloads/nccl_job" --rank $r --world 3 --dir "$T/$JOB" --init-delay-ms 1000 --interval-ms 20 "${a[@]}" \
		>"$T/$JOB/out.$r" 2>&1 &
	WORKLOAD_PIDS+=($!)
	disown $!
done
wait_until 20 test -e "$T/$JOB/pid.2" || fail "job did not start: $(cat "$T/$JOB"/out.* | head -5)"
named() {
	local i e
	for i in 1 2; do
		e=$(xev $i hang | jq -c "select(.job==\"$JOB\")" | head -1)
		[ -n "$e" ] || return 1
		echo "$e" | jq -e ".culprit_ranks == [2] and .culprit_node == \"$NET.2:7946\" and .evidence == \"nccl_seq\"" >/dev/null || return 1
	done
}
if wait_until $((SOFT + 20)) named; then
	pass "both agents name rank 2 on host 2 from the job-wide sequence numbers: $(xev 1 hang | head -1 | jq -r .why)"
else
	fail "nccl: $(for i in 1 2; do xev $i hang | jq -c '{culprit_ranks, culprit_node, evidence, why}'; done)"
fi
xev 1 hang | head -1 | jq -e '.why | test("rank 2 issued 121 collectives on an NCCL communicator, the others 122: it never entered ncclAllReduce #122")' >/dev/null &&
	pass "the evidence: 121 collectives against 122" || fail "why: $(xev 1 hang | head -1 | jq -r .why)"
xf 1 status --json | jq -e "[.jobs[] | select(.job==\"$JOB\") | .ranks_elsewhere[] | select(.rank==2) | .nccl_seq] == [121]" >/dev/null &&
	pass "host 1 shows rank 2's sequence number" || fail "ranks elsewhere: $(xf 1 status --json | jq -c '.jobs[] | .ranks_elsewhere')"
for f in "$T/$JOB"/pid.*; do kill -9 "$(cat "$f")" 2>/dev/null; done
finish
