#!/bin/bash
# time-limit: 420
# A three-member etcd with one member partitioned from the other two (issue 32): three agents in
# network namespaces, each given all three members, node 1 member A first, node 2 B, node 3 C;
# a launcher of two C ranks (docs/examples/c_loop.c, 50 ms steps) on each. Member A is cut from
# B and C (nftables on their peer traffic, matched by A's cgroup): it still answers its clients,
# but it has no quorum - a write waits 7 s then fails, a serializable read is stale, a watch on
# it stays silent. Node 1's agent must move to B or C within its reachability bound:
#   round 1  a preemption on node 1 (the node whose first member is A), A cut off: every rank
#            saves one step and exits 42, no node is fenced, held past it or lost
#   round 2  a preemption on node 3 with A still cut off: the same
#   round 3  A healed (it catches up), a preemption on node 2: the same
. "$(dirname "$0")/lib.sh"
command -v etcd >/dev/null || { fail "etcd not installed (make deps)"; finish; }
command -v nft >/dev/null || { fail "nft not installed (make deps: nftables)"; finish; }
CG2=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
[ -n "$CG2" ] || { fail "no cgroup2 hierarchy mounted"; finish; }
. "$(dirname "$0")/cluster.sh"
NET=10.79.9
cluster_up dep $NET 24891 || finish
kill -9 "$ETCD"; wait "$ETCD" 2>/dev/null # three members instead of cluster_up's one
ETCD=
CG=ftbpf-dep-$$
# nft names a cgroup by its path under /sys/fs/cgroup: the unified hierarchy may be mounted
# there (cgroup v2 alone) or below it (hybrid: /sys/fs/cgroup/unified)
CGREL=${CG2#/sys/fs/cgroup}; CGREL=${CGREL#/}; CGREL=${CGREL:+$CGREL/}$CG
TBL=ftbpfdep$$
mkdir "$CG2/$CG" || { fail "cannot make a cgroup in $CG2"; finish; }
trap 'nft delete table inet $TBL 2>/dev/null; cluster_down; cleanup; rmdir "$CG2/$CG" 2>/dev/null' EXIT
CLUSTER=a=http://127.0.0.1:24901,b=http://127.0.0.1:24902,c=http://127.0.0.1:24903
k=0
for m in a b c; do
	k=$((k + 1))
	(
		# member A alone in its own cgroup: the partition's rules match its sockets by it
		[ $m = a ] && echo $BASHPID >"$CG2/$CG/cgroup.procs"
		exec etcd --name $m --data-dir "$T/etcd-$m" \
			--listen-client-urls "http://$NET.254:2489$k" --advertise-client-urls "http://$NET.254:2489$k" \
			--listen-peer-urls "http://127.0.0.1:2490$k" --initial-advertise-peer-urls "http://127.0.0.1:2490$k" \
			--initial-cluster "$CLUSTER" --initial-cluster-state new
	) >"$T/etcd-$m.log" 2>&1 &
	WORKLOAD_PIDS+=($!)
done
EA=http://$NET.254:24891 EB=http://$NET.254:24892 EC=http://$NET.254:24893
ec() { ETCDCTL_API=3 etcdctl --endpoints "$EA,$EB,$EC" --command-timeout=5s "$@"; }
wait_until 30 bash -c "ETCDCTL_API=3 etcdctl --endpoints $EB --command-timeout=2s put /ftbpf-it-probe x >/dev/null 2>&1" ||
	{ fail "the three etcd members did not form a cluster: $(tail -3 "$T/etcd-b.log")"; finish; }
EP=$EA,$EB,$EC start_node 1
EP=$EB,$EC,$EA start_node 2
EP=$EC,$EA,$EB start_node 3
wait_until 15 all_alive || fail "the mesh did not form"

cut_a() {
	nft add table inet "$TBL" &&
		nft add chain inet "$TBL" out '{ type filter hook output priority 0; }' &&
		nft add rule inet "$TBL" out tcp dport 24901 drop &&
		nft add rule inet "$TBL" out socket cgroupv2 level 1 "\"$CGREL\"" \
			tcp dport '{ 24902, 24903 }' drop
}
heal_a() { nft delete table inet "$TBL"; }
# a write on A alone now fails (no quorum), on B it succeeds
a_cut_off() {
	! ETCDCTL_API=3 etcdctl --endpoints "$EA" --command-timeout=3s put /ftbpf-it-probe a >/dev/null 2>&1 &&
		ETCDCTL_API=3 etcdctl --endpoints "$EB" --command-timeout=3s put /ftbpf-it-probe b >/dev/null 2>&1
}
# ROUND NODE: a preemption on rank 0 of NODE; every rank saves one step and exits 42, no node
# is fenced or lost
round() {
	local r=$1 n=$2 what=$3 S G
	run "$r" 50 0 1 2 3
	wait_until 30 started "$r" 1 2 3 || { fail "round $r did not start"; return; }
	sleep 2
	for i in 1 2 3; do wc -l <"$T/n$i/events.jsonl" >"$T/evstart.$r.$i"; done
	kill -TERM "$(worker "$r" "$n" 0)"
	wait_launchers 1 2 3
	S=$(saved_all "$r")
	if [ "${RCS[1]}${RCS[2]}${RCS[3]}" = 424242 ] && [ "$(echo "$S" | wc -l)" = 1 ] &&
		[ "$(echo $S | awk '{print $1}')" = 6 ]; then
		pass "round $r ($what): a preemption on node $n: all 6 ranks saved step $(echo $S | awk '{print $2}') and exited 42"
	else
		fail "round $r ($what): exits ${RCS[*]}; saved: $(echo $S | tr '\n' ' ')"
	fi
	for i in 1 2 3; do
		G=$(tail -n +"$(($(cat "$T/evstart.$r.$i") + 1))" "$T/n$i/events.jsonl" |
			jq -c 'select(.job=="cjob" and (.type=="fenced" or (.type=="decision" and .kind=="generation" and .cause=="node_dead")))' | head -2)
		[ -z "$G" ] && pass "round $r: node $i fenced nothing and lost no node" ||
			fail "round $r: node $i: $G"
	done
}

cut_a || { fail "the partition's rules could not be made"; finish; }
wait_until 20 a_cut_off && pass "member A is cut off: a write on it fails, on B it succeeds" ||
	fail "member A still takes writes"
round 1 1 "member A cut off, node 1's first member"
round 2 3 "member A still cut off"
# node 1 did begin on A: its requests there failed, and it went on with B or C
F=$(f 1 status --json | jq '.agent.decisions.store.counters.failures')
[ "${F:-0}" -gt 0 ] 2>/dev/null && pass "node 1's requests to member A failed ($F) and it went on with another member" ||
	fail "node 1 saw no failed request (did it use member A at all?): $(f 1 status --json | jq -c .agent.decisions.store)"
heal_a
wait_until 30 bash -c "ETCDCTL_API=3 etcdctl --endpoints $EA --command-timeout=2s put /ftbpf-it-probe a >/dev/null 2>&1" ||
	fail "member A did not take writes again after the heal"
round 3 2 "member A healed"
# every node holds the same decisions of the job
for i in 1 2 3; do f $i decisions --json | jq -c '[.decisions[] | select(.job=="cjob") | {kind, generation, checkpoint, step, cause, run}] | sort_by(.run, .kind, .generation, .checkpoint)' >"$T/dec.$i"; done
cmp -s "$T/dec.1" "$T/dec.2" && cmp -s "$T/dec.1" "$T/dec.3" && pass "the three nodes hold the same decisions" ||
	fail "the nodes' decisions differ: $(cat "$T/dec.1" "$T/dec.2" "$T/dec.3" | cut -c1-300)"
finish
