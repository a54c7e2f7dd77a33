"""An Open MPI job (mpi4py) in steps: each step computes (CPU, no syscall) then all-reduces.
Launched by mpirun. Options: --seconds S, --compute-ms C (per step), --slow-rank R --slow-pct P
--slow-after A (from A seconds on, rank R computes P% longer), --fault sleep|spin|stop
--fault-rank R --fault-after A (at A seconds rank R sleeps, spins on its CPU or stops itself,
for ever), --dir D (pid.RANK, slow.ts, fault.ts: when it happened, wall clock)."""
import argparse
import os
import signal
import time

import numpy as np
from mpi4py import MPI


def spin(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--compute-ms", type=float, default=20)
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--slow-pct", type=float, default=0)
    p.add_argument("--slow-after", type=float, default=0)
    p.add_argument("--fault", default="")
    p.add_argument("--fault-rank", type=int, default=-1)
    p.add_argument("--fault-after", type=float, default=0)
    p.add_argument("--dir", default=".")
    a = p.parse_args()
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    with open(os.path.join(a.dir, "pid.%d" % rank), "w") as f:
        f.write("%d\n" % os.getpid())
    x = np.ones(4096)
    y = np.empty_like(x)
    start = time.monotonic()
    step, noted = 0, False
    while True:
        c = a.compute_ms / 1000.0
        if rank == a.slow_rank and time.monotonic() - start >= a.slow_after and a.slow_pct:
            if not noted:
                noted = True
                with open(os.path.join(a.dir, "slow.ts"), "w") as f:
                    f.write("%.3f\n" % time.time())
            c *= 1 + a.slow_pct / 100.0
        if rank == a.fault_rank and a.fault and time.monotonic() - start >= a.fault_after:
            with open(os.path.join(a.dir, "fault.ts"), "w") as f:
                f.write("%.3f\n" % time.time())
            if a.fault == "stop":
                os.kill(os.getpid(), signal.SIGSTOP)
            while True:
                if a.fault == "sleep":
                    time.sleep(3600)
                else:
                    spin(3600)
        spin(c)
        comm.Allreduce(x, y)
        step += 1
        flag = np.array([1.0 if time.monotonic() - start >= a.seconds else 0.0])
        out = np.empty_like(flag)
        comm.Allreduce(flag, out, op=MPI.MAX)
        if out[0] > 0:
            break
    print("rank %d done after %d steps" % (rank, step))


if __name__ == "__main__":
    main()
