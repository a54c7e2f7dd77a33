#!/bin/bash
# time-limit: 150
# A job's story told right, the same in status, events, metrics and `status --check`: every
# rank exited 42 (saved, as a preemption asks) is `preempted`, 93 is `stopped`, a crash is
# `failed` (culprit named); a hang stays `hung` with its culprit and why when its ranks are
# ended: by the agent's hard action (`ended_by` agent, no `recovered` while the ranks stay stuck
# in SIGTERM's grace), by an operator's /bin/kill (`ended_by` operator, the sender named), by
# its launcher's SIGTERM (`ended_by` launcher), never a `job_failed` nor ftbpf_job_failed 1;
# only `failed` sets ftbpf_job_failed; --check looks at live jobs only. A relaunch is a new run: its crash is
# reported again (job_failed per run), the old run's ranks are no longer listed. Job names are
# printed in full, and a name copied from the table works as an argument.
. "$(dirname "$0")/lib.sh"
MPORT=$((19300 + RANDOM % 500))
M=http://127.0.0.1:$MPORT/metrics
start_agent --soft-timeout 3 --hard-timeout 8 --action terminate --grace 3 --decisions off \
	--metrics-listen "127.0.0.1:$MPORT" || exit 1
JP=preempted-job-with-a-name-longer-than-the-old-columns-0123
ring_job "$JP" 2 --seconds 2 --exit-code 42
ring_job js 2 --seconds 2 --exit-code 93
ring_job jf 2 --fault abort --fault-rank 1 --fault-after 2
ring_job jk 2 --fault sleep-ignore-term --fault-rank 1 --fault-after 1
# hung jobs ended by hand: an operator's /bin/kill, and the launcher's SIGTERM to its ranks
ring_job jo 3 --fault sleep --fault-rank 1 --fault-after 1
mkdir -p "$T/jt"
FTBPF_JOB=jt FTBPF_WORLD_SIZE=3 RING=$B/workloads/ring D=$T/jt bash -c '
	for r in 0 1 2; do FTBPF_RANK=$r "$RING" --rank $r --world 3 --dir "$D" \
		--fault sleep --fault-rank 2 --fault-after 1 & done
	trap "kill -TERM \$(jobs -p); wait; exit 1" TERM
	wait' &
LAUNCHER=$!
WORKLOAD_PIDS+=($LAUNCHER)
wait_until 15 has_event hang '.job == "jo"' && pass "jo: hung" || fail "jo: no hang"
/bin/kill -KILL "$(rank_pid jo 1)"
sleep 0.5
/bin/kill -TERM "$(rank_pid jo 0)" "$(rank_pid jo 2)"
wait_until 15 has_event hang '.job == "jt"' && pass "jt: hung" || fail "jt: no hang"
kill -TERM $LAUNCHER
# a job with live ranks (a pair that keeps training) after its third rank crashed
mkdir -p "$T/jl0" "$T/jl2"
for r in 0 1; do
	FTBPF_JOB=jl FTBPF_RANK=$r FTBPF_WORLD_SIZE=3 "$B/workloads/ring" --rank $r --world 2 --dir "$T/jl0" &
	WORKLOAD_PIDS+=($!); disown $!
done
FTBPF_JOB=jl FTBPF_RANK=2 FTBPF_WORLD_SIZE=3 "$B/workloads/ring" --rank 0 --world 1 --dir "$T/jl2" \
	--fault exit --fault-rank 0 --fault-after 2 &
WORKLOAD_PIDS+=($!); disown $!
jstate() { status_json | jq -r ".jobs[] | select(.job==\"$1\") | .state"; }
metric() { curl -s "$M" | grep "^$1{" | grep "\"$2\"" | awk '{print $2}' | head -1; }
for pair in "$JP:preempted" js:stopped jf:failed jk:hung jo:hung jt:hung; do
	j=${pair%:*}; want=${pair##*:}
	wait_until 30 has_event job_end ".job == \"$j\"" || { fail "$j: no job_end ($(jstate "$j"))"; continue; }
	[ "$(jstate "$j")" = "$want" ] && pass "$j: status says $want" || fail "$j: status $(jstate "$j"), want $want"
	has_event job_end ".job == \"$j\" and .state == \"$want\"" && pass "$j: job_end event says $want" ||
		fail "$j: job_end $(events_of job_end | jq -c "select(.job == \"$j\") | {state, why}")"
	f=$(metric ftbpf_job_failed "$j")
	if [ "$want" = failed ]; then
		[ "$f" = 1 ] && pass "$j: ftbpf_job_failed 1" || fail "$j: ftbpf_job_failed '$f'"
		has_event job_failed ".job == \"$j\"" && pass "$j: job_failed event" || fail "$j: no job_failed"
	else
		[ "$f" = 0 ] && pass "$j: ftbpf_job_failed 0" || fail "$j: ftbpf_job_failed '$f'"
		has_event job_failed ".job == \"$j\"" && fail "$j: job_failed: $(events_of job_failed | jq -c "select(.job == \"$j\") | .why")" ||
			pass "$j: no job_failed event"
	fi
	ftbpf status "$j" --check >/dev/null; rc=$?
	[ $rc -eq 0 ] && pass "$j: status --check 0 (it ended: history, not a live job)" || fail "$j: --check $rc"
done
curl -s "$M" | grep -q '^ftbpf_jobs{state="preempted"} [1-9]' && pass "ftbpf_jobs counts preempted jobs" ||
	fail "ftbpf_jobs: $(curl -s "$M" | grep '^ftbpf_jobs{')"
# the hung jobs ended: their culprit and why kept, who ended them said; no `recovered`
K=$(status_json | jq -c '.jobs[] | select(.job=="jk")')
echo "$K" | jq -e '.culprit_ranks == [1] and .ended_by.by == "agent" and .ended_by.action == "hard_timeout" and
	(.why | test("^hung, then ended by the agent.s hard-timeout action; .*rank 1"))' >/dev/null &&
	pass "jk: culprit rank 1 and why kept: $(echo "$K" | jq -r .why | cut -c1-100)" || fail "jk: $K"
has_event action ".job == \"jk\" and .signal == 15" && pass "jk: the hard action sent SIGTERM" || fail "no SIGTERM action"
has_event recovered ".job == \"jk\"" && fail "recovered logged for the job the agent ended" || pass "no recovered for the job the agent ended"
for pair in jo:1:operator:kill:KILL jt:2:launcher:bash:TERM; do
	IFS=: read -r j c by comm sig <<<"$pair"
	E=$(events_of job_end | jq -c "select(.job == \"$j\")" | tail -1)
	echo "$E" | jq -e ".state == \"hung\" and .culprit_ranks == [$c] and .ended_by.by == \"$by\" and
		.ended_by.sender_comm == \"$comm\" and .ended_by.signal_name == \"$sig\" and
		(.why | test(\"^hung, then ended by the $by: rank [0-9] .*SIG$sig from $comm .*; .*rank $c\"))" >/dev/null &&
		pass "$j: job_end hung, culprit rank $c kept, ended by the $by: $(echo "$E" | jq -r .why | cut -c1-140)" ||
		fail "$j: job_end $(echo "$E" | jq -c '{state, culprit_ranks, ended_by, why}')"
	has_event recovered ".job == \"$j\"" && fail "$j: recovered logged" || pass "$j: no recovered"
done
has_event recovered ".job == \"jf\"" && fail "recovered logged after job_failed" || pass "no recovered after job_failed"
F=$(status_json | jq -c '.jobs[] | select(.job=="jf")')
echo "$F" | jq -e '.culprit_ranks == [1] and (.why | test("first to die"))' >/dev/null && pass "failed: culprit rank 1" || fail "failed: $F"
# a live job with a crashed rank: --check 5; the ended ones do not count
wait_until 15 jq_status '.jobs[] | select(.job=="jl") | .state == "failed" and .live == 2' &&
	pass "jl: failed with a live rank" || fail "jl: $(status_json | jq -c '.jobs[] | select(.job=="jl")')"
ftbpf status jl --check >/dev/null; rc=$?
[ $rc -eq 5 ] && pass "status JOB --check: 5 for a live failed job" || fail "jl --check $rc"
ftbpf status --check >/dev/null; rc=$?
[ $rc -eq 5 ] && pass "status --check: 5 (the live one)" || fail "--check $rc"
kill "$(cat "$T/jl0/pid.0")" "$(cat "$T/jl0/pid.1")"
wait_until 10 has_event job_end '.job == "jl"'
ftbpf status --check >/dev/null; rc=$?
[ $rc -eq 0 ] && pass "status --check: 0 once no live job failed or hung" || fail "--check $rc after the live job ended"
# a relaunch of the failed job is a new run: its crash is reported again, old rows go
OLD=$(status_json | jq -c '[.ranks[] | select(.job=="jf") | .pid]')
rm -f "$T/jf/pid."*
ring_job jf 2 --fault abort --fault-rank 1 --fault-after 2
wait_until 30 jq_status '.jobs[] | select(.job=="jf") | .run == 2 and .state == "failed"' &&
	pass "relaunch: run 2, failed" || fail "relaunch: $(status_json | jq -c '.jobs[] | select(.job=="jf") | {run, state, previous_run}')"
wait_until 10 has_event job_failed '.job == "jf" and .run == 2' || true
[ "$(events_of job_failed | jq -c 'select(.job == "jf")' | wc -l)" -eq 2 ] &&
	pass "a crash in the relaunch is reported (job_failed once per run)" ||
	fail "job_failed for jf: $(events_of job_failed | jq -c 'select(.job == "jf") | .why')"
jq_status ".jobs[] | select(.job==\"jf\") | .previous_run == \"failed\"" && pass "the run knows how the previous ended" || fail "previous_run"
NEW=$(status_json | jq -c '[.ranks[] | select(.job=="jf") | .pid]')
[ "$(jq -n "$OLD - $NEW | length")" = "$(jq -n "$OLD | length")" ] && [ "$(jq -n "$NEW | length")" = 2 ] &&
	pass "the old run's ranks are no longer listed ($OLD -> $NEW)" || fail "rows: old $OLD new $NEW"
# names in full, and a name from the table works as an argument
TABLE=$(ftbpf status)
echo "$TABLE" | grep -q "^$JP " && pass "the table prints the job's name in full" || fail "name cut: $(echo "$TABLE" | grep preempted | head -2)"
COPIED=$(echo "$TABLE" | awk '/^JOB / {t=1; next} t && /^preempted/ {print $1; exit}')
ftbpf status "$COPIED" --json | jq -e ".jobs | length == 1 and .[0].state == \"preempted\"" >/dev/null &&
	pass "\`ftbpf status $COPIED\` (copied from the table) works" || fail "copied name '$COPIED'"
ftbpf status no-such-job >/dev/null 2>&1; rc=$?
[ $rc -eq 1 ] && pass "an unknown job is an error (1)" || fail "unknown job: $rc"
ftbpf status --live --json | jq -e '[.ranks[] | .exited] | any | not' >/dev/null &&
	pass "status --live lists live ranks only" || fail "--live"
finish
