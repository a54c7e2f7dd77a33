#!/bin/bash
# The round-three attacks (issue 31), each an integration test run as `nobody` against a private
# agent (root; one at a time, as tests/integration/run.sh runs them), and the in-process BPF
# test of the per-user shares. Prints "N passed, M failed" and exits 1 when one failed.
# FTBPFD=path runs them against another agent binary (an ASan/UBSan build: make asan-agent,
# FTBPFD=$PWD/build-asan/ftbpfd tests/run-attacks.sh).
cd "$(dirname "$0")/.." || exit 2
ATTACKS="sec_exited_ranks sec_thread_execs sec_sparse_elf sec_probe_poison sec_ci_links sec_rescan_environ detect_runuser mesh_node_keys sec_memory_limit mesh_part_members"
pass=0 failed=0 names=()
if [ -x build/tests/bpf/test_shares ] && [ "$(id -u)" = 0 ]; then
	if timeout 120 build/tests/bpf/test_shares >/tmp/ftbpf-attacks-bpf.out 2>&1; then
		pass=$((pass + 1)); echo "[test_shares] PASS"
	else
		failed=$((failed + 1)); names+=(test_shares); echo "[test_shares] FAIL:"; tail -20 /tmp/ftbpf-attacks-bpf.out
	fi
fi
for t in $ATTACKS; do
	if tests/integration/run.sh "$t"; then pass=$((pass + 1)); else failed=$((failed + 1)); names+=("$t"); fi
done
echo "attacks: $pass passed, $failed failed${names[*]:+ (${names[*]})}"
[ "$failed" -eq 0 ]
