"""Workloads for tests/gpu/run.sh, on a real NVIDIA GPU with a CUDA build of PyTorch.

  gpu_work.py loop --seconds S           matmul + torch.cuda.synchronize() every step
  gpu_work.py hang --dir D               a kernel that never finishes (torch.cuda._sleep), then
                                          synchronize; writes D/hang.ts just before
  gpu_work.py ddp --backend gloo|nccl --dir D [--fault gpu-hang|skip --fault-rank R
              --fault-after STEPS]       one rank of a 2-rank job (MASTER_ADDR/PORT, RANK,
                                          WORLD_SIZE in the environment, as torchrun sets)
  gpu_work.py mlp --steps N              a small MLP, forward/backward/SGD with a sync a step;
                                          prints the seconds it took
  gpu_work.py train --dir D [--seconds S] [--one-gpu] [--eval-every N --eval-seconds S]
              [--slow-rank R --slow-pct P --slow-after S] [--fault gpu-hang|
              gpu-hang-before|sleep --fault-rank R --fault-after S]
                                          torch DDP over NCCL as the H200 measurements ran it
                                          (6 x 2048^2 linear layers, batch 4096, SGD, loss.item()
                                          each step: 4 bucket all-reduces a step); a rank of a
                                          torchrun job (its variables); --one-gpu: every rank on
                                          GPU 0, a NCCL_HOSTID each (NCCL's socket transport);
                                          slow: P% more GPU work a step, synchronised; faults at
                                          S seconds: a kernel that never ends (after the step's
                                          collectives, or before them), or a sleep before
                                          them. Writes D/pid.R,
                                          D/slow.ts, D/fault.ts (hang.ts for gpu-hang), D/steps.R
Every mode writes D/pid.RANK (D defaults to .).
"""
import argparse
import os
import time

import torch


def write(d, name, text):
    with open(os.path.join(d, name), "w") as f:
        f.write(text)


def hang_forever(d):
    write(d, "hang.ts", "%.3f\n" % time.time())
    torch.cuda._sleep(int(2e11))  # about two minutes of GPU cycles per call: queue many
    for _ in range(1000):
        torch.cuda._sleep(int(2e11))
    torch.cuda.synchronize()


def loop(a):
    x = torch.randn(2048, 2048, device="cuda")
    end = time.monotonic() + a.seconds
    steps = 0
    while time.monotonic() < end:
        y = x @ x
        y = y / y.norm()
        torch.cuda.synchronize()
        steps += 1
    print("loop: %d steps" % steps)


def ddp(a):
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    if a.backend == "nccl":
        torch.cuda.set_device(0)  # both ranks on one GPU: NCCL_HOSTID differs per rank
    dist.init_process_group(a.backend)
    write(a.dir, "pid.%d" % rank, "%d\n" % os.getpid())
    dev = "cuda" if a.backend == "nccl" else "cpu"
    w = torch.randn(1024, device=dev)
    loss = torch.zeros(1, device=dev)
    x = torch.randn(1024, 1024, device="cuda")
    for step in range(1000000):
        if a.fault and rank == a.fault_rank and step == a.fault_after:
            if a.fault == "gpu-hang":
                hang_forever(a.dir)
            elif a.fault == "skip":
                write(a.dir, "hang.ts", "%.3f\n" % time.time())
                time.sleep(3600)  # never reaches this step's collectives
        y = x @ x
        torch.cuda.synchronize()
        g = w.clone()
        dist.all_reduce(g)  # gradients: 1024 x float32
        dist.all_reduce(loss)  # loss: 1 x float32
        if dev == "cuda":
            torch.cuda.synchronize()
        time.sleep(0.01)


def train(a):
    import torch.distributed as dist

    rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    if a.one_gpu:
        os.environ["NCCL_HOSTID"] = "ftbpf-host%d" % local
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
        os.environ.setdefault("NCCL_IB_DISABLE", "1")
    dev = 0 if a.one_gpu else local
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl")
    write(a.dir, "pid.%d" % rank, "%d\n" % os.getpid())
    torch.manual_seed(0)
    layers = []
    for _ in range(6):
        layers += [torch.nn.Linear(2048, 2048), torch.nn.ReLU()]
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(*layers).cuda(),
                                                      device_ids=[dev])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(4096, 2048, device="cuda")
    start, step, times, noted, cycles = time.monotonic(), 0, [], False, 0
    while time.monotonic() - start < a.seconds:
        t = time.monotonic() - start
        if a.fault and rank == a.fault_rank and t >= a.fault_after:
            if a.fault == "gpu-hang":
                # after this step's collectives: its kernel never ends, it synchronises
                opt.zero_grad()
                model(x).square().mean().backward()
                hang_forever(a.dir)
            if a.fault == "gpu-hang-before":
                # before the step: the host issues the step's collectives (as every rank
                # does), its device never reaches them
                if not os.path.exists(os.path.join(a.dir, "hang.ts")):
                    write(a.dir, "hang.ts", "%.3f\n" % time.time())
                    torch.cuda._sleep(int(2e11))
            else:
                write(a.dir, "fault.ts", "%.3f\n" % time.time())
                time.sleep(3600 * 24)
        if rank == a.slow_rank and a.slow_pct and t >= a.slow_after:
            if not noted:
                noted = True
                write(a.dir, "slow.ts", "%.3f\n" % time.time())
                # GPU cycles for P% of a step: _sleep's rate measured here
                t0 = time.monotonic()
                torch.cuda._sleep(10 ** 8)
                torch.cuda.synchronize()
                rate = 10 ** 8 / max(time.monotonic() - t0, 1e-6)
                med = sorted(times)[len(times) // 2] if times else 0.085
                cycles = int(rate * med * a.slow_pct / 100)
            torch.cuda._sleep(cycles)
            torch.cuda.synchronize()
        t0 = time.monotonic()
        opt.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        loss.item()
        times = (times + [time.monotonic() - t0])[-50:]
        step += 1
        if a.eval_every and step % a.eval_every == 0:
            end = time.monotonic() + a.eval_seconds
            with torch.no_grad():
                while time.monotonic() < end:
                    model.module(x).sum().item()
    write(a.dir, "steps.%d" % rank, "%d\n" % step)
    dist.destroy_process_group()


def mlp(a):
    torch.manual_seed(0)
    w = a.width
    model = torch.nn.Sequential(torch.nn.Linear(w, 2 * w), torch.nn.ReLU(),
                                torch.nn.Linear(2 * w, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(a.batch, w, device="cuda")
    t = torch.randint(0, 10, (a.batch,), device="cuda")
    for _ in range(50):  # warm up
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), t).backward()
        opt.step()
    torch.cuda.synchronize()
    start = time.monotonic()
    for _ in range(a.steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), t).backward()
        opt.step()
        torch.cuda.synchronize()
    print("%.4f" % (time.monotonic() - start))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["loop", "hang", "ddp", "mlp", "train"])
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--width", type=int, default=256)  # mlp: 256 x 512 x 10
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--dir", default=".")
    p.add_argument("--backend", default="gloo")
    p.add_argument("--fault", default=None)
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--fault-after", type=float, default=200)
    p.add_argument("--one-gpu", action="store_true")
    p.add_argument("--eval-every", type=int, default=0)
    p.add_argument("--eval-seconds", type=float, default=0)
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--slow-pct", type=float, default=0)
    p.add_argument("--slow-after", type=float, default=0)
    a = p.parse_args()
    if a.mode == "ddp":
        a.fault_after = int(a.fault_after)
    if a.mode not in ("ddp", "train"):
        write(a.dir, "pid.0", "%d\n" % os.getpid())
    if a.mode == "loop":
        loop(a)
    elif a.mode == "hang":
        torch.zeros(1, device="cuda")
        hang_forever(a.dir)
    elif a.mode == "ddp":
        ddp(a)
    elif a.mode == "train":
        train(a)
    else:
        mlp(a)


if __name__ == "__main__":
    main()
