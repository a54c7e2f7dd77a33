#!/bin/bash
# time-limit: 600
# Decisions across three nodes agreed in etcd (Debian's etcd-server, started here): three
# agents in their own network namespaces (veth on a bridge; etcd on the bridge's side), each
# with a torchrun-like launcher of two C ranks (docs/examples/c_loop.c) of one job.
#   preempt   SIGTERM to one rank on node 2: every rank on every node saves at the same step,
#             and every launcher exits 42
#   twice     SIGTERMs on two nodes 10 ms apart: exactly one decision
#   fast      20 ms steps: re-targeting converges, one step saved everywhere
#   nodekill  kill -9 of node 3's agent and ranks: nodes 1 and 2 decide the next generation
#             without node 3; their restarted ranks learn it
#   partition node 3 cut off (etcd with the majority): node 3 decides nothing and fences its
#             ranks; nodes 1 and 2 go on without it; healed, all three agree on the decisions
#   agentkill kill -9 of node 1's agent 5 ms after a SIGTERM on its rank: no checkpoint can be
#             complete without node 1's ranks (I2); nodes 2 and 3 decide the next generation
#             when its lease expires, their ranks exit 42, they hold the same decisions, none
#             conflicting
. "$(dirname "$0")/lib.sh"
command -v etcd >/dev/null || { fail "etcd not installed (make deps)"; finish; }
. "$(dirname "$0")/cluster.sh"
cluster_up ftd 10.78.0 23791 || finish
for i in 1 2 3; do start_node $i; done
wait_until 15 all_alive || fail "the mesh did not form"
f 1 status --json | jq -e '.agent.decisions.store.kind == "etcd" and .agent.decisions.store.reachable' >/dev/null &&
	pass "agents reach etcd" || fail "store: $(f 1 status --json | jq -c .agent.decisions)"

# ---- preempt: SIGTERM to one rank on node 2 ----
run 1 100 0 1 2 3
wait_until 30 started 1 1 2 3 || fail "round 1 did not start"
sleep 2
T0=$(date +%s%N)
kill -TERM "$(worker 1 2 0)"
wait_launchers 1 2 3
[ "${RCS[1]}" = 42 ] && [ "${RCS[2]}" = 42 ] && [ "${RCS[3]}" = 42 ] &&
	pass "SIGTERM on node 2: every launcher exited 42 ($((($(date +%s%N) - T0) / 1000000)) ms)" ||
	fail "launchers exited ${RCS[1]} ${RCS[2]} ${RCS[3]}"
S=$(saved_all 1)
[ "$(echo "$S" | wc -l)" = 1 ] && [ "$(echo $S | awk '{print $1}')" = 6 ] &&
	pass "all 6 ranks on 3 nodes saved step $(echo $S | awk '{print $2}')" || fail "saved: $S"
for i in 1 2 3; do
	nev $i decision | grep -q '"kind":"checkpoint".*"cause":"preemption"' || fail "node $i did not see the decision: $(nev $i decision | head -3)"
done
LAT=$(for i in 1 3; do nev $i decision | jq -r 'select(.kind=="checkpoint") | .ts' | head -1 | xargs -I{} date -d {} +%s%N; done | sort -n | tail -1)
log "the decision reached the last other node $(((LAT - T0) / 1000000)) ms after the SIGTERM"

# ---- twice: SIGTERMs on two nodes 10 ms apart ----
run 2 100 0 1 2 3
wait_until 30 started 2 1 2 3 || fail "round 2 did not start"
sleep 2
N0=$(f 1 decisions --json | jq '[.decisions[] | select(.kind=="checkpoint" and .cause=="preemption" and .why=="preemption signal")] | length')
kill -TERM "$(worker 2 1 0)"; sleep 0.01; kill -TERM "$(worker 2 3 1)"
wait_launchers 1 2 3
N1=$(f 1 decisions --json | jq '[.decisions[] | select(.kind=="checkpoint" and .cause=="preemption" and .why=="preemption signal")] | length')
[ $((N1 - N0)) = 1 ] && pass "two SIGTERMs 10 ms apart on two nodes: exactly one decision" || fail "$((N1 - N0)) decisions"
S=$(saved_all 2)
[ "$(echo "$S" | wc -l)" = 1 ] && [ "${RCS[1]}${RCS[2]}${RCS[3]}" = 424242 ] && pass "one step saved: $S" || fail "saved: $S; exits ${RCS[*]}"

# ---- fast steps: 20 ms ----
run 3 20 0 1 2 3
wait_until 30 started 3 1 2 3 || fail "round 3 did not start"
sleep 2
kill -TERM "$(worker 3 2 1)"
wait_launchers 1 2 3
S=$(saved_all 3)
[ "$(echo "$S" | wc -l)" = 1 ] && [ "$(echo $S | awk '{print $1}')" = 6 ] && [ "${RCS[1]}${RCS[2]}${RCS[3]}" = 424242 ] &&
	pass "20 ms steps: re-targeting converged, all saved step $(echo $S | awk '{print $2}') ($(f 1 status --json | jq .agent.decisions.counters.retargets) re-targets on node 1)" ||
	fail "fast steps: saved $S; exits ${RCS[*]}"

# ---- nodekill: node 3's agent and ranks killed ----
run 4 100 1 1 2 3
wait_until 30 started 4 1 2 3 || fail "round 4 did not start"
sleep 2
G0=$(f 1 status --json | jq '[.jobs[] | select(.job=="cjob") | .generation][0]')
RUN=$(f 1 status --json | jq '[.jobs[] | select(.job=="cjob") | .run][0]')
kill -9 "${AG[3]}" "${LA[3]}" $(cat "$T/r4/n3/pids.0"); wait "${AG[3]}" "${LA[3]}" 2>/dev/null; AG[3]=
wait_until 20 bash -c "'$B/ftbpf' --socket '$T/n1/s.sock' decisions --json | jq -e '[.decisions[] | select(.kind==\"generation\" and .generation==$((G0 + 1)) and .run==$RUN)] | length == 1' >/dev/null" &&
	pass "node 3 killed: generation $((G0 + 1)) decided" || fail "no generation after node 3 died: $(f 1 decisions)"
f 1 decisions --json | jq -e "[.decisions[] | select(.kind==\"generation\" and .generation==$((G0 + 1)) and .run==$RUN)][0] | (.excluded | index(\"$(node 3)\")) != null" >/dev/null &&
	pass "without node 3: $(f 1 decisions --json | jq -c "[.decisions[] | select(.kind==\"generation\" and .generation==$((G0 + 1)) and .run==$RUN)][0] | {cause, excluded, why}")" ||
	fail "node 3 not left out: $(f 1 decisions --json | jq -c '.decisions[-1]')"
wait_until 20 bash -c "grep -qs 'START.*generation $((G0 + 1))' '$T/r4/n1/log.0' && grep -qs 'START.*generation $((G0 + 1))' '$T/r4/n2/log.1'" &&
	pass "restarted ranks on nodes 1 and 2 learned generation $((G0 + 1))" || fail "restarted ranks: $(grep START "$T/r4/n1/log.0")"
for i in 1 2; do kill -TERM "${LA[$i]}"; done
wait_launchers 1 2

# ---- partition: node 3 cut off ----
start_node 3
wait_until 15 all_alive || fail "node 3 did not rejoin the mesh"
run 5 100 0 1 2 3
wait_until 30 started 5 1 2 3 || fail "round 5 did not start"
sleep 3
G0=$(f 1 status --json | jq '[.jobs[] | select(.job=="cjob") | .generation][0]')
RUN=$(f 1 status --json | jq '[.jobs[] | select(.job=="cjob") | .run][0]')
CUT=$(date +%s%3N)
ip link set veth-ftd3 down
wait_until 20 grep -q '"type":"fenced"' "$T/n3/events.jsonl" &&
	pass "node 3, cut off from etcd, fenced its ranks" || fail "node 3 did not fence"
wait ${LA[3]}; RC3=$?
[ $RC3 = 42 ] && pass "node 3's ranks ended (launcher exit 42)" || fail "node 3's launcher exit $RC3: $(tail -2 "$T/r5/n3/log.0")"
wait_until 20 bash -c "'$B/ftbpf' --socket '$T/n1/s.sock' decisions --json | jq -e '[.decisions[] | select(.kind==\"generation\" and .generation==$((G0 + 1)) and .run==$RUN)] | length == 1' >/dev/null" &&
	pass "the majority decided generation $((G0 + 1)) without node 3" ||
	fail "majority decided nothing; members in etcd: $(ETCDCTL_API=3 etcdctl --endpoints "$EP" get --prefix /ftbpf-it/ --keys-only | grep members | tr '\n' ' '); node 1: $(f 1 status --json | jq -c '[.jobs[] | select(.job=="cjob")][0] | {generation, fenced}')"
BY3=$(f 1 decisions --json | jq "[.decisions[] | select(.at_ms > $CUT and .by==\"$(node 3)\")] | length")
[ "$BY3" = 0 ] && pass "node 3 decided nothing while cut off" || fail "node 3 made $BY3 decisions while cut off"
ip link set veth-ftd3 up
same() { [ "$(f 1 decisions --json | jq -c .decisions)" = "$(f 3 decisions --json | jq -c .decisions)" ]; }
wait_until 20 same && pass "healed: node 3 agrees with the majority ($(f 3 decisions --json | jq '.decisions | length') decisions)" ||
	fail "node 3 disagrees: $(f 3 decisions --json | jq -c '.decisions[-1]') vs $(f 1 decisions --json | jq -c '.decisions[-1]')"
for i in 1 2; do kill -TERM "${LA[$i]}" 2>/dev/null; done
wait_launchers 1 2

# ---- agentkill: node 1's agent killed -9 right after a SIGTERM on its rank ----
wait_until 15 all_alive || fail "the mesh did not heal"
run 6 100 0 1 2 3
wait_until 30 started 6 1 2 3 || fail "round 6 did not start"
sleep 2
kill -TERM "$(worker 6 1 0)"; sleep 0.005; kill -9 "${AG[1]}"; wait "${AG[1]}" 2>/dev/null; AG[1]=
wait_launchers 2 3
[ "${RCS[2]}${RCS[3]}" = 4242 ] && pass "node 1's agent killed mid-decision: the ranks on nodes 2 and 3 exited 42 ($(f 2 decisions --json | jq -c '[.decisions[] | select(.kind=="generation")][-1] | {cause, resume_step, excluded}'))" ||
	fail "after the agent kill: exits ${RCS[2]} ${RCS[3]}"
keys() { f "$1" decisions --json | jq -c '[.decisions[] | {run, kind, generation, checkpoint, step}]'; }
wait_until 10 bash -c "[ \"\$('$B/ftbpf' --socket '$T/n2/s.sock' decisions --json | jq -c .decisions)\" = \"\$('$B/ftbpf' --socket '$T/n3/s.sock' decisions --json | jq -c .decisions)\" ]" &&
	pass "nodes 2 and 3 hold the same decisions" || fail "nodes 2 and 3 disagree"
DUP=$(keys 2 | jq '[group_by([.run, .kind, .generation, .checkpoint])[] | select(length > 1)] | length')
[ "$DUP" = 0 ] && pass "no conflicting decision: one per kind, generation and request" || fail "$DUP conflicting decisions: $(keys 2)"
kill -9 "${LA[1]}" $(cat "$T/r6/n1/pids.0") 2>/dev/null
for i in 2 3; do agent_alive_i() { kill -0 "${AG[$1]}" 2>/dev/null; }; agent_alive_i $i || fail "agent $i died"; done
finish
