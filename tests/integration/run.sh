#!/bin/bash
# Runs integration tests (as root: real BPF programs, real processes) and prints "N passed, M
# failed". With no arguments: every test. Arguments select tests by whole name (`decide_local` or
# `decide_local.sh`); a name that is not exactly one test is an error and nothing runs. A test is
# a file named AREA_WHAT.sh for an area below; lib.sh, netns.sh, cluster.sh and xhnet.sh are
# helpers. `--except "NAME ..."` first leaves those tests out of the run (make test runs them
# on the busy host or against the ASan agent instead); each must name a test.
# FTBPFD=path runs another agent binary (make test: an ASan/UBSan build). The FAIL lines of
# failed tests are printed again at the end, so that a log cut to its tail still says what failed.
cd "$(dirname "$0")"
if [ "$(id -u)" != 0 ]; then echo "integration tests need root"; exit 1; fi
# Tests run the tools and workloads as nobody too. A checkout nobody cannot reach (under root's
# 0700 home) is bind-mounted at a path it can, and the tests run from there.
CO=$(cd ../.. && pwd)
if [ -z "${FTBPF_IT_MOUNTED:-}" ] && [ -x "$CO/build/ftbpf" ] &&
	! setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$CO/build/ftbpf" 2>/dev/null; then
	M=$(mktemp -d /tmp/ftbpf-checkout.XXXXXX) && chmod 755 "$M"
	if mount --bind "$CO" "$M" 2>/dev/null; then
		echo "run.sh: $CO is not reachable by nobody: running from a bind mount at $M"
		FTBPF_IT_MOUNTED=1 "$M/tests/integration/$(basename "$0")" "$@"; rc=$?
		umount "$M" && rmdir "$M"
		exit $rc
	fi
	rmdir "$M"
	echo "run.sh: $CO is not reachable by nobody and cannot be bind-mounted: tests that run as nobody will fail"
fi
AREAS="detect timers ci mesh decide sec ops gpu top"
all_tests() { local a; for a in $AREAS; do ls "$a"_*.sh 2>/dev/null; done; }
tests=()
except=()
if [ "${1:-}" = --except ]; then
	read -ra except <<<"${2:-}"; shift 2
	for x in "${except[@]}"; do
		all_tests | grep -qx "$x.sh" || { echo "run.sh: --except names no test '$x'"; exit 2; }
	done
fi
excepted() { local x; for x in "${except[@]}"; do [ "$1" = "$x.sh" ] && return 0; done; return 1; }
if [ $# -eq 0 ]; then
	# a test whose header says "# known-open: WHY" shows a bug not fixed yet: it is not run
	# with the others (said here, and again at the end), only when named
	open_bugs=()
	while read -r t; do
		why=$(sed -n 's/^# known-open: *//p' "$t" | head -1)
		if excepted "$t"; then continue; fi
		if [ -n "$why" ]; then open_bugs+=("${t%.sh}: $why"); else tests+=("$t"); fi
	done < <(all_tests)
	for b in "${open_bugs[@]}"; do echo "not run, a known open bug: $b"; done
else
	bad=0
	for want in "$@"; do
		want=$(basename "$want" .sh)
		if excepted "$want.sh"; then continue
		elif all_tests | grep -qx "$want.sh"; then tests+=("$want.sh")
		else echo "run.sh: no test named '$want' (tests are named in full: $(all_tests | head -3 | sed 's/\.sh$//' | paste -sd' ') ...)"; bad=1; fi
	done
	[ $bad -eq 0 ] || exit 2
fi
[ ${#tests[@]} -gt 0 ] || { echo "run.sh: no tests selected"; exit 2; }
echo "running ${#tests[@]} tests: $(printf '%s ' "${tests[@]%.sh}")"
[ ${#except[@]} -eq 0 ] || echo "left out (--except): ${except[*]}"
pass=0; failed=0; names=()
# BUSY=1: the host is busy meanwhile, as a training node or CI runner is: a CPU hog per core
# and a loop forking /bin/true 20 times a second, for the whole run
BUSY_PIDS=()
if [ -n "${BUSY:-}" ]; then
	for _ in $(seq "$(nproc)"); do sh -c 'while :; do :; done' & BUSY_PIDS+=($!); done
	sh -c 'while :; do /bin/true; sleep 0.05; done' & BUSY_PIDS+=($!)
	trap 'kill ${BUSY_PIDS[*]} 2>/dev/null' EXIT
	echo "busy host: $(nproc) CPU hogs and a fork loop beside the tests"
fi
outs=$(mktemp -d /tmp/ftbpf-it-run.XXXXXX)
# the lock is held by flock alone (-o): no process a test starts (a daemon such as munged, which
# outlives it) inherits it and keeps every later test waiting; the wait is bounded and said
LOCK_WAIT=${IT_LOCK_WAIT:-1200}
LOCK=(flock -o -w "$LOCK_WAIT" /tmp/ftbpf-it.lock); [ -n "${FTBPF_IT_LOCKED:-}" ] && LOCK=()
for t in "${tests[@]}"; do
	start=$(date +%s)
	# every test has its own time limit: one that hangs fails with a message, the suite goes on
	limit=$(sed -n 's/^# time-limit: *\([0-9]*\).*/\1/p' "$t"); limit=${limit:-${TEST_TIMEOUT:-300}}
	# one integration test at a time on this machine, whoever runs it: every agent watches the
	# whole host, so two tests side by side would adopt, flag and act on each other's ranks
	# (the moment it got the machine is noted: its own time is told apart from the wait)
	FTBPF_IT_LOCKED=1 "${LOCK[@]}" bash -c 'date +%s >"$0"; exec timeout --kill-after=15 "$1" ./"$2"' \
		"$outs/$t.began" "$limit" "$t" 2>&1 | tee "$outs/$t.out"
	rc=${PIPESTATUS[0]}
	if [ ! -e "$outs/$t.began" ]; then
		echo "[$t] FAIL: the machine was not free within ${LOCK_WAIT}s (/tmp/ftbpf-it.lock held by: $(fuser /tmp/ftbpf-it.lock 2>/dev/null | xargs -r ps -o pid=,args= -p | head -3 | paste -sd';'))" | tee -a "$outs/$t.out"
		rc=1
	elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "[$t] FAIL: timed out after ${limit}s (# time-limit in the test, or TEST_TIMEOUT)" | tee -a "$outs/$t.out"
	fi
	if [ "$rc" -eq 0 ]; then pass=$((pass + 1)); else failed=$((failed + 1)); names+=("$t"); fi
	began=$(cat "$outs/$t.began" 2>/dev/null || echo "$start")
	echo "--- $t took $(( $(date +%s) - began ))s (waited $(( began - start ))s for the machine)"
done
if [ $failed -gt 0 ]; then
	for t in "${names[@]}"; do
		echo "=== $t:"
		grep -E 'FAIL|agent did not start' "$outs/$t.out" | head -n 20
	done
	echo "failed: ${names[*]}"
fi
rm -rf "$outs"
for b in "${open_bugs[@]}"; do echo "not run, a known open bug: $b"; done
echo "integration: $pass passed, $failed failed${open_bugs:+, ${#open_bugs[@]} not run (known open bugs)}"
[ $failed -eq 0 ]
