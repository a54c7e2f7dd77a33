#!/bin/bash
# The GPU as a real NVIDIA driver behaves (../shared/design/GPU-FACTS.md), through the mock
# libcuda: the runtime reaches the driver by cuGetProcAddress (so torch.cuda.synchronize() is
# cuCtxSynchronize_v2), and a wait spins on the CPU with a driver ioctl about once a second.
#   healthy   a GPU loop (2 ms kernel + synchronize, no other syscall): never hung
#   solo      a one-rank job whose kernel never finishes: hung, the rank named, not "outside"
#   gloo      two ranks all-reducing over sockets, rank 1's kernel never finishes: hung, rank 1
#   action    the hard timeout terminates both hung jobs (SIGTERM), the healthy one untouched
#   threads   a multi-threaded rank exits: no signal_delivered SIGKILL per thread
. "$(dirname "$0")/lib.sh"
SOFT=4
start_agent --soft-timeout $SOFT --hard-timeout 10 --action terminate --grace 2 --gpu-majors 1 || exit 1
jq_status '.agent.features.uprobes' || { log "SKIP: no uprobes with attach cookies here"; finish; }
export LD_LIBRARY_PATH=$B/mock
gpu_ring() { # JOB RANK WORLD [env...] -- ring args
	local job=$1 r=$2 n=$3; shift 3
	mkdir -p "$T/$job"
	env FTBPF_JOB=$job FTBPF_RANK=$r FTBPF_WORLD_SIZE=$n FTBPF_MOCK_DIR="$T/$job" "$@" >"$T/$job/out.$r" 2>&1 &
	WORKLOAD_PIDS+=($!)
}
RING="$B/workloads/ring --work 0 --interval-ms 0 --gpu-kernel-us 2000"
gpu_ring healthy 0 1 $RING --rank 0 --world 1 --dir "$T/healthy" --seconds 20
gpu_ring solo 0 1 FTBPF_MOCK_HANG_AT_LAUNCH=300 $RING --rank 0 --world 1 --dir "$T/solo"
gpu_ring gloo 0 2 $RING --rank 0 --world 2 --dir "$T/gloo" --hang-on-peer-loss 1
gpu_ring gloo 1 2 FTBPF_MOCK_HANG_AT_LAUNCH=300 $RING --rank 1 --world 2 --dir "$T/gloo" --hang-on-peer-loss 1
wait_until 20 test -e "$T/healthy/pid.0" -a -e "$T/solo/pid.0" -a -e "$T/gloo/pid.1" || fail "jobs did not start: $(cat "$T"/*/out.* | head -5)"
wait_until 10 jq_status '[.agent.gpu_libs[] | select(.kind=="cuda")] | length == 1' &&
	pass "the mock libcuda probed: $(status_json | jq -c '[.agent.gpu_libs[] | {path: (.path | split("/") | last), functions}]')" ||
	fail "gpu_libs: $(status_json | jq -c .agent.gpu_libs)"

# solo: its kernel never finishes; it spins in cuCtxSynchronize_v2 with an ioctl a second
wait_until 20 test -s "$T/solo/hang.ts" || fail "solo: the mock never hung"
wait_until $((SOFT + 6)) jq_status '.jobs[] | select(.job=="solo") | .hung' || fail "solo: not flagged hung"
S0=$(rank_pid solo 0)
HANG=$(events_of hang | jq -c 'select(.job=="solo")' | head -1)
D=$(awk -v h="$(echo "$HANG" | jq -r .ts | xargs -r -I{} date -d {} +%s.%N)" -v f="$(cat "$T/solo/hang.ts")" 'BEGIN{printf "%.2f", h - f}')
awk -v d="$D" -v s=$SOFT 'BEGIN{exit !(d <= s + 1)}' && pass "solo: flagged ${D} s after its kernel hung (soft ${SOFT} s)" || fail "solo: flagged after ${D} s"
echo "$HANG" | jq -e ".culprits == [$S0]" >/dev/null && pass "solo: its rank named culprit" || fail "solo: culprits $(echo "$HANG" | jq -c .culprits)"
WHY=$(echo "$HANG" | jq -r .why)
echo "$WHY" | grep -q "only rank" && ! echo "$WHY" | grep -q "outside this host" && echo "$WHY" | grep -q cuCtxSynchronize &&
	pass "solo: why: $WHY" || fail "solo: why: $WHY"
jq_status ".ranks[] | select(.pid==$S0) | .state == \"gpu_sync\" and .gpu_ioctls > 0" &&
	pass "solo: in a GPU synchronisation, its driver ioctls counted but not taken for progress" ||
	fail "solo: $(status_json | jq -c ".ranks[] | select(.pid==$S0) | {state, reason, gpu_ioctls}")"

# gloo: rank 0 waits in a socket read for rank 1, whose kernel never finishes
wait_until $((SOFT + 8)) jq_status '.jobs[] | select(.job=="gloo") | .hung' || fail "gloo: not flagged hung"
G1=$(rank_pid gloo 1)
HANG=$(events_of hang | jq -c 'select(.job=="gloo")' | head -1)
D=$(awk -v h="$(echo "$HANG" | jq -r .ts | xargs -r -I{} date -d {} +%s.%N)" -v f="$(cat "$T/gloo/hang.ts")" 'BEGIN{printf "%.2f", h - f}')
awk -v d="$D" -v s=$SOFT 'BEGIN{exit !(d <= s + 1)}' && pass "gloo: flagged ${D} s after rank 1's kernel hung" || fail "gloo: flagged after ${D} s"
echo "$HANG" | jq -e ".culprits == [$G1] and .culprit_ranks == [1]" >/dev/null && pass "gloo: rank 1 named culprit: $(echo "$HANG" | jq -r .why)" ||
	fail "gloo: $(echo "$HANG" | jq -c '{culprits, why}')"

# healthy: never flagged, its synchronisations counted
jq_status '[.ranks[] | select(.job=="healthy")][0] | .gpu_api_calls > 100' && pass "healthy: $(status_json | jq '[.ranks[] | select(.job=="healthy")][0].gpu_api_calls') probed calls (cuCtxSynchronize_v2)" ||
	fail "healthy: gpu_api_calls $(status_json | jq -c '[.ranks[] | select(.job=="healthy") | {gpu_api_calls, state, reason}]')"

# the hard timeout (10 s) terminates the two hung jobs
wait_until 15 has_event hard_timeout '.job=="solo"' && pass "solo: hard timeout reached" || fail "solo: no hard timeout"
wait_until 8 jq_status "[.ranks[] | select(.job==\"solo\" or .job==\"gloo\") | .exited] | all" &&
	pass "the hung jobs' ranks were terminated: $(status_json | jq -c '[.ranks[] | select(.job=="solo" or .job=="gloo") | .signal_name] | unique')" ||
	fail "still alive: $(status_json | jq -c '[.ranks[] | select(.job=="solo" or .job=="gloo") | {pid, exited, state}]')"
has_event action ".pid==$S0 and .signal_name==\"TERM\"" && pass "SIGTERM through the action" || fail "no SIGTERM action"
wait_until 25 bash -c "! kill -0 $(rank_pid healthy 0) 2>/dev/null"
[ -z "$(jq -c 'select((.type=="hang" or .type=="hard_timeout") and .job=="healthy")' "$LOG")" ] &&
	pass "healthy: never flagged in 20 s (soft ${SOFT} s)" || fail "healthy flagged: $(jq -c 'select(.type=="hang" and .job=="healthy") | .why' "$LOG" | head -1)"
jq_status '[.ranks[] | select(.job=="healthy") | .exit_code] == [0]' && pass "healthy: finished, exit code 0" || fail "healthy: $(status_json | jq -c '[.ranks[] | select(.job=="healthy") | {exited, exit_code, signal}]')"

# threads: a rank with 3 threads exits; the kernel's group-exit kills are nobody's signals
FTBPF_JOB=threads FTBPF_RANK=0 /usr/bin/python3 -c '
import threading, time
for _ in range(3):
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
time.sleep(2)' &
TP=$!
wait $TP
wait_until 3 has_event exit ".pid==$TP" || fail "threads: exit not seen"
N=$(jq -s "[.[] | select(.type==\"signal_delivered\" and .pid==$TP and .signal==9)] | length" "$LOG")
[ "$N" = 0 ] && pass "threads: no signal_delivered SIGKILL for the group exit" || fail "threads: $N signal_delivered SIGKILL events"
finish
