#!/bin/bash
# time-limit: 600
# The memory limit the agent ships with is one it is shown to fit under attack (issue 31): the
# systemd unit's MemoryMax=256M and the DaemonSet's 256 MiB limit, as a real memory cgroup made
# here, with the agent started in it. Three attacks run against it as `nobody`, each the whole
# test of its own name: sparse libraries claiming a million sections (sec_sparse_elf), ~17,000
# one-second ranks (sec_exited_ranks) and 20,000 mappings of one ELF (sec_many_mappings). Each
# must pass as it does unlimited, with no process of the agent's cgroup killed for memory; the
# peak is printed.
. "$(dirname "$0")/lib.sh"
export FTBPF_AGENT_MEMORY_MAX=$((256 << 20))
agent_cgroup || { finish; }
rmdir "$AGENT_CG"; AGENT_CG= # each attack makes its own
D=$(dirname "$0")
for t in sec_sparse_elf sec_exited_ranks sec_many_mappings; do
	OUT=$(timeout 280 "$D/$t.sh" 2>&1); rc=$?
	PEAK=$(echo "$OUT" | sed -n 's/.*memory cgroup: limit [0-9]* bytes, peak \([0-9]*\) bytes.*/\1/p' | tail -1)
	if [ $rc -eq 0 ] && [ -n "$PEAK" ] && echo "$OUT" | grep -q "oom kills 0"; then
		pass "$t under a 256 MiB limit: passes, the agent's peak $((PEAK >> 20)) MiB, no oom kill"
	else
		fail "$t under a 256 MiB limit: rc=$rc peak=${PEAK:-?}"
		echo "$OUT" | tail -25
	fi
done
finish
