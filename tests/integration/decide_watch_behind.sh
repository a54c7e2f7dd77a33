#!/bin/bash
# time-limit: 200
# A watch that falls behind makes the store unreachable (issue 32: "the local mirror can be up to
# 30 s stale while reachable"). One agent agrees in etcd through a proxy
# (tests/workloads/delayproxy.py) that can hold back what etcd sends on watch streams while
# every other request flows: the lease's keep-alives answer, the mirror does not move. A job of
# two C ranks (docs/examples/c_loop.c) trains under the agent.
#   healthy        an operator's checkpoint completes; the watch is never found behind
#   watch stalled  a write under the prefix that the watch does not deliver: within 5 s the
#                  store reads unreachable (counted: watch_behind), an operator's checkpoint is
#                  refused (nothing is decided on a stale mirror); the ranks are untouched
#   stream back    reachable again, and a checkpoint completes
. "$(dirname "$0")/lib.sh"
command -v etcd >/dev/null || { fail "etcd not installed (make deps)"; finish; }
EPORT=$((25000 + RANDOM % 500)) PPORT=$((25500 + RANDOM % 500))
etcd --data-dir "$T/etcd" --listen-client-urls "http://127.0.0.1:$EPORT" \
	--advertise-client-urls "http://127.0.0.1:$EPORT" --listen-peer-urls "http://127.0.0.1:$((EPORT + 1000))" \
	>"$T/etcd.log" 2>&1 &
WORKLOAD_PIDS+=($!)
echo 0 >"$T/delay_ms"; echo 0 >"$T/stall"
/usr/bin/python3 "$ROOT/tests/workloads/delayproxy.py" 127.0.0.1 $PPORT 127.0.0.1 $EPORT "$T/delay_ms" "$T/stall" \
	>"$T/proxy.log" 2>&1 &
WORKLOAD_PIDS+=($!)
wait_until 15 curl -sf "http://127.0.0.1:$PPORT/version" -o /dev/null || fail "etcd or the proxy did not start"
ec() { ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$EPORT" --command-timeout=5s "$@"; }
export FTBPF_SOCKET=$SOCK
head -c 48 /dev/urandom >"$T/key"; chmod 600 "$T/key"
start_agent --soft-timeout 60 --hard-timeout 600 --action report --etcd-endpoints "http://127.0.0.1:$PPORT" \
	--etcd-insecure 1 --key-file "$T/key" --etcd-prefix /ftbpf-wb/ --etcd-lease-ttl 3 --fence-after 30 || exit 1
store() { status_json | jq -c ".agent.decisions.store | $1"; }
wait_until 15 jq_status '.agent.decisions.store.reachable' || fail "etcd never reachable: $(store .)"
D=$T/c; mkdir -p "$D"
/usr/bin/python3 "$ROOT/tests/workloads/launcher.py" --nproc 2 --dir "$D" --job wjob \
	-- "$B/examples/c_loop" --dir "$D" --rank "{rank}" --step-ms 50 >/dev/null 2>&1 &
WORKLOAD_PIDS+=($!)
wait_until 20 bash -c "grep -qs START '$D/log.0' && grep -qs START '$D/log.1'" || fail "ranks did not start"
for p in $(cat "$D/pids.0"); do WORKLOAD_PIDS+=($p); done
completes() { jq -c 'select(.type=="decision" and .kind=="checkpoint_complete" and .job=="wjob")' "$LOG" 2>/dev/null | wc -l; }
# ---- healthy: a checkpoint completes, the watch is never behind ----
sleep 2
wait_until 20 ftbpf checkpoint wjob >"$T/ck1.out" 2>&1 || fail "checkpoint: $(cat "$T/ck1.out")"
wait_until 20 bash -c "[ \$(jq -c 'select(.type==\"decision\" and .kind==\"checkpoint_complete\")' '$LOG' | wc -l) -ge 1 ]" &&
	pass "healthy: an operator's checkpoint completed" || fail "no checkpoint completed: $(cat "$T/ck1.out")"
sleep 3
[ "$(store .counters.watch_behind)" = 0 ] && pass "a healthy watch is never found behind (5 s, $(store .counters.requests) requests)" ||
	fail "watch_behind on a healthy store: $(store .counters)"
# ---- the watch stalls: a write it does not deliver ----
echo 1 >"$T/stall"
sleep 1
ec put /ftbpf-wb/zz-probe "written while the watch is held" >/dev/null || fail "etcdctl put"
PUT_AT=$(date +%s.%N)
if wait_until 8 bash -c "[ \"\$(\"$B/ftbpf\" --socket '$SOCK' status --json | jq .agent.decisions.store.reachable)\" = false ]"; then
	AFTER=$(awk -v a="$PUT_AT" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
	awk -v x="$AFTER" 'BEGIN {exit !(x < 5)}' &&
		pass "watch stalled: the store reads unreachable ${AFTER} s after a write it did not deliver (watch_behind $(store .counters.watch_behind))" ||
		fail "unreachable only ${AFTER} s after the write"
else
	fail "the store still reads reachable with a stalled watch: $(store '[.reachable, .counters.watch_behind, .last_ok_s_ago]')"
fi
[ "$(store .counters.watch_behind)" -ge 1 ] 2>/dev/null && pass "counted: watch_behind $(store .counters.watch_behind)" ||
	fail "watch_behind: $(store .counters)"
OUT=$(ftbpf checkpoint wjob 2>&1); RC=$?
[ $RC -ne 0 ] && echo "$OUT" | grep -q unreachable && pass "an operator's checkpoint is refused on a stale mirror: $OUT" ||
	fail "checkpoint with a stale mirror: rc=$RC $OUT"
for p in $(cat "$D/pids.0"); do alive "$p" || fail "rank $p ended while the watch was held"; done
N=$(completes)
# ---- the stream comes back ----
echo 0 >"$T/stall"
wait_until 15 jq_status '.agent.decisions.store.reachable' && pass "stream back: reachable again" ||
	fail "still unreachable: $(store .)"
wait_until 20 ftbpf checkpoint wjob >"$T/ck2.out" 2>&1 || fail "checkpoint after: $(cat "$T/ck2.out")"
wait_until 20 bash -c "[ \$(jq -c 'select(.type==\"decision\" and .kind==\"checkpoint_complete\")' '$LOG' | wc -l) -gt $N ]" &&
	pass "a checkpoint completes again" || fail "no checkpoint after the stream came back: $(cat "$T/ck2.out")"
finish
