#!/bin/bash
# ftbpf on a real NVIDIA GPU: the scenarios the mocks stand for in `make test`, run against the
# real driver, libcuda and libnccl. Prints PASS/FAIL per scenario and the overhead ratios;
# exits with the number of failures.
#
#   sudo tests/gpu/run.sh [BINDIR]
#
# BINDIR holds ftbpfd and ftbpf (default: build/ next to this script's checkout). GPU hosts
# often have no compiler or libbpf: build on Debian 12 (`make all`), then `make gpu-bundle`
# and carry build/gpu-bundle.tar.gz over; it unpacks to a folder with the binaries, the shared
# libraries they need and this script (run it as gpu-bundle/tests/gpu/run.sh gpu-bundle/bin).
# Needs: root, bpffs and tracefs (mounted if missing), python3 with a CUDA build of torch
# (PYTHON=... to choose), one GPU. Results: paste the output into docs/gpu.md.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${1:-$HERE/../../build}
PY=${PYTHON:-python3}
SOFT=5
T=$(mktemp -d /tmp/ftbpf-gpu.XXXXXX)
SOCK=$T/s.sock
PIN=/sys/fs/bpf/ftbpf-gpu-test
FAILS=0
PIDS=()
# The bundle's shared libraries are Debian 12's: the agent, the CLI and jq run with them
# (through wrappers in $T/bin), the workloads' python never (it would load Debian's libssl,
# libz or libffi in place of its own). A jq on the host is used before the bundle's.
mkdir -p "$T/bin"
for b in ftbpfd ftbpf ftbpf-top jq; do
	[ $b = jq ] && command -v jq >/dev/null && continue
	[ -x "$BIN/$b" ] || continue
	printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec \047%s\047 "$@"\n' \
		"$BIN/lib" "$BIN/$b" >"$T/bin/$b"
	chmod +x "$T/bin/$b"
done
PLUGIN=$BIN/libnccl-profiler-ftbpf.so
BIN=$T/bin
export PATH=$PATH:$BIN

say() { echo "[gpu] $*"; }
pass() { echo "[gpu] PASS: $*"; }
fail() { echo "[gpu] FAIL: $*"; FAILS=$((FAILS + 1)); }
ftbpf() { "$BIN/ftbpf" --socket "$SOCK" "$@"; }
st() { ftbpf status --json; }
wait_for() { local end=$(($(date +%s) + $1)); shift; while [ "$(date +%s)" -lt $end ]; do "$@" && return 0; sleep 0.2; done; return 1; }
hung() { st | jq -e ".jobs[] | select(.job==\"$1\") | .hung" >/dev/null 2>&1; }
hang_event() { jq -c "select(.type==\"hang\" and .job==\"$1\")" "$T/events.jsonl" | head -1; }
delay() { awk -v h="$(hang_event "$1" | jq -r .ts | xargs -r -I{} date -d {} +%s.%N)" -v f="$(cat "$2")" 'BEGIN{printf "%.2f", h ? h - f : 999}'; }
agent() {
	"$BIN/ftbpfd" --socket "$SOCK" --state-dir "$T/state" --pin-dir "$PIN" --log-file "$T/events.jsonl" \
		--soft-timeout $SOFT --hard-timeout 600 --action report --verbose 1 "$@" >>"$T/agent.out" 2>&1 &
	AGENT=$!
	wait_for 20 bash -c "'$BIN/ftbpf' --socket '$SOCK' version >/dev/null 2>&1" || { say "agent did not start"; cat "$T/agent.out"; exit 1; }
}
stop_agent() { kill "$AGENT" 2>/dev/null; wait "$AGENT" 2>/dev/null; rm -rf "$PIN"; }
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; stop_agent; }
trap cleanup EXIT
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
mountpoint -q /sys/kernel/tracing || mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
command -v jq >/dev/null || { say "needs jq"; exit 1; }
$PY -c 'import torch; assert torch.cuda.is_available()' || { say "no CUDA torch ($PY)"; exit 1; }
say "$(date -u +%FT%TZ) $(uname -r) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
say "torch $($PY -c 'import torch; print(torch.__version__, torch.version.cuda)') nccl $($PY -c 'import torch; print(".".join(map(str, torch.cuda.nccl.version())))' 2>/dev/null)"
W="$PY $HERE/gpu_work.py"
run() { # JOB [env...] -- command: a rank in the background
	local job=$1; shift
	mkdir -p "$T/$job"
	env FTBPF_JOB=$job "$@" >>"$T/$job/out" 2>&1 &
	PIDS+=($!)
}

# GPU_ONLY=overhead: the overhead rounds (6.) alone; GPU_ONLY=torchrun: the torchrun jobs (7.)
if [ "${GPU_ONLY:-all}" = all ]; then
agent
# 1. a healthy GPU loop: never hung, its synchronisations seen
run loop FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 $W loop --seconds 20 --dir "$T/loop"
# 2. a kernel that never finishes: flagged within soft + 1 s, the rank named
run hang FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 $W hang --dir "$T/hang"
# 3. two gloo ranks, rank 1 stuck in a GPU synchronisation
for r in 0 1; do
	run gloo RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=29611 TORCHELASTIC_RUN_ID=gloo-$$ \
		$W ddp --backend gloo --dir "$T/gloo" --fault gpu-hang --fault-rank 1 --fault-after 100
done
# ftbpf-top's GPU% and GMEM from the driver's NVML (make test has a stand-in only): the loop's
# rank holds GPU memory
if [ -x "$BIN/ftbpf-top" ] && wait_for 60 test -s "$T/loop/pid.0"; then
	sleep 3
	"$BIN/ftbpf-top" --socket "$SOCK" --once --width 220 >"$T/top.txt" 2>&1
	ROW=$(grep -E "^. loop +0 +$(cat "$T/loop/pid.0") " "$T/top.txt")
	grep -qE "GPU% +GMEM" "$T/top.txt" && [ -n "$ROW" ] && ! echo "$ROW" | grep -qE " 0k " &&
		pass "ftbpf-top's GPU columns from NVML: $(echo "$ROW" | tr -s ' ')" ||
		fail "ftbpf-top's GPU columns: $(grep -E 'GPU%|THR|loop' "$T/top.txt" | head -3)"
fi
wait_for 60 test -s "$T/hang/hang.ts" || fail "hang: did not start: $(tail -3 "$T/hang/out")"
if wait_for $((SOFT + 10)) hung hang; then
	D=$(delay hang "$T/hang/hang.ts"); WHY=$(hang_event hang | jq -r .why)
	awk -v d="$D" 'BEGIN{exit !(d <= '$((SOFT + 1))')}' && echo "$WHY" | grep -qv "outside this host" &&
		pass "GPU hang flagged ${D} s after the kernel (soft $SOFT): $WHY" || fail "GPU hang: ${D} s, why: $WHY"
else
	fail "GPU hang never flagged: $(st | jq -c '.ranks[] | select(.job=="hang") | {state, reason, gpu_ioctls, gpu_api_calls}')"
fi
wait_for 90 test -s "$T/gloo/hang.ts" || fail "gloo: did not reach the fault: $(tail -3 "$T/gloo/out")"
if wait_for $((SOFT + 10)) hung "torch:gloo-$$"; then
	H=$(hang_event "torch:gloo-$$")
	echo "$H" | jq -e '.culprit_ranks == [1]' >/dev/null && pass "gloo: rank 1 named: $(echo "$H" | jq -r .why)" ||
		fail "gloo: $(echo "$H" | jq -c '{culprit_ranks, why}')"
else
	fail "gloo: never flagged: $(st | jq -c '[.ranks[] | select(.job=="torch:gloo-'$$'") | {rank, state, reason}]')"
fi
wait_for 25 bash -c "! kill -0 $(cat "$T/loop/pid.0") 2>/dev/null"
if [ -z "$(jq -c 'select(.type=="hang" and .job=="loop")' "$T/events.jsonl")" ] &&
	st | jq -e '[.ranks[] | select(.job=="loop")][0].gpu_api_calls > 100' >/dev/null; then
	pass "healthy loop never flagged; $(st | jq '[.ranks[] | select(.job=="loop")][0].gpu_api_calls') probed calls"
else
	fail "healthy loop: $(jq -c 'select(.type=="hang" and .job=="loop") | .why' "$T/events.jsonl" | head -1) calls: $(st | jq '[.ranks[] | select(.job=="loop")][0].gpu_api_calls')"
fi
st | jq -c '.agent.gpu_libs' | sed 's/^/[gpu] probed: /'
for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; PIDS=()
# 4. two NCCL ranks on one GPU (a host id each), rank 1 stalls before a step's all-reduces
for r in 0 1; do
	run nccl RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=29612 TORCHELASTIC_RUN_ID=nccl-$$ \
		NCCL_HOSTID=host$r NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 \
		$W ddp --backend nccl --dir "$T/nccl" --fault skip --fault-rank 1 --fault-after 100
done
wait_for 90 test -s "$T/nccl/hang.ts" || fail "nccl: did not reach the fault: $(tail -3 "$T/nccl/out")"
if wait_for $((SOFT + 10)) hung "torch:nccl-$$"; then
	H=$(hang_event "torch:nccl-$$"); WHY=$(echo "$H" | jq -r .why)
	echo "$H" | jq -e '.culprit_ranks == [1]' >/dev/null && echo "$WHY" | grep -q "the first it missed" &&
		echo "$WHY" | grep -q "(1024 x float32)" && pass "nccl: rank 1 named: $WHY" || fail "nccl: $(echo "$H" | jq -c '{culprit_ranks, why}')"
else
	fail "nccl: never flagged: $(st | jq -c '[.ranks[] | select(.job=="torch:nccl-'$$'") | {rank, state, reason, nccl}]')"
fi
for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; PIDS=()
stop_agent

# 5. the terminate action on a GPU hang
agent --hard-timeout 10 --action terminate --grace 5
run term FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 $W hang --dir "$T/term"
wait_for 60 test -s "$T/term/pid.0"
TP=$(cat "$T/term/pid.0")
if wait_for 40 bash -c "! kill -0 $TP 2>/dev/null"; then
	pass "terminate: the hung rank ended: $(jq -c "select(.type==\"action\" and .pid==$TP) | .signal_name" "$T/events.jsonl" | tr '\n' ' ')"
else
	fail "terminate: rank $TP still alive after the hard timeout"
fi
stop_agent

fi

# 7. torchrun + DDP over NCCL, as users run it, the agent with its defaults (soft_timeout auto,
#    stragglers on): 2 ranks on this host's first GPU (a NCCL_HOSTID each when there is one GPU,
#    as GPU-FACTS.md measured), 6 x 2048^2 layers, 4 bucket all-reduces a step:
#    a. healthy, a 1.5 s evaluation every 40 steps: never flagged, no straggler
#    b. rank 1's kernel never ends (after its step's collectives) at 25 s: flagged within
#       max(4 s, 3 x the collective p99) + 1.5 s, rank 1 named
#    c. rank 1 sleeps before its step's collectives at 25 s: the same
#    d. rank 1 does 40% more GPU work a step from 20 s: named a straggler within 30 s, reason gpu
#    e. ranks behind `torchrun --no-python sh run.sh` (python not exec'd), rank 1 sleeps at 30 s:
#       nothing flagged before, the hang flagged at the pace, rank 1 named
#    f. with ftbpf's NCCL profiler plugin (NCCL_PROFILER_PLUGIN), rank 1's kernel never ends
#       *before* its step: every rank issues the step's all-reduces, none completes; named from
#       the devices' view within 15 s
if [ "${GPU_ONLY:-all}" = all ] || [ "${GPU_ONLY:-}" = torchrun ]; then
NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())')
ONE=; [ "$NGPU" -lt 2 ] && ONE=--one-gpu
TR="$PY -m torch.distributed.run --standalone --nproc-per-node 2"
agent_defaults() {
	"$BIN/ftbpfd" --socket "$SOCK" --state-dir "$T/state" --pin-dir "$PIN" --log-file "$T/events.jsonl" \
		--action report --verbose 1 >>"$T/agent.out" 2>&1 &
	AGENT=$!
	wait_for 20 bash -c "'$BIN/ftbpf' --socket '$SOCK' version >/dev/null 2>&1" || { say "agent did not start"; cat "$T/agent.out"; exit 1; }
}
trun() { # NAME COMMAND...: as users start it (torchrun's own variables only)
	local n=$1; shift
	mkdir -p "$T/$n"
	env NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 "$@" >>"$T/$n/out" 2>&1 &
	PIDS+=($!)
}
tjob() { # NAME ARGS...: a torchrun job of `gpu_work.py train` in the background
	local n=$1; shift
	trun "$n" $TR "$HERE/gpu_work.py" train --dir "$T/$n" $ONE "$@"
}
tjob_of() { wait_for 120 test -s "$T/$1/pid.1" && st | jq -r ".ranks[] | select(.pid==$(cat "$T/$1/pid.1")) | .job"; }
ev_of() { jq -c "select(.type==\"$1\" and .job==\"$2\")" "$T/events.jsonl" | head -1; }
since() { awk -v h="$(date -d "$(echo "$1" | jq -r .ts)" +%s.%N)" -v f="$(cat "$2")" 'BEGIN{printf "%.2f", h - f}'; }
pace_of() { st | jq -c ".jobs[] | select(.job==\"$1\") | {step_s, collective_interval_p99_s, collectives_per_step, soft_timeout_s, paced_by}"; }
hang_check() { # NAME TSFILE: the job flagged at its pace, rank 1 named
	local j=$1 f=$2 p99 lim h d
	j=$(tjob_of "$1") || { fail "$1: did not start: $(tail -3 "$T/$1/out")"; return; }
	wait_for 120 test -s "$f" || { fail "$1: the fault never came: $(tail -3 "$T/$1/out")"; return; }
	p99=$(st | jq ".jobs[] | select(.job==\"$j\") | .collective_interval_p99_s")
	lim=$(awk -v p="$p99" 'BEGIN{l = 3 * p; if (l < 4) l = 4; print l + 1.5}')
	if wait_for 70 bash -c "jq -e 'select(.type==\"hang\" and .job==\"$j\")' '$T/events.jsonl' >/dev/null"; then
		h=$(ev_of hang "$j"); d=$(since "$h" "$f")
		awk -v d="$d" -v l="$lim" 'BEGIN{exit !(d >= 0 && d <= l)}' && echo "$h" | jq -e '.culprit_ranks == [1]' >/dev/null &&
			pass "$1: flagged ${d} s after the fault (limit ${lim} s, collective p99 ${p99} s): $(echo "$h" | jq -r .why)" ||
			fail "$1: flagged after ${d} s (limit ${lim} s): $(echo "$h" | jq -c '{soft_timeout_s, culprit_ranks, why}')"
	else
		fail "$1: not flagged in 70 s: $(pace_of "$j") $(st | jq -c "[.ranks[] | select(.job==\"$j\") | {rank, state, reason, nccl}]")"
	fi
}
agent_defaults
# a. healthy, with evaluations
tjob healthy --seconds 60 --eval-every 40 --eval-seconds 1.5
J=$(tjob_of healthy)
wait_for 120 bash -c "test -s '$T/healthy/steps.0'"
if [ -z "$(ev_of hang "$J")" ] && [ -z "$(ev_of straggler "$J")" ] && [ -s "$T/healthy/steps.0" ]; then
	pass "healthy: $(cat "$T/healthy/steps.0") steps, never flagged, no straggler; pace $(pace_of "$J")"
else
	fail "healthy: $(ev_of hang "$J" | jq -c '{why}') $(ev_of straggler "$J" | jq -c '{rank, evidence}') steps $(cat "$T/healthy/steps.0" 2>/dev/null)"
fi
for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; PIDS=()
# b. a kernel that never ends, c. a sleep
tjob gpuhang --seconds 300 --fault gpu-hang --fault-rank 1 --fault-after 25
hang_check gpuhang "$T/gpuhang/hang.ts"
for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; PIDS=(); pkill -9 -f "$T/gpuhang" 2>/dev/null
tjob sleep --seconds 300 --fault sleep --fault-rank 1 --fault-after 25
hang_check sleep "$T/sleep/fault.ts"
for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; PIDS=(); pkill -9 -f "$T/sleep" 2>/dev/null
# d. 40% slower
tjob slow --seconds 120 --slow-rank 1 --slow-pct 40 --slow-after 20
J=$(tjob_of slow)
wait_for 120 test -s "$T/slow/slow.ts" || fail "slow: never slowed"
if wait_for 40 bash -c "jq -e 'select(.type==\"straggler\" and .job==\"$J\" and .rank==1)' '$T/events.jsonl' >/dev/null"; then
	E=$(jq -c "select(.type==\"straggler\" and .job==\"$J\" and .rank==1)" "$T/events.jsonl" | head -1); D=$(since "$E" "$T/slow/slow.ts")
	awk -v d="$D" 'BEGIN{exit !(d <= 30)}' && echo "$E" | jq -e '.reason == "gpu"' >/dev/null &&
		pass "slow: rank 1 named ${D} s after it slowed: $(echo "$E" | jq -r .evidence)" || fail "slow: after ${D} s: $(echo "$E" | jq -c '{reason, evidence}')"
else
	fail "slow: not named: $(st | jq -c "[.ranks[] | select(.job==\"$J\") | {rank, slowdown, late_s, late_gpu_s, straggler_basis, wait_frac}]")"
fi
for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; PIDS=(); pkill -9 -f "$T/slow" 2>/dev/null
# e. behind sh run.sh
mkdir -p "$T/wrapped"
printf '#!/bin/sh\n%s %s train --dir %s %s --seconds 300 --fault sleep --fault-rank 1 --fault-after 30\necho done\n' \
	"$PY" "$HERE/gpu_work.py" "$T/wrapped" "$ONE" >"$T/wrapped/run.sh"
trun wrapped $TR --no-python sh "$T/wrapped/run.sh"
hang_check wrapped "$T/wrapped/fault.ts"
J=$(tjob_of wrapped)
[ -z "$(jq -c "select(.type==\"hang\" and .job==\"$J\" and .ts < \"$(date -u -d @"$(cut -d. -f1 "$T/wrapped/fault.ts" 2>/dev/null || echo 0)" +%Y-%m-%dT%H:%M:%S)\")" "$T/events.jsonl")" ] &&
	pass "wrapped: nothing flagged before the fault ($(st | jq -c "[.ranks[] | select(.job==\"$J\") | .wrapper_comm] | unique"))" || fail "wrapped: flagged before the fault"
for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; PIDS=(); pkill -9 -f "$T/wrapped" 2>/dev/null
# f. the devices' view
if [ -s "$PLUGIN" ]; then
	NCCL_PROFILER_PLUGIN=$PLUGIN tjob device --seconds 300 --fault gpu-hang-before --fault-rank 1 --fault-after 25
	hang_check device "$T/device/hang.ts"
	H=$(ev_of hang "$(tjob_of device)")
	echo "$H" | jq -r .why | grep -q "device began" && pass "device: the verdict rests on the devices' view" ||
		fail "device: not the devices' view: $(echo "$H" | jq -c '{culprit_ranks, why}') libs $(st | jq -c '[.agent.gpu_libs[] | .kind]')"
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; PIDS=(); pkill -9 -f "$T/device" 2>/dev/null
else
	fail "device: no $PLUGIN (make gpu-bundle carries it)"
fi
stop_agent
fi

[ "${GPU_ONLY:-all}" = torchrun ] && { say "$FAILS failed"; exit $FAILS; }

# 6. overhead: MLP training steps with a synchronisation each, without the agent, with it, and
#    with kernel-launch probes, in interleaved rounds (GPU_ROUNDS, default 5). Two sizes: small
#    steps (256-wide, batch 64: under a millisecond, bound by the CPU's kernel launches, the
#    worst case for probes) and large ones (4096-wide, batch 2048, about 8 ms: bound by the GPU). Each
#    round's ratio is to that round's run without the agent; the median and the spread of the
#    ratios are printed.
ROUNDS=${GPU_ROUNDS:-5}
declare -A times
SIZES="small:5000:256:64 large:300:4096:2048"
for round in $(seq "$ROUNDS"); do
	for size in $SIZES; do
		IFS=: read -r name steps width batch <<<"$size"
		for mode in none agent launch; do
			[ $mode = agent ] && agent
			[ $mode = launch ] && agent --gpu-probe-launch 1
			t=$(FTBPF_JOB=bench FTBPF_RANK=0 $W mlp --steps "$steps" --width "$width" --batch "$batch" --dir "$T")
			times[$name.$mode]="${times[$name.$mode]:-} $t"
			say "round $round $name $mode: $t s"
			[ $mode != none ] && stop_agent
		done
	done
done
med() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for size in $SIZES; do
	IFS=: read -r name steps width batch <<<"$size"
	read -ra none <<<"${times[$name.none]}"
	say "$name steps ($steps, ${width}-wide, batch $batch): seconds without the agent:${times[$name.none]}"
	for mode in agent launch; do
		read -ra t <<<"${times[$name.$mode]}"
		r=""
		for i in "${!t[@]}"; do r="$r $(awk -v a="${t[$i]}" -v n="${none[$i]}" 'BEGIN{printf "%.3f", a / n}')"; done
		m=$(med <<<"$r"); lo=$(tr ' ' '\n' <<<"$r" | grep . | sort -n | head -1); hi=$(tr ' ' '\n' <<<"$r" | grep . | sort -n | tail -1)
		say "overhead $name $mode: ${m}x (median of $ROUNDS rounds' ratios, spread $lo-$hi; seconds:${times[$name.$mode]})"
	done
done
say "$FAILS failed"
exit $FAILS
