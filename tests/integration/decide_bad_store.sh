#!/bin/bash
# time-limit: 360
# Decisions when the store is missing or lies. A single-node job of two C ranks
# (docs/examples/c_loop.c) with an agent told to agree in etcd:
#   etcd down at start  status says unreachable; ranks that start wait for the job's
#                       decisions (restart_info: -EAGAIN, slot settling) rather than train from
#                       a guess (generation 0, no checkpoint: issue 32); an operator's
#                       checkpoint is refused with a clear error; a SIGTERM to a rank decides
#                       nothing (an event says why)
#   etcd comes up       reachable; the ranks start (generation 0); the preemption is not lost
#                       (I5): its checkpoint is agreed now, every rank saves and exits 42; a
#                       relaunch's checkpoint is made
#   bad records         records written into the job's keys by someone else (a forged gen/,
#                       malformed, 1 MB, of no decision's shape, under another uid's prefix):
#                       without the cluster key's MAC they are refused, counted, logged, and
#                       never acted on
#                       A forged overwrite of an authentic record changes nothing known.
#   etcd dies mid-run   unreachable again; nothing decided, ranks untouched (a job with no
#                       other node is not fenced; the job is in its generation 1)
#   restarted cut off  the agent killed and started again while etcd is down: a job whose
#                       world is larger than its ranks here (xjob, node 0 of 2) is held, then
#                       fenced, though no run of it is known (I6); a single-node job is not
#   a junk server       every answer malformed (not JSON, HTTP errors, wrong shapes, bad
#                       base64): counted as bad replies, the agent lives, nothing decided
. "$(dirname "$0")/lib.sh"
command -v etcd >/dev/null || { fail "etcd not installed (make deps)"; finish; }
EPORT=$((24000 + RANDOM % 1000))
EP=http://127.0.0.1:$EPORT
ETCD=
stop_etcd() { [ -n "$ETCD" ] && { kill -9 "$ETCD"; wait "$ETCD"; } 2>/dev/null; ETCD=; }
trap 'stop_etcd; cleanup' EXIT
export FTBPF_SOCKET=$SOCK
head -c 48 /dev/urandom >"$T/key"; chmod 600 "$T/key"
start_agent --soft-timeout 60 --hard-timeout 600 --action report --etcd-endpoints "$EP" \
	--etcd-insecure 1 --key-file "$T/key" --etcd-prefix /ftbpf-zd/ --etcd-lease-ttl 3 --fence-after 2 || exit 1
# launch DIR JOB [WHAT]: a launcher of two C ranks of JOB in DIR (D, LAUNCHER set), once both
# logged WHAT (START: they train)
launch() {
	D=$1; mkdir -p "$D"
	/usr/bin/python3 "$ROOT/tests/workloads/launcher.py" --nproc 2 --dir "$D" --job "$2" \
		-- "$B/examples/c_loop" --dir "$D" --rank "{rank}" --step-ms 50 >/dev/null 2>&1 &
	LAUNCHER=$!; WORKLOAD_PIDS+=($LAUNCHER)
	wait_until 30 bash -c "grep -qs '${3:-START}' '$D/log.0' && grep -qs '${3:-START}' '$D/log.1'" ||
		fail "ranks did not log ${3:-START}: $(tail -n 2 "$D"/log.* 2>&1 | tr '\n' ' ')"
	for p in $(cat "$D/pids.0"); do WORKLOAD_PIDS+=($p); done
}
# ranks_alive: every rank of the current launch lives
ranks_alive() { local p; for p in $(cat "$D/pids.0"); do alive "$p" || return 1; done; }
store() { status_json | jq -c ".agent.decisions.store | $1"; }
[ "$(store '[.kind, .reachable]')" = '["etcd",false]' ] &&
	pass "etcd down at start: status says unreachable ($(store .counters.error))" || fail "store: $(store .)"
launch "$T/c" bjob waiting
sleep 1
! grep -qs START "$D"/log.* &&
	pass "etcd down: the ranks wait for the job's decisions (no run known), not train from a guess" ||
	fail "ranks started with no decision: $(cat "$D"/log.* | head -3)"
OUT=$(ftbpf checkpoint bjob 2>&1); RC=$?
[ $RC -ne 0 ] && echo "$OUT" | grep -q unreachable &&
	pass "checkpoint refused while etcd is down: $OUT" || fail "checkpoint with etcd down: rc=$RC $OUT"
steps() { grep -c '^STEP' "$D/log.0" 2>/dev/null || awk 'END {print NR}' "$D/log.0"; }
kill -TERM "$(awk '{print $1}' "$D/pids.0")"
sleep 3
untouched() {
	ranks_alive || return 1
	! has_event decision '.job=="bjob"' && ! has_event action '.job=="bjob"'
}
untouched && ! grep -qs START "$D"/log.* && has_event decision_unavailable '.job=="bjob" and .trigger=="preemption signal"' &&
	pass "a SIGTERM with etcd down: nothing decided (decision_unavailable logged), no action, both ranks wait on" ||
	fail "with etcd down: $(events_of decision | tail -2) $(events_of action | tail -2)"

# ---- etcd comes up ----
start_etcd() {
	etcd --name zd --data-dir "$T/etcd" --listen-client-urls "$EP" --advertise-client-urls "$EP" \
		--listen-peer-urls "http://127.0.0.1:$((EPORT + 1000))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$((EPORT + 1000))" \
		--initial-cluster "zd=http://127.0.0.1:$((EPORT + 1000))" >>"$T/etcd.log" 2>&1 &
	ETCD=$!
}
start_etcd
wait_until 20 bash -c "[ \"\$('$B/ftbpf' --socket '$SOCK' status --json | jq .agent.decisions.store.reachable)\" = true ]" &&
	pass "etcd up: reachable" || fail "etcd up, still unreachable: $(store .)"
wait_until 20 bash -c "grep -qs 'START.*generation 0 from step 0' '$D/log.0' && grep -qs 'START.*generation 0 from step 0' '$D/log.1'" &&
	pass "etcd up: the ranks start, decided (generation 0, from step 0)" ||
	fail "the ranks did not start once etcd answered: $(tail -2 "$D"/log.*)"
wait_until 20 has_event decision '.kind=="checkpoint_complete" and .job=="bjob" and .cause=="preemption"' &&
	pass "the preemption made while etcd was down is not lost: agreed once etcd is back" ||
	fail "the preemption was lost: $(events_of decision | tail -2)"
wait $LAUNCHER; RC=$?
[ $RC = 42 ] && pass "its ranks saved $(grep -h SAVED "$D"/log.* | awk '{print $2}' | sort -u | tr '\n' ' ')and exited 42" ||
	fail "launcher exit $RC: $(tail -2 "$D"/log.*)"
# the scheduler requeues the preempted job (its restart count): the same run, generation 1
SLURM_RESTART_COUNT=1 launch "$T/c2" bjob
wait_until 10 bash -c "'$B/ftbpf' --socket '$SOCK' checkpoint bjob >/dev/null 2>&1" || fail "checkpoint refused with etcd up"
wait_until 20 has_event decision '.kind=="checkpoint_complete" and .job=="bjob" and .cause=="operator"' &&
	pass "a checkpoint agreed in etcd and made" || fail "no checkpoint with etcd up"

# ---- bad records: written by someone else into the job's keys ----
# the run of the job's generation 1 (the decisions' run, not the agent's count of local runs)
RUN=$(events_of decision | jq -s '[.[] | select(.job=="bjob" and .kind=="generation")] | last | .run')
GENS=$(events_of decision | jq -s '[.[] | select(.job=="bjob" and .kind=="generation")] | length')
ACTS=$(events_of action | jq -s '[.[] | select(.job=="bjob")] | length')
P=/ftbpf-zd/jobs/0/bjob/runs/$RUN
ec() { ETCDCTL_API=3 etcdctl --endpoints "$EP" "$@" >/dev/null; }
ec put "$P/gen/00000000000000000009" '{"generation":9,"cause":'
ec put "$P/members/no such node!" '{"ranks":2}'
ec put "$P/ckpt/00000000000000000000/00000000000000000042" '{"generation":0,"id":7,"target":-5,"cause":"x"}'
ec put "$P/whatever" 'x'
ec put "$P/gen/00000000000000000001" '{"generation":1,"cause":"rank_died","why":"forged"}'
head -c 1000000 /dev/zero | tr '\0' 'a' | sed 's/^/{"generation":10,"cause":"hang","why":"/; s/$/"}/' >"$T/huge"
ETCDCTL_API=3 etcdctl --endpoints "$EP" put "$P/gen/00000000000000000010" <"$T/huge" >/dev/null
ec put "/ftbpf-zd/jobs/65534/bjob/runs/$RUN/gen/00000000000000000001" '{"generation":1,"cause":"rank_died","why":"forged in another uid'"'"'s prefix"}'
# none carries the cluster key's MAC: refused by the store (store_rejected), never read
rej() { status_json | jq .agent.decisions.store.counters.records_rejected; }
wait_until 10 bash -c "[ \"\$('$B/ftbpf' --socket '$SOCK' status --json | jq .agent.decisions.store.counters.records_rejected)\" -ge 5 ]" &&
	pass "bad and forged records refused and counted: $(rej) (records_rejected)" ||
	fail "refused: $(status_json | jq -c .agent.decisions.store.counters)"
R1=$(events_of store_rejected | wc -l)
sleep 3
R2=$(events_of store_rejected | wc -l)
[ "$R1" -ge 1 ] && [ "$R1" = "$R2" ] && pass "logged ($R1 store_rejected events: $(events_of store_rejected | jq -r .why | sort -u | tr '\n' ';')), not again and again" ||
	fail "store_rejected events: $R1 then $R2"
ranks_alive && [ "$(events_of decision | jq -s '[.[] | select(.job=="bjob" and .kind=="generation")] | length')" = "$GENS" ] &&
	[ "$(events_of action | jq -s '[.[] | select(.job=="bjob")] | length')" = "$ACTS" ] &&
	pass "nothing of them acted on: no generation, no action, the ranks train on" ||
	fail "after the bad records: $(events_of decision | tail -1) $(events_of action | tail -1)"

# the forged gen/1 overwrote the authentic one in etcd: what the agent knows stays (generation
# 1: the preemption's restart), and nothing of the old generation comes back to the ranks (its
# preemption checkpoint would tell them to exit)
sleep 3
GEN=$(status_json | jq '[.jobs[] | select(.job=="bjob")][0].generation')
[ "$GEN" = 1 ] && ranks_alive && ! grep -qs "EXIT" "$D"/log.* &&
	pass "the authentic generation 1 overwritten by a forged record: still generation 1, the ranks train on" ||
	fail "after the overwrite: generation $GEN, $(tail -qn 2 "$D"/log.* | tr '\n' ' ')"

# ---- etcd dies mid-run ----
# (the job restarted by the preemption's decision: generation 1)
N=$(events_of decision | grep -c '"bjob"')
stop_etcd
wait_until 15 bash -c "[ \"\$('$B/ftbpf' --socket '$SOCK' status --json | jq .agent.decisions.store.reachable)\" = false ]" &&
	pass "etcd killed mid-run: unreachable" || fail "still reachable: $(store .)"
kill -TERM "$(awk '{print $2}' "$D/pids.0")"
sleep 4
M=$(events_of decision | grep -c '"bjob"')
[ "$(events_of decision_unavailable | grep -c '"bjob"')" -ge 2 ] || fail "no decision_unavailable for the SIGTERM with etcd dead"
live=1; ranks_alive || live=0
[ "$N" = "$M" ] && [ $live = 1 ] && ! has_event fenced '.job=="bjob"' &&
	pass "nothing decided, ranks untouched, a single-node job not fenced" ||
	fail "after etcd died: decisions $N -> $M, ranks alive $live"

# ---- an agent restarted while etcd is unreachable (I6) ----
# xjob's two ranks here are half of its world (node 0 of 2): the agent, killed and started
# again with etcd down, knows no run of it, yet holds its ranks and then fences them; the
# single-node yjob beside it stays untouched
kill -9 $LAUNCHER $(cat "$D/pids.0") 2>/dev/null # bjob's pending preemption is not this part's
start_etcd
wait_until 20 bash -c "[ \"\$('$B/ftbpf' --socket '$SOCK' status --json | jq .agent.decisions.store.reachable)\" = true ]" ||
	fail "etcd up again, still unreachable: $(store .)"
launch() { # as above, as node 0 of NNODES (1): launch DIR JOB [NNODES [WHAT]]
	D=$1; mkdir -p "$D"
	/usr/bin/python3 "$ROOT/tests/workloads/launcher.py" --nproc 2 --nnodes "${3:-1}" --node-rank 0 --dir "$D" \
		--job "$2" -- "$B/examples/c_loop" --dir "$D" --rank "{rank}" --step-ms 50 >/dev/null 2>&1 &
	LAUNCHER=$!; WORKLOAD_PIDS+=($LAUNCHER)
	wait_until 30 bash -c "grep -qs '${4:-START}' '$D/log.0' && grep -qs '${4:-START}' '$D/log.1'" ||
		fail "ranks did not log ${4:-START}: $(tail -n 2 "$D"/log.* 2>&1 | tr '\n' ' ')"
	for p in $(cat "$D/pids.0"); do WORKLOAD_PIDS+=($p); done
}
launch "$T/y" yjob 1; YD=$D; YL=$LAUNCHER
launch "$T/x" xjob 2
for j in xjob yjob; do
	wait_until 20 jq_status ".jobs[] | select(.job==\"$j\") | .run > 0" || fail "$j has no run: $(status_json | jq -c .jobs)"
done
kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null; AGENT_PID=
stop_etcd
XN=$(events_of fenced | grep -c '"xjob"')
start_agent --soft-timeout 60 --hard-timeout 600 --action report --etcd-endpoints "$EP" \
	--etcd-insecure 1 --key-file "$T/key" --etcd-prefix /ftbpf-zd/ --etcd-lease-ttl 3 --fence-after 2 ||
	fail "the agent did not start again"
wait_until 15 has_event decision_hold '.job=="xjob"' && wait_until 15 has_event fenced '.job=="xjob"' &&
	[ "$XN" = 0 ] && pass "restarted with etcd down: xjob (world 4, 2 ranks here) held, then fenced" ||
	fail "restarted with etcd down: no hold/fence of xjob: $(events_of decision_hold | tail -1) $(events_of fenced | tail -1) (fenced before: $XN)"
xgone() { local p; for p in $(cat "$D/pids.0"); do alive "$p" && return 1; done; return 0; }
wait_until 20 xgone && pass "xjob's ranks ended (fenced)" || fail "xjob's ranks still alive after the fence"
XD=$D; D=$YD
live=1; ranks_alive || live=0
[ $live = 1 ] && ! has_event fenced '.job=="yjob"' && ! has_event decision_hold '.job=="yjob"' &&
	pass "the single-node yjob neither held nor fenced by the agent started cut off" ||
	fail "yjob after the restart: alive $live, $(events_of fenced | grep yjob | tail -1)"
kill -9 $LAUNCHER $YL $(cat "$XD/pids.0" "$YD/pids.0") 2>/dev/null
stop_agent

# ---- a junk server ----
cat >"$T/junk.py" <<'EOF'
import http.server, itertools, sys
answers = itertools.cycle([
    (200, b"not json at all"),
    (500, b"{\"error\":\"etcdserver: boom\"}"),
    (200, b"[1,2,3]"),
    (200, b"{\"header\":{\"revision\":\"x\"},\"kvs\":5}"),
    (200, b"{\"header\":{\"revision\":\"7\"},\"kvs\":[{\"key\":\"!!!notbase64\",\"value\":\"???\"}]}"),
    (200, b"{\"result\":{\"events\":\"no\"}}\n{garbage\n"),
    (200, b"{\"ID\":\"-5\",\"TTL\":\"zz\"}"),
    (200, b"{" * 5000),
    (200, b"{\"result\":{\"events\":[{\"type\":null,\"kv\":{\"key\":\"YQ==\"}}]}}\n"),
    (200, b"{\"result\":{\"events\":[{\"type\":\"DELETE\",\"kv\":null}]}}\n"),
])
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        code, body = next(answers)
        self.send_response(code); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
JPORT=$((EPORT + 2000))
/usr/bin/python3 "$T/junk.py" $JPORT & JUNK=$!; WORKLOAD_PIDS+=($JUNK)
wait_until 10 curl -s -o /dev/null "http://127.0.0.1:$JPORT/" -d x
start_agent --soft-timeout 60 --hard-timeout 600 --action report \
	--etcd-endpoints "http://127.0.0.1:$JPORT" --etcd-insecure 1 --key-file "$T/key" --etcd-prefix /ftbpf-zd/ || exit 1
launch "$T/j" jjob 1 waiting # no store to read: they wait for the job's decisions
wait_until 15 bash -c "[ \"\$('$B/ftbpf' --socket '$SOCK' status --json | jq '.agent.decisions.store.counters.bad_replies')\" -ge 3 ]" &&
	pass "malformed etcd replies counted: $(store .counters.bad_replies) bad replies ($(store .counters.error))" ||
	fail "bad replies not counted: $(store .)"
wait_until 15 has_event store_bad_reply '.count >= 1 and (.why | test("malformed reply \\(")) and (.why | test("not kept") | not)' &&
	pass "and said in an event: $(events_of store_bad_reply | jq -c '{why, count}' | head -1)" ||
	fail "no store_bad_reply event: $(events_of store_bad_reply | head -2)"
kill -TERM "$(awk '{print $1}' "$D/pids.0")"
sleep 3
live=1; ranks_alive || live=0
[ "$(store .reachable)" = false ] && [ $live = 1 ] && ! has_event decision '.job=="jjob"' && alive "$AGENT_PID" &&
	pass "a lying store: unreachable, nothing decided, ranks wait on, the agent lives" ||
	fail "junk store: reachable $(store .reachable), ranks alive $live"
kill -9 $LAUNCHER $(cat "$D/pids.0") 2>/dev/null
finish
