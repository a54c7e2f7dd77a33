"""An mpi4py job for the cross-host tests: every rank all-reduces a number in a loop (Open MPI's
TCP transport between hosts); rank --fault-rank sleeps forever after --fault-after seconds
(--fault-kind spin: computes forever, no system call), which leaves the others waiting in the
all-reduce. Writes DIR/pid.RANK and DIR/fault.ts."""
import argparse
import os
import time

from mpi4py import MPI


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--fault-rank", type=int, default=-1)
    p.add_argument("--fault-after", type=float, default=5)
    p.add_argument("--fault-kind", choices=["sleep", "spin"], default="sleep")
    p.add_argument("--dir", default=".")
    a = p.parse_args()
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    with open(os.path.join(a.dir, "pid.%d" % rank), "w") as f:
        f.write("%d\n" % os.getpid())
    start = time.monotonic()
    while True:
        done = comm.allreduce(1 if time.monotonic() - start >= a.seconds else 0, op=MPI.MAX)
        if done:
            break
        if rank == a.fault_rank and time.monotonic() - start >= a.fault_after:
            with open(os.path.join(a.dir, "fault.ts"), "w") as f:
                f.write("%.3f\n" % time.time())
            if a.fault_kind == "spin":
                x = 0
                while True:
                    x = (x * 31 + 7) % 1000003
            time.sleep(3600)
        time.sleep(0.02)


if __name__ == "__main__":
    main()
