#!/bin/bash
# time-limit: 400
# Two unrelated jobs, each launched with torchrun's defaults (TORCHELASTIC_RUN_ID=none, master
# 127.0.0.1:29500: the same on every host), on two hosts (network namespaces, an agent each,
# one etcd): two torch DDP ranks (gloo) of docs/examples/ddp_checkpoint.py per host. Both jobs
# have the same launcher-given id; a job whose master is a loopback address is local to its
# host, so their decisions never meet (I1): a SIGTERM to a rank of the job on host 1 makes that
# job save and exit 42, and the job on host 2 never sees a decision, never saves, keeps training.
. "$(dirname "$0")/lib.sh"
command -v etcd >/dev/null || { fail "etcd not installed (make deps)"; finish; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || { fail "python3-torch not installed (make deps)"; finish; }
. "$(dirname "$0")/cluster.sh"
cluster_up dfij 10.79.3 24795 || finish
for i in 1 2; do start_node $i; done
declare -A RP
for i in 1 2; do
	D=$T/job$i; mkdir -p "$D"; chmod 777 "$D"
	for r in 0 1; do
		ip netns exec "dfij$i" env FTBPF_SOCKET="$T/n$i/s.sock" PYTHONPATH="$B/python" \
			MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 \
			LOCAL_WORLD_SIZE=2 TORCHELASTIC_RUN_ID=none TORCHELASTIC_RESTART_COUNT=0 \
			/usr/bin/python3 "$ROOT/docs/examples/ddp_checkpoint.py" --dir "$D" >>"$D/out.$r" 2>&1 &
		RP[$i$r]=$!; WORKLOAD_PIDS+=($!)
	done
done
started2() { for i in 1 2; do for r in 0 1; do grep -qs START "$T/job$i/log.$r" || return 1; done; done; }
wait_until 120 started2 || fail "the jobs did not start: $(tail -2 "$T"/job*/out.*)"
sleep 3
J1=$(f 1 status --json | jq -r '[.jobs[].job] | join(",")')
J2=$(f 2 status --json | jq -r '[.jobs[].job] | join(",")')
log "host 1 sees $J1; host 2 sees $J2"
kill -TERM "${RP[11]}"
wait "${RP[10]}"; R0=$?
wait "${RP[11]}"; R1=$?
[ "$R0$R1" = 4242 ] && pass "the job on host 1 saved step $(grep -h SAVED "$T"/job1/log.* | awk '{print $2}' | sort -u | tr '\n' ' ')and exited 42" ||
	fail "host 1's ranks exited $R0 $R1: $(tail -2 "$T"/job1/out.*)"
sleep 4
kill -0 "${RP[20]}" 2>/dev/null && kill -0 "${RP[21]}" 2>/dev/null && pass "the job on host 2 keeps training" ||
	fail "a rank of host 2's job ended: $(tail -2 "$T"/job2/log.* "$T"/job2/out.*)"
! grep -qs "SAVED\|EXIT" "$T"/job2/log.* && pass "host 2's job saved nothing and was told nothing" ||
	fail "host 2's job: $(grep -h 'SAVED\|EXIT' "$T"/job2/log.*)"
N2=$(nev 2 decision | wc -l)
[ "$N2" = 0 ] && pass "host 2's agent logged no decision" || fail "host 2's agent logged $N2 decisions: $(nev 2 decision | head -2)"
nev 2 action | grep -q . && fail "host 2's agent acted: $(nev 2 action | head -2)" || pass "host 2's agent signalled nothing"
kill -9 "${RP[20]}" "${RP[21]}" 2>/dev/null
finish
