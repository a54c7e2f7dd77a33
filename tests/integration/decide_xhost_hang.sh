#!/bin/bash
# time-limit: 200
# Decisions from the job's verdict over every host (issues #21, #22): three agents in network
# namespaces with the mesh and a real etcd, a job of four C ranks chained over TCP that use the
# client library (tests/workloads/sockchain.c --ftbpf): ranks 0-1 on node 1, rank 2 on node 2,
# rank 3 on node 3, whose server stops answering. Every rank is blocked reading a socket; the
# job-wide verdict names rank 3 on node 3. Nodes 1 and 2 reach their hard timeout first (8 s;
# node 3: 14 s), so one of them claims the next generation: it must charge the fault to node 3,
# where the culprit runs (with node_fault_limit 1, node 3 is left out), not to itself. The nodes
# have node names (host1..3) other than their mesh addresses, by which the verdict names hosts.
# Exactly one generation, cause hang, the same on every node; every rank of generation 0 ended.
. "$(dirname "$0")/lib.sh"
command -v etcd >/dev/null || { fail "etcd not installed (make deps)"; finish; }
. "$(dirname "$0")/cluster.sh"
NET=10.79.6
cluster_up dfxh $NET 25391 || finish
for i in 1 2 3; do
	h=8; [ $i = 3 ] && h=14
	start_node $i --soft-timeout 4 --hard-timeout $h --grace 2 --node-fault-limit 1 --node-name host$i
done
wait_until 15 all_alive && pass "three agents see each other" || fail "the mesh did not form"
host_of() { case $1 in 0|1) echo 1 ;; 2) echo 2 ;; *) echo 3 ;; esac; }
D=$T/xhang; mkdir -p "$D"
PORT=46500
ip netns exec dfxh3 "$B/workloads/sockchain" --serve --listen $NET.3 --port $((PORT + 4)) --fault-after 4 &
WORKLOAD_PIDS+=($!)
for r in 3 2 1 0; do
	h=$(host_of $r); nh=$(host_of $((r + 1)))
	FTBPF_SOCKET=$T/n$h/s.sock ip netns exec "dfxh$h" env FTBPF_JOB=xhang FTBPF_RANK=$r FTBPF_WORLD_SIZE=4 \
		"$B/workloads/sockchain" --ftbpf --rank $r --world 4 --port $PORT --dir "$D" \
		--listen $NET.$h --next $NET.$nh 2>>"$D/err" &
	WORKLOAD_PIDS+=($!)
done
wait_until 10 test -s "$D/pid.0" || fail "the chain did not start: $(cat "$D/err")"
wait_until 10 bash -c "'$B/ftbpf' --socket '$T/n1/s.sock' status --json | jq -e '.jobs[] | select(.job==\"xhang\") | .generation == 0' >/dev/null" &&
	pass "job xhang followed by the decisions (generation 0)" || fail "job xhang: $(f 1 status --json | jq -c '[.jobs[] | {job, generation}]')"
gen() { f "$1" decisions --json | jq -c '[.decisions[] | select(.job=="xhang" and .kind=="generation")]'; }
decided() { local i; for i in 1 2 3; do [ "$(gen $i | jq length)" -ge 1 ] || return 1; done; }
if wait_until 40 decided; then
	sleep 3 # a second claim, if any, would be in the store by now
	G=$(gen 1)
	echo "$G" | jq -e "length == 1 and .[0].generation == 1 and .[0].cause == \"hang\"" >/dev/null &&
		pass "exactly one generation, cause hang: $(echo "$G" | jq -c '.[0] | {generation, cause, node, excluded, why}')" ||
		fail "generations: $G"
	echo "$G" | jq -e '.[0].by == "host1" or .[0].by == "host2"' >/dev/null &&
		pass "claimed by $(echo "$G" | jq -r '.[0].by'), not by the culprit's node" ||
		fail "claimed by $(echo "$G" | jq -r '.[0].by') (nodes 1 and 2 time out first)"
	echo "$G" | jq -e '.[0].node == "host3" and (.[0].why | test("rank 3"))' >/dev/null &&
		pass "the fault is charged to node 3 (host3), where the culprit runs, and the why names rank 3" ||
		fail "fault charged to $(echo "$G" | jq -r '.[0].node') (why: $(echo "$G" | jq -r '.[0].why'))"
	echo "$G" | jq -e '(.[0].excluded // []) == ["host3"]' >/dev/null &&
		pass "node_fault_limit 1: node 3 is left out, nodes 1 and 2 are not" ||
		fail "left out: $(echo "$G" | jq -c '.[0].excluded')"
	for i in 2 3; do
		[ "$(gen $i | jq -c 'map({generation, cause, node, excluded, by})')" = "$(echo "$G" | jq -c 'map({generation, cause, node, excluded, by})')" ] &&
			pass "node $i holds the same decision" || fail "node $i: $(gen $i)"
	done
else
	fail "no generation decided: $(for i in 1 2 3; do gen $i; nev $i hang | head -1 | jq -c '{culprit_ranks, culprit_node, why}'; done)"
fi
gone() { local p; for p in "$D"/pid.*; do kill -0 "$(cat "$p")" 2>/dev/null && return 1; done; return 0; }
wait_until 20 gone && pass "every rank of generation 0 ended" ||
	fail "ranks left: $(for p in "$D"/pid.*; do kill -0 "$(cat "$p")" 2>/dev/null && echo "$p"; done)"
finish
