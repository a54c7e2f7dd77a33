# Ask an agent's control socket for status every 200 ms for a while, on one connection; print
# the slowest answer in ms and how many there were. Usage: status_probe.py SOCKET SECONDS
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rb")
worst, n, end = 0.0, 0, time.time() + float(sys.argv[2])
while time.time() < end:
    t = time.monotonic()
    s.sendall(b'{"v":1,"cmd":"status"}\n')
    reply = json.loads(f.readline())
    assert reply["ok"], reply
    worst = max(worst, (time.monotonic() - t) * 1000)
    n += 1
    time.sleep(0.2)
print("%.1f %d" % (worst, n))
