# Three ftbpfd "nodes" and a real etcd on one host, for the decision tests and benchmarks
# (sourced after lib.sh, which gives T, B, ROOT, PIN, wait_until, fail, WORKLOAD_PIDS).
#   cluster_up NAME NET PORT   network namespaces NAME1..3 (netns.sh: addresses NET.1..3),
#                              etcd at NET.254:PORT on their bridge; AG, LA, RCS arrays
#   start_node I [FLAGS...]    agent of node I in its namespace (mesh, etcd, --only-netns;
#                              NODE_ENV: variables for it (%i: the node's number);
#                              CLUSTER_NODE_KEYS=1: with node
#                              keys, every node's own, all three listed in $T/nodes)
#   run ROUND STEP_MS RESTARTS [NODES...]
#                              on each node a torchrun-like launcher of two C ranks
#                              (docs/examples/c_loop.c) of job cjob, one epoch for all, the
#                              world size 2 x the nodes
#                              (RUN_ARGS: more arguments for c_loop)
#   cluster_down               everything above gone (also on EXIT, with lib.sh's cleanup)
. "$(dirname "${BASH_SOURCE[0]}")/netns.sh"
declare -A AG LA RCS
cluster_down() {
	local i n
	for i in 1 2 3; do [ -n "${AG[$i]:-}" ] && { kill -9 "${AG[$i]}"; wait "${AG[$i]}"; } 2>/dev/null; AG[$i]=; done
	[ -n "${ETCD:-}" ] && { kill -9 "$ETCD"; wait "$ETCD"; } 2>/dev/null
	ETCD=
	[ -n "${CL_NAME:-}" ] && netns3_down "$CL_NAME"
	for i in 1 2 3; do rm -rf "$PIN-n$i"; done
}
cluster_up() {
	local name=$1 net=$2 port=$3 i
	CL_NAME=$name CL_NET=$net
	EP=http://$net.254:$port
	PEERS=$net.1:7946,$net.2:7946,$net.3:7946
	trap 'cluster_down; cleanup' EXIT
	cluster_down
	netns3_up "$name" "$net" host || return 1
	etcd --name "$name" --data-dir "$T/etcd" --listen-client-urls "$EP" --advertise-client-urls "$EP" \
		--listen-peer-urls "http://127.0.0.1:$((port + 10))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$((port + 10))" \
		--initial-cluster "$name=http://127.0.0.1:$((port + 10))" >"$T/etcd.log" 2>&1 &
	ETCD=$!
	wait_until 20 curl -sf "$EP/version" -o /dev/null || { fail "etcd did not start: $(tail -3 "$T/etcd.log")"; return 1; }
	head -c 48 /dev/urandom >"$T/key"; chmod 600 "$T/key"
	if [ -n "${CLUSTER_NODE_KEYS:-}" ]; then
		: >"$T/nodes"
		for i in 1 2 3; do
			head -c 32 /dev/urandom | xxd -p -c 64 >"$T/node$i.key" && chmod 600 "$T/node$i.key"
			"$B/ftbpfd" --bind "$net.$i:7946" --key-file "$T/key" --node-key-file "$T/node$i.key" \
				--node-keys-file "$T/nodes" --print-node-key >>"$T/nodes" || return 1
		done
	fi
}
node() { echo "$CL_NET.$1:7946"; }
start_node() {
	local i=$1; shift
	mkdir -p "$T/n$i"
	local env=${NODE_ENV:-}
	ip netns exec "$CL_NAME$i" env ${env//%i/$i} "$B/ftbpfd" --socket "$T/n$i/s.sock" --state-dir "$T/n$i/state" \
		--pin-dir "$PIN-n$i" --log-file "$T/n$i/events.jsonl" --only-netns 1 \
		--soft-timeout 60 --hard-timeout 600 --action report \
		--bind "$(node "$i")" --peers "$PEERS" --key-file "$T/key" \
		--etcd-endpoints "$EP" --etcd-insecure 1 --etcd-prefix "/ftbpf-it/" --etcd-lease-ttl 3 --fence-after 3 \
		--max-restarts 10 --verbose 1 \
		${CLUSTER_NODE_KEYS:+--node-key-file "$T/node$i.key" --node-keys-file "$T/nodes"} \
		"$@" >>"$T/n$i/out" 2>&1 &
	AG[$i]=$!
	wait_until 20 bash -c "'$B/ftbpf' --socket '$T/n$i/s.sock' version >/dev/null 2>&1" || {
		fail "node $i did not start: $(tail -3 "$T/n$i/out")"
		node_diag "$i"
		return 1
	}
}
# what a node's failure to start needs explained: its namespace's addresses and links, its
# agent's last words (before this start too), the kernel's
node_diag() {
	echo "--- node $1: addresses in $CL_NAME$1, links, its agent's output, dmesg"
	ip -n "$CL_NAME$1" -br addr 2>&1
	ip -n "$CL_NAME$1" -br link 2>&1
	ip -br link show "veth-$CL_NAME$1" 2>&1
	ip netns list 2>&1 | grep -c . | sed 's/^/namespaces: /'
	tail -n 25 "$T/n$1/out"
	dmesg 2>/dev/null | tail -n 8
}
f() { local i=$1; shift; "$B/ftbpf" --socket "$T/n$i/s.sock" "$@"; }
nev() { jq -c "select(.type==\"$2\")" "$T/n$1/events.jsonl" 2>/dev/null; }
run() {
	local round=$1 ms=$2 restarts=$3 i k=0; shift 3
	[ $# -gt 0 ] || set -- 1 2 3
	rm -f "$T/epoch.$round"
	for i in "$@"; do
		mkdir -p "$T/r$round/n$i"
		FTBPF_SOCKET=$T/n$i/s.sock ip netns exec "$CL_NAME$i" /usr/bin/python3 "$ROOT/tests/workloads/launcher.py" \
			--nproc 2 --dir "$T/r$round/n$i" --job cjob --max-restarts "$restarts" \
			--nnodes $# --node-rank $k -- "$B/examples/c_loop" \
			--dir "$T/r$round/n$i" --rank "{rank}" --step-ms "$ms" --epoch "$T/epoch.$round" ${RUN_ARGS:-} &
		LA[$i]=$!
		WORKLOAD_PIDS+=($!)
		k=$((k + 1))
	done
}
started() { local round=$1 i r; shift; for i in "$@"; do for r in 0 1; do grep -qs START "$T/r$round/n$i/log.$r" || return 1; done; done; }
saved_all() { cat "$T/r$1"/n*/log.* 2>/dev/null | awk '/^SAVED/ {print $2}' | sort | uniq -c; }
worker() { awk -v r="$3" '{print $(r + 1)}' "$T/r$1/n$2/pids.0"; }
wait_launchers() { local i; for i in "$@"; do wait "${LA[$i]}"; RCS[$i]=$?; done; }
all_alive() { local i; for i in 1 2 3; do f $i peers --json | jq -e '[.cluster.peers[] | select(.state=="alive")] | length == 2' >/dev/null || return 1; done; }
