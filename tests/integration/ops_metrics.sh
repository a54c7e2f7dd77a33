#!/bin/bash
# time-limit: 200
# The Prometheus endpoint (--metrics-listen): /metrics parses as the text exposition format
# (prometheus_client's parser); during a hang the job's and ranks' gauges flip and the hang
# counter moves; the culprit is a series; other paths 404, other methods 405; every metric the
# contrib alert rules and Grafana dashboard use exists in a real scrape; `promtool check
# metrics` finds nothing to say; levels are gauges, every ftbpf_agent_* HELP line is its own;
# no counter ever decreases across 20 scrapes while jobs come and go; in each scrape a job's live
# ranks equal its rank series; a rank restarted with a new pid is the same series (8 per rank);
# an ended job says since when (it leaves the job series a minute after its end).
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
grep -q '^# TYPE ftbpf_agent_ctl_clients gauge$' "$T/m1.txt" && grep -q '^# TYPE ftbpf_agent_timers_active gauge$' "$T/m1.txt" &&
	! grep -qE '^ftbpf_agent_(ctl_clients|timers_active)_total' "$T/m1.txt" && pass "levels are gauges without _total (ctl_clients, timers_active)" ||
	fail "gauges: $(grep -E 'ctl_clients|timers_active' "$T/m1.txt")"
DUP=$(grep '^# HELP ftbpf_agent_' "$T/m1.txt" | cut -d' ' -f4- | sort | uniq -d)
NODESC=$(grep '^# HELP ftbpf_agent_.*no description' "$T/m1.txt")
[ -z "$DUP" ] && [ -z "$NODESC" ] && pass "every ftbpf_agent_* HELP line is its own ($(grep -c '^# HELP ftbpf_agent_' "$T/m1.txt"))" ||
	fail "HELP: duplicated: $DUP; without a description: $NODESC"
grep -qE '[{,]job="' "$T/m1.txt" && fail "a series labelled job (Prometheus' target label)" || pass "no series has a job label: training_job"
PC=$(promtool check metrics <"$T/m1.txt" 2>&1); rc=$?
[ $rc -eq 0 ] && [ -z "$PC" ] && pass "promtool check metrics: clean" || fail "promtool check metrics (rc $rc): $PC"
H0=$(value ftbpf_agent_hangs_total)
[ "$(value ftbpf_job_hung training_job=mjob)" = 0 ] && pass "before the hang: ftbpf_job_hung{training_job=mjob} 0" || fail "hung before: $(value ftbpf_job_hung training_job=mjob)"
wait_until 5 bash -c "curl -s '$M' | grep -q '^ftbpf_rank_state{training_job=\"mjob\",uid=\"0\",rank=\"0\",state=\"blocked\"} 1'" &&
	pass "ftbpf_rank_state: rank 0 blocked" || fail "rank state: $(curl -s "$M" | grep 'ftbpf_rank_state.*mjob')"
wait_until 15 bash -c "[ \"\$(curl -s '$M' | grep -c '^ftbpf_job_hung{training_job=\"mjob\",uid=\"0\"} 1')\" = 1 ]" &&
	pass "during the hang: ftbpf_job_hung{training_job=mjob} 1" || fail "hung gauge did not flip"
H1=$(value ftbpf_agent_hangs_total)
[ "$H1" -gt "$H0" ] && pass "ftbpf_agent_hangs_total moved: $H0 -> $H1" || fail "hangs counter: $H0 -> $H1"
NP=$(value ftbpf_job_no_progress_seconds training_job=mjob)
awk -v v="$NP" 'BEGIN {exit !(v >= 4)}' && pass "ftbpf_job_no_progress_seconds $NP" || fail "no progress: $NP"
[ "$(value ftbpf_jobs state=hung)" -ge 1 ] && pass "ftbpf_jobs{state=hung} counts it" || fail "jobs by state"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/")" = 404 ] &&
	[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d x "$M")" = 405 ] &&
	pass "other paths 404, POST 405" || fail "paths/methods"
jq_status '.agent.counters.metrics_scrapes > 5' && pass "status counts the scrapes" || fail "metrics_scrapes"
# the series are bounded: a rank is its job, owner and number, never its pid: restarting rank 0
# (a new process, as a launcher's restart) leaves 8 series per rank and 7 per job (no pid label)
nseries() { curl -s "$M" | grep -E "^ftbpf_$1\{training_job=\"mjob\"" | grep -vc '^ftbpf_job_culprit'; }
RS0=$(nseries 'rank_[a-z_]*[a-z]') JS0=$(nseries 'job_[a-z_]*[a-z]')
kill "$R0"
FTBPF_JOB=mjob FTBPF_RANK=0 sleep 100 & R0B=$!; WORKLOAD_PIDS+=($R0B)
wait_until 10 jq_status "[.ranks[] | select(.pid == $R0B and (.exited | not))] | length == 1" || fail "restarted rank 0 not adopted"
RS1=$(nseries 'rank_[a-z_]*[a-z]') JS1=$(nseries 'job_[a-z_]*[a-z]')
[ "$RS0" = 16 ] && [ "$RS1" = 16 ] && [ "$JS0" = 7 ] && [ "$JS1" = 7 ] && ! curl -s "$M" | grep -q 'pid="' &&
	pass "series bounded across a rank's restart: rank series $RS0 -> $RS1 (2 ranks x 8), job series $JS0 -> $JS1 (culprits aside), no pid label" ||
	fail "series across a restart: rank $RS0 -> $RS1 (want 16), job $JS0 -> $JS1; $(curl -s "$M" | grep -c 'pid="') with pid"
# one scrape agrees with itself: as each rank of a job ends, ftbpf_job_live_ranks equals the
# number of the job's ftbpf_rank_state series in every scrape (10 at once after each kill)
LJ=()
for r in 0 1 2 3; do FTBPF_JOB=ljob FTBPF_RANK=$r sleep 100 & LJ+=($!); WORKLOAD_PIDS+=($!); done
wait_until 10 jq_status '[.ranks[] | select(.job=="ljob" and (.exited | not))] | length == 4' || fail "ljob not adopted"
sleep 0.5
rm -f "$T/lj"
for p in "${LJ[@]}"; do
	kill "$p"
	for i in $(seq 10); do
		curl -s "$M" | awk '/^ftbpf_rank_state\{training_job="ljob"/ {n++} /^ftbpf_job_live_ranks\{training_job="ljob"/ {l = $2} END {print n + 0, l}' >>"$T/lj"
	done
done
BAD=$(awk '$1 != $2' "$T/lj" | sort | uniq -c | paste -sd' ')
SEEN=$(cut -d' ' -f1 "$T/lj" | sort -u | paste -sd' ')
[ -z "$BAD" ] && pass "each scrape's ftbpf_job_live_ranks equals its rank series ($(wc -l <"$T/lj") scrapes, live counts seen: $SEEN)" ||
	fail "live ranks and rank series disagree in a scrape (series, live): $BAD"
# no counter ever decreases: 20 scrapes while a job's ranks come and go and requests are made
# (levels and counters of the agent, by name)
rm -f "$T/scrapes"
for i in $(seq 20); do
	[ $((i % 5)) -eq 0 ] && { FTBPF_JOB=churn$i FTBPF_RANK=0 sleep 0.3 & }
	ftbpf status >/dev/null 2>&1; ftbpf version >/dev/null 2>&1
	curl -s "$M" | awk -v i="$i" '/^# TYPE .* counter$/ {c[$3] = 1} !/^#/ {split($1, n, "{"); if (c[n[1]]) print i, $1, $2}' >>"$T/scrapes"
	sleep 0.2
done
DEC=$(sort -k2,2 -k1,1n "$T/scrapes" | awk '$2 == name && $3 < v {print $2 ": " v " -> " $3 " at scrape " $1} {name = $2; v = $3}')
NC=$(cut -d' ' -f2 "$T/scrapes" | sort -u | wc -l)
[ -z "$DEC" ] && [ "$NC" -ge 30 ] && pass "no counter decreased across 20 scrapes ($NC counter series)" || fail "counters: $NC series; decreased: $DEC"
jq_status '[.jobs[] | select(.job == "churn5")][0].ended_s_ago >= 0' && jq_status '[.jobs[] | select(.job == "mjob")][0].ended_s_ago == null' &&
	pass "status: an ended job's ended_s_ago, null for a live one" || fail "ended_s_ago: $(status_json | jq -c '[.jobs[] | {job, live, ended_s_ago}]')"
# every metric the contrib rules and dashboard name exists in a scrape
curl -s "$M" >"$T/m2.txt"
MISSING=$(grep -ohE 'ftbpf_[a-z_]+' "$ROOT/contrib/prometheus/ftbpf-alerts.yml" "$ROOT/contrib/grafana/ftbpf-dashboard.json" |
	sort -u | while read -r n; do grep -q "^# TYPE $n " "$T/m2.txt" || echo "$n"; done)
[ -z "$MISSING" ] && pass "every metric in contrib's alert rules and dashboard exists" || fail "missing: $MISSING"
# an ended job stays a minute (its last state, for the alert that fires on it), then leaves:
# its series are in a scrape before 55 s after its end, in none from 65 s on
ago() { status_json | jq '[.jobs[] | select(.job == "churn5")][0].ended_s_ago // -1'; }
in_scrape() { curl -s "$M" | grep -q 'training_job="churn5"'; }
A=$(ago)
awk -v a="$A" 'BEGIN {exit !(a >= 0 && a < 55)}' && in_scrape &&
	pass "an ended job is still exported ${A} s after its end" || fail "churn5 ${A} s after its end: $(curl -s "$M" | grep -c churn5) series"
wait_until 80 bash -c "! curl -s '$M' | grep -q 'training_job=\"churn5\"'" || fail "churn5 still exported $(ago) s after its end"
A=$(ago)
awk -v a="$A" 'BEGIN {exit !(a >= 59 && a < 66)}' || [ "$A" = -1 ] &&
	pass "it leaves the scrape a minute after its end (gone at ${A} s)" || fail "churn5 left the scrape ${A} s after its end"
finish
