"""A worker that uses torch.distributed.elastic's own FileTimerClient against ftbpfd's FIFO.

    torch_timer.py FIFO SIGNAL MODE [AFTER]
MODE: release (acquire, finish in time, release, exit 0), blocked (sleep past the expiry),
spin (pure-Python busy loop past the expiry), syscalls (os.getppid() loop past the expiry),
hold (acquire a long timer, then exit normally), outlive (stay in the block past the expiry,
then exit 0: with signal 0 torch's server expires the timer without a kill). Prints "started"
once the timer is armed.
"""
import os
import sys
import time

from torch.distributed.elastic.timer import FileTimerClient, configure, expires

fifo, sig, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
after = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
configure(FileTimerClient(fifo, signal=sig))
if mode == "release":
    for _ in range(20):
        with expires(after=after):
            time.sleep(0.01)
    print("released", flush=True)
    time.sleep(after + 1)
    print("survived", flush=True)
    sys.exit(0)
if mode == "outlive":
    with expires(after=after, scope="outlive"):
        print("started", flush=True)
        time.sleep(after + 2)
    print("survived", flush=True)
    sys.exit(0)
if mode == "hold":
    with expires(after=3600, scope="held"):
        print("started", flush=True)
        time.sleep(1)
        os._exit(0)
with expires(after=after, scope=mode):
    print("started", flush=True)
    end = time.monotonic() + 30
    if mode == "blocked":
        time.sleep(30)
    elif mode == "spin":
        x = 0
        while True:
            x += 1
    elif mode == "syscalls":
        while time.monotonic() < end:
            os.getppid()
print("NOT REAPED", flush=True)
sys.exit(5)
