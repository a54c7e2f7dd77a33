"""A real torch DDP job over gloo (Debian's python3-torch), for the integration tests.

Launched once per rank with MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE set (as torchrun
would). Trains a small model for --seconds. Faults and phases, each optional:
  --fault sleep|spin --fault-rank R --fault-after S   rank R sleeps (or spins) forever after S
                                                  seconds (the
                                                 others block in the all-reduce): a hang
  --slow-rank R --slow-pct P --slow-after S      from S seconds on, rank R does P% more CPU work
                                                 per step (P% of its own step time before S):
                                                 a throttled device, no syscall, just slower
  --stall-rank R --stall-ms M --stall-after S    from S seconds on, rank R is blocked M ms in a
                                                 read before each step (a data loader's stall)
  --eval-every N --eval-seconds E                every N steps, an evaluation pass of E seconds
                                                 (forward passes only, no collective), then an
                                                 all-reduce of its metric
  --save-every N --save-seconds E                every N steps, rank 0 saves a checkpoint for E
                                                 seconds (writes, fsync) while the others wait in
                                                 a barrier
  --compute-ms C                                 extra CPU work per step on every rank
Writes pid.RANK into --dir, and steps.RANK (the step count) at the end.
"""
import argparse
import os
import threading
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def spin(seconds):
    """CPU work without a syscall (the clock is the vDSO)."""
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


class StalledInput:
    """A data loader whose next batch takes ms to come: the rank blocks in read(2)."""

    def __init__(self, ms):
        self.r, self.w = os.pipe()
        self.ms = ms
        self.want = threading.Semaphore(0)
        threading.Thread(target=self._feed, daemon=True).start()

    def _feed(self):
        while True:
            self.want.acquire()
            time.sleep(self.ms / 1000.0)
            os.write(self.w, b"x" * 64)

    def next(self):
        self.want.release()
        got = b""
        while len(got) < 64:
            got += os.read(self.r, 64 - len(got))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--fault", default=None)
    p.add_argument("--fault-rank", type=int, default=-1)
    p.add_argument("--fault-after", type=float, default=5)
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--slow-pct", type=float, default=0)
    p.add_argument("--slow-after", type=float, default=0)
    p.add_argument("--slow-for", type=float, default=0)  # seconds slow; 0: to the end
    p.add_argument("--stall-rank", type=int, default=-1)
    p.add_argument("--stall-ms", type=float, default=0)
    p.add_argument("--stall-after", type=float, default=0)
    p.add_argument("--eval-every", type=int, default=0)
    p.add_argument("--eval-seconds", type=float, default=0)
    p.add_argument("--save-every", type=int, default=0)
    p.add_argument("--save-seconds", type=float, default=0)
    p.add_argument("--compute-ms", type=float, default=0)
    p.add_argument("--dir", default=".")
    a = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    with open(os.path.join(a.dir, "pid.%d" % rank), "w") as f:
        f.write("%d\n" % os.getpid())
    model = DDP(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 8)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    stalled = StalledInput(a.stall_ms) if rank == a.stall_rank and a.stall_ms > 0 else None
    start = time.monotonic()
    step = 0
    times = []  # this rank's step times before the slowdown: what P% is of
    slow_noted = stall_noted = slow_end_noted = False
    last = time.monotonic()
    while True:
        # the ranks agree on when to stop: leaving the loop on each rank's own clock lets one
        # rank enter one more all-reduce while the other is in barrier(), a real deadlock
        done = torch.tensor([1.0 if time.monotonic() - start >= a.seconds else 0.0])
        dist.all_reduce(done, op=dist.ReduceOp.MAX)
        if done.item() > 0:
            break
        now = time.monotonic()
        if a.fault and rank == a.fault_rank and now - start >= a.fault_after:
            with open(os.path.join(a.dir, "fault.ts"), "w") as f:
                f.write("%.3f\n" % time.time())
            if a.fault == "sleep":
                time.sleep(3600)
            if a.fault == "spin":
                while True:
                    pass
        if stalled and now - start >= a.stall_after:
            if not stall_noted:
                stall_noted = True
                with open(os.path.join(a.dir, "stall.ts"), "w") as f:
                    f.write("%.3f\n" % time.time())
            stalled.next()
        step_start = time.monotonic()
        x = torch.randn(32, 64)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if a.compute_ms:
            spin(a.compute_ms / 1000.0)
        slow_over = a.slow_for > 0 and now - start >= a.slow_after + a.slow_for
        if rank == a.slow_rank and slow_noted and slow_over and not slow_end_noted:
            slow_end_noted = True
            with open(os.path.join(a.dir, "slow_end.ts"), "w") as f:
                f.write("%.3f\n" % time.time())
        if rank == a.slow_rank and a.slow_pct > 0 and now - start >= a.slow_after and times \
                and not slow_over:
            if not slow_noted:
                slow_noted = True
                with open(os.path.join(a.dir, "slow.ts"), "w") as f:
                    f.write("%.3f\n" % time.time())
            base = sorted(times)[len(times) // 2]
            spin(base * a.slow_pct / 100.0)
        step += 1
        time.sleep(0.01)
        if a.eval_every and step % a.eval_every == 0:
            t0 = time.monotonic()
            with torch.no_grad():
                while time.monotonic() - t0 < a.eval_seconds:
                    model.module(torch.randn(256, 64)).sum()
            m = torch.tensor([1.0])
            dist.all_reduce(m)
        if a.save_every and step % a.save_every == 0:
            if rank == 0:
                t0 = time.monotonic()
                with open(os.path.join(a.dir, "ckpt.pt"), "wb") as f:
                    while time.monotonic() - t0 < a.save_seconds:
                        torch.save(model.state_dict(), f)
                        f.flush()
                        os.fsync(f.fileno())
                        time.sleep(0.05)  # slow storage
            dist.barrier()
        t = time.monotonic()
        if rank == a.slow_rank and not slow_noted and t - start >= 3:
            times.append(t - last)  # the whole step, its wait for the others included
            times = times[-200:]
        last = t
    dist.barrier()
    with open(os.path.join(a.dir, "steps.%d" % rank), "w") as f:
        f.write("%d\n" % step)
    dist.destroy_process_group()
    print("rank %d done after %d steps" % (rank, step))


if __name__ == "__main__":
    main()
