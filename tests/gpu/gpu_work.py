"""Workloads for tests/gpu/run.sh, on a real NVIDIA GPU with a CUDA build of PyTorch.

  gpu_work.py loop --seconds S           matmul + torch.cuda.synchronize() every step
  gpu_work.py hang --dir D               a kernel that never finishes (torch.cuda._sleep), then
                                          synchronize; writes D/hang.ts just before
  gpu_work.py ddp --backend gloo|nccl --dir D [--fault gpu-hang|skip --fault-rank R
              --fault-after STEPS]       one rank of a 2-rank job (MASTER_ADDR/PORT, RANK,
                                          WORLD_SIZE in the environment, as torchrun sets)
  gpu_work.py mlp --steps N              a small MLP, forward/backward/SGD with a sync a step;
                                          prints the seconds it took
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
    p.add_argument("mode", choices=["loop", "hang", "ddp", "mlp"])
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--width", type=int, default=256)  # mlp: 256 x 512 x 10
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--dir", default=".")
    p.add_argument("--backend", default="gloo")
    p.add_argument("--fault", default=None)
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--fault-after", type=int, default=200)
    a = p.parse_args()
    if a.mode != "ddp":
        write(a.dir, "pid.0", "%d\n" % os.getpid())
    if a.mode == "loop":
        loop(a)
    elif a.mode == "hang":
        torch.zeros(1, device="cuda")
        hang_forever(a.dir)
    elif a.mode == "ddp":
        ddp(a)
    else:
        mlp(a)


if __name__ == "__main__":
    main()
