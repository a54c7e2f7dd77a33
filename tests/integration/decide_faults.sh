#!/bin/bash
# time-limit: 900
# Fault injection for the decisions (docs/decisions.md, invariants I1-I7): three agents in
# network namespaces, a real etcd behind a delaying proxy, a launcher of two C ranks
# (docs/examples/c_loop.c, 50 ms steps, WORLD_SIZE 6) on each node, and on node 2 a bystander
# job of another id. Each run launches the job (a new run of it), sends a preemption signal to
# one of its ranks and injects one fault at a random moment around it, for a random time:
#   etcd_pause        etcd SIGSTOPped          etcd_restart   etcd killed -9, started again
#   etcd_slow         writes delayed 200-900 ms by the proxy
#   etcd_quota        etcd out of space (its quota filled): every write fails, then recovered
#   cut_etcd          one node cut off from etcd only (nftables)
#   cut_all           one node cut off from everything (its link down)
#   agent_stop        one agent SIGSTOPped, shorter than its lease
#   agent_pause_ttl   one agent SIGSTOPped 1.5-2.5 x its lease TTL (7.5-12.5 s), the
#                     preemption (another node's) inside it: its lease runs out, so its node may
#                     be lost and left out, but nothing else may break
#   agent_kill        one agent killed -9 mid-decision, started again within a second
#   agent_restart     one agent stopped and started again
#   rank_stop         a rank SIGSTOPped around the target step
#   two_preemptions   a second preemption signal on another node 10 ms after the first
#   preempt_failure   a rank killed -9 (a failure) within 50 ms of the preemption signal
#   clock_step        the agents' wall clock stepped by -120..+120 s (LD_PRELOAD shim)
#   clock_skew        each agent's wall clock stepped on its own, by -120..+120 s: the hosts
#                     disagree on the time by up to 4 minutes
#   etcd_outage       etcd SIGSTOPped 10-12 s for everyone, the preemption inside it (agents
#                     with fence_after 30 for this kind: the outage must hold the ranks, never
#                     end them, fence or lose a node, and the preemption is agreed after it)
# After each run every invariant is checked on what the ranks wrote and what the agents
# decided and logged: I1 (the bystander is never touched), I2 (a checkpoint is complete only
# when all 6 ranks saved it; generations resume only from complete ones), I3 (every rank of a
# generation starts from one step), I4 (nothing of generation G completes after G+1 is
# decided), I5 (the preemption ends in a checkpoint, or an event says why not, one that can be
# true in that run), I6 (no node is lost to a pause, a restart or an etcd outage), I7 (the clock
# step changes nothing), the nodes hold the same decisions in the same run, and every launcher
# restarts its ranks once (torchrun's --max-restarts 1) in the generation decided: every
# generation's ranks, restarted, resume from a step that all 6 ranks saved in one generation;
# then the job ends normally. FAULT_RUNS runs per fault kind (1 here;
# `make test-faults` runs 50 of each and writes the table to $FAULT_REPORT); FAULT_KINDS
# selects kinds. FAULT_SLOT=1..9 runs a copy beside this one (its own namespaces, addresses
# and ports): the long mode shares its kinds out over a few slots (tests/run-faults.sh).
. "$(dirname "$0")/lib.sh"
command -v etcd >/dev/null || { fail "etcd not installed (make deps)"; finish; }
# cut_etcd cuts with nftables: without it the cut would silently be none
command -v nft >/dev/null || { fail "nft not installed (make deps: nftables)"; finish; }
. "$(dirname "$0")/cluster.sh"
# a rank started while its agent is restarted waits for it (agent_kill, agent_restart: the
# launcher restarts the ranks in that moment) instead of training on without the decisions
export FTBPF_AGENT_WAIT=15
RUNS=${FAULT_RUNS:-1}
KINDS=${FAULT_KINDS:-etcd_pause etcd_restart etcd_slow etcd_quota cut_etcd cut_all agent_stop agent_pause_ttl agent_kill agent_restart rank_stop two_preemptions preempt_failure clock_step clock_skew etcd_outage}
SLOT=${FAULT_SLOT:-0}
case $SLOT in [0-9]) ;; *) fail "FAULT_SLOT is 0..9, not '$SLOT'"; finish ;; esac
NET=10.79.$((4 + 10 * SLOT))
CLN=dfif; [ "$SLOT" = 0 ] || CLN=dff$SLOT
# the agents' pins on a bpffs of the test's own: `ip netns exec` mounts a new /sys, where
# /sys/fs/bpf is not, and an agent killed and started again must find its pinned maps (and its
# ranks' slots) to go on with them (I6)
mkdir -p "$T/bpffs" && mount -t bpf bpf "$T/bpffs" || { fail "cannot mount a bpffs"; finish; }
PIN=$T/bpffs/p
cluster_up $CLN $NET $((24797 + 100 * SLOT)) || finish
trap 'cluster_down; rm -rf "$PIN"; umount "$T/bpffs" 2>/dev/null; cleanup' EXIT
ETCD_EP=$EP
EPORT=$((24797 + 100 * SLOT))
PPORT=$((24799 + 100 * SLOT))
# etcd as cluster_up started it, with a quota: start it again after a kill
etcd_start() {
	etcd --name "$CLN" --data-dir "$T/etcd" --listen-client-urls "$ETCD_EP" --advertise-client-urls "$ETCD_EP" \
		--listen-peer-urls "http://127.0.0.1:$((EPORT + 10))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$((EPORT + 10))" \
		--initial-cluster "$CLN=http://127.0.0.1:$((EPORT + 10))" \
		--quota-backend-bytes $((48 * 1024 * 1024)) >>"$T/etcd.log" 2>&1 &
	ETCD=$!
	wait_until 20 curl -sf "$ETCD_EP/version" -o /dev/null || fail "etcd did not start again: $(tail -3 "$T/etcd.log")"
}
kill -9 "$ETCD"; wait "$ETCD" 2>/dev/null
etcd_start
ec() { ETCDCTL_API=3 etcdctl --endpoints "$ETCD_EP" --command-timeout=5s "$@"; }
# the delaying proxy: every agent talks to etcd through it
echo 0 >"$T/delay_ms"
/usr/bin/python3 "$ROOT/tests/workloads/delayproxy.py" "$NET.254" $PPORT "$NET.254" $EPORT "$T/delay_ms" \
	>"$T/proxy.log" 2>&1 &
WORKLOAD_PIDS+=($!)
wait_until 10 curl -sf "http://$NET.254:$PPORT/version" -o /dev/null || fail "the proxy did not start"
EP=http://$NET.254:$PPORT
clocks() { local i; for i in 1 2 3; do echo "$1" >"$T/clock_shift.$i"; done; } # MS: every node's
clocks 0
NODE_ENV="LD_PRELOAD=$B/workloads/clockshift.so FTBPF_CLOCK_SHIFT_FILE=$T/clock_shift.%i"
# a 5 s lease: an agent killed and started again (its BPF programs loaded again) is back well
# within it
NODE_FLAGS="--etcd-lease-ttl 5 --fence-after 6"
BASE_FLAGS=$NODE_FLAGS
# the agents again with other flags (a kind of its own: etcd_outage's fence_after)
restart_nodes() {
	local i
	[ "$NODE_FLAGS" = "$*" ] && return 0
	NODE_FLAGS="$*"
	for i in 1 2 3; do kill -TERM "${AG[$i]}"; wait "${AG[$i]}" 2>/dev/null; start_node "$i" $NODE_FLAGS; done
	wait_until 15 all_alive || fail "the mesh did not form again ($NODE_FLAGS)"
}
for i in 1 2 3; do start_node $i $NODE_FLAGS; done
wait_until 15 all_alive || fail "the mesh did not form"
# the bystander: another job (another id) on node 2, for the whole suite
mkdir -p "$T/by"
FTBPF_SOCKET=$T/n2/s.sock ip netns exec "${CLN}2" env FTBPF_JOB=bystander FTBPF_RANK=0 FTBPF_WORLD_SIZE=1 \
	"$B/examples/c_loop" --dir "$T/by" --rank 0 --step-ms 50 >/dev/null 2>&1 &
BY=$!; WORKLOAD_PIDS+=($BY)

# where each thread of process $1 waits: gdb's backtraces where gdb is there, else the
# kernel's view (wchan, the syscall, the kernel stack)
stacks_of() {
	local t
	kill -0 "$1" 2>/dev/null || { echo "process $1 is gone"; return 0; }
	if command -v gdb >/dev/null; then
		timeout 30 gdb -p "$1" -batch -ex 'thread apply all bt' 2>&1 | grep -v '^\[New LWP'
	fi
	for t in /proc/$1/task/*; do
		echo "== ${t##*/} $(cat "$t/comm") wchan=$(cat "$t/wchan") syscall=$(cut -d' ' -f1 "$t/syscall")"
		cat "$t/stack" 2>/dev/null
	done
}
rnd() { echo "$(($1 + RANDOM % ($2 - $1 + 1)))"; } # integer in [a, b]
ms() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); } # ms -> seconds for sleep
heal() {
	local i
	echo 0 >"$T/delay_ms"; clocks 0
	kill -CONT "$ETCD" 2>/dev/null
	for i in 1 2 3; do
		ip link set "veth-$CLN$i" up 2>/dev/null
		ip netns exec "$CLN$i" nft delete table inet dfi 2>/dev/null
		[ -n "${AG[$i]:-}" ] && kill -CONT "${AG[$i]}" 2>/dev/null
		[ -n "${AG[$i]:-}" ] && kill -0 "${AG[$i]}" 2>/dev/null || start_node "$i" $NODE_FLAGS || BROKEN="node $i"
	done
	kill -0 "$ETCD" 2>/dev/null || etcd_start
}
quota_fill() {
	local n=0
	head -c 1000000 /dev/urandom | base64 -w0 >"$T/junk"
	while [ $n -lt 80 ] && ec put "/junk/$n" <"$T/junk" >/dev/null 2>&1; do n=$((n + 1)); done
}
quota_clear() {
	local rev
	ec del --prefix /junk/ >/dev/null 2>&1
	rev=$(ec endpoint status -w json 2>/dev/null | jq '.[0].Status.header.revision')
	[ -n "$rev" ] && ec compact "$rev" >/dev/null 2>&1
	ec defrag >/dev/null 2>&1
	ec alarm disarm >/dev/null 2>&1
}
# inject KIND NODE: the fault, around the preemption signal to rank 0 of NODE (in the
# background: the caller waits for the launchers)
inject() {
	local kind=$1 n=$2 o=$(( $2 % 3 + 1 )) a b
	case $kind in
	etcd_pause)
		sleep "$(ms "$(rnd 0 400)")"; kill -STOP "$ETCD"; sleep "$(ms "$(rnd 300 2000)")" &
		b=$!; sleep 0.1; preempt "$n"; wait $b; kill -CONT "$ETCD" ;;
	etcd_restart)
		preempt "$n"; sleep "$(ms "$(rnd 0 300)")"; kill -9 "$ETCD"; wait "$ETCD" 2>/dev/null
		sleep "$(ms "$(rnd 300 2500)")"; etcd_start ;;
	etcd_slow)
		echo "$(rnd 200 900)" >"$T/delay_ms"; sleep "$(ms "$(rnd 0 300)")"; preempt "$n"
		sleep 3; echo 0 >"$T/delay_ms" ;;
	etcd_quota)
		quota_fill; preempt "$n"; sleep "$(ms "$(rnd 500 2500)")"; quota_clear ;;
	cut_etcd)
		ip netns exec "$CLN$o" nft add table inet dfi
		ip netns exec "$CLN$o" nft add chain inet dfi out '{ type filter hook output priority 0; }'
		sleep "$(ms "$(rnd 0 300)")"
		ip netns exec "$CLN$o" nft add rule inet dfi out ip daddr "$NET.254" tcp dport $PPORT drop
		preempt "$n"; sleep "$(ms "$(rnd 500 5000)")"; ip netns exec "$CLN$o" nft delete table inet dfi ;;
	cut_all)
		preempt "$n"; sleep "$(ms "$(rnd 0 300)")"; ip link set "veth-$CLN$o" down
		sleep "$(ms "$(rnd 500 5000)")"; ip link set "veth-$CLN$o" up ;;
	agent_stop)
		kill -STOP "${AG[$o]}"; sleep "$(ms "$(rnd 0 500)")"; preempt "$n"
		sleep "$(ms "$(rnd 200 1800)")"; kill -CONT "${AG[$o]}" ;;
	agent_pause_ttl) # the preemption on another node than the paused one (o != n)
		a=$(rnd 7500 12500); b=$(rnd 500 3000)
		kill -STOP "${AG[$o]}"; sleep "$(ms $b)"; preempt "$n"
		sleep "$(ms $((a - b)))"; kill -CONT "${AG[$o]}" ;;
	agent_kill)
		preempt "$n"; sleep "$(ms "$(rnd 0 200)")"; kill -9 "${AG[$o]}"; wait "${AG[$o]}" 2>/dev/null
		sleep "$(ms "$(rnd 100 800)")"; start_node "$o" $NODE_FLAGS ;;
	agent_restart)
		preempt "$n"; sleep "$(ms "$(rnd 0 300)")"; kill -TERM "${AG[$o]}"; wait "${AG[$o]}" 2>/dev/null
		start_node "$o" $NODE_FLAGS ;;
	rank_stop)
		preempt "$n"; sleep "$(ms "$(rnd 0 300)")"; a=$(worker "$ROUND" "$o" 1)
		kill -STOP "$a"; sleep "$(ms "$(rnd 300 2000)")"; kill -CONT "$a" ;;
	two_preemptions)
		preempt "$n"; sleep 0.01; preempt "$o" 1 ;;
	preempt_failure)
		a=$(worker "$ROUND" "$o" 1); b=$(rnd 0 50)
		if [ $((RANDOM % 2)) = 0 ]; then preempt "$n"; sleep "$(ms $b)"; kill -9 "$a"
		else kill -9 "$a"; sleep "$(ms $b)"; preempt "$n"; fi ;;
	etcd_outage)
		a=$(rnd 10000 12000); b=$(rnd 500 $((a - 2000)))
		kill -STOP "$ETCD"; sleep "$(ms $b)"; preempt "$n"; sleep "$(ms $((a - b)))"; kill -CONT "$ETCD" ;;
	clock_step)
		a=$(rnd 5 120); [ $((RANDOM % 2)) = 0 ] && a=-$a
		sleep "$(ms "$(rnd 0 500)")"; clocks $((a * 1000)); preempt "$n" ;;
	clock_skew) # each node's own step, the preemption before or after them
		b=$((RANDOM % 2)); if [ $b = 0 ]; then preempt "$n"; fi
		for a in 1 2 3; do
			sleep "$(ms "$(rnd 0 300)")"
			echo $(((RANDOM * 32768 + RANDOM) % 240001 - 120000)) >"$T/clock_shift.$a"
		done
		if [ $b = 1 ]; then preempt "$n"; fi ;;
	esac
}
# restarted NODE: its launcher started the ranks again (pids.1) and both logged a second START
restarted() {
	local r
	[ -s "$R/n$1/pids.1" ] || return 1
	for r in 0 1; do [ "$(grep -c START "$R/n$1/log.$r" 2>/dev/null)" -ge 2 ] || return 1; done
}
preempt() { # NODE [RANK]: a preemption signal to that rank, written down for the check
	kill -TERM "$(worker "$ROUND" "$1" "${2:-0}")" 2>/dev/null && echo "$1 $(date +%s.%N)" >>"$T/r$ROUND/preempted"
}

cat >"$T/check.py" <<'PY'
# The invariants after one run: python3 check.py DIR RUN KIND T0 (T0: the run's start, epoch s)
import glob, json, os, re, sys
d, run, kind, t0 = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
T = os.path.dirname(d)
bad = []
dec = {}
runs = {}  # the run each node holds the job's latest decisions in
for i in (1, 2, 3):
    try:
        alld = [x for x in json.load(open("%s/dec.%d" % (d, i)))["decisions"] if x.get("job") == "cjob"]
        dec[i] = [x for x in alld if x.get("run") == run]
        runs[i] = max([x.get("run", 0) for x in alld], default=0)
    except Exception as e:
        dec[i] = None
        bad.append("agree: node %d gave no decisions (%s)" % (i, e))
    try:  # and the run it put the launch in, as its status said right after the start
        r = int(open("%s/run.%d" % (d, i)).read())
        if r != run:
            bad.append("run: node %d put the launch in run %d, node 1 in run %d" % (i, r, run))
    except (OSError, ValueError):
        bad.append("run: node %d said no run of the job" % i)
# every host holds the job in one run: the one its launch began (node 1's, RUN)
for i, r in runs.items():
    if r != run:
        bad.append("run: node %d holds the job's decisions in run %d, node 1 in run %d" % (i, r, run))
ref = [x for x in dec.values() if x is not None]
key = lambda x: json.dumps({k: x.get(k) for k in ("kind", "generation", "checkpoint", "step", "cause", "stop", "resume_step")}, sort_keys=True)
if not ref:
    bad.append("agree: no node answered")
else:
    for i, x in dec.items():
        if x is not None and sorted(map(key, x)) != sorted(map(key, ref[0])):
            bad.append("agree: node %d holds other decisions" % i)
D = ref[0] if ref else []
gens = {x["generation"]: x for x in D if x["kind"] == "generation"}
done = {(x["generation"], x["checkpoint"]): x["step"] for x in D if x["kind"] == "checkpoint_complete"}
logs = {}
for f in glob.glob("%s/n*/log.*" % d):
    logs[f] = open(f, errors="replace").read().splitlines()
saved = {}  # (generation, step) -> the ranks (their log files) that committed that save
starts = {}
started = {}  # generation -> the ranks that started in it
for f, lines in logs.items():
    for l in lines:
        m = re.match(r"SAVED (\d+) generation (\d+)", l)
        if m:
            saved.setdefault((int(m.group(2)), int(m.group(1))), set()).add(f)
        m = re.match(r"START pid \d+ generation (\d+) from step (\d+)", l)
        if m:
            starts.setdefault(int(m.group(1)), set()).add(int(m.group(2)))
            started.setdefault(int(m.group(1)), set()).add(f)
# I2: complete only when every rank of the world (6) saved that step in that generation
for (g, n), step in done.items():
    if len(saved.get((g, step), ())) < 6:
        bad.append("I2: checkpoint %d/%d (step %d) complete, saved in generation %d by %d of 6 ranks" % (g, n, step, g, len(saved.get((g, step), ()))))
# ... and every generation (and so every rank that starts in it) resumes from a step that all 6
# ranks saved and committed in one generation of this run, or from where the run began
allsaved = {s for (g, s), f in saved.items() if len(f) >= 6}
okresume = allsaved | {-1} | {s - 1 for s in starts.get(0, ())}  # the run's own start
for g, x in gens.items():
    if x.get("stop"):
        continue
    if x["resume_step"] not in okresume:
        bad.append("I2: generation %d resumes from step %d, which not every rank saved in one generation" % (g, x["resume_step"]))
# the launchers restart the ranks once: the first generation decided (not a stop) was started
# by every launcher not left out of it (2 ranks each), from its resume step (I3 below)
first = min([g for g, x in gens.items() if g > 0 and not x.get("stop")], default=None)
if first is not None and open("%s/launchers" % d).read().strip() == "ok":
    want = 6 - 2 * len(gens[first].get("excluded") or [])
    if len(started.get(first, ())) < want:
        bad.append("restart: generation %d started on %d ranks, not %d" % (first, len(started.get(first, ())), want))
# I3: every rank of a generation starts from one step
for g, s in starts.items():
    if len(s) > 1:
        bad.append("I3: generation %d started from steps %s" % (g, sorted(s)))
    if g in gens and s != {gens[g]["resume_step"] + 1} and g > 0:
        bad.append("I3: generation %d started from %s, decided resume %d" % (g, sorted(s), gens[g]["resume_step"]))
# the events each agent logged during the run (from its log's line count at the start)
events = {}
for i in (1, 2, 3):
    ev = []
    try:
        start = int(open("%s/evstart.%d" % (d, i)).read().split()[0])
    except (OSError, ValueError, IndexError):
        start = 0
    for n, l in enumerate(open("%s/n%d/events.jsonl" % (T, i), errors="replace")):
        if n < start:
            continue
        try:
            ev.append(json.loads(l))
        except ValueError:
            pass
    events[i] = ev
# I4: nothing of generation G completes after G+1 is decided (each agent's own log)
for i in (1, 2, 3):
    top = -1
    for e in events[i]:
        if e.get("type") != "decision" or e.get("job") != "cjob" or e.get("run") != run:
            continue
        if e.get("kind") == "generation":
            top = max(top, e["generation"])
        elif e.get("kind") == "checkpoint_complete" and e["generation"] < top:
            bad.append("I4: node %d logged checkpoint_complete of generation %d after generation %d" % (i, e["generation"], top))
# I5: each preemption signal ends in a checkpoint, or an event says why not
ck_pre = [x for x in D if x["kind"] == "checkpoint_complete" and any(
    y["kind"] == "checkpoint" and y["generation"] == x["generation"] and y["checkpoint"] == x["checkpoint"]
    and y["cause"] == "preemption" for y in D)]
# an event excuses a preemption without a checkpoint only where it can be true: the store out of
# reach (decision_unavailable) in a run whose fault can cut an agent off it; a failure decided
# first (preemption_not_checkpointed, preemption_ignored) when one was
said = []
if kind in ("etcd_pause", "etcd_restart", "etcd_slow", "etcd_quota", "cut_etcd", "cut_all",
            "agent_stop", "agent_kill", "agent_restart", "etcd_outage"):
    said.append("decision_unavailable")
if any(x["cause"] != "preemption" for x in gens.values()):
    said += ["preemption_ignored", "preemption_not_checkpointed"]
if os.path.exists("%s/preempted" % d):
    for l in open("%s/preempted" % d):
        node = int(l.split()[0])
        if ck_pre:
            continue
        if any(e.get("type") in said and e.get("job") == "cjob"
               for e in events[1] + events[2] + events[3]):
            continue
        bad.append("I5: the preemption on node %d ended in no checkpoint and no event says why" % node)
# I6: a pause, a restart or an outage of etcd never loses a node
if kind in ("etcd_pause", "etcd_restart", "etcd_slow", "etcd_quota", "agent_stop", "agent_kill",
            "agent_restart", "rank_stop", "clock_step", "clock_skew", "two_preemptions",
            "etcd_outage"):
    for g, x in gens.items():
        if x["cause"] == "node_dead":
            bad.append("I6: generation %d: a node was lost (%s) in a %s run" % (g, x.get("why"), kind))
# I7: the clock step: no hold, no fence, no failure
if kind in ("clock_step", "clock_skew"):
    for i in (1, 2, 3):
        for e in events[i]:
            if e.get("type") in ("fenced", "decision_hold"):
                bad.append("I7: node %d: %s after a clock step" % (i, e["type"]))
# I6: an etcd outage for everyone (10-12 s, under fence_after) holds, never fences
if kind == "etcd_outage":
    for i in (1, 2, 3):
        for e in events[i]:
            if e.get("type") == "fenced" and e.get("job") == "cjob":
                bad.append("I6: node %d fenced its ranks in a %s run" % (i, kind))
                break
# I1: the bystander (job "bystander" on node 2) never touched
for i in (1, 2, 3):
    for e in events[i]:
        if e.get("job") == "bystander" and e.get("type") in ("action", "decision", "fenced", "decision_hold"):
            bad.append("I1: node %d: %s for the bystander job" % (i, e["type"]))
            break
# the job ends normally (its ranks see the stop file: exit 0), but where the agents decided
# otherwise: a stop (93), a node left out (its launcher stopped), or the launcher's one restart
# spent by an earlier generation (42)
stopped = any(x.get("stop") for x in gens.values())
left_out = any(x.get("excluded") for x in gens.values())
for i in (1, 2, 3):
    try:
        rc = int(open("%s/rc.%d" % (d, i)).read())
    except (OSError, ValueError):
        continue
    if rc == 0 or left_out or (rc == 93 and stopped) or (rc == 42 and len(gens) >= 2):
        continue
    bad.append("end: node %d's launcher exited %d (generations %s)" % (i, rc, sorted(gens)))
if open("%s/launchers" % d).read().strip() != "ok":
    bad.append("liveness: " + open("%s/launchers" % d).read().strip())
for b in sorted(set(bad)):
    print(b)
PY

RESULTS=$T/results; : >"$RESULTS"
ROUND=0
for kind in $KINDS; do
	v=0
	case $kind in etcd_outage) restart_nodes "$BASE_FLAGS --fence-after 30" ;; *) restart_nodes "$BASE_FLAGS" ;; esac
	for n in $(seq "$RUNS"); do
		ROUND=$((ROUND + 1)); R=$T/r$ROUND; mkdir -p "$R"
		T0=$(date +%s.%N)
		for i in 1 2 3; do wc -l <"$T/n$i/events.jsonl" >"$R/evstart.$i" 2>/dev/null || echo 0 >"$R/evstart.$i"; done
		# the launchers restart the ranks once (torchrun --max-restarts 1): a generation the
		# agents decide is started by its launchers and checked (I2, I3); the ranks end
		# normally once $R/stop exists (c_loop --stop-file)
		RUN_ARGS="--stop-file $R/stop" run $ROUND 50 1 1 2 3
		if ! wait_until 30 started $ROUND 1 2 3; then
			fail "$kind run $n: the job did not start"; heal; v=$((v + 1)); continue
		fi
		RUNNO=$(f 1 status --json | jq '[.jobs[] | select(.job=="cjob") | .run] | max')
		for i in 1 2 3; do # the run each node put the launch in
			f $i status --json | jq '[.jobs[] | select(.job=="cjob") | .run] | max' >"$R/run.$i" 2>/dev/null
		done
		sleep "$(ms "$(rnd 500 1500)")"
		inject "$kind" "$(rnd 1 3)" >>"$R/inject.log" 2>&1 # (the launchers run meanwhile)
		# each launcher ends (a stop, its node left out) or has restarted its ranks in the
		# generation the preemption (or a failure) began, and they started
		end=$((SECONDS + 60)); stuck=""
		for i in 1 2 3; do
			while kill -0 "${LA[$i]}" 2>/dev/null && ! restarted "$i" && [ $SECONDS -lt $end ]; do
				sleep 0.2
			done
			kill -0 "${LA[$i]}" 2>/dev/null && ! restarted "$i" &&
				stuck="$stuck node $i's launcher neither ended nor restarted its ranks within 60 s;"
		done
		heal
		touch "$R/stop" # the job is over: its ranks end normally
		end=$((SECONDS + 30))
		for i in 1 2 3; do
			while kill -0 "${LA[$i]}" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.2; done
			if kill -0 "${LA[$i]}" 2>/dev/null; then
				case $stuck in *"node $i's"*) ;; *) stuck="$stuck node $i's ranks did not end within 30 s of the stop file;" ;; esac
				kill -9 "${LA[$i]}" $(cat "$R/n$i/pids."* 2>/dev/null) 2>/dev/null
			fi
			wait "${LA[$i]}" 2>/dev/null; echo $? >"$R/rc.$i"
		done
		if [ -n "${BROKEN:-}" ]; then # every later run would fail for it: said once, stopped
			fail "$kind run $n: $BROKEN could not be started again (above): the suite stops here"
			v=$((v + 1)); echo "$kind $n $v" >>"$RESULTS"; break 2
		fi
		echo "${stuck:-ok}" >"$R/launchers"
		wait_until 10 all_alive >/dev/null
		sleep 1
		for i in 1 2 3; do
			f $i decisions --json >"$R/dec.$i" 2>/dev/null
			# an agent that does not answer: where each of its threads waits, for the
			# report (docs/limitations.md: an agent that stopped answering in an outage)
			[ -s "$R/dec.$i" ] || stacks_of "${AG[$i]:-0}" >"$R/n$i.stuck" 2>&1
		done
		kill -0 $BY 2>/dev/null || echo "I1: the bystander job's rank ended" >"$R/by"
		/usr/bin/python3 "$T/check.py" "$R" "$RUNNO" "$kind" "$T0" >"$R/violations" 2>&1
		cat "$R/by" >>"$R/violations" 2>/dev/null
		if [ -s "$R/violations" ]; then
			v=$((v + 1))
			fail "$kind run $n (run $RUNNO): $(tr '\n' ';' <"$R/violations")"
		fi
	done
	echo "$kind $RUNS $v" >>"$RESULTS"
	[ $v = 0 ] && pass "$kind: $RUNS runs, 0 with a violation"
done
log "fault kind / runs / runs with a violation:"
column -t "$RESULTS" | sed "s/^/[$NAME]   /"
[ -n "${FAULT_REPORT:-}" ] && cp "$RESULTS" "$FAULT_REPORT"
finish
