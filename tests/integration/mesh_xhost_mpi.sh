#!/bin/bash
# time-limit: 180
# One verdict for an Open MPI job across hosts (issue #22): mpirun in namespace 1 launches four
# mpi4py ranks, two per namespace, the second namespace's through a launch agent that is
# `ip netns exec` (Open MPI's rsh launcher with --mca plm_rsh_agent; hosts named by address),
# the TCP transport between them (--mca btl tcp,self, eth0 only). One agent per namespace, the
# mesh up. Rank 3 (host 2) sleeps: both agents' hang names rank 3 on host 2 within soft + 2 s;
# then it is killed: both agents' job_failed names it, exited.
. "$(dirname "$0")/lib.sh"
command -v ip >/dev/null && command -v mpirun >/dev/null || { log "SKIP: no ip(8) or mpirun"; finish; }
/usr/bin/python3 -c 'import mpi4py' 2>/dev/null || { log "SKIP: no python3-mpi4py"; finish; }
. "$(dirname "$0")/xhnet.sh"
SOFT=5
NET=10.88.73
xh_up xhm $NET 2 || finish
xh_agent 1
xh_agent 2
wait_until 15 xh_all_alive && pass "two agents see each other" || fail "mesh not up"
# the launch agent: "HOST COMMAND..." -> COMMAND in the namespace of the host with that address
cat >"$T/xh-rsh" <<EOS
#!/bin/sh
h=\$1; shift
exec ip netns exec "xhm\${h##*.}" sh -c "\$*"
EOS
chmod 755 "$T/xh-rsh"
mkdir -p "$T/mpi"
ip netns exec xhm1 mpirun --allow-run-as-root --oversubscribe -np 4 --host $NET.1:2,$NET.2:2 \
	--mca plm_rsh_agent "$T/xh-rsh" --mca btl tcp,self --mca btl_tcp_if_include eth0 \
	--mca oob_tcp_if_include eth0 -x PATH \
	/usr/bin/python3 "$ROOT/tests/workloads/mpi_allreduce.py" --seconds 300 --dir "$T/mpi" \
	--fault-rank 3 --fault-after 12 >"$T/mpi/out" 2>&1 &
WORKLOAD_PIDS+=($!)
disown $!
if ! wait_until 60 bash -c "for r in 0 1 2 3; do test -s '$T/mpi/pid.'\$r || exit 1; done"; then
	fail "mpirun across namespaces did not start its ranks: $(tail -5 "$T/mpi/out")"
	finish
fi
JOB=$(xf 1 status --json | jq -r '[.ranks[] | select(.source=="openmpi") | .job][0]')
log "job $JOB"
xf 2 status --json | jq -e "[.ranks[] | select(.job==\"$JOB\")] | length == 2" >/dev/null &&
	pass "both agents adopted their two ranks of one Open MPI job ($JOB)" || fail "adoption: $(xf 2 status --json | jq -c '[.ranks[] | {job, rank, source}]')"
named() {
	local i e
	for i in 1 2; do
		e=$(xev $i hang | jq -c "select(.job==\"$JOB\")" | tail -1)
		[ -n "$e" ] || return 1
		echo "$e" | jq -e ".culprit_ranks == [3] and .culprit_node == \"$NET.2:7946\"" >/dev/null 2>&1 || return 1
	done
}
wait_until 40 test -s "$T/mpi/fault.ts" || fail "no fault"
T0=$(cat "$T/mpi/fault.ts")
if wait_until $((SOFT + 12)) named; then
	for i in 1 2; do
		d=$(awk -v a="$T0" -v b="$(date -d "$(xev $i hang | jq -r .ts | tail -1)" +%s.%N)" 'BEGIN{printf "%.1f", b - a}')
		awk -v d="$d" -v s=$SOFT 'BEGIN{exit !(d <= s + 2)}' && pass "host $i names rank 3 on host 2 after ${d}s: $(xev $i hang | tail -1 | jq -r .why)" || fail "host $i late: ${d}s"
	done
else
	fail "Open MPI: $(for i in 1 2; do xev $i hang | jq -c '{culprit_ranks, culprit_node, culprit_state, why, missing_ranks}'; done)"
fi
# the sleeping rank killed: every agent's job_failed names rank 3 on host 2, exited
failed_named() {
	local i e
	for i in 1 2; do
		e=$(xev $i job_failed | jq -c "select(.job==\"$JOB\")" | tail -1)
		[ -n "$e" ] || return 1
		echo "$e" | jq -e ".culprit_ranks == [3] and .culprit_node == \"$NET.2:7946\" and .culprit_state == \"exited\"" >/dev/null 2>&1 || return 1
	done
}
kill -KILL "$(cat "$T/mpi/pid.3")"
wait_until 15 failed_named &&
	pass "rank 3 killed: both agents' job_failed names rank 3 on host 2: $(xev 1 job_failed | tail -1 | jq -r .why)" ||
	fail "killed: $(for i in 1 2; do xev $i job_failed | jq -c '{culprit_ranks, culprit_node, culprit_state, why}'; done)"
finish
