"""The quick tour's job: a 2-rank torch DDP training loop (gloo, CPU) in which one rank hangs.

Launch each rank as torchrun would, with MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE set.
After --hang-after seconds, rank --hang-rank gets stuck loading its next batch (a data loader
that never returns); the other rank then waits in the all-reduce forever. ftbpfd flags the job
at its soft timeout and names the stuck rank, with its Python stack (load_batch). Run by
tests/integration/ops_first_run.sh as the README shows it.

    MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=2 RANK=0 python3 ddp_hang.py &
    MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=2 RANK=1 python3 ddp_hang.py &
"""
import argparse
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def load_batch(rank, step, hang):
    if hang:
        time.sleep(1e9)  # a data loader that never returns
    return torch.randn(32, 64)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--hang-rank", type=int, default=1)
    p.add_argument("--hang-after", type=float, default=20)
    p.add_argument("--seconds", type=float, default=3600)
    a = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 8)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    start = time.monotonic()
    step = 0
    while time.monotonic() - start < a.seconds:
        hang = rank == a.hang_rank and time.monotonic() - start >= a.hang_after
        x = load_batch(rank, step, hang)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()  # the all-reduce: the other rank waits here for the stuck one
        opt.step()
        step += 1
        if step % 100 == 0 and rank == 0:
            print("step %d loss %.4f" % (step, loss.item()), flush=True)
        time.sleep(0.02)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
