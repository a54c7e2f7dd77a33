#!/bin/bash
# make bench, decisions across nodes: three agents in network namespaces and a real etcd (the
# setup of tests/integration/decide_cluster.sh), two C ranks per node
# (docs/examples/c_loop.c, 50 ms steps, the slot looked at every millisecond).
#   preemption  SIGTERM to one rank on node 2, BENCH_DECISION_RUNS (20) runs: the time until each
#               of the six ranks sees the request in its slot (p50, p99, max), and how many runs
#               saved one step on every rank
#   crash       a rank on node 1 killed, BENCH_CRASH_RUNS (10) runs: the time until every node
#               logged the restart decision
#   node        node 3's agent and ranks killed, 3 runs: the time until nodes 1 and 2 decided
#               without it, beside the mesh's dead declaration and the etcd lease (3 s)
set -u
. "$(dirname "$0")/../tests/integration/lib.sh"
. "$(dirname "$0")/../tests/integration/cluster.sh"
RUNS=${BENCH_DECISION_RUNS:-20}
CRASHES=${BENCH_CRASH_RUNS:-10}
NODEKILLS=${BENCH_NODE_RUNS:-3}
command -v etcd >/dev/null || { echo "   etcd not installed (make deps)"; exit 1; }
cluster_up ftb 10.79.0 23891 || exit 1
for i in 1 2 3; do start_node $i --max-restarts -1; done
wait_until 20 all_alive || { echo "   the mesh did not form"; exit 1; }
now() { date +%s.%N; }

# ---- preemption ----
: >"$T/pre.txt"
for r in $(seq "$RUNS"); do
	run "p$r" 50 0 1 2 3
	wait_until 30 started "p$r" 1 2 3 || { echo "   run $r did not start"; continue; }
	sleep 1.5
	t0=$(now)
	kill -TERM "$(worker "p$r" 2 0)"
	wait_launchers 1 2 3
	nsteps=$(saved_all "p$r" | wc -l); nranks=$(saved_all "p$r" | awk '{print $1}' | head -1)
	echo "$r $t0 ${RCS[1]:-x}${RCS[2]:-x}${RCS[3]:-x} ${nsteps:-0} ${nranks:-0}" >>"$T/pre.txt"
done

# ---- crash ----
: >"$T/crash.txt"
for r in $(seq "$CRASHES"); do
	run "c$r" 50 0 1 2 3
	wait_until 30 started "c$r" 1 2 3 || { echo "   crash run $r did not start"; continue; }
	sleep 1.5
	g=$(f 1 status --json | jq '[.jobs[] | select(.job=="cjob") | .generation][0] // 0')
	t0=$(now)
	kill -KILL "$(worker "c$r" 1 1)"
	wait_launchers 1 2 3
	echo "$r $t0 $((g + 1))" >>"$T/crash.txt"
done

# ---- node killed ----
: >"$T/node.txt"
for r in $(seq "$NODEKILLS"); do
	run "n$r" 50 0 1 2 3
	wait_until 30 started "n$r" 1 2 3 || { echo "   node run $r did not start"; continue; }
	sleep 1.5
	g=$(f 1 status --json | jq '[.jobs[] | select(.job=="cjob") | .generation][0] // 0')
	t0=$(now)
	kill -9 "${AG[3]}" "${LA[3]}" $(cat "$T/rn$r/n3/pids.0" 2>/dev/null) 2>/dev/null
	wait "${AG[3]}" "${LA[3]}" 2>/dev/null; AG[3]=
	wait_until 30 bash -c "'$B/ftbpf' --socket '$T/n1/s.sock' decisions --json | jq -e '[.decisions[] | select(.kind==\"generation\" and .generation==$((g + 1)))] | length == 1' >/dev/null"
	wait_launchers 1 2
	echo "$r $t0 $((g + 1))" >>"$T/node.txt"
	start_node 3 --max-restarts -1
	wait_until 20 all_alive
done

/usr/bin/python3 - "$T" "$(node 3)" <<'PY'
import datetime, glob, json, os, sys
T, node3 = sys.argv[1], sys.argv[2]

def ts(e):
    return datetime.datetime.strptime(e["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()

def events(i):
    with open(os.path.join(T, "n%d" % i, "events.jsonl")) as f:
        for line in f:
            try:
                yield json.loads(line)
            except ValueError:
                pass

def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")

lat, same, runs = [], 0, 0
for line in open(os.path.join(T, "pre.txt")):
    r, t0, rcs, steps, ranks = line.split()
    runs += 1
    same += rcs == "424242" and steps == "1" and ranks == "6"
    for log in glob.glob(os.path.join(T, "rp%s" % r, "n*", "log.*")):
        seen = [float(l.split()[3]) for l in open(log) if l.startswith("REQUEST")]
        if seen:
            lat.append(seen[0] - float(t0))
print("   preemption (SIGTERM to one rank of a 3-node, 6-rank job), %d runs:" % runs)
print("     request seen in every rank's slot: p50 %.3f s, p99 %.3f s, max %.3f s (%d ranks); target p99 <= 1 s %s"
      % (pct(lat, .5), pct(lat, .99), max(lat or [0]), len(lat), "MET" if lat and pct(lat, .99) <= 1 else "MISSED"))
print("     one step saved by all 6 ranks and every launcher exited 42: %d/%d runs; target all %s"
      % (same, runs, "MET" if runs and same == runs else "MISSED"))

def decided(path, nodes):
    out = []
    for line in open(path):
        r, t0, g = line.split()
        t = []
        for i in nodes:
            d = [ts(e) for e in events(i) if e.get("type") == "decision" and e.get("kind") == "generation"
                 and e.get("generation") == int(g) and e.get("job") == "cjob"]
            if d:
                t.append(min(d))
        if len(t) == len(nodes):
            out.append(max(t) - float(t0))
    return out

c = decided(os.path.join(T, "crash.txt"), [1, 2, 3])
print("   rank crash (SIGKILL to a rank on node 1) -> restart decision logged on all 3 nodes, %d runs:" % len(c))
print("     p50 %.3f s, max %.3f s; target <= 1.5 s %s" % (pct(c, .5), max(c or [0]),
      "MET" if c and max(c) <= 1.5 else "MISSED"))
n = decided(os.path.join(T, "node.txt"), [1, 2])
dead = []
for line in open(os.path.join(T, "node.txt")):
    r, t0, g = line.split()
    d = [ts(e) for e in events(1) if e.get("type") == "peer_dead" and e.get("peer") == node3 and ts(e) > float(t0)]
    if d:
        dead.append(min(d) - float(t0))
print("   node killed (node 3's agent and ranks, SIGKILL) -> decision on nodes 1 and 2, %d runs:" % len(n))
print("     decision after %s s; the mesh declared it dead after %s s; its etcd lease: 3 s"
      % (" ".join("%.2f" % x for x in n), " ".join("%.2f" % x for x in dead)))
print("     target <= its lease (3 s) + 1.5 s: %s (I6: a node is lost when its lease expired, never on the mesh's word)"
      % ("MET" if n and max(n) <= 4.5 else "MISSED"))
PY
FAILS=0
finish >/dev/null
