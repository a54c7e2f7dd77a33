#!/bin/bash
# (t) ftbpf-top driven in tmux (send-keys, capture-pane) against a real agent and real ranks:
# a hung job's culprit highlighted, sorting and filtering keys, the detail view, the stacks
# view (s), the agent restarting under it, 80x24 without garbage, resizing (160 columns: CPU%,
# RSS, THR), --once, q.
. "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || { fail "tmux is not installed"; finish; }
TS=ftbpf-it-$$ # a private tmux server
tm() { tmux -L "$TS" "$@"; }
cap() { tm capture-pane -p -t top; }
screen_has() { cap | grep -qF -- "$1"; }
# wait_screen SECONDS TEXT: until the screen shows TEXT
wait_screen() { wait_until "$1" screen_has "$2"; }
keys() { tm send-keys -t top "$@"; sleep 0.4; }
top_cleanup() { tm kill-server 2>/dev/null; cleanup; }
trap top_cleanup EXIT

SOFT=3
start_agent --soft-timeout $SOFT --hard-timeout 300 --action report || exit 1
ring_job hungjob 4 --fault sleep --fault-rank 2 --fault-after 1
ring_job okjob 2 --work 2000 --interval-ms 50
CUL=$(rank_pid hungjob 2)
wait_until $((SOFT + 15)) jq_status '.jobs[] | select(.job=="hungjob") | .hung' || fail "job not hung"

tm new-session -d -s top -x 80 -y 24 "$B/ftbpf-top --socket $SOCK --delay 0.5"
if wait_screen 10 "HUNG job hungjob"; then pass "hung job in the header"; else fail "no hung job: $(cap)"; fi
cap > "$T/screen1.txt"
# the culprit row: marked '!', first under severity sort, and highlighted (red or reverse)
grep -E "^! hungjob +2 +$CUL " "$T/screen1.txt" >/dev/null &&
	pass "culprit row marked (rank 2, pid $CUL)" || fail "culprit row: $(grep hungjob "$T/screen1.txt")"
[ "$(grep -c '^\* hungjob' "$T/screen1.txt")" = 3 ] && pass "the other ranks marked hung" ||
	fail "hung markers: $(grep hungjob "$T/screen1.txt")"
tm capture-pane -p -e -t top | grep -F " $CUL " | grep -qE $'\e\\[[0-9;]*(41|7)m' &&
	pass "culprit row highlighted (SGR red background / reverse)" ||
	fail "culprit not highlighted: $(tm capture-pane -p -e -t top | grep -F " $CUL " | cat -v)"
# 80x24: 24 lines, none wider than 80, no control characters, the header and key lines
[ "$(wc -l < "$T/screen1.txt")" -eq 24 ] && pass "24 lines" || fail "$(wc -l < "$T/screen1.txt") lines"
awk 'length($0) > 80 { bad = 1 } END { exit bad }' "$T/screen1.txt" && pass "no line over 80 columns" ||
	fail "a line is wider than 80"
LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]' "$T/screen1.txt" && fail "control characters on screen" ||
	pass "no control characters"
head -1 "$T/screen1.txt" | grep -q "^ftbpf-top  ftbpfd" && pass "header line" || fail "header: $(head -1 "$T/screen1.txt")"
tail -1 "$T/screen1.txt" | grep -q "q quit" && pass "keys shown on screen" || fail "no key line"
grep -q "EVENTS" "$T/screen1.txt" && grep -q "hang job hungjob" "$T/screen1.txt" &&
	pass "event pane shows the hang" || fail "event pane: $(grep -A7 EVENTS "$T/screen1.txt")"

# sorting: to pid, ascending then reversed
for _ in $(seq 4); do screen_has "Sort pid" && break; keys '>'; done
pids() { cap | sed -nE 's/^[!*x ] (hungjob|okjob) +[0-9]+ +([0-9]+) .*/\2/p'; }
if screen_has "Sort pid"; then
	P=$(pids | tr '\n' ' ')
	[ "$P" = "$(pids | sort -n | tr '\n' ' ')" ] && [ $(pids | wc -l) -eq 6 ] &&
		pass "sorted by pid: $P" || fail "not sorted by pid: $P"
	keys r
	P=$(pids | tr '\n' ' ')
	[ "$P" = "$(pids | sort -rn | tr '\n' ' ')" ] && screen_has "(reversed)" &&
		pass "reversed: $P" || fail "not reversed: $P"
	keys r
else
	fail "'>' did not reach the pid sort: $(cap | sed -n 3p)"
fi
# filtering: by job (prompt), by state (cycle), cleared
keys / ; keys o k j o b Enter
[ "$(cap | grep -c '^. okjob')" = 2 ] && [ "$(cap | grep -c 'hungjob  ')" = 0 ] &&
	pass "job filter shows okjob only" || fail "job filter: $(cap | sed -n 3,12p)"
keys c
keys t
screen_has "state problems" && [ "$(cap | grep -c '^. okjob')" = 0 ] &&
	[ "$(cap | grep -c '^. hungjob')" = 4 ] && pass "state filter 'problems' hides running ranks" ||
	fail "state filter: $(cap | sed -n 3,12p)"
keys c
[ "$(cap | grep -cE '^. (ok|hung)job')" = 6 ] && pass "filters cleared" || fail "clear: $(cap | sed -n 3,12p)"

# detail view of the culprit: back to the severity sort, first row, Enter
for _ in $(seq 20); do screen_has "Sort severity" && break; keys '>'; done
keys Home
keys Enter
if wait_screen 5 "rank 2 of job hungjob, pid $CUL"; then
	pass "detail view opens on the culprit"
	screen_has "clock_nanosleep" && screen_has "THREADS" && pass "detail: syscall and threads" ||
		fail "detail content: $(cap)"
	screen_has "signals received" && screen_has "timers" && pass "detail: signals and timers" ||
		fail "detail lacks signals/timers"
else
	fail "no detail view: $(cap)"
fi
keys Escape
wait_screen 3 "Sort severity" && pass "Esc back to the table" || fail "Esc: $(cap | head -3)"
# s: the culprit's stacks now (as ftbpf stacks PID), Esc back
keys s
if wait_screen 8 "stacks of pid $CUL now"; then
	screen_has "rank 2 of job hungjob, pid $CUL" && screen_has "tid $CUL" && screen_has "clock_nanosleep" &&
		pass "s: the culprit's stacks (its thread in clock_nanosleep)" || fail "stacks content: $(cap)"
else
	fail "s: no stacks view: $(cap)"
fi
keys Escape
wait_screen 3 "Sort severity" && pass "Esc back from the stacks view" || fail "stacks view stuck: $(cap | head -3)"

# the peers view (this agent has no mesh: it says so)
keys P
screen_has "PEERS of" && screen_has "the heartbeat mesh is off" && pass "P: peers view" || fail "P: $(cap | head -3)"
keys Escape
screen_has "Sort severity" && pass "back from the peers view" || fail "peers view stuck"

# the agent goes away and comes back
OLD=$AGENT_PID
stop_agent
if wait_screen 5 "ftbpfd went away"; then pass "agent loss shown"; else fail "agent loss not shown: $(cap | head -2)"; fi
screen_has "hungjob" && pass "last rows kept while away" || fail "rows dropped"
tm has-session -t top 2>/dev/null && pgrep -f "ftbpf-top --socket $SOCK" >/dev/null &&
	pass "ftbpf-top still running" || fail "ftbpf-top died with the agent"
start_agent --soft-timeout $SOFT --hard-timeout 300 --action report || exit 1
if wait_screen 8 "ftbpfd 0.1.0 pid $AGENT_PID"; then pass "reconnected to the new agent ($OLD -> $AGENT_PID)"
else fail "not reconnected: $(cap | head -2)"; fi
wait_until 10 screen_has "! hungjob" && pass "culprit shown again after the restart" || fail "after restart: $(cap)"

# resize: wider shows every column; narrow still draws
tm resize-window -t top -x 160 -y 40 2>/dev/null || tm resize-pane -t top -x 160 -y 40
sleep 1.2
cap | grep -qE "GPU +PING +TIMER +SLOW +CPU% +RSS +THR +REASON" && pass "160 columns: GPU, PING, TIMER, SLOW, CPU%, RSS and THR columns" ||
	fail "wide header: $(cap | grep JOB)"
# the culprit sleeps: 0% CPU, its resident memory, its threads (the agent's count)
ROW=$(cap | grep -E "^! hungjob +2 +$CUL ")
echo "$ROW" | grep -qE " 0 +[0-9.]+[kMG] +[0-9]+ +blocked in clock_nanosleep" &&
	pass "160 columns: the culprit's CPU% 0, RSS and threads: $(echo "$ROW" | grep -oE ' 0 +[0-9.]+[kMG] +[0-9]+ ' | tr -s ' ')" ||
	fail "CPU%/RSS/THR cells: $ROW"
BUSY=$(cap | grep -E "^. okjob " | grep -oE " [0-9]+ +[0-9.]+[kMG] +[0-9]+ +[a-z]" | awk '{print $1}' | sort -n | tail -1)
[ -n "$BUSY" ] && pass "160 columns: okjob's ranks have CPU% (highest $BUSY)" || fail "okjob CPU%: $(cap | grep okjob)"
tm resize-window -t top -x 60 -y 15 2>/dev/null || tm resize-pane -t top -x 60 -y 15
sleep 1.2
cap | awk 'length($0) > 60 { bad = 1 } END { exit bad }' && screen_has "hungjob" &&
	pass "60x15 draws within its width" || fail "60x15: $(cap)"

# --once: plain text for scripts
"$B/ftbpf-top" --socket "$SOCK" --once --width 120 > "$T/once.txt"; RC=$?
[ $RC -eq 0 ] && grep -qE "^! hungjob +2 +$CUL " "$T/once.txt" && [ "$(grep -cE '^. (ok|hung)job' "$T/once.txt")" = 6 ] &&
	pass "--once prints every rank, culprit marked" || fail "--once rc $RC: $(cat "$T/once.txt")"
LC_ALL=C grep -qP '\x1b' "$T/once.txt" && fail "--once has escape sequences" || pass "--once is plain text"
"$B/ftbpf-top" --socket "$T/nope.sock" --once > "$T/once2.txt" 2>&1; RC=$?
[ $RC -eq 3 ] && grep -q "cannot reach ftbpfd" "$T/once2.txt" && ! grep -q retrying "$T/once2.txt" &&
	pass "--once without agent: exit 3, says why (and does not claim to retry)" ||
	fail "--once without agent: rc $RC $(cat "$T/once2.txt")"
# GPU use per rank where NVML answers: this host has no driver, so a stand-in libnvidia-ml.so.1
# (tests/workloads/fakenvml.c) says the culprit holds 2 GiB of GPU memory at 87% SM
LD_LIBRARY_PATH=$B/workloads/fakenvml FAKE_NVML_PROCS="$CUL:2048:87" \
	"$B/ftbpf-top" --socket "$SOCK" --once --width 200 > "$T/gpu.txt"; RC=$?
[ $RC -eq 0 ] && grep -qE "THR GPU% +GMEM REASON" "$T/gpu.txt" && grep -qE "^! hungjob +2 +$CUL .* 87 +2048M " "$T/gpu.txt" &&
	[ "$(grep -E '^. okjob ' "$T/gpu.txt" | grep -cE ' 0 +0k ')" -ge 1 ] &&
	pass "NVML's GPU use per rank: GPU% 87 and GMEM 2048M for the culprit, 0 for ranks on no GPU" ||
	fail "GPU columns (rc $RC): $(grep -E 'GPU%|hungjob|okjob' "$T/gpu.txt" | head -4)"
! grep -q "GPU%" "$T/once.txt" && pass "without NVML no GPU columns" || fail "GPU columns without NVML: $(grep GPU% "$T/once.txt")"
# another user sees none of root's ranks, nor their events (the agent checks SO_PEERCRED)
setpriv --reuid=nobody --regid=nogroup --clear-groups "$B/ftbpf-top" --socket "$SOCK" --once > "$T/once3.txt"; RC=$?
[ $RC -eq 0 ] && grep -q "Ranks 0: none adopted" "$T/once3.txt" && ! grep -q "hungjob\|okjob" "$T/once3.txt" &&
	pass "unprivileged user: no ranks, no events of root's jobs" || fail "unprivileged view (rc $RC): $(cat "$T/once3.txt")"
"$B/ftbpf-top" --delay 0 >/dev/null 2>&1; [ $? -eq 2 ] && pass "bad --delay rejected" || fail "bad --delay accepted"
"$B/ftbpf-top" --help | grep -q "Enter detail" && "$B/ftbpf-top" --help | grep -q "s stacks of the rank" &&
	"$B/ftbpf-top" --help | grep -q "CPU%" && pass "--help lists the keys and the CPU% column" || fail "--help without keys"

# q quits
keys q
wait_until 3 bash -c "! tmux -L $TS has-session -t top 2>/dev/null" && pass "q quits" || fail "q did not quit"
finish
