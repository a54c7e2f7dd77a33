# Three network namespaces on a bridge, for the tests and benchmarks of several agents on one
# host (sourced after lib.sh).
#   netns3_up NAME NET [ADDR]   namespaces NAME1..3, each with eth0 at NET.1..3 (a veth
#                               veth-NAMEi on bridge br-NAME); ADDR=host: the bridge gets
#                               NET.254, so that a service on the host (etcd) is reachable
#   netns3_down NAME            kills what runs in them, removes them and the bridge
# veth_into VETH NS ADDR/LEN: a veth VETH whose peer is eth0 in NS with ADDR, up. A namespace
# just deleted is torn down by the kernel later (longer on a busy host): its veth's host end
# keeps the name meanwhile, and `ip link add` would fail with "File exists", leaving the
# namespace without eth0 (an agent there cannot bind: "Cannot assign requested address"). So a
# stale link of that name is removed, and the whole is retried until eth0 has its address.
veth_into() {
	local veth=$1 ns=$2 addr=$3 try
	for try in $(seq 30); do
		ip link del "$veth" 2>/dev/null
		if ip link add "$veth" type veth peer name eth0 netns "$ns" 2>/dev/null &&
			ip -n "$ns" addr add "$addr" dev eth0 && ip -n "$ns" link set eth0 up &&
			ip -n "$ns" link set lo up; then
			ip -n "$ns" -br addr show dev eth0 | grep -q "${addr%/*}/" && return 0
		fi
		sleep 0.5
	done
	fail "cannot give $ns its eth0 ($addr): $(ip -br link show "$veth" 2>&1)"
	return 1
}
netns3_down() {
	local n
	for n in "${1}1" "${1}2" "${1}3"; do
		ip netns pids "$n" 2>/dev/null | xargs -r kill -9
		ip netns del "$n" 2>/dev/null
	done
	ip link del "br-$1" 2>/dev/null
}
netns3_up() {
	local name=$1 net=$2 i
	ip link add "br-$name" type bridge && ip link set "br-$name" up || { fail "cannot make a bridge"; return 1; }
	if [ "${3:-}" = host ]; then ip addr add "$net.254/24" dev "br-$name" || { fail "cannot address the bridge"; return 1; }; fi
	for i in 1 2 3; do
		ip netns add "$name$i"
		veth_into "veth-$name$i" "$name$i" "$net.$i/24" || return 1
		ip link set "veth-$name$i" master "br-$name" up
	done
}
