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
"""
import ctypes
import os
import signal as _signal
import sys
import threading
import time
from contextlib import contextmanager

__all__ = ["expires", "acquire", "release", "ping", "step", "TimerClient", "FtbpfError"]


class FtbpfError(OSError):
    pass


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
            _lib = lib
        h = ctypes.c_void_p()
        job = os.environ.get("FTBPF_JOB")
        r = _lib.ftbpf_open(None, job.encode() if job else None, -1, ctypes.byref(h))
        if r < 0:
            raise FtbpfError(-r, "ftbpf_open: " + os.strerror(-r))
        _handle, _pid = h, os.getpid()
        return _handle


def acquire(scope, after, sig=_signal.SIGKILL):
    """Arm a timer for `scope` expiring `after` seconds from now; returns its id."""
    r = _lib_call().ftbpf_timer_acquire(_h(), str(scope).encode(), float(after), int(sig))
    if r < 0:
        raise FtbpfError(-r, "ftbpf_timer_acquire: " + os.strerror(-r))
    return r


def release(timer_id):
    """Disarm a timer; releasing an expired one is a no-op."""
    r = _lib_call().ftbpf_timer_release(_h(), int(timer_id))
    if r < 0:
        raise FtbpfError(-r, "ftbpf_timer_release: " + os.strerror(-r))


def _lib_call():
    _h()
    return _lib


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
    """Record progress."""
    _lib_call().ftbpf_ping(_h())


def step(n):
    """Record the training step reached (also progress)."""
    _lib_call().ftbpf_step(_h(), int(n))


try:  # a real torch TimerClient when torch is importable
    from torch.distributed.elastic.timer.api import TimerClient as _TorchTimerClient
except Exception:  # pragma: no cover - torch is optional
    _TorchTimerClient = object


class TimerClient(_TorchTimerClient):
    """torch.distributed.elastic TimerClient backed by ftbpf:
    configure(ftbpf.TimerClient()) makes torch's own expires() use the kernel-enforced slot.
    expiration_time is wall-clock seconds, as torch passes it."""

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
