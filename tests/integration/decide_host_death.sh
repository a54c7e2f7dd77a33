#!/bin/bash
# time-limit: 300
# A host dying: three agents in network namespaces with etcd, a launcher of two C ranks on each
# (docs/examples/c_loop.c, one restart allowed) whose ranks end with exit 1 when a peer of the
# job is gone (--peers: a collective that lost its peer), as a torch DDP rank does. Node 3's
# agent, launcher and ranks are killed at once. The ranks on nodes 1 and 2 fail (exit 1) and a
# generation is decided; node 3 is lost a few seconds later (its lease), and that is the same
# fault: exactly one generation, the budget charged once, and the ranks the launchers restarted
# keep running (nothing ends them); node 3 is left out of that generation as it runs, so a
# preemption of the 4 ranks left completes. The nodes run with node keys (each record signed by
# the node that wrote it, docs/security.md): the generation's decision event names its signer,
# its decider, and no record of an authentic node is refused.
. "$(dirname "$0")/lib.sh"
CLUSTER_NODE_KEYS=1
command -v etcd >/dev/null || { fail "etcd not installed (make deps)"; finish; }
. "$(dirname "$0")/cluster.sh"
cluster_up dfih 10.79.2 24793 || finish
for i in 1 2 3; do start_node $i; done
wait_until 15 all_alive || fail "the mesh did not form"
RUN_ARGS="--peers $T/peers" run 1 100 1 1 2 3
wait_until 30 started 1 1 2 3 || fail "the job did not start"
cat "$T"/r1/n*/pids.0 | tr '\n' ' ' >"$T/peers"
sleep 2
RUN=$(f 1 status --json | jq '[.jobs[] | select(.job=="cjob") | .run][0]')
kill -9 "${AG[3]}" "${LA[3]}" $(cat "$T/r1/n3/pids.0"); wait "${AG[3]}" "${LA[3]}" 2>/dev/null; AG[3]=
T0=$(date +%s)
gens() { f "$1" decisions --json | jq -c "[.decisions[] | select(.run==$RUN and .kind==\"generation\")]"; }
wait_until 20 bash -c "[ \"\$('$B/ftbpf' --socket '$T/n1/s.sock' decisions --json | jq '[.decisions[] | select(.run==$RUN and .kind==\"generation\")] | length')\" -ge 1 ]" ||
	fail "no generation after node 3 died"
wait_until 20 bash -c "grep -qs 'START.*generation 1' '$T/r1/n1/log.0' && grep -qs 'START.*generation 1' '$T/r1/n2/log.0'" ||
	fail "the launchers did not restart their ranks: $(grep -h 'START\|PEER' "$T"/r1/n[12]/log.0 | tr '\n' ' ')"
# node 3's lease (3 s) expired long ago; give a second decision every chance to happen
W=$((T0 + 12 - $(date +%s))); [ $W -gt 0 ] && sleep $W
G=$(gens 1)
[ "$(echo "$G" | jq length)" = 1 ] && pass "host 3 died: exactly one generation ($(echo "$G" | jq -c '.[0] | {cause, why, excluded}'))" ||
	fail "generations: $G"
[ "$(gens 2)" = "$G" ] && pass "node 2 holds the same decision" || fail "node 2: $(gens 2)"
SG=$(for i in 1 2; do nev $i decision | jq -c 'select(.kind=="generation") | {by, signer}'; done | sort -u)
[ -n "$SG" ] && echo "$SG" | jq -e -s 'all(.signer != null and .signer == .by)' >/dev/null &&
	pass "node keys: the generation's signer is its decider: $(echo "$SG" | head -1)" || fail "signer: $SG"
for i in 1 2; do
	R=$(f $i status --json | jq '.agent.decisions.store.counters.records_rejected // 0')
	[ "$R" = 0 ] && pass "node $i refused no record of an authentic node" || fail "node $i refused $R records: $(nev $i store_rejected | head -2)"
done
alive_all() { local i r p; for i in 1 2; do for p in $(cat "$T/r1/n$i/pids.1"); do kill -0 "$p" 2>/dev/null || return 1; done; done; }
alive_all && ! grep -qs "EXIT" "$T"/r1/n[12]/log.* &&
	pass "the ranks the launchers restarted keep running ($(( $(date +%s) - T0 )) s after the fault)" ||
	fail "restarted ranks ended: $(grep -h 'EXIT\|START' "$T"/r1/n[12]/log.* | tr '\n' ' ')"
# node 3 is left out of generation 1 as it runs (out/1/NODE): a checkpoint of the 4 ranks left
# completes (their launchers kept WORLD_SIZE 6)
for i in 1 2; do kill -TERM "${LA[$i]}" 2>/dev/null; done
wait_launchers 1 2
S=$(cat "$T"/r1/n[12]/log.* | awk '/^SAVED .* generation 1/ {print $2}' | sort | uniq -c)
[ "${RCS[1]}${RCS[2]}" = 4242 ] && [ "$(echo $S | awk '{print $1}')" = 4 ] &&
	pass "a preemption after it: the 4 ranks left saved step $(echo $S | awk '{print $2}') and exited 42" ||
	fail "preemption after the fault: launchers ${RCS[1]} ${RCS[2]}; saved: $S"
finish
