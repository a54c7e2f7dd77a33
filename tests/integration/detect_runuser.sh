#!/bin/bash
# time-limit: 120
# A rank launched by root through `runuser -u USER -- cmd` or `su USER -c cmd` (issue 31: the
# wrapper, root's, was adopted as root's rank, its child left the tree as another user's, and
# the wrapper, waiting in wait4, was judged hung and SIGTERMed at the hard timeout). Now the
# child is adopted as its user's rank (nobody's job), the wrapper leaves root's job (rank_left
# with heir_pid) and is never judged. Two 2-rank jobs, one behind runuser, one behind su -c,
# run healthy past the hard timeout (8 s): no hang, no action, every process alive. Then a job
# behind runuser whose rank 1 sleeps: hung within soft + 1 s with nobody's rank 1 as culprit,
# and the hard action goes to nobody's ranks, never to a wrapper.
. "$(dirname "$0")/lib.sh"
RING=$(for_nobody "$B/workloads/ring")
SOFT=3
HARD=8
start_agent --soft-timeout $SOFT --hard-timeout $HARD --action terminate || exit 1
mkdir -p "$T/ru" "$T/su" "$T/f"
chown nobody "$T/ru" "$T/su" "$T/f"
WR=()
for r in 0 1; do
	FTBPF_JOB=ru FTBPF_RANK=$r FTBPF_WORLD_SIZE=2 runuser -u nobody -- "$RING" --rank $r --world 2 --dir "$T/ru" --seconds 40 &
	WR+=($!); WORKLOAD_PIDS+=($!)
	FTBPF_JOB=suj FTBPF_RANK=$r FTBPF_WORLD_SIZE=2 su nobody -s /bin/sh -c "exec '$RING' --rank $r --world 2 --dir '$T/su' --seconds 40" &
	WR+=($!); WORKLOAD_PIDS+=($!)
done
wait_until 10 test -e "$T/ru/pid.1" -a -e "$T/su/pid.1" || fail "the ranks did not start"
RU="[$(rank_pid ru 0),$(rank_pid ru 1)]"; SU="[$(rank_pid su 0),$(rank_pid su 1)]"
wait_until 10 jq_status "([.ranks[] | select(.job==\"ru\" and .uid==65534 and (.exited|not)) | .pid] | sort) == ($RU | sort) and ([.ranks[] | select(.job==\"suj\" and .uid==65534 and (.exited|not)) | .pid] | sort) == ($SU | sort)" &&
	pass "the ranks behind runuser and su -c are nobody's ranks: $(status_json | jq -c '[.ranks[] | select(.uid==65534) | {job, rank, pid, wrapper_comm}]')" ||
	fail "not adopted as nobody's: $(status_json | jq -c '[.ranks[] | {job, uid, pid, comm, exited}]')"
[ "$(events_of rank_left | jq -s '[.[] | select(.heir_pid != null and .uid == 0)] | length')" -ge 4 ] &&
	pass "root's wrappers left root's jobs, each naming its heir: $(events_of rank_left | jq -c '{comm, heir_pid}' | head -2 | paste -sd' ')" ||
	fail "wrappers did not leave: $(events_of rank_left | head -3)"
sleep $((HARD + 4))
has_event hang '.job=="ru" or .job=="suj"' && fail "a healthy job behind a wrapper was judged hung: $(events_of hang | jq -c '{job, why}' | head -2)" ||
	pass "no hang past the hard timeout"
has_event action 'true' && fail "an action was taken: $(events_of action | head -2)" || pass "no action"
ALIVE=0; for p in "${WR[@]}" $(cat "$T"/ru/pid.* "$T"/su/pid.*); do alive "$p" && ALIVE=$((ALIVE + 1)); done
[ $ALIVE -eq 8 ] && pass "every wrapper and rank alive after $((HARD + 4)) s" || fail "$ALIVE of 8 alive"
# a stall behind runuser: judged on nobody's ranks, acted on them alone
for r in 0 1; do
	FTBPF_JOB=fj FTBPF_RANK=$r FTBPF_WORLD_SIZE=2 runuser -u nobody -- "$RING" --rank $r --world 2 --dir "$T/f" \
		--fault sleep --fault-rank 1 --fault-after 3 &
	WORKLOAD_PIDS+=($!)
done
wait_until 10 test -e "$T/f/pid.1" || fail "the third job did not start"
CUL=$(rank_pid f 1)
wait_until $((SOFT + 8)) has_event hang '.job=="fj"' || fail "no hang for the stalled job"
FAULT_TS=$(cat "$T/f/fault.ts" 2>/dev/null || echo 0)
HANG=$(events_of hang | jq -c 'select(.job=="fj")' | head -1)
HANG_TS=$(echo "$HANG" | jq -r '.ts // empty' | xargs -r -I{} date -d {} +%s.%N)
DELAY=$(awk -v h="${HANG_TS:-0}" -v f="$FAULT_TS" 'BEGIN{printf "%.2f", h ? h - f : 999}')
awk -v d="$DELAY" -v s=$SOFT 'BEGIN{exit !(d <= s + 1)}' && echo "$HANG" | jq -e ".culprits == [$CUL] and .uid == 65534" >/dev/null &&
	pass "the stalled job behind runuser: hung ${DELAY} s after its fault, culprit nobody's rank 1" ||
	fail "hang after ${DELAY} s: $(echo "$HANG" | jq -c '{uid, culprits, why}')"
wait_until $((HARD + 4)) has_event action '.job=="fj"' || fail "no hard action for the stalled job"
F="[$(rank_pid f 0),$(rank_pid f 1)]"
events_of action | jq -s -e "[.[] | select(.job==\"fj\") | .pid] | unique | all(. as \$p | $F | index(\$p))" >/dev/null &&
	pass "the hard action went to nobody's ranks only: $(events_of action | jq -c 'select(.job=="fj") | {pid, signal_name}' | paste -sd' ')" ||
	fail "actions: $(events_of action | jq -c '{job, pid, comm}')"
finish
