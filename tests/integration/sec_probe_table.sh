#!/bin/bash
# time-limit: 120
# The CUDA/NCCL probe table, against a hostile local user (issue 19: 32 fake libcuda.so.* files
# of nobody's filled the 32-library table, and root's real library was never probed). Now the
# table is bounded per user (GPUPROBE_LIBS_PER_UID) with places only root's ranks may take:
# nobody's rank maps 32 libcuda.so.1 files (copies of the mock, each its own file with real
# probe sites), then root's rank maps the mock libcuda: root's is probed, nobody's are counted as
# refused, and the agent says so.
. "$(dirname "$0")/lib.sh"
MAP=$(for_nobody "$B/workloads/mapper")
start_agent --soft-timeout 30 --hard-timeout 300 --action report || exit 1
FILES=()
for i in $(seq 32); do
	mkdir -p "$T/n/$i"
	cp "$B/mock/libcuda.so.1" "$T/n/$i/libcuda.so.1"
	FILES+=("$T/n/$i/libcuda.so.1")
done
chown -R nobody "$T/n"
$NOBODY env FTBPF_JOB=fake FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$MAP" --exec "${FILES[@]}" >"$T/m.out" 2>&1 &
P=$!; WORKLOAD_PIDS+=($P)
wait_until 10 grep -q mapped "$T/m.out" || fail "mapper: $(cat "$T/m.out")"
# the probe path takes at most a few new files per scan: wait until it went through all 32
wait_until 30 jq_status '(.agent.counters.gpu_libs_refused // 0) + ([.agent.gpu_libs[] | select(.uid == 65534)] | length) >= 32' ||
	fail "not all of nobody's files looked at: $(status_json | jq -c '{refused: .agent.counters.gpu_libs_refused, libs: (.agent.gpu_libs | length)}')"
NB=$(status_json | jq '[.agent.gpu_libs[] | select(.uid == 65534)] | length')
[ "$NB" -ge 1 ] && [ "$NB" -le 8 ] && pass "nobody's ranks got $NB places in the probe table, no more" || fail "nobody has $NB libraries in the table"
jq_status '.agent.counters.gpu_libs_refused >= 24' && pass "the rest refused and counted: $(status_json | jq .agent.counters.gpu_libs_refused)" ||
	fail "refused: $(status_json | jq .agent.counters.gpu_libs_refused)"
FTBPF_JOB=rootgpu FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$B/workloads/mapper" --exec "$B/mock/libcuda.so.1" >"$T/r.out" 2>&1 &
R=$!; WORKLOAD_PIDS+=($R)
wait_until 15 jq_status "[.agent.gpu_libs[] | select(.path == \"$B/mock/libcuda.so.1\" and .uid == 0 and .functions > 0)] | length == 1" &&
	pass "root's mock libcuda probed: $(status_json | jq -c "[.agent.gpu_libs[] | select(.uid == 0) | {path: (.path | split(\"/\") | last), functions}]")" ||
	fail "root's library not probed: $(status_json | jq -c '.agent.gpu_libs | map({path, uid, functions})' | head -c 600)"
grep -q "not probed" "$T/agent.out" && pass "the agent says why nobody's files were not probed: $(grep 'not probed' "$T/agent.out" | head -1 | cut -c1-160)" ||
	fail "no message for the refused files"
agent_alive && pass "the agent lives" || fail "the agent died"
finish
