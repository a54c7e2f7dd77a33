"""Plays systemd's part for a service's file descriptor store, as sd_notify(3) describes it.

    fdstore.py DIR -- COMMAND...
Runs COMMAND with NOTIFY_SOCKET=DIR/notify; keeps every fd it stores (FDSTORE=1, FDNAME=...;
FDSTOREREMOVE=1 drops that name) and starts COMMAND again with them (LISTEN_FDS,
LISTEN_FDNAMES, LISTEN_PID, fds from 3) when DIR/restart appears (SIGTERM first, as
`systemctl restart`) or when COMMAND dies (Restart=on-failure). DIR/stop ends it. Writes
DIR/pid (COMMAND's pid) and DIR/log (what was stored and passed).
"""
import array
import os
import signal
import socket
import sys
import time

d = sys.argv[1]
cmd = sys.argv[sys.argv.index("--") + 1:]
store = {}  # name -> fd
path = os.path.join(d, "notify")
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
s.settimeout(0.1)
log = open(os.path.join(d, "log"), "a", buffering=1)


def start():
    names = list(store)
    pid = os.fork()
    if pid == 0:
        fds = [store[n] for n in names]
        tmp = [os.dup(f) for f in fds]
        for i, f in enumerate(tmp):
            os.dup2(f, 3 + i)  # dup2 clears close-on-exec
        env = dict(os.environ, NOTIFY_SOCKET=path)
        if names:
            env.update(LISTEN_FDS=str(len(names)), LISTEN_FDNAMES=":".join(names),
                       LISTEN_PID=str(os.getpid()))
        os.execvpe(cmd[0], cmd, env)
    log.write("started %d with %s\n" % (pid, ",".join(names) or "none"))
    with open(os.path.join(d, "pid"), "w") as f:
        f.write("%d\n" % pid)
    return pid


pid = start()
while True:
    try:
        msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(16 * 4))
        fds = array.array("i")
        for lvl, typ, data in anc:
            if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - (len(data) % fds.itemsize)])
        kv = dict(l.split("=", 1) for l in msg.decode().split("\n") if "=" in l)
        name = kv.get("FDNAME", "stored")
        if kv.get("FDSTOREREMOVE") == "1" and name in store:
            os.close(store.pop(name))
            log.write("removed %s\n" % name)
        if kv.get("FDSTORE") == "1" and fds:
            if name in store:
                os.close(store[name])
            store[name] = fds[0]
            log.write("stored %s\n" % name)
    except socket.timeout:
        pass
    if os.path.exists(os.path.join(d, "stop")):
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
        sys.exit(0)
    if os.path.exists(os.path.join(d, "restart")):
        os.unlink(os.path.join(d, "restart"))
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
        log.write("stopped %d\n" % pid)
        time.sleep(2)  # an upgrade's gap: the store holds the fds meanwhile
        pid = start()
    elif os.waitpid(pid, os.WNOHANG)[0] == pid:
        log.write("died %d\n" % pid)
        time.sleep(1)
        pid = start()
