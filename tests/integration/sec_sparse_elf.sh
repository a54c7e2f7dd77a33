#!/bin/bash
# time-limit: 120
# Files a user names are parsed with bounds checked first (issue 31: one sparse libcuda.so.1
# mapped by nobody, whose header claimed 1.2 million sections, made the agent allocate 3.1 GB
# with no request at all: libelf trusts the section count; under the DaemonSet's 256 MiB limit a
# 77 MB sparse file killed the agent at every restart). As nobody, three ranks map sparse files:
# a 77 MB libcuda.so.1 claiming 1.2 million sections (extended numbering), a 300 MB one whose
# honest section table names a 200 MB symbol table, and a 77 MB "libpython3.11.so.1.0" like the
# first (through explain). The agent's peak RSS grows by at most 32 MB (the files are refused
# from their headers, before libelf or any table is read), each refusal is said, explain
# answers, and root's mock libcuda mapped after is probed.
. "$(dirname "$0")/lib.sh"
MAP=$(for_nobody "$B/workloads/mapper")
start_agent --soft-timeout 30 --hard-timeout 300 --action report || exit 1
hwm_kb() { awk '/^VmHWM/ {print $2}' "/proc/$AGENT_PID/status"; }
mkdir -p "$T/n/1" "$T/n/2" "$T/n/3"
chown -R nobody "$T/n"
as_nobody /usr/bin/python3 - "$T/n" <<'PY'
import struct, sys
d = sys.argv[1]
def header(shoff, shnum):
    h = bytearray(64)
    h[0:4] = b'\x7fELF'; h[4] = 2; h[5] = 1; h[6] = 1
    struct.pack_into('<HHI', h, 16, 3, 62, 1)       # ET_DYN, x86-64, version
    struct.pack_into('<Q', h, 40, shoff)
    struct.pack_into('<HHHHHH', h, 52, 64, 56, 0, 64, shnum, 0)
    return h
def shdr(typ, off, size, link=0, entsize=0):
    s = bytearray(64)
    struct.pack_into('<IIQQQQIIQQ', s, 0, 0, typ, 0, 0, off, size, link, 0, 8, entsize)
    return s
def sparse(path, size, *parts):
    with open(path, 'wb') as f:
        for off, data in parts:
            f.seek(off); f.write(data)
        f.truncate(size)
big = 77 << 20
# 1: extended numbering, section 0's size says 1.2 million sections (all of them fit the file)
s0 = shdr(0, 0, 1200000)
sparse(d + '/1/libcuda.so.1', big, (0, header(64, 0)), (64, s0))
sparse(d + '/3/libpython3.11.so.1.0', big, (0, header(64, 0)), (64, s0))
# 2: three honest sections, .dynsym of 200 MB and .dynstr of 50 MB (holes in the file)
tab = shdr(0, 0, 0) + shdr(11, 8192, 200 << 20, 2, 24) + shdr(3, 8192 + (200 << 20), 50 << 20)
sparse(d + '/2/libcuda.so.1', 300 << 20, (0, header(4096, 3)), (4096, tab))
PY
ls -ls "$T"/n/*/lib* | awk '{print $1 " KB on disk, " $6 " bytes: " $NF}' | while read -r l; do log "$l"; done
sleep 1
H0=$(hwm_kb)
for i in 1 2; do
	$NOBODY env FTBPF_JOB=sparse$i FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$MAP" --exec "$T/n/$i/libcuda.so.1" >"$T/m$i.out" 2>&1 &
	WORKLOAD_PIDS+=($!)
done
$NOBODY env FTBPF_JOB=sparse3 FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$MAP" "$T/n/3/libpython3.11.so.1.0" >"$T/m3.out" 2>&1 &
P3=$!; WORKLOAD_PIDS+=($P3)
wait_until 10 grep -q mapped "$T/m1.out" "$T/m2.out" "$T/m3.out" || fail "mapper: $(cat "$T"/m*.out)"
refused() { [ "$(grep -c "n/[12]/libcuda.so.1 .*0 functions probed: File too large" "$T/agent.out")" -ge 2 ]; }
wait_until 20 refused && pass "both sparse libraries looked at and refused from their headers: $(grep -c 'File too large' "$T/agent.out") said" ||
	fail "not refused: $(grep -E 'n/[12]/libcuda' "$T/agent.out" | head -3)"
S=$(date +%s%N)
as_nobody timeout 10 "$B/ftbpf" --socket "$SOCK" explain "$P3" --json >"$T/ex.json" 2>&1
RC=$?
E=$(( ($(date +%s%N) - S) / 1000000 ))
[ $RC -eq 0 ] && [ $E -le 3000 ] && jq -e . "$T/ex.json" >/dev/null && pass "explain of the rank mapping the sparse interpreter answered in $E ms ($(jq -r '.python_stack_error // .python_version // "no Python"' "$T/ex.json"))" ||
	fail "explain: rc $RC, $E ms, $(head -c 300 "$T/ex.json")"
H1=$(hwm_kb)
log "agent peak RSS before $((H0 / 1024)) MB, after $((H1 / 1024)) MB"
LIM=32; agent_sanitized && LIM=64 # ASan's quarantine holds what was freed
[ $((H1 - H0)) -le $((LIM * 1024)) ] && pass "the agent's peak RSS grew by $(((H1 - H0) / 1024)) MB (bound $LIM MB; before: +3,112 MB)" ||
	fail "peak RSS grew by $(((H1 - H0) / 1024)) MB"
FTBPF_JOB=rootgpu FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 "$B/workloads/mapper" --exec "$B/mock/libcuda.so.1" >"$T/r.out" 2>&1 &
WORKLOAD_PIDS+=($!)
wait_until 15 jq_status "[.agent.gpu_libs[] | select(.path == \"$B/mock/libcuda.so.1\" and .uid == 0 and .functions > 0)] | length == 1" &&
	pass "root's mock libcuda probed after" || fail "root's library not probed"
agent_alive && pass "the agent lives" || fail "the agent died"
finish
