"""A launcher that behaves like torchrun's agent (elastic, one node), for the decision tests
(Debian's torchrun does not run on this Python).

    launcher.py --nproc N --dir DIR [--max-restarts K] [--job J] [--nnodes M --node-rank I]
                -- CMD ARGS...

Starts N workers of CMD (every "{rank}" in ARGS replaced) with RANK, LOCAL_RANK, WORLD_SIZE and
FTBPF_JOB/FTBPF_RANK/FTBPF_WORLD_SIZE and TORCHELASTIC_RESTART_COUNT set (with --nnodes, as torchrun on node I of M: global
ranks I*N+r, world size N*M; "{rank}" stays the local rank). When a worker fails (any exit code but 0), it stops
the others with SIGTERM (SIGKILL after 10 s) and, while restarts are left, starts them all
again, as torchrun does; a SIGTERM to the launcher is passed to the workers and ends it. Writes
DIR/rc.ROUND.RANK with each worker's exit status and DIR/pids.ROUND; exits with 42 or 93 when a
worker did, else 0 or 1.
"""
import argparse
import os
import signal
import subprocess
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nproc", type=int, required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--max-restarts", type=int, default=0)
    p.add_argument("--job", default="launched")
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--node-rank", type=int, default=0)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    workers = []

    stopping = []

    def forward(signum, frame):
        for w in workers:
            if w.poll() is None:
                w.send_signal(signum)

    def on_term(signum, frame):
        stopping.append(signum)
        forward(signum, frame)
    signal.signal(signal.SIGTERM, on_term)
    for rnd in range(a.max_restarts + 1):
        workers = []
        for r in range(a.nproc):
            g, w = str(a.node_rank * a.nproc + r), str(a.nproc * a.nnodes)
            env = dict(os.environ, RANK=g, LOCAL_RANK=str(r), WORLD_SIZE=w,
                       FTBPF_JOB=a.job, FTBPF_RANK=g, FTBPF_WORLD_SIZE=w,
                       TORCHELASTIC_RESTART_COUNT=str(rnd))
            workers.append(subprocess.Popen([c.replace("{rank}", str(r)) for c in cmd],
                                            env=env))
        with open(os.path.join(a.dir, "pids.%d" % rnd), "w") as f:
            f.write(" ".join(str(w.pid) for w in workers) + "\n")
        failed = False
        while any(w.poll() is None for w in workers):
            if any(w.poll() not in (None, 0) for w in workers):
                failed = True
                break
            time.sleep(0.05)
        if failed:  # torchrun: stop every worker, then restart them all
            forward(signal.SIGTERM, None)
            end = time.monotonic() + 10
            while time.monotonic() < end and any(w.poll() is None for w in workers):
                time.sleep(0.05)
            for w in workers:
                if w.poll() is None:
                    w.kill()
                w.wait()
        codes = [w.returncode for w in workers]
        failed = failed or any(c != 0 for c in codes)  # torchrun: any nonzero exit fails the group
        for r, c in enumerate(codes):
            with open(os.path.join(a.dir, "rc.%d.%d" % (rnd, r)), "w") as f:
                f.write("%d\n" % c)
        if 93 in codes:
            sys.exit(93)
        if not failed or stopping:
            sys.exit(42 if 42 in codes else (0 if not failed else 1))
    sys.exit(42 if 42 in codes else 1)


if __name__ == "__main__":
    main()
