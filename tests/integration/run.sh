#!/bin/bash
# Runs every integration test (as root: real BPF programs, real processes) and prints
# "N passed, M failed". ONLY=pattern selects tests. The FAIL lines of failed tests are
# printed again at the end, so that a log cut to its tail still says what failed.
cd "$(dirname "$0")"
if [ "$(id -u)" != 0 ]; then echo "integration tests need root"; exit 1; fi
pass=0; failed=0; names=()
outs=$(mktemp -d /tmp/ftbpf-it-run.XXXXXX)
for t in t_*.sh; do
	[ -n "${ONLY:-}" ] && [[ "$t" != *$ONLY* ]] && continue
	start=$(date +%s)
	./"$t" 2>&1 | tee "$outs/$t.out"
	if [ "${PIPESTATUS[0]}" -eq 0 ]; then pass=$((pass + 1)); else failed=$((failed + 1)); names+=("$t"); fi
	echo "--- $t took $(( $(date +%s) - start ))s"
done
if [ $failed -gt 0 ]; then
	for t in "${names[@]}"; do
		echo "=== $t:"
		grep -E 'FAIL|agent did not start' "$outs/$t.out" | head -n 20
	done
	echo "failed: ${names[*]}"
fi
rm -rf "$outs"
echo "integration: $pass passed, $failed failed"
[ $failed -eq 0 ]
