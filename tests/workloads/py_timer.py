"""Python users of ftbpf for the timer tests.
    py_timer.py expires-blocked | expires-release | torch-syscalls | torch-release |
                once-then-idle SECONDS
"""
import os
import sys
import time

import ftbpf

mode = sys.argv[1]
if mode == "expires-blocked":
    with ftbpf.expires(after=0.3):
        print("armed", flush=True)
        time.sleep(10)
elif mode == "once-then-idle":
    # a script that used a countdown timer once, then idles (no rank, no job)
    with ftbpf.expires(after=5):
        pass
    print("idle", flush=True)
    time.sleep(float(sys.argv[2]))
    sys.exit(0)
elif mode == "expires-release":
    for _ in range(200):
        with ftbpf.expires(after=0.2):
            ftbpf.step(1)
    time.sleep(0.5)
    print("survived", flush=True)
    sys.exit(0)
elif mode in ("torch-syscalls", "torch-release"):
    from torch.distributed.elastic.timer import configure, expires
    configure(ftbpf.TimerClient())
    if mode == "torch-release":
        for _ in range(200):
            with expires(after=0.2):
                pass
        time.sleep(0.5)
        print("survived", flush=True)
        sys.exit(0)
    with expires(after=0.3):
        print("armed", flush=True)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            os.getppid()
print("NOT SIGNALLED", flush=True)
sys.exit(5)
