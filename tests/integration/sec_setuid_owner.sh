#!/bin/bash
# time-limit: 150
# A rank's owner is its real uid (issue 19). nobody starts set-user-ID programs with root's
# job name in their environment: a set-user-ID copy of sleep (ruid nobody, euid root, for as
# long as it sleeps) and sg (newgrp), which runs a shell as nobody. On the old code the first
# joined root's job as uid 0; then nobody could preempt root's job with kill -TERM, hide its
# hang by starting such processes every 2 s, and become its culprit. Now:
#   - neither joins root's job (the set-user-ID process is not adopted at all; sg's shell is
#     nobody's own job of the same name), and a counter says so; nor does a copy of sleep with
#     file capabilities (issue 31: a capability-holding program is privileged too);
#   - nobody's TERM to them preempts nothing: root's registered ranks train on;
#   - root's hung job is flagged within soft + 3 s while nobody keeps starting them, and its
#     culprit is root's rank.
. "$(dirname "$0")/lib.sh"
SOFT=5
start_agent --soft-timeout $SOFT --hard-timeout 300 --action report || exit 1
export FTBPF_SOCKET=$SOCK
# a set-user-ID root copy of sleep, in the test's 0755 folder (the test fails if /tmp is nosuid:
# it could show nothing)
cp /bin/sleep "$T/suid-sleep" && chown root:root "$T/suid-sleep" && chmod 4755 "$T/suid-sleep"

# root's registered job: two C ranks that save at an agreed step when preempted
mkdir -p "$T/r"
for r in 0 1; do
	FTBPF_JOB=rjob FTBPF_RANK=$r FTBPF_WORLD_SIZE=2 "$B/examples/c_loop" --dir "$T/r" --rank $r \
		--step-ms 50 >"$T/r/out.$r" 2>&1 &
	RP[$r]=$!; WORKLOAD_PIDS+=($!)
done
wait_until 15 jq_status '[.ranks[] | select(.job=="rjob" and .uid==0 and (.exited|not))] | length == 2' ||
	fail "root's ranks not adopted: $(status_json | jq -c '[.ranks[] | {job,uid,pid}]')"

# 1. a set-user-ID process with root's job name: not adopted
$NOBODY env FTBPF_JOB=rjob FTBPF_RANK=5 FTBPF_WORLD_SIZE=8 "$T/suid-sleep" 60 &
SU=$!; WORKLOAD_PIDS+=($SU)
sleep 1
if ! awk '/^Uid:/ {exit !($2 == 65534 && $3 == 0)}' "/proc/$SU/status"; then
	fail "set-user-ID programs do not run elevated here (is /tmp nosuid?), nothing of this test is shown: $(grep Uid: /proc/$SU/status)"
else
	wait_until 5 jq_status '.agent.counters.adopt_refused_elevated >= 1' &&
		pass "a set-user-ID process is not adopted (adopt_refused_elevated $(status_json | jq .agent.counters.adopt_refused_elevated))" ||
		fail "no refusal counted: $(status_json | jq -c .agent.counters)"
	jq_status "[.ranks[] | select(.pid==$SU)] | length == 0" && pass "it is no rank of any job" ||
		fail "adopted: $(status_json | jq -c "[.ranks[] | select(.pid==$SU)]")"
	# nobody may signal it (its real uid): that must not be a preemption of root's job
	as_nobody kill -TERM "$SU"
fi

# 1b. a program with file capabilities (issue 31: not treated as privileged): not adopted
cp /bin/sleep "$T/cap-sleep" && chmod 755 "$T/cap-sleep"
if setcap cap_net_raw+ep "$T/cap-sleep" 2>/dev/null; then
	E0=$(status_json | jq .agent.counters.adopt_refused_elevated)
	$NOBODY env FTBPF_JOB=rjob FTBPF_RANK=7 FTBPF_WORLD_SIZE=8 "$T/cap-sleep" 60 &
	CS=$!; WORKLOAD_PIDS+=($CS)
	sleep 1
	if awk '/^CapEff:/ {exit !($2 != "0000000000000000")}' "/proc/$CS/status"; then
		wait_until 5 jq_status ".agent.counters.adopt_refused_elevated > $E0" &&
			jq_status "[.ranks[] | select(.pid==$CS)] | length == 0" &&
			pass "a program with file capabilities run by nobody is not adopted ($(grep CapEff "/proc/$CS/status" | tr '\t' ' '))" ||
			fail "file capabilities: adopted or not counted: $(status_json | jq -c "[.ranks[] | select(.pid==$CS)]")"
	else
		log "file capabilities not in effect here: $(grep CapEff "/proc/$CS/status")"
	fi
	kill -9 "$CS" 2>/dev/null
else
	log "setcap failed here (no xattrs on $T?): file capabilities not shown"
fi

# 2. sg: its shell runs as nobody with root's job name: nobody's own job, not root's
$NOBODY env FTBPF_JOB=rjob FTBPF_RANK=6 FTBPF_WORLD_SIZE=8 sg nogroup -c 'exec sleep 60' &
SG=$!; WORKLOAD_PIDS+=($SG)
wait_until 5 jq_status "[.ranks[] | select(.pid==$SG)] | length == 1"
jq_status "[.ranks[] | select(.job==\"rjob\" and .uid==0)] | length == 2" &&
	pass "root's job rjob still has exactly its 2 ranks" ||
	fail "root's job gained members: $(status_json | jq -c '[.ranks[] | select(.job=="rjob") | {pid,uid,comm}]')"
if jq_status "[.ranks[] | select(.pid==$SG)] | length == 1"; then
	jq_status "[.ranks[] | select(.pid==$SG and .uid==65534)] | length == 1" &&
		pass "sg's shell is nobody's rank (its own job of that name)" ||
		fail "sg's process: $(status_json | jq -c "[.ranks[] | select(.pid==$SG)]")"
fi
as_nobody kill -TERM "$SG"
sleep 3
alive "${RP[0]}" && alive "${RP[1]}" && pass "nobody's TERMs preempted nothing: root's ranks train on" ||
	fail "root's ranks ended: $(cat "$T/r/out.0" "$T/r/out.1" | tail -4)"
[ -z "$(jq -c 'select(.job=="rjob" and .uid==0 and (.type|test("decision|checkpoint")))' "$LOG" 2>/dev/null)" ] &&
	pass "no decision for root's job" || fail "decided: $(jq -c 'select(.job=="rjob" and (.type|test("decision|checkpoint")))' "$LOG" | head -3)"

# 3. root's hung job (every rank sleeps after 1 s) while nobody keeps starting set-user-ID
#    programs with its name every 2 s: flagged within soft + 3 s, its culprit root's rank
ring_job hjob 2 --fault sleep --fault-rank 0 --fault-after 1
T0=$(date +%s.%N)
(for _ in $(seq 12); do
	$NOBODY env FTBPF_JOB=hjob FTBPF_RANK=1 FTBPF_WORLD_SIZE=2 "$T/suid-sleep" 6 &
	$NOBODY env FTBPF_JOB=hjob FTBPF_RANK=0 FTBPF_WORLD_SIZE=2 sg nogroup -c 'exec sleep 6' &
	sleep 2
done; wait) >/dev/null 2>&1 &
LOOP=$!; WORKLOAD_PIDS+=($LOOP)
if wait_until $((SOFT + 6)) has_event hang '.job=="hjob" and .uid==0'; then
	D=$(echo "$(date +%s.%N) - $T0 - 1" | bc)
	awk "BEGIN{exit !($D <= $SOFT + 3)}" && pass "root's hang flagged ${D}s after the stall despite nobody's processes" ||
		fail "root's hang flagged late: ${D}s"
	CP=$(jq -s -c '[.[] | select(.type=="hang" and .job=="hjob" and .uid==0)][0].culprits // [] ' "$LOG")
	R0=$(rank_pid hjob 0); R1=$(rank_pid hjob 1)
	jq -e --argjson a "$R0" --argjson b "$R1" 'length > 0 and all(.[]; . == $a or . == $b)' <<<"$CP" >/dev/null &&
		pass "its culprit is root's rank: $CP" || fail "culprits: $CP (root's ranks $R0 $R1)"
else
	fail "root's hung job not flagged: $(status_json | jq -c '.jobs')"
fi
kill "$LOOP" 2>/dev/null

# 4. nobody's rank burns its event budget (300 short children), then execs the set-user-ID
#    program: its exec event may be folded in the kernel, the owner check still happens
if awk '/^Uid:/ {exit !($3 == 0)}' "/proc/$SU/status" 2>/dev/null || [ -u "$T/suid-sleep" ]; then
	# (python, not sh: a shell is a wrapper, and a child of it alive for a second, the sleep,
	# may take the rank over before the exec, which the test is not about)
	$NOBODY env FTBPF_JOB=nexec FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 /usr/bin/python3 -c \
		'import os, subprocess, sys, time
time.sleep(1)
for _ in range(300):
    subprocess.run(["/bin/true"])
os.execv(sys.argv[1], [sys.argv[1], "30"])' "$T/suid-sleep" &
	NX=$!; WORKLOAD_PIDS+=($NX)
	wait_until 5 jq_status "[.ranks[] | select(.pid==$NX and (.exited|not))] | length == 1" ||
		fail "nobody's rank not adopted"
	wait_until 12 has_event rank_left ".pid==$NX" &&
		pass "its exec of a set-user-ID program ends its membership ($(events_of rank_left | jq -r "select(.pid==$NX) | .why"); events folded: $(status_json | jq .agent.counters.events_folded))" ||
		fail "still a rank after exec'ing a set-user-ID program: $(status_json | jq -c "[.ranks[] | select(.pid==$NX) | {comm,exited}]")"
fi
agent_alive && pass "the agent lives" || fail "the agent died"
finish
