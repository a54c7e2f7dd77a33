#!/bin/bash
# time-limit: 420
# Ranks behind forking wrappers: four healthy 3-rank torch DDP jobs (gloo; MASTER_ADDR/PORT,
# RANK, WORLD_SIZE set by hand) run side by side, each through one wrapper: `timeout`,
# `bash -c "python3 ...; echo done"`, `sh run.sh`, and a two-level `sh run2.sh` that calls
# `timeout ... python3`. The python processes are the ranks (the wrappers are their wrapper,
# not members), no job is flagged at a 5 s soft timeout while they train (WRAP_SECONDS, 60 s),
# and then rank 1 of each job sleeps: each job is flagged hung, culprit rank 1 (its python).
# A fifth job (C ranks) behind a Python launcher that runs them with subprocess.run keeps the
# launchers as its ranks (python3 is no wrapper: a rank's own children never take it over),
# and is not flagged either: a rank waiting in wait4 progresses when its children do.
. "$(dirname "$0")/lib.sh"
SOFT=5
RUN=${WRAP_SECONDS:-60}
NODE=wrapnode
start_agent --soft-timeout $SOFT --hard-timeout 600 --action report --node-name $NODE || exit 1
BASE=$((31500 + RANDOM % 400))
KINDS=(timeout bashc sh sh2)
PY=/usr/bin/python3
DDP=$ROOT/tests/workloads/ddp.py
cat >"$T/run.sh" <<'EOF'
# a user's launch script: the rank is its child, then the script goes on
/usr/bin/python3 "$@"
echo "run.sh: python exited with $?"
EOF
cat >"$T/run2.sh" <<'EOF'
# a launch script that wraps the rank once more
timeout 600 /usr/bin/python3 "$@"
echo "run2.sh: done ($?)"
EOF
printf 'import subprocess, sys\nsys.exit(subprocess.run(sys.argv[1:]).returncode)\n' >"$T/launcher.py"
chmod 755 "$T/run.sh" "$T/run2.sh"
mkdir -p "$T/pyl"
for r in 0 1 2; do
	FTBPF_JOB=pylaunch FTBPF_RANK=$r FTBPF_WORLD_SIZE=3 setsid $PY "$T/launcher.py" "$B/workloads/ring" \
		--rank $r --world 3 --dir "$T/pyl" --fault sleep --fault-rank 1 --fault-after $((RUN + 20)) &
	WORKLOAD_PIDS+=($!); disown $!
done
for i in "${!KINDS[@]}"; do
	k=${KINDS[$i]}; port=$((BASE + i * 7)); d=$T/$k; mkdir -p "$d"
	args=("$DDP" --seconds 600 --fault sleep --fault-rank 1 --fault-after "$RUN" --dir "$d")
	for r in 0 1 2; do
		export MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r LOCAL_RANK=$r WORLD_SIZE=3
		case $k in
		timeout) setsid timeout 600 $PY "${args[@]}" >"$d/out.$r" 2>&1 & ;;
		bashc) setsid bash -c "$PY ${args[*]}; echo done" >"$d/out.$r" 2>&1 & ;;
		sh) setsid sh "$T/run.sh" "${args[@]}" >"$d/out.$r" 2>&1 & ;;
		sh2) setsid sh "$T/run2.sh" "${args[@]}" >"$d/out.$r" 2>&1 & ;;
		esac
		WORKLOAD_PIDS+=($!); disown $!
		unset MASTER_ADDR MASTER_PORT RANK LOCAL_RANK WORLD_SIZE
	done
done
job_of() { echo "torch:127.0.0.1:$((BASE + $1 * 7))@$NODE"; }
# every rank of every job wrote its pid: the python process's own
for i in "${!KINDS[@]}"; do
	d=$T/${KINDS[$i]}
	wait_until 150 test -s "$d/pid.2" -a -s "$d/pid.1" -a -s "$d/pid.0" ||
		fail "${KINDS[$i]}: ranks never started: $(tail -2 "$d/out.0")"
done
# the wrappers' processes, killed with the test (setsid: each rank's group)
for p in "${WORKLOAD_PIDS[@]}"; do
	for c in $(pgrep -s "$p" 2>/dev/null); do WORKLOAD_PIDS+=("$c"); done
done
for i in "${!KINDS[@]}"; do
	k=${KINDS[$i]}; d=$T/$k; J=$(job_of "$i")
	pids="[$(cat "$d/pid.0"),$(cat "$d/pid.1"),$(cat "$d/pid.2")]"
	wait_until 20 jq_status "[.ranks[] | select(.job==\"$J\" and (.exited | not)) | .pid] | sort == ($pids | sort)" &&
		pass "$k: the job's 3 ranks are the python processes $pids" ||
		fail "$k: ranks of $J: $(status_json | jq -c "[.ranks[] | select(.job==\"$J\") | {pid, comm, exited, wrapper_comm}]") (python: $pids)"
done
jq_status "[.ranks[] | select(.job | endswith(\"@$NODE\")) | .wrapper_comm] | unique == [\"bash\", \"sh\", \"timeout\"]" &&
	pass "each rank names the wrapper it took over from (bash, sh, timeout)" ||
	fail "wrappers: $(status_json | jq -c '[.ranks[] | .wrapper_comm] | unique')"
jq_status "[.ranks[] | select(.job == \"$(job_of 3)\") | .wrapper_comm] | unique == [\"timeout\"]" &&
	pass "two levels (sh run2.sh -> timeout -> python3): the rank is the innermost" ||
	fail "sh2 wrappers: $(status_json | jq -c "[.ranks[] | select(.job == \"$(job_of 3)\") | {pid, comm, wrapper_comm}]")"
# healthy until the first fault: never flagged
flagged=0; samples=0
while ! ls "$T"/*/fault.ts >/dev/null 2>&1; do
	st=$(status_json) || { fail "status failed"; break; }
	if echo "$st" | jq -e "[.jobs[] | select(.job | endswith(\"@$NODE\")) | .hung or .failed] | any" >/dev/null ||
		echo "$st" | jq -e "[.ranks[] | select(.job | endswith(\"@$NODE\")) | .hung or .culprit] | any" >/dev/null ||
		echo "$st" | jq -e '[.jobs[] | select(.job == "pylaunch") | .hung or .failed] | any' >/dev/null; then
		flagged=$((flagged + 1))
		log "flagged: $(echo "$st" | jq -c "[.jobs[] | select(.hung or .failed) | {job, why}]")"
	fi
	samples=$((samples + 1))
	sleep 2
done
log "$samples status samples while the four jobs trained"
[ $samples -ge 10 ] && [ $flagged -eq 0 ] && pass "never flagged while healthy ($samples samples)" ||
	fail "flagged $flagged of $samples samples"
[ -z "$(events_of hang)" ] && pass "no hang event while healthy" || fail "hang: $(events_of hang | jq -c '{job, why}' | head -2)"
# the hang behind each wrapper names rank 1, the python process
for i in "${!KINDS[@]}"; do
	k=${KINDS[$i]}; d=$T/$k; J=$(job_of "$i"); CUL=$(cat "$d/pid.1")
	wait_until $((SOFT + 60)) has_event hang ".job == \"$J\"" || { fail "$k: never flagged hung"; continue; }
	H=$(events_of hang | jq -c "select(.job == \"$J\")" | head -1)
	echo "$H" | jq -e ".culprits == [$CUL] and .culprit_ranks == [1]" >/dev/null &&
		pass "$k: hang names rank 1 (pid $CUL): $(echo "$H" | jq -r .why | cut -c1-90)" ||
		fail "$k: culprit $(echo "$H" | jq -c '{culprits, culprit_ranks, why}')"
done
jq_status '[.ranks[] | select(.job == "pylaunch" and (.exited | not)) | .comm] == ["python3", "python3", "python3"]' &&
	pass "behind a Python launcher (subprocess.run): the launchers stay the ranks" ||
	fail "pylaunch ranks: $(status_json | jq -c '[.ranks[] | select(.job == "pylaunch") | {pid, comm, state, reason}]')"
wait_until 60 has_event hang '.job == "pylaunch"' && pass "pylaunch: its hang is flagged (rank 1's child sleeps)" ||
	fail "pylaunch: not flagged after its fault"
[ "$(jq -r '.counters.wrapper_handovers' <<<"$(status_json | jq .agent)")" -ge 15 ] &&
	pass "hand-overs counted ($(status_json | jq .agent.counters.wrapper_handovers))" ||
	fail "hand-overs: $(status_json | jq .agent.counters.wrapper_handovers)"
for i in "${!KINDS[@]}"; do for r in 0 1 2; do kill -9 "$(cat "$T/${KINDS[$i]}/pid.$r")" 2>/dev/null; done; done
finish
