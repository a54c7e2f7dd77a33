# N agents in network namespaces on one bridge, for the tests of a job across hosts (sourced
# after lib.sh). Names start with "xh": namespaces ${XH}1..N, bridge ${XH}br, veths ${XH}vI.
#   xh_up XH NET N        namespaces with eth0 at NET.1..N, a key, PEERS
#   xh_agent I [FLAGS..]  the agent of host I (mesh, --only-netns 1, soft timeout $SOFT)
#   xh_down               agents, namespaces, bridge gone (also on EXIT)
#   xf I ARGS...          ftbpf against host I's agent; xev I TYPE: its events of TYPE
. "$(dirname "${BASH_SOURCE[0]}")/netns.sh" # veth_into
declare -A XAG
xh_down() {
	local i
	# an agent that ended before we end it, and what the agents said last, when a test failed
	for i in "${!XAG[@]}"; do
		[ -n "${XAG[$i]}" ] && ! kill -0 "${XAG[$i]}" 2>/dev/null && { wait "${XAG[$i]}" 2>/dev/null
			echo "[$NAME] agent $i (pid ${XAG[$i]}) had ended: status $?"; }
	done
	if [ "${FAILS:-0}" -gt 0 ] && [ -n "${T:-}" ]; then
		for i in "${!XAG[@]}"; do echo "[$NAME] --- agent $i's last lines ---"; tail -15 "$T/n$i/out" 2>/dev/null; done
	fi
	# TERM first: a sanitizer build reports leaks at exit
	for i in "${!XAG[@]}"; do [ -n "${XAG[$i]}" ] && kill "${XAG[$i]}" 2>/dev/null; done
	for i in "${!XAG[@]}"; do
		[ -n "${XAG[$i]}" ] || continue
		timeout 5 tail --pid="${XAG[$i]}" -f /dev/null 2>/dev/null || kill -9 "${XAG[$i]}" 2>/dev/null
		wait "${XAG[$i]}" 2>/dev/null
		XAG[$i]=
	done
	if [ -n "${T:-}" ] && grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$T"/n*/out 2>/dev/null; then
		echo "[$NAME] FAIL: an agent's sanitizer reported:"
		grep -h -A12 -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$T"/n*/out | head -40
		FAILS=$((FAILS + 1))
		XH_SAN=1
	fi
	[ -n "${XH:-}" ] || return 0
	for i in $(seq "${XH_N:-3}"); do
		ip netns pids "$XH$i" 2>/dev/null | xargs -r kill -9
		ip netns del "$XH$i" 2>/dev/null
		rm -rf "$PIN-x$i"
	done
	ip link del "${XH}br" 2>/dev/null
	return 0
}
xh_up() {
	local i
	XH=$1 XH_NET=$2 XH_N=$3
	trap 'xh_down; cleanup; [ -z "${XH_SAN:-}" ] || exit 1' EXIT
	xh_down
	ip link add "${XH}br" type bridge && ip link set "${XH}br" up || { fail "cannot make a bridge"; return 1; }
	PEERS=
	for i in $(seq "$XH_N"); do
		ip netns add "$XH$i"
		veth_into "${XH}v$i" "$XH$i" "$XH_NET.$i/24" || return 1
		ip link set "${XH}v$i" master "${XH}br" up
		PEERS=$PEERS${PEERS:+,}$XH_NET.$i:7946
	done
	head -c 48 /dev/urandom >"$T/key"; chmod 600 "$T/key"
}
xh_agent() {
	local i=$1; shift
	mkdir -p "$T/n$i"
	ip netns exec "$XH$i" "$FTBPFD" --socket "$T/n$i/s.sock" --state-dir "$T/n$i/state" \
		--pin-dir "$PIN-x$i" --log-file "$T/n$i/events.jsonl" --only-netns 1 \
		--soft-timeout "$SOFT" --hard-timeout 300 --action report \
		--bind "$XH_NET.$i:7946" --peers "$PEERS" --key-file "$T/key" --verbose 1 "$@" >>"$T/n$i/out" 2>&1 &
	XAG[$i]=$!
	wait_until 20 bash -c "'$B/ftbpf' --socket '$T/n$i/s.sock' version >/dev/null 2>&1" || fail "agent $i did not start: $(tail -3 "$T/n$i/out")"
}
xf() { local i=$1; shift; "$B/ftbpf" --socket "$T/n$i/s.sock" "$@"; }
xev() { jq -c "select(.type==\"$2\")" "$T/n$1/events.jsonl" 2>/dev/null; }
# xh_all_alive: every agent sees every other alive
# every_names JOB TYPE RANK STATE: both agents' latest TYPE event of JOB names RANK on host 2
every_names() {
	local i e
	for i in 1 2; do
		e=$(xev $i "$2" | jq -c "select(.job==\"$1\")" | tail -1)
		[ -n "$e" ] || return 1
		echo "$e" | jq -e ".culprit_ranks == [$3] and .culprit_node == \"$NET.2:7946\" and .culprit_state == \"$4\"" >/dev/null || return 1
	done
}
delay_of() { # delay_of I JOB TYPE T0: seconds from T0 to agent I's latest TYPE event
	awk -v a="$4" -v b="$(date -d "$(xev "$1" "$3" | jq -r "select(.job==\"$2\") | .ts" | tail -1)" +%s.%N)" 'BEGIN{printf "%.1f", b - a}'
}
xh_all_alive() {
	local i
	for i in "${!XAG[@]}"; do
		[ -n "${XAG[$i]}" ] || continue
		xf "$i" peers --json | jq -e "[.cluster.peers[] | select(.state==\"alive\")] | length >= $((${#XAG[@]} - 1))" >/dev/null || return 1
	done
}
