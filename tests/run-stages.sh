#!/bin/bash
# make test's driver: runs each stage (a make target) in turn, says how long each took and how
# long the run has taken so far, and goes on after a failed stage, so one CI run tells every
# stage's outcome; only a failed first stage (the build) ends the run at once. Exits 1 if any
# stage failed, after a table of them all.
# usage: run-stages.sh MAKE TARGET...
mk=$1; shift
t0=$(date +%s)
results=(); rc=0; first=1
for s in "$@"; do
	began=$(date +%s)
	echo "=== make test: stage $s (at $((began - t0))s)"
	# a stage's make line may name several targets: "a+b" runs `make a b`
	$mk ${s//+/ }; r=$?
	took=$(($(date +%s) - began))
	if [ $r -eq 0 ]; then word=ok; else word="FAILED (exit $r)"; rc=1; fi
	results+=("$(printf '%-40s %-16s %5ss' "$s" "$word" "$took")")
	echo "=== make test: stage $s $word in ${took}s (the run so far: $(($(date +%s) - t0))s)"
	if [ $r -ne 0 ] && [ $first -eq 1 ]; then break; fi
	first=0
done
echo "=== make test: $(($(date +%s) - t0))s in all"
printf '  %s\n' "${results[@]}"
exit $rc
