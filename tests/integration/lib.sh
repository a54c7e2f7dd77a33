#!/bin/bash
# Helpers for integration tests: a private ftbpfd per test (own socket, state dir, pin dir,
# event log), real rank processes, and assertions on `ftbpf status --json` and the event log.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=$ROOT/build
NAME=$(basename "$0" .sh)
T=$(mktemp -d /tmp/ftbpf-it-$NAME.XXXXXX)
chmod 755 "$T"
PIN=/sys/fs/bpf/ftbpf-it-$NAME
SOCK=$T/ftbpfd.sock
LOG=$T/events.jsonl
AGENT_PID=
WORKLOAD_PIDS=()
FAILS=0

log() { echo "[$NAME] $*"; }
fail() { echo "[$NAME] FAIL: $*"; FAILS=$((FAILS + 1)); }
pass() { echo "[$NAME] ok: $*"; }

start_agent() {
	"$B/ftbpfd" --socket "$SOCK" --state-dir "$T/state" --pin-dir "$PIN" --log-file "$LOG" \
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
	for p in "${WORKLOAD_PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
	stop_agent
	rm -rf "$PIN"
	[ -n "${KEEP:-}" ] || [ "$FAILS" -gt 0 ] || rm -rf "$T"
	if [ "$FAILS" -gt 0 ]; then
		echo "[$NAME] --- agent output ---"; tail -n 30 "$T/agent.out"
		echo "[$NAME] --- status ---"; status_json 2>/dev/null | head -c 4000
	fi
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && echo "[$NAME] dir $T"

finish() {
	if [ "$FAILS" -eq 0 ]; then echo "[$NAME] PASS"; exit 0; fi
	echo "[$NAME] FAILED ($FAILS)"; exit 1
}
