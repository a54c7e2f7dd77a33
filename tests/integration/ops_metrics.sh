#!/bin/bash
# time-limit: 120
# The Prometheus endpoint (--metrics-listen): /metrics parses as the text exposition format
# (prometheus_client's parser); during a hang the job's and ranks' gauges flip and the hang
# counter moves; the culprit is a series; other paths 404, other methods 405; every metric the
# contrib alert rules and Grafana dashboard use exists in a real scrape.
. "$(dirname "$0")/lib.sh"
MPORT=$((26000 + RANDOM % 1000))
M=http://127.0.0.1:$MPORT/metrics
start_agent --soft-timeout 4 --hard-timeout 300 --action report --metrics-listen "127.0.0.1:$MPORT" || exit 1
# value NAME LABEL-FILTER: the sample's value from a scrape ("" when absent)
value() {
	curl -s "$M" | /usr/bin/python3 -c '
import sys
from prometheus_client.parser import text_string_to_metric_families
name, want = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
for fam in text_string_to_metric_families(sys.stdin.read()):
    for s in fam.samples:
        if s.name == name and all(s.labels.get(k) == v for k, v in want.items()):
            print(int(s.value) if s.value == int(s.value) else s.value)
            sys.exit(0)' "$@"
}
FTBPF_JOB=mjob FTBPF_RANK=0 sleep 100 & R0=$!; WORKLOAD_PIDS+=($R0)
FTBPF_JOB=mjob FTBPF_RANK=1 sleep 100 & R1=$!; WORKLOAD_PIDS+=($R1)
wait_until 10 jq_status '[.ranks[] | select(.job=="mjob")] | length == 2' || fail "ranks not adopted"
curl -s "$M" >"$T/m1.txt"
/usr/bin/python3 -c '
import sys
from prometheus_client.parser import text_string_to_metric_families
fams = list(text_string_to_metric_families(open(sys.argv[1]).read()))
print(len(fams), sum(len(f.samples) for f in fams))' "$T/m1.txt" >"$T/parsed" 2>&1 &&
	pass "/metrics parses as Prometheus text: $(cat "$T/parsed") families/samples" || fail "parse: $(cat "$T/parsed")"
grep -q '^# TYPE ftbpf_agent_hangs_total counter$' "$T/m1.txt" && pass "counters are typed counter, named _total" || fail "hangs counter type"
H0=$(value ftbpf_agent_hangs_total)
[ "$(value ftbpf_job_hung job=mjob)" = 0 ] && pass "before the hang: ftbpf_job_hung{job=mjob} 0" || fail "hung before: $(value ftbpf_job_hung job=mjob)"
wait_until 5 bash -c "curl -s '$M' | grep -q '^ftbpf_rank_state{job=\"mjob\",uid=\"0\",rank=\"0\",pid=\"$R0\",state=\"blocked\"} 1'" &&
	pass "ftbpf_rank_state: rank 0 blocked" || fail "rank state: $(curl -s "$M" | grep 'ftbpf_rank_state.*mjob')"
wait_until 15 bash -c "[ \"\$(curl -s '$M' | grep -c '^ftbpf_job_hung{job=\"mjob\",uid=\"0\"} 1')\" = 1 ]" &&
	pass "during the hang: ftbpf_job_hung{job=mjob} 1" || fail "hung gauge did not flip"
H1=$(value ftbpf_agent_hangs_total)
[ "$H1" -gt "$H0" ] && pass "ftbpf_agent_hangs_total moved: $H0 -> $H1" || fail "hangs counter: $H0 -> $H1"
NP=$(value ftbpf_job_no_progress_seconds job=mjob)
awk -v v="$NP" 'BEGIN {exit !(v >= 4)}' && pass "ftbpf_job_no_progress_seconds $NP" || fail "no progress: $NP"
[ "$(value ftbpf_jobs state=hung)" -ge 1 ] && pass "ftbpf_jobs{state=hung} counts it" || fail "jobs by state"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/")" = 404 ] &&
	[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d x "$M")" = 405 ] &&
	pass "other paths 404, POST 405" || fail "paths/methods"
jq_status '.agent.counters.metrics_scrapes > 5' && pass "status counts the scrapes" || fail "metrics_scrapes"
# every metric the contrib rules and dashboard name exists in a scrape
curl -s "$M" >"$T/m2.txt"
MISSING=$(grep -ohE 'ftbpf_[a-z_]+' "$ROOT/contrib/prometheus/ftbpf-alerts.yml" "$ROOT/contrib/grafana/ftbpf-dashboard.json" |
	sort -u | while read -r n; do grep -q "^# TYPE $n " "$T/m2.txt" || echo "$n"; done)
[ -z "$MISSING" ] && pass "every metric in contrib's alert rules and dashboard exists" || fail "missing: $MISSING"
finish
