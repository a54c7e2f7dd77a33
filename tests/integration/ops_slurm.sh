#!/bin/bash
# time-limit: 300
# The Slurm recipe of docs/deploy.md, run under Slurm (Debian's slurm-wlm as a one-node cluster
# made here: munge, slurmctld and slurmd with this test's own config, ports and state). A batch
# job runs two ranks with srun (docs/examples/c_loop, coordinated checkpoints) and maps the
# ranks' exit code as the recipe does (42: scontrol requeue; 93: exit without requeue).
# - the tasks are adopted as job slurm:JOBID:STEPID, the batch shell is no rank;
# - a preemption signal from Slurm (scancel --signal=TERM, as sbatch --signal sends it): a
#   signal event whose sender is slurmstepd, every rank saves at one agreed step and exits 42,
#   the script requeues the job, Slurm starts it again by itself (its restart count 1, once
#   the old credential expired: cred_expire 10 s here) and both ranks resume after the saved step;
# - then a rank killed with the restart budget spent (max_restarts 0): the other rank exits 93
#   and the job ends FAILED, not requeued.
. "$(dirname "$0")/lib.sh"
for x in slurmctld slurmd sbatch scontrol munged; do
	command -v "$x" >/dev/null || { fail "$x not installed (make deps installs slurm-wlm)"; finish; }
done
# munge: the system's daemon, started when it is not running (its key comes with the package)
if ! pgrep -x munged >/dev/null; then
	mkdir -p /run/munge && chown munge:munge /run/munge
	runuser -u munge -- /usr/sbin/munged || { fail "munged did not start"; finish; }
fi
H=$(hostname -s)
S=$T/slurm; mkdir -p "$S/ctld" "$S/d"
P=$((17000 + RANDOM % 2000))
cat >"$S/slurm.conf" <<CONF
ClusterName=ftbpfit
SlurmctldHost=$H
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$P
SlurmdPort=$((P + 1))
StateSaveLocation=$S/ctld
SlurmdSpoolDir=$S/d
SlurmctldPidFile=$S/ctld.pid
SlurmdPidFile=$S/d.pid
SlurmctldLogFile=$S/ctld.log
SlurmdLogFile=$S/d.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AuthType=auth/munge
AuthInfo=cred_expire=10
MpiDefault=none
ReturnToService=2
FirstJobId=$((1000 + RANDOM % 30000))
JobRequeue=1
KillWait=30
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
NodeName=$H CPUs=$(nproc) State=UNKNOWN
PartitionName=it Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF=$S/slurm.conf
D=$T/ckpt; mkdir -p "$D"
# the job's tasks are slurmstepd's children, not the test's: end them before the daemons
slurm_down() {
	scancel --full --quiet --state=RUNNING,PENDING "${JID:-0}" 2>/dev/null
	for _ in $(seq 50); do pgrep -f -- "--dir $D" >/dev/null || break; sleep 0.2; done
	pkill -9 -f -- "--dir $D" 2>/dev/null
	pkill -9 -f "^slurmstepd: \[${JID:-none}\." 2>/dev/null # this job's steps only
}
trap 'slurm_down; cleanup' EXIT
/usr/sbin/slurmctld -D -i -f "$SLURM_CONF" >"$S/ctld.out" 2>&1 & WORKLOAD_PIDS+=($!)
/usr/sbin/slurmd -D -f "$SLURM_CONF" >"$S/d.out" 2>&1 & WORKLOAD_PIDS+=($!)
node_idle() { sinfo -h -o %t 2>/dev/null | grep -q idle; }
wait_until 30 node_idle && pass "a one-node Slurm cluster: $(sinfo -h -o '%P %t %D')" ||
	{ fail "slurm did not come up: $(tail -5 "$S/ctld.log" "$S/d.log")"; finish; }
start_agent --soft-timeout 60 --action report --node-name itnode --max-restarts 0 || exit 1
# the recipe of docs/deploy.md, around srun of the two ranks
cat >"$T/job.sh" <<JOB
#!/bin/bash
export FTBPF_SOCKET=$SOCK
srun -n 2 bash -c 'exec $B/examples/c_loop --dir $D --rank \$SLURM_PROCID --step-ms 50'; rc=\$?
echo "run \${SLURM_RESTART_COUNT:-0}: srun exit \$rc" >>$T/job.rcs
if [ -n "\${SLURM_ARRAY_JOB_ID:-}" ]; then me=\${SLURM_ARRAY_JOB_ID}_\${SLURM_ARRAY_TASK_ID}; else me=\$SLURM_JOB_ID; fi
case \$rc in
42) scontrol requeue "\$me" ;;   # the agents agreed on a restart: resume from the checkpoint
93) exit 93 ;;                   # the restart budget is spent: do not requeue
esac
exit \$rc
JOB
JID=$(sbatch --parsable -n 2 -o "$T/job.out" "$T/job.sh") || { fail "sbatch"; finish; }
JOBK="slurm:$JID:0"
ranks_of() { status_json | jq "[.ranks[] | select(.job == \"$JOBK\" and (.exited | not))] | length"; }
two_ranks() { [ "$(ranks_of)" = 2 ]; }
wait_until 60 two_ranks && pass "sbatch $JID: its two srun tasks adopted as job $JOBK" ||
	{ fail "tasks not adopted: $(status_json | jq -c '[.ranks[] | {job, pid, comm}]') $(scontrol show job "$JID" | head -5)"; finish; }
status_json | jq -e '[.ranks[] | select(.comm == "job.sh" or .comm == "slurmstepd")] | length == 0' >/dev/null &&
	pass "the batch shell and slurmstepd are no ranks" || fail "a non-task adopted"
sleep 2
# ---- a preemption from Slurm ----
scancel --signal=TERM "$JID" || fail "scancel --signal"
wait_until 30 has_event signal ".job == \"$JOBK\" and .sender_comm == \"slurmstepd\"" &&
	pass "the preemption signal seen, sender slurmstepd" ||
	fail "no signal event from slurmstepd: $(events_of signal | tail -2)"
saved() { grep -h '^SAVED' "$D/log.0" "$D/log.1" 2>/dev/null | awk '{print $2}' | sort -u | tr '\n' ' '; }
wait_until 30 has_event decision ".job == \"$JOBK\" and .kind == \"checkpoint_complete\"" &&
	[ "$(saved | wc -w)" = 1 ] && pass "both ranks saved one agreed step: $(saved)" ||
	fail "saves: '$(saved)'"
STEP=$(saved)
requeued() { scontrol show job "$JID" 2>/dev/null | grep -q "Restarts=1"; }
wait_until 60 requeued && grep -q "run 0: srun exit 42" "$T/job.rcs" &&
	pass "the ranks exited 42 and the script requeued the job ($(scontrol show job "$JID" | grep -o 'Restarts=[0-9]*'))" ||
	fail "not requeued: $(cat "$T/job.rcs" 2>/dev/null) $(scontrol show job "$JID" | grep -E 'JobState|Restarts')"
# slurmctld holds a requeued batch job until the old credential has expired (cred_expire,
# 120 s by default, 10 s in this cluster's config): it starts again by itself
NEXT=$((STEP + 1))
resumed() { [ "$(grep -h "^START .* generation 1 from step $NEXT\$" "$D/log.0" "$D/log.1" 2>/dev/null | wc -l)" -ge 2 ]; }
wait_until 90 resumed && wait_until 30 two_ranks &&
	pass "Slurm started it again; both ranks resumed in generation 1 from step $NEXT, the one after the save" ||
	fail "no resume from $NEXT: $(grep -h START "$D/log.0" "$D/log.1") $(scontrol show job "$JID" | grep -E 'JobState|Reason|StartTime')"
# ---- a failure with the restart budget spent ----
sleep 2
VICTIM=$(status_json | jq "[.ranks[] | select(.job == \"$JOBK\" and .rank == 1 and (.exited | not))][0].pid")
kill -KILL "$VICTIM"
ended() { scontrol show job "$JID" 2>/dev/null | grep -qE "JobState=(FAILED|COMPLETED|CANCELLED)"; }
wait_until 90 ended || fail "the job did not end: $(scontrol show job "$JID" | grep -E 'JobState|Restarts')"
grep -q "EXIT 93" "$D/log.0" && pass "budget spent: the surviving rank exited 93 ($(grep -h 'EXIT' "$D/log.0" | tail -1))" ||
	fail "rank 0 did not exit 93: $(tail -3 "$D/log.0")"
scontrol show job "$JID" | grep -q "JobState=FAILED" && scontrol show job "$JID" | grep -q "Restarts=1" &&
	pass "the job ended FAILED, not requeued ($(cat "$T/job.rcs" | tr '\n' ';'))" ||
	fail "after the stop: $(scontrol show job "$JID" | grep -E 'JobState|Restarts') $(cat "$T/job.rcs")"
finish
