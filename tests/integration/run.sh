#!/bin/bash
# Runs every integration test (as root: real BPF programs, real processes) and prints
# "N passed, M failed". ONLY=pattern selects tests.
cd "$(dirname "$0")"
if [ "$(id -u)" != 0 ]; then echo "integration tests need root"; exit 1; fi
pass=0; failed=0; names=()
for t in t_*.sh; do
	[ -n "${ONLY:-}" ] && [[ "$t" != *$ONLY* ]] && continue
	start=$(date +%s)
	if ./"$t"; then pass=$((pass + 1)); else failed=$((failed + 1)); names+=("$t"); fi
	echo "--- $t took $(( $(date +%s) - start ))s"
done
[ $failed -gt 0 ] && echo "failed: ${names[*]}"
echo "integration: $pass passed, $failed failed"
[ $failed -eq 0 ]
