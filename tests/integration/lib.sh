#!/bin/bash
# Helpers for integration tests: a private ftbpfd per test (own socket, state dir, pin dir,
# event log), real rank processes, and assertions on `ftbpf status --json` and the event log.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=$ROOT/build
# the agent under test: the build's, or another (make test runs some tests with an ASan build)
FTBPFD=${FTBPFD:-$B/ftbpfd}
NAME=$(basename "$0" .sh)
# one integration test at a time on this machine (run.sh takes the lock for the tests it runs)
if [ -z "${FTBPF_IT_LOCKED:-}" ]; then
	exec {FTBPF_IT_LOCK_FD}>/tmp/ftbpf-it.lock && flock "$FTBPF_IT_LOCK_FD"
	export FTBPF_IT_LOCKED=1
fi
T=$(mktemp -d /tmp/ftbpf-it-$NAME.XXXXXX)
chmod 755 "$T"
PIN=/sys/fs/bpf/ftbpf-it-$NAME-${T##*.}
SOCK=$T/ftbpfd.sock
LOG=$T/events.jsonl
AGENT_PID=
WORKLOAD_PIDS=()
FAILS=0

log() { echo "[$NAME] $*"; }
fail() { echo "[$NAME] FAIL: $*"; FAILS=$((FAILS + 1)); }
pass() { echo "[$NAME] ok: $*"; }

# FTBPF_AGENT_MEMORY_MAX=BYTES: the agent runs in a memory cgroup of its own with that limit
# (what the systemd unit's MemoryMax and the DaemonSet's limit give it), made here (v1 or v2);
# cleanup fails the test when the kernel killed the agent there for memory, and says its peak.
AGENT_CG=
agent_cgroup() {
	local rel base
	[ -n "$AGENT_CG" ] && return 0
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		rel=$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup); base=/sys/fs/cgroup${rel%/}
		# v2: no process may sit in an inner node; the test's own cgroup's parent holds ours
		[ -f "$base/memory.max" ] || base=${base%/*}
		AGENT_CG=$base/ftbpf-it-$NAME-${T##*.}
		mkdir "$AGENT_CG" && echo "$FTBPF_AGENT_MEMORY_MAX" >"$AGENT_CG/memory.max" &&
			echo 0 >"$AGENT_CG/memory.swap.max" 2>/dev/null
	else
		rel=$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup)
		AGENT_CG=/sys/fs/cgroup/memory${rel%/}/ftbpf-it-$NAME-${T##*.}
		mkdir "$AGENT_CG" && echo "$FTBPF_AGENT_MEMORY_MAX" >"$AGENT_CG/memory.limit_in_bytes"
	fi || { echo "[$NAME] FAIL: no memory cgroup to run the agent in ($AGENT_CG)"; AGENT_CG=; return 1; }
}
# the agent's peak memory (bytes) and how often the kernel killed a process there for memory
agent_cgroup_peak() { cat "$AGENT_CG/memory.peak" 2>/dev/null || cat "$AGENT_CG/memory.max_usage_in_bytes"; }
agent_cgroup_ooms() {
	local f=$AGENT_CG/memory.events
	[ -f "$f" ] || f=$AGENT_CG/memory.oom_control
	awk '$1 == "oom_kill" {print $2; n = 1} END {if (!n) print 0}' "$f" 2>/dev/null
}

start_agent() {
	local in_cg=()
	if [ -n "${FTBPF_AGENT_MEMORY_MAX:-}" ]; then
		agent_cgroup || return 1
		# the agent starts in it: its maps and buffers are charged there from the first byte
		in_cg=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$AGENT_CG")
	fi
	"${in_cg[@]}" "$FTBPFD" --socket "$SOCK" --state-dir "$T/state" --pin-dir "$PIN" --log-file "$LOG" \
		--verbose 1 "$@" >>"$T/agent.out" 2>&1 &
	AGENT_PID=$!
	for _ in $(seq 100); do
		[ -S "$SOCK" ] && "$B/ftbpf" --socket "$SOCK" version >/dev/null 2>&1 && return 0
		kill -0 "$AGENT_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "agent did not start:"; cat "$T/agent.out"; return 1
}

stop_agent() {
	[ -n "$AGENT_PID" ] && kill "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null
	AGENT_PID=
}

ftbpf() { "$B/ftbpf" --socket "$SOCK" "$@"; }
status_json() { ftbpf status --json; }

# jq_status FILTER: evaluate FILTER on the current status
jq_status() { status_json | jq -e "$1" >/dev/null 2>&1; }

# wait_until SECONDS CMD...: poll until CMD succeeds
wait_until() {
	local end=$(($(date +%s%N) / 1000000 + ${1%.*} * 1000)); shift
	while [ $(($(date +%s%N) / 1000000)) -lt $end ]; do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# events of a type from the on-disk log
events_of() { jq -c "select(.type == \"$1\")" "$LOG" 2>/dev/null; }
# has_event TYPE FILTER: some event of TYPE satisfies the jq FILTER
has_event() { jq -s -e "[.[] | select(.type == \"$1\") | select($2)] | length > 0" "$LOG" >/dev/null 2>&1; }

# ring_job JOB N [ring args...]: start N ranks of the C workload
ring_job() {
	local job=$1 n=$2; shift 2
	mkdir -p "$T/$job"
	for r in $(seq 0 $((n - 1))); do
		FTBPF_JOB=$job FTBPF_RANK=$r FTBPF_WORLD_SIZE=$n \
			"$B/workloads/ring" --rank "$r" --world "$n" --dir "$T/$job" "$@" &
		WORKLOAD_PIDS+=($!)
		disown $!
	done
	wait_until 10 test -e "$T/$job/pid.$((n - 1))"
}

rank_pid() { cat "$T/$1/pid.$2"; }

wall() { date +%s.%N; }

cleanup() {
	local rc=$? san=0
	for p in "${WORKLOAD_PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
	stop_agent
	rm -rf "$PIN"
	if [ -n "$AGENT_CG" ]; then
		local ooms
		ooms=$(agent_cgroup_ooms)
		echo "[$NAME] the agent's memory cgroup: limit $FTBPF_AGENT_MEMORY_MAX bytes, peak $(agent_cgroup_peak) bytes, oom kills ${ooms:-?}"
		[ "${ooms:-0}" = 0 ] || { echo "[$NAME] FAIL: the kernel killed the agent for memory"; FAILS=$((FAILS + 1)); san=1; }
		rmdir "$AGENT_CG" 2>/dev/null
	fi
	# a sanitizer build reports memory errors, leaks and undefined behaviour on its stderr
	if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$T/agent.out" 2>/dev/null; then
		echo "[$NAME] FAIL: the agent's sanitizer reported:"
		grep -A12 -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$T/agent.out" | head -40
		FAILS=$((FAILS + 1)); san=1
	fi
	if [ "$FAILS" -gt 0 ]; then
		echo "[$NAME] --- agent output ---"; tail -n 30 "$T/agent.out"
		echo "[$NAME] --- status ---"; status_json 2>/dev/null | head -c 4000
	fi
	[ -n "${KEEP:-}" ] || [ "$FAILS" -gt 0 ] || rm -rf "$T"
	[ $san -eq 1 ] && [ $rc -eq 0 ] && exit 1
	return 0
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && echo "[$NAME] dir $T"

finish() {
	if [ "$FAILS" -eq 0 ]; then echo "[$NAME] PASS"; exit 0; fi
	echo "[$NAME] FAILED ($FAILS)"; exit 1
}

# ---- an unprivileged local user, for the adversarial tests ----
# as_nobody CMD...: run as nobody:nogroup without supplementary groups. In the background use
# "$NOBODY" CMD & instead: then $! is the process itself (a function would be a subshell).
NOBODY="setpriv --reuid=nobody --regid=nogroup --clear-groups"
as_nobody() { $NOBODY "$@"; }
# for_nobody FILE: a copy of FILE that nobody can execute ($T is 0755; the checkout may not be)
for_nobody() { cp "$1" "$T/$(basename "$1")" && chmod 755 "$T/$(basename "$1")" && echo "$T/$(basename "$1")"; }
# agent_alive: the agent process is there and answers
agent_alive() { kill -0 "$AGENT_PID" 2>/dev/null && ftbpf version >/dev/null 2>&1; }
# ms CMD...: run CMD, print how many milliseconds it took
ms() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
# agent_rss_kb: the agent's resident set
agent_rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$AGENT_PID/status"; }
# agent_sanitized: the agent under test is an ASan build (its memory and speed are ASan's, not
# the agent's: bounds on them are checked in the plain build only)
agent_sanitized() { ldd "$FTBPFD" 2>/dev/null | grep -q libasan; }
# take_pid PID CMD...: start CMD in the background as the process with pid PID (root only:
# the next pid is set through ns_last_pid, retried for 8 s while other processes take it);
# sets TAKEN_PID (empty when it could not)
take_pid() {
	local want=$1 got; shift
	TAKEN_PID=
	local end=$(($(date +%s) + 8))
	while [ "$(date +%s)" -lt "$end" ]; do
		# a busy host forks too: wait while the pid is taken, then try again
		if [ -e "/proc/$want" ]; then sleep 0.05; continue; fi
		echo $((want - 1)) > /proc/sys/kernel/ns_last_pid
		"$@" >/dev/null 2>&1 & got=$!
		if [ "$got" = "$want" ]; then TAKEN_PID=$got; WORKLOAD_PIDS+=($got); return 0; fi
		kill -9 "$got" 2>/dev/null; wait "$got" 2>/dev/null
	done
	return 1
}
# alive PID: the process exists and is not a zombie (kill -0 succeeds on a zombie)
alive() { [ -r "/proc/$1/stat" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f1)" != Z ]; }
# bigsyms_elf OUT: a 2 MB shared object with 40,000 symbols (and no CPython in it): parsing its
# symbol table takes a while, so that a truncation can land in the middle of it
bigsyms_elf() {
	/usr/bin/python3 -c 'import sys; sys.stdout.write("".join("int ftbpf_sym_%05d = %d;\n" % (i, i) for i in range(40000)))' >"$1.c" &&
		gcc -shared -fPIC -O0 -o "$1" "$1.c" && rm -f "$1.c"
}
