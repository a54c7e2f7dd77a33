"""A worker in a loop of torch's own expires() through FileTimerClient, as training loops use it.

    torch_timer_loop.py FIFO SECONDS
Loops `with expires(after=5): sleep(20 ms)` for SECONDS (every failed request is the worker's
death: torch raises BrokenPipeError when no server holds the FIFO), prints "looped N", then
overruns one timer ("final", 2 s, SIGTERM): the server kills it.
"""
import sys
import time

from torch.distributed.elastic.timer import FileTimerClient, configure, expires

fifo, seconds = sys.argv[1], float(sys.argv[2])
configure(FileTimerClient(fifo, signal=15))
n, end = 0, time.monotonic() + seconds
while time.monotonic() < end:
    with expires(after=5):
        time.sleep(0.02)
    n += 1
print("looped %d" % n, flush=True)
with expires(after=2, scope="final"):
    time.sleep(60)
print("NOT REAPED", flush=True)
sys.exit(5)
