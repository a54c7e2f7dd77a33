#!/bin/bash
# Runs every libFuzzer target for a bounded time from its checked-in seeds; a crash, leak or
# sanitizer report fails the run (the reproducer is left in build/fuzz/).
secs=$1; shift
rc=0
for f in "$@"; do
	name=$(basename "$f")
	corpus=$(dirname "$f")/corpus-$name
	mkdir -p "$corpus"
	echo "== fuzz $name for ${secs}s"
	if ! "$f" -max_total_time="$secs" -max_len=70000 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$(dirname "$f")/" "$corpus" "$(dirname "$0")/fuzz/seeds/$name" \
		>"$corpus.log" 2>&1; then
		echo "FUZZ FAILURE in $name:"; tail -30 "$corpus.log"; rc=1
	else
		grep -E '^#[0-9]+.*DONE' "$corpus.log" | tail -1
	fi
done
exit $rc
