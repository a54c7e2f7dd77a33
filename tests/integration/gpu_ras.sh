#!/bin/bash
# time-limit: 300
# NCCL's RAS read as independent evidence when a mocked GPU job hangs (tests/mock/nccl_ras.c
# speaks NCCL 2.28.9's client protocol and JSON, its missing comma included; every NCCL process
# listens, SO_REUSEPORT, so a user's jobs share the port):
#   rasA  2 ranks on the default port, rank 0 stops; rasB (1 rank, healthy) listens on the same
#         port: "nccl_ras" names rank 0 unresponsive with its pid, from rank 1's answer, and
#         nothing of rasB (connections that reach rasB's rank, or the stopped one, are retried)
#   rasC  its port (NCCL_RAS_ADDR) taken first by another user's fake server that claims rank 1
#         dead: refused (the server end is no rank of the job), nothing of it reported
#   rasD  ranks in their own network namespace, rank 1 stops; a fake server holds the default
#         port outside: RAS is read in the ranks' namespace
#   rasE  an NCCL before 2.28.7 (text only): said, not parsed; rasF NCCL_RAS_ENABLE=0: said
. "$(dirname "$0")/lib.sh"
NS=ftbpf-ras-$$
start_agent --gpu-majors 1 --action report || exit 1
jq_status '.agent.features.uprobes' || { log "SKIP: no uprobes with attach cookies here"; finish; }
FAKES=()
trap 'for p in "${FAKES[@]}"; do kill -9 "$p" 2>/dev/null; done; ip netns pids "$NS" 2>/dev/null | xargs -r kill -9; ip netns del "$NS" 2>/dev/null; cleanup' EXIT

# train JOB N ARGS...: N ranks of gpu_train; RAS_ENV (env assignments) and IN_NS apply
train() {
	local job=$1 n=$2; shift 2
	mkdir -p "$T/$job"
	for r in $(seq 0 $((n - 1))); do
		${IN_NS:+ip netns exec $IN_NS} env FTBPF_JOB=$job FTBPF_RANK=$r FTBPF_WORLD_SIZE=$n FTBPF_MOCK_DIR="$T/$job" ${RAS_ENV:-} \
			"$B/workloads/gpu_train" --rank "$r" --world "$n" --dir "$T/$job" --init-delay-ms 500 \
			--seconds 90 "$@" >"$T/$job/out.$r" 2>&1 &
		WORKLOAD_PIDS+=($!)
	done
}
stop_job() { for f in "$T/$1"/pid.*; do kill -CONT "$(cat "$f")" 2>/dev/null; kill -9 "$(cat "$f")" 2>/dev/null; done; }
pids_of() { cat "$T/$1"/pid.* | sort -n | paste -sd, -; }
# fake_ras PORT [NETNS]: another user's server that greets, accepts JSON, and claims rank 1 of
# every job dead (pids 1 and 2)
fake_ras() {
	${2:+ip netns exec $2} $NOBODY /usr/bin/python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
rep = b"{\"nccl_version\": \"2.28.10\", \"communicators\": [{\"hash\": \"0xbad\", \"size\": 2, \"ranks_count\": 1, \"missing_ranks_count\": 1, \"ranks\": [{\"rank\": 0, \"host\": \"6.6.6.6\", \"pid\": 1}], \"missing_ranks\": [{\"rank\": 1, \"host\": \"6.6.6.6\", \"pid\": 2, \"status\": {\"unresponsive\": true, \"considered_dead\": true}}]}]}\n"
while True:
    c, _ = s.accept(); f = c.makefile("rwb")
    try:
        for line in f:
            l = line.strip().upper()
            if l.startswith(b"CLIENT"): f.write(b"SERVER PROTOCOL 2\n")
            elif l.startswith(b"STATUS"): f.write(rep); f.flush(); break
            else: f.write(b"OK\n")
            f.flush()
    except Exception: pass
    c.close()
' "$1" >/dev/null 2>&1 &
	FAKES+=($!)
	wait_until 10 bash -c "${2:+ip netns exec $2} ss -ltnH 'sport = :$1' | grep -q LISTEN" || fail "the fake server on port $1 did not start"
}
# ras_of JOB: its nccl_ras event
ras_of() { events_of nccl_ras | jq -c "select(.job==\"$1\")" | head -1; }
# hung JOB: its hang reported (the query follows it)
hung() { wait_until 45 has_event hang ".job==\"$1\"" || fail "$1: no hang reported: $(status_json | jq -c ".jobs[] | select(.job==\"$1\") | {why}")"; }
got_ras() { wait_until 45 has_event nccl_ras ".job==\"$1\"" || fail "$1: no nccl_ras event"; }

# 1. the default port, shared with another job; a stopped rank
train rasA 2 --fault stop --fault-rank 0 --fault-after 10
train rasB 1
hung rasA; got_ras rasA
R=$(ras_of rasA)
P0=$(cat "$T/rasA/pid.0"); P1=$(cat "$T/rasA/pid.1")
echo "$R" | jq -e --argjson p0 "$P0" --argjson p1 "$P1" '.format == "json" and .unresponsive_ranks == [0] and .dead_ranks == [] and
	.server_rank == 1 and .server_pid == $p1 and .repaired == true and .addr == "localhost:28028" and
	(.communicators | length == 1) and .communicators[0].missing_ranks[0].pid == $p0 and .communicators[0].size == 2' >/dev/null &&
	pass "rasA: rank 0 unresponsive (pid $P0), from rank 1's answer: $(echo "$R" | jq -r .why)" ||
	fail "rasA: $R"
echo "$R" | jq -e --arg pids "$(pids_of rasA)" '[.. | .pid? // empty] | map(tostring) - ($pids | split(",")) == []' >/dev/null &&
	pass "rasA: only rasA's processes named ($(echo "$R" | jq -c '{connections, untrusted_answers}'))" || fail "rasA: another job's process named: $R"
jq_status '.jobs[] | select(.job=="rasA") | .ras.unresponsive_ranks == [0]' && pass "rasA: status says it (jobs[].ras)" ||
	fail "rasA: status $(status_json | jq -c '.jobs[] | select(.job=="rasA") | .ras')"
has_event nccl_ras '.job=="rasB"' && fail "rasB (healthy) was queried" || pass "rasB: healthy, never queried"
stop_job rasA; stop_job rasB

# 2. a port taken by another user; ranks in a network namespace
PC=$((29100 + RANDOM % 500))
fake_ras "$PC"
ip netns add "$NS" && ip -n "$NS" link set lo up || fail "no network namespace"
fake_ras 28028 # outside the ranks' namespace: never to be read for rasD
RAS_ENV="NCCL_RAS_ADDR=127.0.0.1:$PC" train rasC 2 --fault stop --fault-rank 0 --fault-after 10
IN_NS=$NS train rasD 2 --fault stop --fault-rank 1 --fault-after 10
hung rasC; hung rasD; got_ras rasC; got_ras rasD
R=$(ras_of rasC)
echo "$R" | jq -e '(.error | test("never from a rank of the job")) and .untrusted_answers >= 1 and .dead_ranks == null and .communicators == null' >/dev/null &&
	pass "rasC: another user's server refused: $(echo "$R" | jq -r .error)" || fail "rasC: $R"
grep -q "cannot listen on 127.0.0.1:$PC" "$T/rasC/out.0" && pass "rasC: the mock NCCL could not listen (the port was taken)" || fail "rasC: $(tail -2 "$T/rasC/out.0")"
R=$(ras_of rasD)
echo "$R" | jq -e --argjson p "$(cat "$T/rasD/pid.0")" '.unresponsive_ranks == [1] and .server_pid == $p and .untrusted_answers == 0' >/dev/null &&
	pass "rasD: read in the ranks' network namespace: $(echo "$R" | jq -r .why)" || fail "rasD: $R"
jq_status '.agent.counters.nccl_ras_untrusted >= 1 and .agent.counters.nccl_ras_answered >= 2' && pass "counters: $(status_json | jq -c '.agent.counters | with_entries(select(.key | startswith("nccl_ras")))')" ||
	fail "counters: $(status_json | jq -c '.agent.counters | with_entries(select(.key | startswith("nccl_ras")))')"
stop_job rasC; stop_job rasD

# 3. an NCCL that answers text only; RAS disabled
PE=$((29700 + RANDOM % 200))
RAS_ENV="NCCL_RAS_ADDR=127.0.0.1:$PE FTBPF_MOCK_RAS_TEXT=1" train rasE 2 --fault stop --fault-rank 0 --fault-after 10
RAS_ENV="NCCL_RAS_ENABLE=0" train rasF 2 --fault stop --fault-rank 0 --fault-after 10
hung rasE; hung rasF; got_ras rasE; got_ras rasF
R=$(ras_of rasE)
echo "$R" | jq -e '.format == "text" and (.error | test("text only"))' >/dev/null && pass "rasE: $(echo "$R" | jq -r .error)" || fail "rasE: $R"
R=$(ras_of rasF)
echo "$R" | jq -e '(.error | test("NCCL_RAS_ENABLE=0")) and .connections == 0' >/dev/null && pass "rasF: $(echo "$R" | jq -r .error)" || fail "rasF: $R"
stop_job rasE; stop_job rasF
agent_alive && pass "the agent is alive" || fail "the agent died"
finish
