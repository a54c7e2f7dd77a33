#!/bin/bash
# time-limit: 180
# Nothing etcd says is trusted without authentication (issue 19). A real etcd with TLS, client
# certificates required, and RBAC: the agents' etcd user may read and write their prefix only.
#   - an agent given an http:// endpoint, or none of the client certificate, refuses to start
#     (unless etcd_insecure), and so does one without the cluster key;
#   - with its certificate (no CN: etcd's JSON gateway refuses named ones) and its user, the
#     agent agrees on a checkpoint of root's job in etcd;
#   - another etcd user is denied the prefix; a client without a certificate gets nothing;
#   - a record written by someone who can write the prefix but holds no cluster key (a forged
#     stop decision for root's job) is refused, counted and logged, never acted on: root's
#     ranks train on;
#   - a key with no slash after the uid and `ftbpf decisions` (which once crashed the agent,
#     at every start) leave the agent alive, also across a restart.
. "$(dirname "$0")/lib.sh"
command -v etcd >/dev/null && command -v openssl >/dev/null || { fail "etcd or openssl missing (make deps)"; finish; }
PORT=$((25000 + RANDOM % 1000))
EP=https://127.0.0.1:$PORT
C=$T/tls; mkdir -p "$C"
ETCD=
stop_etcd() { [ -n "$ETCD" ] && { kill -9 "$ETCD"; wait "$ETCD"; } 2>/dev/null; ETCD=; }
trap 'stop_etcd; cleanup' EXIT
( cd "$C" &&
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=ftbpf-test-ca &&
  openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=etcd-server &&
  openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out srv.crt -days 1 \
	-extfile <(printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth') &&
  # the agents' certificate has no common name: etcd's JSON gateway refuses a named one
  openssl req -newkey rsa:2048 -nodes -keyout agent.key -out agent.csr -subj /O=ftbpf-agents &&
  openssl x509 -req -in agent.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out agent.crt -days 1 \
	-extfile <(printf 'extendedKeyUsage=clientAuth') ) >"$T/openssl.log" 2>&1 || { fail "openssl: $(tail -3 "$T/openssl.log")"; finish; }
chmod 600 "$C"/*.key
etcd --name sec --data-dir "$T/etcd" --listen-client-urls "$EP" --advertise-client-urls "$EP" \
	--listen-peer-urls "http://127.0.0.1:$((PORT + 1000))" \
	--initial-advertise-peer-urls "http://127.0.0.1:$((PORT + 1000))" \
	--initial-cluster "sec=http://127.0.0.1:$((PORT + 1000))" \
	--client-cert-auth --trusted-ca-file "$C/ca.crt" --cert-file "$C/srv.crt" --key-file "$C/srv.key" \
	>"$T/etcd.log" 2>&1 &
ETCD=$!
CTL=(etcdctl --endpoints "$EP" --cacert "$C/ca.crt" --cert "$C/agent.crt" --key "$C/agent.key")
wait_until 20 "${CTL[@]}" endpoint health >/dev/null 2>&1 || { fail "etcd did not start: $(tail -3 "$T/etcd.log")"; finish; }
# RBAC: root (to administer), the agents' user with read-write on their prefix, and another
ADMIN=(--user root:adminpw)
{ "${CTL[@]}" user add root:adminpw && "${CTL[@]}" role add ftbpf-agent &&
  "${CTL[@]}" role grant-permission ftbpf-agent --prefix=true readwrite /ftbpf-sec/ &&
  "${CTL[@]}" user add ftbpf:agentpw-0123456789 && "${CTL[@]}" user grant-role ftbpf ftbpf-agent &&
  "${CTL[@]}" user add intruder:intruderpw && "${CTL[@]}" auth enable; } >"$T/rbac.log" 2>&1 ||
	{ fail "etcd RBAC setup: $(tail -3 "$T/rbac.log")"; finish; }
printf 'agentpw-0123456789\n' >"$T/etcd.pw"; chmod 600 "$T/etcd.pw"
head -c 48 /dev/urandom >"$T/key"; chmod 600 "$T/key"
TLS=(--etcd-cacert "$C/ca.crt" --etcd-cert "$C/agent.crt" --etcd-key "$C/agent.key")

# 1. refusals at start
out=$("$FTBPFD" --socket "$T/x.sock" --state-dir "$T/x" --pin-dir "$PIN-x" --log-file "$T/x.log" \
	--etcd-endpoints "http://127.0.0.1:$PORT" --key-file "$T/key" 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q "not https://" <<<"$out" && pass "an http:// endpoint is refused: $(grep -o "etcd_endpoints.*" <<<"$out" | head -c 120)" ||
	fail "http endpoint: rc=$rc $out"
out=$("$FTBPFD" --socket "$T/x.sock" --state-dir "$T/x" --pin-dir "$PIN-x" --log-file "$T/x.log" \
	--etcd-endpoints "$EP" --key-file "$T/key" 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q "client certificate" <<<"$out" && pass "no client certificate: refused" || fail "no cert: rc=$rc $out"
out=$("$FTBPFD" --socket "$T/x.sock" --state-dir "$T/x" --pin-dir "$PIN-x" --log-file "$T/x.log" \
	--etcd-endpoints "$EP" "${TLS[@]}" 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q "key_file" <<<"$out" && pass "no cluster key: refused" || fail "no key: rc=$rc $out"
rm -rf "$PIN-x"

# 2. the agent with its certificate and user: a checkpoint agreed in etcd
start_agent --soft-timeout 60 --hard-timeout 600 --action report --etcd-endpoints "$EP" "${TLS[@]}" \
	--etcd-user ftbpf --etcd-password-file "$T/etcd.pw" --key-file "$T/key" --etcd-prefix /ftbpf-sec/ \
	--etcd-lease-ttl 3 || exit 1
export FTBPF_SOCKET=$SOCK
mkdir -p "$T/r"
for r in 0 1; do
	FTBPF_JOB=rjob FTBPF_RANK=$r FTBPF_WORLD_SIZE=2 "$B/examples/c_loop" --dir "$T/r" --rank $r \
		--step-ms 50 >"$T/r/out.$r" 2>&1 &
	RP[$r]=$!; WORKLOAD_PIDS+=($!)
done
wait_until 15 jq_status '.agent.decisions.store.reachable == true' &&
	pass "TLS + client certificate + etcd user: reachable" || fail "not reachable: $(status_json | jq -c .agent.decisions.store)"
wait_until 10 bash -c "'$B/ftbpf' --socket '$SOCK' checkpoint rjob >/dev/null 2>&1" || fail "checkpoint refused"
wait_until 20 has_event decision '.kind=="checkpoint_complete" and .job=="rjob"' &&
	pass "a checkpoint of root's job agreed in etcd and made" || fail "no checkpoint: $(events_of decision | tail -2)"

# 3. RBAC: another etcd user is denied the prefix; no certificate, no connection
"${CTL[@]}" --user intruder:intruderpw put /ftbpf-sec/jobs/0/rjob/gen/9 x >"$T/intr.out" 2>&1
grep -q "permission denied" "$T/intr.out" && pass "another etcd user may not write the agents' prefix" ||
	fail "intruder's put: $(tail -2 "$T/intr.out")"
curl -s -m 5 --cacert "$C/ca.crt" "$EP/v3/kv/range" -d '{"key":"Lw=="}' >/dev/null 2>&1 &&
	fail "a client without a certificate was answered" || pass "a client without a certificate is not answered"

# 4. a record written without the cluster key (by one who may write the prefix): refused
# at the key and in the shape the agents' own generation records have (the job's run, a
# generation past the current one, a stop)
N0=$(status_json | jq '.agent.decisions.store.counters.records_rejected')
RUN=$(status_json | jq '[.jobs[] | select(.job=="rjob") | .run][0]')
FK=$(printf '/ftbpf-sec/jobs/0/rjob/runs/%s/gen/%020d' "$RUN" 7)
"${CTL[@]}" "${ADMIN[@]}" get --prefix --keys-only /ftbpf-sec/jobs/0/rjob/runs/ | grep -q "/runs/$RUN/" ||
	fail "no records of run $RUN of rjob: $("${CTL[@]}" "${ADMIN[@]}" get --prefix --keys-only /ftbpf-sec/ | head -5)"
"${CTL[@]}" "${ADMIN[@]}" put "$FK" \
	'{"generation":7,"cause":"operator","stop":true,"resume_step":-1,"node":"x","why":"forged"}' >/dev/null 2>&1 ||
	fail "admin's put failed"
wait_until 10 jq_status ".agent.decisions.store.counters.records_rejected > $N0" &&
	pass "a forged stop decision is refused (records_rejected $(status_json | jq .agent.decisions.store.counters.records_rejected))" ||
	fail "not refused: $(status_json | jq -c .agent.decisions.store)"
wait_until 5 has_event store_rejected ".key==\"$FK\"" &&
	pass "store_rejected logged: $(events_of store_rejected | tail -1 | jq -r .why)" || fail "no store_rejected event"
sleep 2
alive "${RP[0]}" && alive "${RP[1]}" && ! has_event decision '.job=="rjob" and .stop==true' &&
	pass "root's ranks train on: the forged stop was not acted on" || fail "acted on: $(events_of decision | tail -2)"

# 5. a key without a slash after the uid, then the history: the agent lives, also restarted
"${CTL[@]}" "${ADMIN[@]}" put /ftbpf-sec/jobs/65534 junk >/dev/null 2>&1
sleep 1
ftbpf decisions >/dev/null 2>&1; as_nobody "$B/ftbpf" --socket "$SOCK" decisions >/dev/null 2>&1
agent_alive && pass "jobs/65534 and ftbpf decisions: the agent lives" || fail "the agent died: $(tail -3 "$T/agent.out")"
stop_agent
start_agent --soft-timeout 60 --hard-timeout 600 --action report --etcd-endpoints "$EP" "${TLS[@]}" \
	--etcd-user ftbpf --etcd-password-file "$T/etcd.pw" --key-file "$T/key" --etcd-prefix /ftbpf-sec/ \
	--etcd-lease-ttl 3 || fail "the agent did not start again"
sleep 2
ftbpf decisions >/dev/null 2>&1
agent_alive && pass "restarted with those keys in etcd: the agent lives" || fail "the restarted agent died"
finish
