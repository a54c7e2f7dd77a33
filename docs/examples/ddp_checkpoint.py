"""A torch DDP training loop with coordinated checkpoints (ftbpf), over gloo.

Launch each rank as torchrun would (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE set). When the
job is preempted (SIGTERM to a rank, or to the launcher which passes it on) or an operator runs
`ftbpf checkpoint JOB`, the agents agree on one step; every rank saves at that step, waits until
all have, and exits with 42 (the scheduler requeues the job). After a failure the agents
decide a new generation: the survivors exit for the restart, and the restarted ranks resume from
the last complete checkpoint. Run by tests/integration/decide_local.sh.

Each rank commits its checkpoint with ftbpf.checkpoint.save_file: the save ticket's fencing
token goes into the checkpoint's metadata (ckpt.STEP.RANK.pt.ftbpf.json), and a commit whose
token is older than the newest committed in the directory is refused (a rank of a generation
the job has left behind). Resume loads the file only if it was committed and is no newer than
this process's own token.

    python3 ddp_checkpoint.py --dir /shared/ckpt [--steps N] [--step-seconds S]
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import ftbpf
import ftbpf.checkpoint


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--steps", type=int, default=1000000)
    p.add_argument("--step-seconds", type=float, default=0.05)
    a = p.parse_args()
    torch.set_num_threads(1)
    ftbpf.install_preemption_handler()          # SIGTERM: save at the agreed step, then exit
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    log = open(os.path.join(a.dir, "log.%d" % rank), "a", buffering=1)
    model = DDP(nn.Linear(32, 32))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    info = ftbpf.wait_restart_info()            # where the job resumes, once decided
    start = info["resume_step"] + 1
    token = -1
    if info["resume_step"] >= 0:                # resume from the last agreed checkpoint
        state, meta = ftbpf.checkpoint.load_file(   # committed, intact, not from a newer run
            os.path.join(a.dir, "ckpt.%d.%d.pt" % (info["resume_step"], rank)),
            reader=torch.load, step=info["resume_step"])
        model.module.load_state_dict(state["model"])
        token = meta["token"]
    log.write("START pid %d generation %d from step %d token %d fence %d\n" %
              (os.getpid(), info["generation"], start, token, ftbpf.fence_token()))
    with open(os.path.join(a.dir, "pid.%d" % rank), "w") as f:
        f.write("%d\n" % os.getpid())
    for step in range(start, a.steps):
        loss = model(torch.randn(8, 32)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(a.step_seconds)
        ticket = ftbpf.should_save(step)       # the agreed step: every rank saves it
        if ticket:
            try:                                # write, tell the agents, commit if still ours
                ftbpf.checkpoint.save_file(
                    os.path.join(a.dir, "ckpt.%d.%d.pt" % (step, rank)),
                    lambda f: torch.save({"model": model.module.state_dict(), "step": step}, f),
                    ticket)
                log.write("SAVED %d token %d\n" % (step, ticket.token))
            except ftbpf.StaleTokenError as e:  # a newer generation was decided: not ours
                log.write("STALE %d: %s\n" % (step, e))
            if ftbpf.await_checkpoint() != "none":
                log.write("EXIT %d after step %d\n" %
                          (ftbpf.restart_info()["exit_code"], step))
                ftbpf.exit_for_restart()
        elif ftbpf.action() != "none":          # a restart the agents decided
            log.write("EXIT %d (restart decided) at step %d\n" %
                      (ftbpf.restart_info()["exit_code"], step))
            ftbpf.exit_for_restart()
    log.write("DONE\n")


if __name__ == "__main__":
    main()
