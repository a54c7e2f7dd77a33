"""A real 2-rank torch DDP job over gloo (Debian's python3-torch), for the integration tests.

Launched once per rank with MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE set (as torchrun
would). Trains a small model for --seconds; optionally rank --fault-rank sleeps (--fault sleep)
or spins (--fault spin) forever after --fault-after seconds, which leaves the other ranks blocked
in the all-reduce.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--fault", default=None)
    p.add_argument("--fault-rank", type=int, default=-1)
    p.add_argument("--fault-after", type=float, default=5)
    p.add_argument("--dir", default=".")
    a = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    with open(os.path.join(a.dir, "pid.%d" % rank), "w") as f:
        f.write("%d\n" % os.getpid())
    model = DDP(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 8)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    start = time.monotonic()
    step = 0
    while True:
        # the ranks agree on when to stop: leaving the loop on each rank's own clock lets one
        # rank enter one more all-reduce while the other is in barrier(), a real deadlock
        done = torch.tensor([1.0 if time.monotonic() - start >= a.seconds else 0.0])
        dist.all_reduce(done, op=dist.ReduceOp.MAX)
        if done.item() > 0:
            break
        if a.fault and rank == a.fault_rank and time.monotonic() - start >= a.fault_after:
            with open(os.path.join(a.dir, "fault.ts"), "w") as f:
                f.write("%.3f\n" % time.time())
            if a.fault == "sleep":
                time.sleep(3600)
            if a.fault == "spin":
                while True:
                    pass
        x = torch.randn(32, 64)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        time.sleep(0.01)
    dist.barrier()
    dist.destroy_process_group()
    print("rank %d done after %d steps" % (rank, step))


if __name__ == "__main__":
    main()
