#!/bin/bash
# Runs the decision simulator over fault kinds, the kinds shared out over the CPUs, and prints
# one line per kind (runs, failing runs, violations, late done/ records, seconds).
# usage: run.sh DECIDE_SIM RUNS BIG_RUNS [KIND...]   (no kind: every kind)
# BIG_RUNS is the count for the 65- and 1,000-host kinds (a run of those takes seconds to
# minutes). Exit status 1 when any run of any kind found a violation.
sim=$1 runs=$2 big=$3; shift 3
kinds=("$@")
if [ ${#kinds[@]} -eq 0 ]; then
	kinds=($("$sim" --help 2>&1 | awk '/^  [a-z]/ {print $1}'))
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for k in "${kinds[@]}"; do echo "$k"; done |
	xargs -P "$(nproc)" -I{} sh -c 'n='"$runs"'; case {} in hosts*) n='"$big"';; esac;
		"'"$sim"'" --kind {} --runs $n > "'"$out"'/{}.out" 2>&1; echo $? > "'"$out"'/{}.rc"'
rc=0
for k in "${kinds[@]}"; do
	grep -v '^  seed' "$out/$k.out" | grep -v '^VIOLATION' || true
	if [ "$(cat "$out/$k.rc")" != 0 ]; then
		rc=1
		grep '^VIOLATION' "$out/$k.out" | head -5
	fi
done
exit $rc
