#!/bin/bash
# time-limit: 120
# The alert rules as Prometheus users run them: `promtool check rules`, `promtool test rules`
# with a fixture per rule (contrib/prometheus/ftbpf-alerts.test.yml), then Debian's real
# prometheus scraping a real agent under a plain `job_name: ftbpf` with the project's rules
# (`for:` shortened to 2 s): two hung training jobs, and each FtbpfJobHung alert read back
# from Prometheus' HTTP API names its own training job in its labels and summary, and its own
# culprit rank in its description; the scrape job stays `job="ftbpf"`. Then the alerts follow a
# job's story: beta's hang ended by an operator's `kill -KILL` resolves its FtbpfJobHung and
# never fires FtbpfJobFailed, while a real crash (gamma) fires it.
. "$(dirname "$0")/lib.sh"
RULES=$ROOT/contrib/prometheus/ftbpf-alerts.yml
OUT=$(promtool check rules "$RULES" 2>&1) && pass "promtool check rules: $(echo "$OUT" | grep -o 'SUCCESS.*')" || fail "promtool check rules: $OUT"
OUT=$(cd "$ROOT/contrib/prometheus" && promtool test rules ftbpf-alerts.test.yml 2>&1) && pass "promtool test rules: every fixture passes" || fail "promtool test rules: $OUT"
ALERTS=$(grep -c '^ *- alert:' "$RULES")
TESTED=$(grep -oE 'alertname: [A-Za-z]+' "$ROOT/contrib/prometheus/ftbpf-alerts.test.yml" | sort -u | wc -l)
[ "$ALERTS" -eq "$TESTED" ] && pass "a fixture for each of the $ALERTS rules" || fail "$ALERTS rules, $TESTED tested"

MPORT=$((27000 + RANDOM % 1000)); PPORT=$((28000 + RANDOM % 1000))
start_agent --soft-timeout 3 --hard-timeout 300 --action report --metrics-listen "127.0.0.1:$MPORT" || exit 1
sed 's/^\( *\)for: 1m$/\1for: 2s/' "$RULES" >"$T/rules.yml"
cat >"$T/prometheus.yml" <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [$T/rules.yml]
scrape_configs:
  - job_name: ftbpf
    static_configs: [{targets: ["127.0.0.1:$MPORT"]}]
YML
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
	--web.listen-address="127.0.0.1:$PPORT" >"$T/prometheus.out" 2>&1 &
WORKLOAD_PIDS+=($!)
API=http://127.0.0.1:$PPORT/api/v1
wait_until 30 curl -sf "$API/status/buildinfo" -o "$T/build.json" && pass "prometheus $(jq -r .data.version "$T/build.json") serves" ||
	{ fail "prometheus did not start: $(tail -5 "$T/prometheus.out")"; finish; }
# two hung jobs: in alpha rank 2 sleeps, in beta (later) rank 1
ring_job alpha 4 --fault sleep --fault-rank 2 --fault-after 1
sleep 3
ring_job beta 3 --fault sleep --fault-rank 1 --fault-after 1
firing() { curl -s "$API/alerts" | jq -c '[.data.alerts[] | select(.labels.alertname=="FtbpfJobHung" and .state=="firing")]'; }
wait_until 40 bash -c "[ \"\$(curl -s '$API/alerts' | jq '[.data.alerts[] | select(.labels.alertname==\"FtbpfJobHung\" and .state==\"firing\")] | length')\" = 2 ]" ||
	fail "not two firing FtbpfJobHung alerts: $(firing)"
F=$(firing)
log "firing: $(echo "$F" | jq -c '[.[] | {labels, annotations}]')"
for j in alpha:2 beta:1; do
	job=${j%:*} rank=${j#*:}
	A=$(echo "$F" | jq -c ".[] | select(.labels.training_job==\"$job\")")
	[ -n "$A" ] || { fail "no alert labelled training_job=$job"; continue; }
	echo "$A" | jq -e '.labels.job == "ftbpf" and .labels.uid == "0" and (.labels | has("exported_job") | not)' >/dev/null &&
		pass "$job: labels training_job=$job, uid=0, and the scrape job job=ftbpf (no exported_job)" || fail "$job labels: $(echo "$A" | jq -c .labels)"
	echo "$A" | jq -e ".annotations.summary == \"Training job $job (uid 0) is hung on 127.0.0.1:$MPORT\"" >/dev/null &&
		pass "$job: summary: $(echo "$A" | jq -r .annotations.summary)" || fail "$job summary: $(echo "$A" | jq -r .annotations.summary)"
	echo "$A" | jq -e ".annotations.description | test(\"^No rank of training job $job made progress for [0-9][0-9.ms ]*s; culprit rank\\\\(s\\\\): $rank \")" >/dev/null &&
		pass "$job: description with its own time and culprit: $(echo "$A" | jq -r .annotations.description)" ||
		fail "$job description: $(echo "$A" | jq -r .annotations.description)"
done
ring_job gamma 2 --fault abort --fault-rank 1 --fault-after 1
for r in 0 1 2; do /bin/kill -KILL "$(rank_pid beta $r)"; done
alert_is() { curl -s "$API/alerts" | jq -e "[.data.alerts[] | select(.labels.alertname==\"$1\" and .labels.training_job==\"$2\" and .state==\"firing\")] | length == $3" >/dev/null; }
wait_until 20 alert_is FtbpfJobFailed gamma 1 && pass "gamma crashed: FtbpfJobFailed fires for it" ||
	fail "gamma: no FtbpfJobFailed: $(curl -s "$API/alerts" | jq -c '[.data.alerts[] | {a: .labels.alertname, j: .labels.training_job, s: .state}]')"
wait_until 20 alert_is FtbpfJobHung beta 0 && pass "beta ended by hand: its FtbpfJobHung resolved" || fail "beta still hung in Prometheus"
sleep 3 # a few more evaluations after the kill
EVER=$(curl -s "$API/query" --data-urlencode 'query=count_over_time(ALERTS{alertname="FtbpfJobFailed",training_job="beta"}[10m])' | jq -c .data.result)
[ "$EVER" = "[]" ] && pass "beta: FtbpfJobFailed never fired (a hang ended by hand is no failure)" || fail "beta: FtbpfJobFailed fired: $EVER"
jq_status '.jobs[] | select(.job == "beta") | .state == "hung" and .ended_by.by == "operator" and .culprit_ranks == [1]' &&
	pass "beta: status says hung, ended by the operator, culprit rank 1" || fail "beta: $(status_json | jq -c '.jobs[] | select(.job == "beta") | {state, ended_by, culprit_ranks}')"
finish
