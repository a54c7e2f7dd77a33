#!/bin/bash
# Runs every libFuzzer target for a bounded time from its checked-in seeds, one per core at a
# time (FUZZ_JOBS, nproc by default); a crash, leak or sanitizer report fails the run (the
# reproducer is left in build/fuzz/).
secs=$1; shift
jobs=${FUZZ_JOBS:-$(nproc)}
one() {
	local f=$1 name corpus
	name=$(basename "$f")
	corpus=$(dirname "$f")/corpus-$name
	mkdir -p "$corpus"
	if ! "$f" -max_total_time="$secs" -max_len=70000 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$(dirname "$f")/" "$corpus" "$(dirname "$0")/fuzz/seeds/$name" \
		>"$corpus.log" 2>&1; then
		echo "== fuzz $name for ${secs}s: FUZZ FAILURE in $name:"; tail -30 "$corpus.log"; return 1
	fi
	echo "== fuzz $name for ${secs}s: $(grep -E '^#[0-9]+.*DONE' "$corpus.log" | tail -1)"
}
rc=0; running=0
for f in "$@"; do
	if [ $running -ge "$jobs" ]; then wait -n || rc=1; running=$((running - 1)); fi
	one "$f" & running=$((running + 1))
done
while [ $running -gt 0 ]; do wait -n || rc=1; running=$((running - 1)); done
exit $rc
