#!/bin/bash
# time-limit: 60
# A rank in a Kubernetes pod's container: the agent names the pod UID and the container id
# from the rank's cgroup. The test makes a real cgroup with the path a kubelet (cgroupfs
# driver) gives a container, and a rank that moves itself there before it execs.
. "$(dirname "$0")/lib.sh"
POD=5a1b2c3d-4e5f-6789-abcd-$(printf '%012x' $((RANDOM * RANDOM)))
CID=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
CG=
for h in /sys/fs/cgroup/pids /sys/fs/cgroup/unified /sys/fs/cgroup; do
	[ -w "$h/cgroup.procs" ] || continue
	mkdir -p "$h/kubepods/besteffort/pod$POD/$CID" 2>/dev/null && CG=$h/kubepods/besteffort/pod$POD/$CID && break
done
[ -n "$CG" ] || { fail "cannot make a cgroup on this host"; finish; }
rmcg() { [ -n "$CG" ] && for d in "$CG" "$(dirname "$CG")" "$(dirname "$(dirname "$CG")")" "$(dirname "$(dirname "$(dirname "$CG")")")"; do rmdir "$d" 2>/dev/null; done; }
trap 'cleanup; rmcg' EXIT
start_agent --soft-timeout 60 --hard-timeout 300 --action report || exit 1
# (as in a container: in its cgroup before the rank's program runs)
sh -c "echo \$\$ > '$CG/cgroup.procs' && exec env FTBPF_JOB=podjob FTBPF_RANK=0 sleep 100" & R=$!; WORKLOAD_PIDS+=($R)
wait_until 10 jq_status "[.ranks[] | select(.pid==$R)] | length == 1" || fail "rank not adopted"
grep -q "kubepods/besteffort/pod$POD/$CID" "/proc/$R/cgroup" && log "rank $R is in $CG" || fail "the rank is not in the cgroup: $(cat /proc/$R/cgroup)"
jq_status ".ranks[] | select(.pid==$R) | .container.pod_uid == \"$POD\" and .container.id == \"$CID\"" &&
	pass "status names the rank's pod and container: $(status_json | jq -c ".ranks[] | select(.pid==$R) | .container")" ||
	fail "container: $(status_json | jq -c ".ranks[] | select(.pid==$R) | .container")"
has_event adopt ".pid==$R and .container.pod_uid == \"$POD\"" && pass "so does the adopt event" || fail "adopt event: $(events_of adopt | tail -1)"
FTBPF_JOB=plain FTBPF_RANK=0 sleep 100 & P=$!; WORKLOAD_PIDS+=($P)
wait_until 10 jq_status ".ranks[] | select(.pid==$P) | .container == null" && pass "a rank in no container: container null" || fail "plain rank"
kill -9 $R $P 2>/dev/null; wait $R $P 2>/dev/null
finish
