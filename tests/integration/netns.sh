# Three network namespaces on a bridge, for the tests and benchmarks of several agents on one
# host (sourced after lib.sh).
#   netns3_up NAME NET [ADDR]   namespaces NAME1..3, each with eth0 at NET.1..3 (a veth
#                               veth-NAMEi on bridge br-NAME); ADDR=host: the bridge gets
#                               NET.254, so that a service on the host (etcd) is reachable
#   netns3_down NAME            kills what runs in them, removes them and the bridge
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
		ip link add "veth-$name$i" type veth peer name eth0 netns "$name$i"
		ip link set "veth-$name$i" master "br-$name" up
		ip -n "$name$i" addr add "$net.$i/24" dev eth0
		ip -n "$name$i" link set eth0 up
		ip -n "$name$i" link set lo up
	done
}
