#!/bin/bash
# time-limit: 180
# A file truncated while the agent parses it (issue 19: the agent died of SIGBUS, parsing a
# shared mapping of a file the user could truncate — through explain, and with no request at
# all through the CUDA probe path). nobody's ranks map ELF files (40,000 symbols: a parse takes
# a while) that a loop of nobody's rewrites, leaves whole for 10 ms and truncates, without end:
# 20 explains of a rank whose "python3.11" is such a file, and 20 ranks each mapping,
# executable, its own "libcuda.so.1" (each a new file the probe path parses). The agent reads into private memory (pread): it lives
# through all of it, answers every explain, and its sanitizers (make integration-asan) find
# nothing.
. "$(dirname "$0")/lib.sh"
MAP=$(for_nobody "$B/workloads/mapper")
CLI=$(for_nobody "$B/ftbpf")
ROUNDS=${TRUNCATE_ROUNDS:-20}
start_agent --soft-timeout 2 --hard-timeout 300 --action report || exit 1
mkdir -p "$T/n" && chown nobody "$T/n"
bigsyms_elf "$T/big.so" || fail "cannot build the ELF"
as_nobody cp "$T/big.so" "$T/n/src"
# a loop of nobody's that writes FILE, leaves it whole for 10 ms and truncates it, for ever
truncator() { $NOBODY sh -c 'while :; do cat "$2" >"$1"; sleep 0.01; : >"$1"; done' sh "$1" "$T/n/src" & WORKLOAD_PIDS+=($!); LOOP=$!; }

# ---- through explain ----
as_nobody cp "$T/n/src" "$T/n/python3.11"
$NOBODY env FTBPF_JOB=trunc FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$MAP" "$T/n/python3.11" >"$T/m.out" 2>&1 &
P=$!; WORKLOAD_PIDS+=($P)
wait_until 10 grep -q mapped "$T/m.out" || fail "mapper: $(cat "$T/m.out")"
truncator "$T/n/python3.11"
OK=0
for i in $(seq "$ROUNDS"); do
	sleep "0.$((RANDOM % 10))"
	as_nobody timeout 10 "$CLI" --socket "$SOCK" explain "$P" --json >"$T/ex.$i" 2>&1 && OK=$((OK + 1))
	agent_alive || { fail "the agent died at explain $i"; break; }
done
kill "$LOOP" 2>/dev/null
[ $OK -eq "$ROUNDS" ] && pass "$ROUNDS explains of a rank whose interpreter file is being truncated: all answered" ||
	fail "$OK of $ROUNDS explains answered"
log "what explain said: $(for i in $(seq "$ROUNDS"); do jq -r '.python_stack_error // .python_version // "-"' "$T/ex.$i" 2>/dev/null; done | sort | uniq -c | tr '\n' ';' | head -c 600)"

# ---- through the CUDA probe path: no request at all ----
for b in $(seq 0 4 $((ROUNDS - 1))); do
	PIDS=(); LOOPS=()
	for i in $(seq "$b" $((b + 3))); do
		mkdir -p "$T/n/p$i" && chown nobody "$T/n/p$i"
		as_nobody cp "$T/n/src" "$T/n/p$i/libcuda.so.1"
		$NOBODY env FTBPF_JOB=probe$i FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$MAP" --exec "$T/n/p$i/libcuda.so.1" >"$T/p$i.out" 2>&1 &
		PIDS+=($!); WORKLOAD_PIDS+=($!)
		wait_until 5 grep -q mapped "$T/p$i.out"
		truncator "$T/n/p$i/libcuda.so.1"; LOOPS+=($LOOP)
	done
	sleep 2.5 # a scan or two: each library is parsed while its loop runs
	kill "${LOOPS[@]}" "${PIDS[@]}" 2>/dev/null
	agent_alive || { fail "the agent died in probe batch $b"; break; }
done
SEEN=$(grep -oE "$T/n/p[0-9]+/libcuda.so.1" "$T/agent.out" | sort -u | wc -l)
[ "$SEEN" -ge "$ROUNDS" ] && pass "the probe path looked at all $SEEN truncated libcuda.so.1 files" ||
	fail "the probe path looked at $SEEN of $ROUNDS files: $(grep libcuda "$T/agent.out" | tail -3)"
grep -q "SIGBUS\|Bus error" "$T/agent.out" && fail "SIGBUS" || pass "no SIGBUS"
agent_alive && pass "the agent lives" || fail "the agent died"
finish
