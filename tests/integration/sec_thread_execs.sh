#!/bin/bash
# time-limit: 150
# Thread records do not leak (issue 31: a thread that execs while it is not its process's
# leader kept its record in the kernel's `threads` map for ever; 17 x 4,100 such execs filled
# the 65,536 records, and every new thread of every user then had none: a healthy rank of
# root's showed no progress, was judged hung and SIGTERMed at the hard timeout). As nobody,
# four ranks each exec themselves 2,500 times from a second thread (10,000 execs); the kernel's
# thread table holds at most a few dozen records after, and root's job started then has its
# records: its 3 ranks make progress and are not judged hung over three soft timeouts.
. "$(dirname "$0")/lib.sh"
FLOOD=$(for_nobody "$B/workloads/flood")
SOFT=4
N=${THREAD_EXECS:-2500}
start_agent --soft-timeout $SOFT --hard-timeout 300 --action report || exit 1
held() { status_json | jq '[.agent.tables[] | select(.name=="threads")][0].held'; }
H0=$(held)
S=$(date +%s)
for i in 1 2 3 4; do
	$NOBODY env FTBPF_JOB=te$i FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$FLOOD" thread-execs "$N" >"$T/te$i.out" 2>&1 &
	WORKLOAD_PIDS+=($!)
done
wait_until 120 bash -c "grep -q done '$T/te1.out' && grep -q done '$T/te2.out' && grep -q done '$T/te3.out' && grep -q done '$T/te4.out'" ||
	fail "the execs did not finish: $(cat "$T"/te*.out | head -4)"
sleep 1
H1=$(held)
log "$((4 * N)) execs from threads in $(($(date +%s) - S)) s; thread records held before $H0, after $H1; $(status_json | jq -c '.agent.counters | {share_refused_threads, thread_map_full}')"
[ "${H1:-999999}" -le $((H0 + 64)) ] && pass "the kernel's thread table holds $H1 records after $((4 * N)) execs from threads (before: one leaked per exec)" ||
	fail "thread records held: $H1 (before $H0)"
ring_job rj 3
sleep $((3 * SOFT))
has_event hang '.job=="rj"' && fail "root's healthy job judged hung: $(events_of hang | jq -c 'select(.job=="rj") | .why')" ||
	pass "root's healthy job not judged hung over $((3 * SOFT)) s"
jq_status '[.ranks[] | select(.job=="rj" and .syscalls > 0)] | length == 3' && pass "root's 3 ranks have thread records (syscalls counted)" ||
	fail "root's ranks: $(status_json | jq -c '[.ranks[] | select(.job=="rj") | {pid, syscalls, state}]')"
agent_alive && pass "the agent lives" || fail "the agent died"
finish
