"""ftbpf: Python binding of libftbpf, the client library of the ftbpf node agent.

Countdown timers enforced from the kernel, with torch.distributed.elastic semantics::

    import ftbpf
    with ftbpf.expires(after=60):          # SIGKILL if the block is not done within 60 s
        all_reduce(...)
    ftbpf.step(n); ftbpf.ping()            # progress, seen by the agent's hang detector

and a TimerClient for torch::

    from torch.distributed.elastic.timer import configure, expires
    configure(ftbpf.TimerClient())
    with expires(after=60): ...

Acquire and release are plain stores into the process's slot (a page shared with the agent
and the kernel). The library is found through $FTBPF_LIB, next to this package, in the build
tree, or as the system's libftbpf.so.0. The agent's socket is $FTBPF_SOCKET or the default.

It fails open: with no agent (or no library) every call is a no-op that says so once on
stderr, and the training goes on unwatched. `import ftbpf` does not import torch (TimerClient
is made on first use). job_status() asks the agent about this process's job.
"""
import ctypes
import errno
import json
import os
import socket as _socket
import signal as _signal
import sys
import threading
import time
from contextlib import contextmanager

__all__ = ["expires", "acquire", "release", "ping", "step", "TimerClient", "FtbpfError",
           "install_preemption_handler", "checkpoint_requested", "should_save", "saved", "save_failed",
           "SaveTicket",
           "StaleTokenError", "fence_token",
           "generation", "restart_info", "wait_restart_info", "action", "await_checkpoint",
           "exit_for_restart",
           "job_status", "agent_available"]


class FtbpfError(OSError):
    pass


class StaleTokenError(FtbpfError):
    """A save may not be committed: its fencing token is older than the newest the job (or the
    checkpoint's storage) has seen. The checkpoint is not the job's: leave it uncommitted."""


def _find_library():
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("FTBPF_LIB"),
                  os.path.join(here, "libftbpf.so"),
                  os.path.join(here, "..", "..", "build", "libftbpf.so"),
                  "libftbpf.so.0", "libftbpf.so"]
    errors = []
    for c in candidates:
        if not c:
            continue
        try:
            return ctypes.CDLL(c)
        except OSError as e:
            errors.append("%s: %s" % (c, e))
    raise FtbpfError("cannot load libftbpf: " + "; ".join(errors))


class _RestartInfo(ctypes.Structure):
    _fields_ = [("generation", ctypes.c_uint64), ("resume_step", ctypes.c_int64),
                ("ckpt_step", ctypes.c_int64), ("ckpt_state", ctypes.c_int),
                ("action", ctypes.c_int), ("exit_code", ctypes.c_int),
                ("cause", ctypes.c_char * 24), ("nexcluded", ctypes.c_int),
                ("excluded", (ctypes.c_char * 32) * 4)]


_lock = threading.Lock()
_lib = None
_handle = None
_pid = None


def _h():
    """The process's handle, opened on first use (and again in a forked child)."""
    global _lib, _handle, _pid
    if _handle is not None and _pid == os.getpid():
        return _handle
    with _lock:
        if _handle is not None and _pid == os.getpid():
            return _handle
        if _lib is None:
            lib = _find_library()
            lib.ftbpf_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                       ctypes.POINTER(ctypes.c_void_p)]
            lib.ftbpf_timer_acquire.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                                ctypes.c_double, ctypes.c_int]
            lib.ftbpf_timer_release.argtypes = [ctypes.c_void_p, ctypes.c_int]
            lib.ftbpf_ping.argtypes = [ctypes.c_void_p]
            lib.ftbpf_ping.restype = None
            lib.ftbpf_step.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
            lib.ftbpf_step.restype = None
            lib.ftbpf_checkpoint_requested.argtypes = [ctypes.c_void_p]
            lib.ftbpf_should_save.argtypes = [ctypes.c_void_p, ctypes.c_int64]
            lib.ftbpf_saved.argtypes = [ctypes.c_void_p, ctypes.c_int64]
            lib.ftbpf_should_save_gen.argtypes = [ctypes.c_void_p, ctypes.c_int64,
                                                  ctypes.POINTER(ctypes.c_uint64)]
            lib.ftbpf_saved_gen.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_uint64]
            if hasattr(lib, "ftbpf_save_failed"):  # an older library has none
                lib.ftbpf_save_failed.argtypes = [ctypes.c_void_p, ctypes.c_int64]
            lib.ftbpf_save_ticket.argtypes = [ctypes.c_void_p, ctypes.c_int64,
                                              ctypes.POINTER(ctypes.c_uint64),
                                              ctypes.POINTER(ctypes.c_uint64)]
            lib.ftbpf_fence_token.argtypes = [ctypes.c_void_p]
            lib.ftbpf_fence_token.restype = ctypes.c_uint64
            lib.ftbpf_generation.argtypes = [ctypes.c_void_p]
            lib.ftbpf_generation.restype = ctypes.c_uint64
            lib.ftbpf_action.argtypes = [ctypes.c_void_p]
            lib.ftbpf_exit_code.argtypes = [ctypes.c_void_p]
            lib.ftbpf_restart_info.argtypes = [ctypes.c_void_p, ctypes.POINTER(_RestartInfo)]
            _lib = lib
        h = ctypes.c_void_p()
        job = os.environ.get("FTBPF_JOB")
        r = _lib.ftbpf_open(None, job.encode() if job else None, -1, ctypes.byref(h))
        if r < 0:
            raise FtbpfError(-r, "ftbpf_open: " + os.strerror(-r))
        _handle, _pid = h, os.getpid()
        return _handle


NO_TIMER = -1  # the id acquire() returns when no agent runs (release() ignores it)


def acquire(scope, after, sig=_signal.SIGKILL):
    """Arm a timer for `scope` expiring `after` seconds from now; returns its id (NO_TIMER,
    and nothing is enforced, when no agent runs)."""
    h = _handle_or_none()
    if h is None:
        return NO_TIMER
    r = _lib.ftbpf_timer_acquire(h, str(scope).encode(), float(after), int(sig))
    if r < 0:
        raise FtbpfError(-r, "ftbpf_timer_acquire: " + os.strerror(-r))
    return r


def release(timer_id):
    """Disarm a timer; releasing an expired one, or NO_TIMER, is a no-op."""
    if int(timer_id) == NO_TIMER:
        return
    h = _handle_or_none()
    if h is None:
        return
    r = _lib.ftbpf_timer_release(h, int(timer_id))
    if r < 0:
        raise FtbpfError(-r, "ftbpf_timer_release: " + os.strerror(-r))


def _caller_scope(depth):
    f = sys._getframe(depth)
    return "%s#%d" % (f.f_code.co_filename, f.f_lineno)


@contextmanager
def expires(after, scope=None, sig=_signal.SIGKILL):
    """Context manager: the block must finish within `after` seconds, or the process gets
    `sig`. The default scope is the caller's file#line, as torch's expires()."""
    if scope is None:
        scope = _caller_scope(3)  # caller of the with-statement (past contextmanager)
    tid = acquire(scope, after, sig)
    try:
        yield
    finally:
        release(tid)


def ping():
    """Record progress (a no-op with no agent)."""
    h = _handle_or_none()
    if h is not None:
        _lib.ftbpf_ping(h)


def step(n):
    """Record the training step reached (also progress; a no-op with no agent)."""
    n = int(n)
    h = _handle_or_none()
    if h is not None:
        _lib.ftbpf_step(h, n)


# ---- coordinated checkpoints and restarts ----
# Every call reads the process's slot through libftbpf: no syscall on the hot path. Without an
# agent they answer "nothing requested" (and the library is looked for again every few seconds).
_no_agent_until = 0.0
_preempt_signal = None


_said_no_agent = False


def _handle_or_none():
    """The handle, or None when no agent runs (said once on stderr; tried again every 5 s)."""
    global _no_agent_until, _said_no_agent
    if _handle is not None and _pid == os.getpid():
        return _handle
    if time.monotonic() < _no_agent_until:
        return None
    try:
        return _h()
    except (FtbpfError, OSError) as e:
        _no_agent_until = time.monotonic() + 5.0
        if not _said_no_agent:
            _said_no_agent = True
            sys.stderr.write("ftbpf: no agent (%s): timers, progress and checkpoints are not "
                             "watched; training goes on\n" % e)
        return None


def agent_available():
    """True when this process is registered with a running agent."""
    return _handle_or_none() is not None


def _socket_path():
    return os.environ.get("FTBPF_SOCKET") or "/run/ftbpf/ftbpfd.sock"


def job_status(timeout=2.0):
    """What the agent says about this process and its job, as a dict:
    {"agent": False} when no agent answers; else "agent": True, "pid", "rank", "job", "state"
    (this rank's), "job_state" (ok, hung, failed, finished), "hung", "culprit" (this rank is
    one), "culprit_ranks", "why", "no_progress_s", "timers" (armed), "timer_left_s",
    "generation", "checkpoint". "job" is None when this process is not a rank."""
    try:
        with _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM) as c:
            c.settimeout(timeout)
            c.connect(_socket_path())
            c.sendall(b'{"v":1,"cmd":"status"}\n')
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = c.recv(1 << 16)
                if not chunk:
                    break
                buf += chunk
        st = json.loads(buf)
    except (OSError, ValueError):
        return {"agent": False}
    me = os.getpid()
    out = {"agent": True, "pid": me, "rank": None, "job": None, "state": None}
    for r in st.get("ranks", []):
        if r.get("pid") == me and not r.get("exited"):
            out.update(rank=r.get("rank"), job=r.get("job"), state=r.get("state"),
                       culprit=bool(r.get("culprit")), timers=r.get("timers", 0),
                       timer_left_s=r.get("timer_left_s"), no_progress_s=r.get("no_progress_s"))
    for j in st.get("jobs", []):
        if out["job"] is not None and j.get("job") == out["job"]:
            out.update(job_state=j.get("state"), hung=bool(j.get("hung")),
                       culprit_ranks=j.get("culprit_ranks", []), why=j.get("why"),
                       generation=j.get("generation"), checkpoint=j.get("checkpoint"))
    return out


def install_preemption_handler(signals=(_signal.SIGTERM,)):
    """Survive a preemption signal (SIGTERM by default) and learn of it: checkpoint_requested()
    becomes true and the agents agree on a step at which every rank saves. With no agent
    running, the signal keeps its default action (the rank ends as it would have)."""
    def on_signal(signum, frame):
        global _preempt_signal
        if _handle_or_none() is None:
            _signal.signal(signum, _signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        _preempt_signal = signum
    for s in signals:
        _signal.signal(s, on_signal)
    _handle_or_none()  # register now: the agent must know this rank before the signal


def checkpoint_requested():
    """True when a checkpoint (or an exit) was requested and not yet done, or a preemption
    signal arrived and the agents are agreeing on the step."""
    h = _handle_or_none()
    if h is None:
        return False
    return bool(_lib.ftbpf_checkpoint_requested(h)) or (
        _preempt_signal is not None and _lib.ftbpf_action(h) == 0 and
        restart_info()["ckpt_state"] != "complete")


class SaveTicket(object):
    """What should_save() returns at the agreed step (true): the step, the generation it belongs
    to, and its fencing token (run << 32 | generation: it grows across the job's runs, not only
    within one). Pass it to saved(); write the token into the checkpoint's metadata, as
    ftbpf.checkpoint does, so that the storage refuses a commit older than the newest it holds
    (docs/decisions.md)."""
    __slots__ = ("step", "generation", "token")

    def __init__(self, step, generation, token=0):
        self.step, self.generation, self.token = step, generation, token

    def __bool__(self):
        return True

    def __repr__(self):
        return "SaveTicket(step=%d, generation=%d, token=%d)" % (
            self.step, self.generation, self.token)


_last_ticket = None


def should_save(step):
    """Record that this rank reached `step` (a step boundary) and say whether to save now: a
    SaveTicket (true) only at the step the agents agreed on, once; else False. While the step is
    being agreed, the first boundary acknowledges the request and the next one waits until it is
    agreed (FTBPF_ACK_TIMEOUT seconds at most)."""
    global _last_ticket
    step = int(step)
    if step < 0:
        raise ValueError("should_save: step must be >= 0, not %d" % step)
    h = _handle_or_none()
    if h is None:
        return False
    gen = ctypes.c_uint64(0)
    if _lib.ftbpf_should_save_gen(h, step, ctypes.byref(gen)) != 1:
        return False
    token = ctypes.c_uint64(0)
    if _lib.ftbpf_save_ticket(h, step, None, ctypes.byref(token)) != 0:
        token.value = 0
    _last_ticket = SaveTicket(step, int(gen.value), int(token.value))
    return _last_ticket


def saved(step, ticket=None):
    """This rank saved its checkpoint of `step`, fenced with the ticket should_save() gave for
    it (the one passed, or else the last one handed out). True when the save counts and may be
    committed, False when a newer generation was decided meanwhile or this node is cut off (do
    not commit it). With an agent and no ticket of `step`: StaleTokenError (nothing is counted:
    a save without a ticket is never committed unfenced). With no agent: True."""
    step = int(step)
    if step < 0:
        raise ValueError("saved: step must be >= 0, not %d" % step)
    h = _handle_or_none()
    if h is None:
        return True
    if ticket is None:
        ticket = _last_ticket if _last_ticket is not None and _last_ticket.step == step else None
    if ticket is None:
        raise StaleTokenError("saved(%d): should_save() handed out no ticket for step %d; "
                              "only the agreed step may be committed" % (step, step))
    return _lib.ftbpf_saved_gen(h, step, int(ticket.generation)) == 0


def save_failed(step):
    """This rank's save of `step` failed (its storage refused the commit, an I/O error): the
    agents end the request without a checkpoint instead of waiting for this save, and a
    preemption asks for another one. saved() says it itself when it returns False, and
    ftbpf.checkpoint's helpers when they raise."""
    step = int(step)
    if step < 0:
        raise ValueError("save_failed: step must be >= 0, not %d" % step)
    h = _handle_or_none()
    if h is not None and hasattr(_lib, "ftbpf_save_failed"):
        _lib.ftbpf_save_failed(h, step)


def fence_token():
    """The fencing token of the generation this process runs in (0 with no agent): a checkpoint
    to resume from carries a token no newer than this."""
    h = _handle_or_none()
    return 0 if h is None else int(_lib.ftbpf_fence_token(h))


def generation():
    """The job's restart generation: 0 for the first run, +1 per restart the agents decided."""
    h = _handle_or_none()
    return 0 if h is None else int(_lib.ftbpf_generation(h))


_ACTIONS = {0: "none", 1: "restart", 2: "stop"}
_CK_STATES = {0: "none", 1: "requested", 2: "complete", 3: "pending", 4: "failed"}


def action():
    """What to do now: "none" (keep training), "restart" or "stop" (then exit_for_restart())."""
    h = _handle_or_none()
    return "none" if h is None else _ACTIONS.get(_lib.ftbpf_action(h), "none")


def restart_info():
    """The decisions for this rank's job: generation, resume_step (the last complete agreed
    checkpoint, -1 none), cause, excluded nodes, the checkpoint in progress, the action.
    decided: False when the agent could not say yet (it waited 10 s for a generation being
    decided, or for the job's run while it cannot read the store): the rest is then no
    decision to resume from; ask again (wait_restart_info() does)."""
    h = _handle_or_none()
    ri = _RestartInfo()
    decided = True
    if h is not None:
        decided = _lib.ftbpf_restart_info(h, ctypes.byref(ri)) != -errno.EAGAIN
    else:
        ri.resume_step = ri.ckpt_step = -1
        ri.exit_code = 42
    return {"generation": int(ri.generation), "resume_step": int(ri.resume_step),
            "checkpoint_step": int(ri.ckpt_step),
            "ckpt_state": _CK_STATES.get(ri.ckpt_state, "none"),
            "action": _ACTIONS.get(ri.action, "none"), "exit_code": int(ri.exit_code),
            "cause": ri.cause.decode(errors="replace"),
            "excluded": [ri.excluded[i].value.decode(errors="replace")
                         for i in range(min(ri.nexcluded, 4))],
            "decided": decided}


def wait_restart_info(timeout=None):
    """restart_info() once the agent has decided where this rank resumes (a rank starting while
    its agent is cut off from the store waits; the agent holds and, after fence_after, ends the
    job's ranks meanwhile). Raises TimeoutError once timeout seconds (None: no limit) have
    passed, checked between asks: each ask waits up to 10 s."""
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        info = restart_info()
        if info["decided"]:
            return info
        if end is not None and time.monotonic() > end:
            raise TimeoutError("the agent has not decided where this rank resumes")


def await_checkpoint(timeout=600.0, step=None):
    """After saving the agreed step: wait until every rank of the job saved it (on every node),
    then return action(): "restart"/"stop" (exit_for_restart() now) or "none" (keep training:
    an operator's checkpoint, or a preemption with a grace period). Every rank waits at the same
    step, so none enters a collective that another has left. Returns "none" on timeout, and at
    once when the request ended without a checkpoint (a save failed) or a newer one began: the
    rank trains on and acknowledges it at its next step. step: the step this rank saved
    (default: that of the last ticket should_save handed out)."""
    end = time.monotonic() + timeout
    if step is None and _last_ticket is not None:
        step = _last_ticket.step
    while time.monotonic() < end:
        info = restart_info()
        if step is None:
            step = info["checkpoint_step"]  # no ticket: the request as first seen
        # complete, failed, or a newer request (pending, or bound to another step): go on; a
        # rank that waited on through a new request would never acknowledge it at its next
        # step boundary, and every rank would wait for it
        if (info["action"] != "none" or info["ckpt_state"] != "requested" or
                info["checkpoint_step"] != step):
            return info["action"]
        time.sleep(0.01)
    return "none"


def exit_for_restart():
    """Exit with the status the agents decided: 42 (the job restarts) unless they decided to
    stop (93: do not requeue)."""
    h = _handle_or_none()
    sys.exit(42 if h is None else int(_lib.ftbpf_exit_code(h)))


_timer_client_class = None


def _make_timer_client_class():
    """torch's TimerClient as the base when torch is importable (imported on first use only:
    `import ftbpf` stays fast)."""
    try:
        from torch.distributed.elastic.timer.api import TimerClient as base
    except Exception:  # pragma: no cover - torch is optional
        base = object

    class TimerClient(base):
        """torch.distributed.elastic TimerClient backed by ftbpf:
        configure(ftbpf.TimerClient()) makes torch's own expires() use the kernel-enforced
        slot. expiration_time is wall-clock seconds, as torch passes it."""

        def __init__(self, sig=_signal.SIGKILL):
            self._sig = sig
            self._ids = {}
            self._mu = threading.Lock()

        def acquire(self, scope_id, expiration_time):
            tid = acquire(scope_id, max(0.0, expiration_time - time.time()), self._sig)
            with self._mu:
                old = self._ids.pop(scope_id, None)
                self._ids[scope_id] = tid
            if old is not None:
                release(old)

        def release(self, scope_id):
            with self._mu:
                tid = self._ids.pop(scope_id, None)
            if tid is not None:
                release(tid)

    return TimerClient


def __getattr__(name):
    global _timer_client_class
    if name == "TimerClient":
        if _timer_client_class is None:
            _timer_client_class = _make_timer_client_class()
        return _timer_client_class
    raise AttributeError("module 'ftbpf' has no attribute %r" % name)
