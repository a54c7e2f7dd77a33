#!/bin/bash
# time-limit: 360
# Hangs of mocked GPU jobs at the job's pace, with the agent's defaults (soft_timeout = auto):
# DDP-shaped ranks (tests/workloads/gpu_train.c: 4 bucket all-reduces a step, the host spinning in
# the loss synchronisation ~98% of an 80 ms step, as measured on an H200; no sleep between steps).
# Each hang must be flagged within max(4 s, 3 x the job's collective p99) of the stall (plus a
# scan and a busy host's slack), the right rank named:
#   gpuhang2   2 ranks, rank 1's kernel never ends after its step's all-reduces (the H200 case:
#              60 s before; both ranks in a GPU synchronisation, counts 4 apart)
#   sleep3     3 ranks, rank 2 sleeps before its step's all-reduces
#   stop2      2 ranks, rank 0 stops (SIGSTOP)
#   graph3     3 ranks replaying a CUDA graph each step (no NCCL call on the host), rank 1
#              sleeps: named from the graph launches
#   device3    3 ranks with ftbpf's NCCL profiler plugin, rank 1's kernel never ends *before*
#              the step's all-reduces (every rank issues them; the host's counts agree): named
#              from the devices' view within 15 s
#   nodevice2  the same without the plugin (soft_timeout_max 20 s, for time): the verdict says
#              the cause is on a device and which collective every rank waits in; no rank named
. "$(dirname "$0")/lib.sh"
start_agent --gpu-majors 1 --action report || exit 1
jq_status '.agent.features.uprobes' || { log "SKIP: no uprobes with attach cookies here"; finish; }
jq_status '.agent.soft_timeout_auto' && pass "the agent runs with the default soft_timeout auto" ||
	fail "not auto: $(status_json | jq -c .agent)"

# train JOB N ARGS...: N ranks of gpu_train (as FTBPF_RANK ranks of JOB), after 1 s of "imports"
train() {
	local job=$1 n=$2; shift 2
	mkdir -p "$T/$job"
	for r in $(seq 0 $((n - 1))); do
		env FTBPF_JOB=$job FTBPF_RANK=$r FTBPF_WORLD_SIZE=$n FTBPF_MOCK_DIR="$T/$job" ${PLUGIN:+NCCL_PROFILER_PLUGIN=$PLUGIN} \
			"$B/workloads/gpu_train" --rank "$r" --world "$n" --dir "$T/$job" --init-delay-ms 1000 \
			--seconds 120 "$@" >"$T/$job/out.$r" 2>&1 &
		WORKLOAD_PIDS+=($!)
	done
}
stop_job() { for f in "$T/$1"/pid.*; do kill -9 "$(cat "$f")" 2>/dev/null; done; }
# when the stall began: the mock's hang.ts (a device reached the kernel that never ends), else
# the workload's fault.ts
stall_ts() { if [ -s "$T/$1/hang.ts" ]; then cat "$T/$1/hang.ts"; else cat "$T/$1/fault.ts" 2>/dev/null; fi; }
# check JOB CULPRIT [WHY-REGEX]: flagged within the limit of the stall, the culprit named
check() {
	local job=$1 want=$2 re=${3:-} p99 lim h d
	wait_until 40 bash -c "test -s '$T/$job/hang.ts' || test -s '$T/$job/fault.ts'" || { fail "$job: the fault never began: $(tail -2 "$T/$job/out.0")"; return; }
	p99=$(status_json | jq ".jobs[] | select(.job==\"$job\") | .collective_interval_p99_s")
	lim=$(awk -v p="$p99" 'BEGIN{l = 3 * p; if (l < 4) l = 4; print l + 1.5}')
	if ! wait_until 30 has_event hang ".job==\"$job\""; then
		fail "$job: not flagged in 30 s: $(status_json | jq -c ".jobs[] | select(.job==\"$job\") | {soft_timeout_s, paced_by, why}")"
		return
	fi
	h=$(events_of hang | jq -c "select(.job==\"$job\")" | head -1)
	d=$(awk -v h="$(date -d "$(echo "$h" | jq -r .ts)" +%s.%N)" -v f="$(stall_ts "$job")" 'BEGIN{printf "%.2f", h - f}')
	awk -v d="$d" -v l="$lim" 'BEGIN{exit !(d >= 0 && d <= l)}' &&
		pass "$job: flagged ${d} s after the stall (collective p99 ${p99} s: limit ${lim} s, soft $(echo "$h" | jq .soft_timeout_s) s)" ||
		fail "$job: flagged ${d} s after the stall (limit ${lim} s): $(echo "$h" | jq -c '{soft_timeout_s, why}')"
	echo "$h" | jq -e ".culprit_ranks == [$want]" >/dev/null && { [ -z "$re" ] || echo "$h" | jq -r .why | grep -Eq "$re"; } &&
		pass "$job: rank $want named: $(echo "$h" | jq -r .why)" || fail "$job: $(echo "$h" | jq -c '{culprit_ranks, why}')"
	echo "$d" >"$T/$job/delay"
}

# 1. a kernel that never ends (2 ranks), a sleep (3 ranks)
train gpuhang2 2 --fault gpu-hang --fault-rank 1 --fault-after 12
train sleep3 3 --fault sleep --fault-rank 2 --fault-after 12
check gpuhang2 1 "never entered ncclAllReduce .*GPU synchronisation \(cuCtxSynchronize\)"
check sleep3 2 "clock_nanosleep"
stop_job gpuhang2; stop_job sleep3

# 2. SIGSTOP (2 ranks); CUDA graphs (3 ranks)
train stop2 2 --fault stop --fault-rank 0 --fault-after 12
train graph3 3 --graph 1 --fault sleep --fault-rank 1 --fault-after 12
check stop2 0 "stopped"
check graph3 1 "launched [0-9]+ CUDA graphs"
jq_status '[.ranks[] | select(.job=="graph3") | .nccl[]? | select(.last_op=="cuGraphLaunch")] | length == 3' &&
	pass "graph3: each rank's graph launches are numbered" || fail "graph3: $(status_json | jq -c '[.ranks[] | select(.job=="graph3") | .nccl]')"
stop_job stop2; stop_job graph3

# 3. every rank issues the same all-reduce, one device never gets there: the devices' view
PLUGIN=$B/libnccl-profiler-ftbpf.so train device3 3 --fault gpu-hang-before --fault-rank 1 --fault-after 12
check device3 1 "rank 1's device began [0-9]+ of these collectives, the others' [0-9]+: it never began ncclAllReduce"
jq_status '[.agent.gpu_libs[] | .kind] | index("nccl-profiler") != null' && pass "device3: the plugin's probe point is probed" ||
	fail "device3: gpu_libs $(status_json | jq -c '.agent.gpu_libs')"
D=$(cat "$T/device3/delay" 2>/dev/null || echo 99)
awk -v d="$D" 'BEGIN{exit !(d <= 15)}' && pass "device3: named ${D} s after the stall (at most 15 s)" || fail "device3: ${D} s"
stop_job device3

# 4. the same without a device-side view: no guess
stop_agent
start_agent --gpu-majors 1 --action report --soft-timeout-max 20 || exit 1
train nodevice2 2 --fault gpu-hang-before --fault-rank 1 --fault-after 12
wait_until 45 has_event hang '.job=="nodevice2"' || fail "nodevice2: not flagged within soft_timeout_max"
H=$(events_of hang | jq -c 'select(.job=="nodevice2")' | head -1)
echo "$H" | jq -e '.culprit_ranks == []' >/dev/null && echo "$H" | jq -r .why | grep -q "every rank issued ncclAllReduce #[0-9]* .*the cause is on a device.*no device-side view" &&
	pass "nodevice2: no rank named: $(echo "$H" | jq -r .why)" || fail "nodevice2: $(echo "$H" | jq -c '{culprit_ranks, why}')"
stop_job nodevice2
log "delays (s): $(for j in gpuhang2 sleep3 stop2 graph3 device3; do printf '%s %s  ' $j "$(cat "$T/$j/delay" 2>/dev/null)"; done)"
finish
