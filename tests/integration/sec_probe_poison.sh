#!/bin/bash
# time-limit: 120
# A quota refusal is nobody's, never the library's (issue 31: nobody filled its places in the
# probe table, then mapped the system's libcuda.so.1; the refusal was remembered by inode, and
# root's CUDA library was never probed until the agent restarted: root's GPU hang evidence
# gone). As nobody: 10 copies of the mock libcuda take its 8 places, then it maps root's copy
# (a root-owned file nobody can read): refused by the quota, counted. Then root's rank maps that
# same file: probed (its functions counted), and nobody still holds at most 8 places.
. "$(dirname "$0")/lib.sh"
MAP=$(for_nobody "$B/workloads/mapper")
start_agent --soft-timeout 30 --hard-timeout 300 --action report || exit 1
mkdir -p "$T/sys"
cp "$B/mock/libcuda.so.1" "$T/sys/libcuda.so.1" && chmod 755 "$T/sys/libcuda.so.1"
FILES=()
for i in $(seq 10); do
	mkdir -p "$T/n/$i" && cp "$B/mock/libcuda.so.1" "$T/n/$i/libcuda.so.1"
	FILES+=("$T/n/$i/libcuda.so.1")
done
chown -R nobody "$T/n"
$NOBODY env FTBPF_JOB=fill FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$MAP" --exec "${FILES[@]}" >"$T/m1.out" 2>&1 &
WORKLOAD_PIDS+=($!)
wait_until 30 jq_status '([.agent.gpu_libs[] | select(.uid == 65534)] | length) == 8' ||
	fail "nobody's places not filled: $(status_json | jq -c '[.agent.gpu_libs[] | {uid, path}]' | head -c 400)"
R0=$(status_json | jq '.agent.counters.gpu_libs_refused')
$NOBODY env FTBPF_JOB=poison FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$MAP" --exec "$T/sys/libcuda.so.1" >"$T/m2.out" 2>&1 &
WORKLOAD_PIDS+=($!)
wait_until 15 jq_status ".agent.counters.gpu_libs_refused > $R0" &&
	pass "nobody's mapping of root's library refused by its quota (gpu_libs_refused $R0 -> $(status_json | jq .agent.counters.gpu_libs_refused))" ||
	fail "not refused: $(status_json | jq -c '.agent.counters.gpu_libs_refused')"
jq_status "[.agent.gpu_libs[] | select(.path == \"$T/sys/libcuda.so.1\")] | length == 0" || fail "root's library taken by nobody"
FTBPF_JOB=rootgpu FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$B/workloads/mapper" --exec "$T/sys/libcuda.so.1" >"$T/r.out" 2>&1 &
WORKLOAD_PIDS+=($!)
wait_until 15 jq_status "[.agent.gpu_libs[] | select(.path == \"$T/sys/libcuda.so.1\" and .uid == 0 and .functions > 0)] | length == 1" &&
	pass "root's rank mapping the same file: probed ($(status_json | jq -c "[.agent.gpu_libs[] | select(.uid == 0)][0] | {functions}"))" ||
	fail "root's library not probed (poisoned): $(status_json | jq -c '[.agent.gpu_libs[] | {uid, path, functions}]' | head -c 600)"
jq_status '([.agent.gpu_libs[] | select(.uid == 65534)] | length) <= 8' && pass "nobody still holds at most 8 places" || fail "nobody holds more"
agent_alive && pass "the agent lives" || fail "the agent died"
finish
