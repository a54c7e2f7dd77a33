"""ftbpf.checkpoint: checkpoints that honour the fencing token of the save ticket.

The agents hand every rank a SaveTicket at the agreed step (ftbpf.should_save). Its token
(run << 32 | generation) grows across the job's generations and runs. These helpers write it
into the checkpoint's metadata and keep, in the checkpoint directory, the newest token ever
committed there (.ftbpf-fence): a commit whose token is older is refused (StaleTokenError), so
a rank of a generation (or run) that the job has left behind cannot overwrite, or add to, a
newer one's checkpoint, even if it wakes up long after. Resume verifies the metadata (size,
SHA-256, step) and that the checkpoint is no newer than this process's own token.

Plain files::

    t = ftbpf.should_save(step)
    if t:
        ftbpf.checkpoint.save_file(os.path.join(d, "ckpt.%d.pt" % step), write_fn, t)
    ...
    value, meta = ftbpf.checkpoint.load_file(path, reader=torch.load)

torch.distributed.checkpoint (where the installed torch has it): save_dcp / load_dcp.

A commit is atomic: the data is written to a temporary file and fsync'd, the metadata (the
commit marker, PATH.ftbpf.json) likewise, then both are renamed in place and the directory
fsync'd. A file without its metadata, or whose metadata does not match it, was never committed
and is never loaded. The token check and the commit hold an flock on the directory's
.ftbpf-fence.lock: on a filesystem where flock is not shared between hosts, every host's own
commits are fenced and the token in the metadata still lets a reader tell the newest.
"""
import errno
import fcntl
import hashlib
import json
import os

import ftbpf
from ftbpf import FtbpfError, StaleTokenError

__all__ = ["save_file", "load_file", "save_dcp", "load_dcp", "newest_token", "CheckpointError",
           "StaleTokenError", "META_SUFFIX", "FENCE_FILE"]

META_SUFFIX = ".ftbpf.json"
FENCE_FILE = ".ftbpf-fence"
_LOCK_FILE = ".ftbpf-fence.lock"
_META_MAX = 65536


class CheckpointError(FtbpfError):
    """A checkpoint that was not committed (no metadata), or whose data does not match it."""


def _fsync_dir(d):
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(path, data):
    """data (bytes) into path through a fsync'd temporary file and a rename."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def newest_token(directory):
    """The newest fencing token committed in `directory` (0: none)."""
    try:
        with open(os.path.join(directory, FENCE_FILE), "rb") as f:
            return int(json.loads(f.read(_META_MAX))["token"])
    except FileNotFoundError:
        return 0
    except (ValueError, KeyError, TypeError) as e:
        raise CheckpointError(errno.EBADMSG, "%s: unreadable fence record (%s)"
                              % (os.path.join(directory, FENCE_FILE), e))


class _DirLock(object):
    """The directory's fence lock (flock): token checks and commits one at a time."""

    def __init__(self, directory):
        self.path = os.path.join(directory, _LOCK_FILE)
        self.fd = -1

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)  # releases the lock
        self.fd = -1
        return False


def _ticket_fields(ticket):
    if ticket is None or not hasattr(ticket, "token"):
        raise StaleTokenError(errno.ESTALE, "a checkpoint is committed only with the SaveTicket "
                              "ftbpf.should_save() gave at the agreed step (none given)")
    return int(ticket.step), int(ticket.generation), int(ticket.token)


def _check_fence(directory, token):
    newest = newest_token(directory)
    if token < newest:
        raise StaleTokenError(errno.ESTALE, "fencing token %d is older than %d, the newest "
                              "committed in %s: this save belongs to a generation the job has "
                              "left behind; not committed" % (token, newest, directory))
    return newest


def _raise_fence(directory, token, newest):
    if token > newest:
        _write_atomic(os.path.join(directory, FENCE_FILE),
                      json.dumps({"token": token}).encode())


def save_file(path, data, ticket, report=True):
    """Commit the checkpoint file `path` under the fencing token of `ticket`.

    data: bytes, or a function called with the open (binary) temporary file that writes it.
    report: tell the agents this rank saved (ftbpf.saved) once the fence holds, under the
    directory's lock, right before the commit: a save they refuse (a newer generation decided
    meanwhile, this node cut off) is not committed, and a save a newer token fenced off is not
    reported. Raises StaleTokenError
    (nothing committed, the temporary file removed) when the agents refuse it or when a newer
    token was committed in the directory, and tells the agents the save failed
    (ftbpf.save_failed: the request ends instead of waiting for it); returns the metadata
    written."""
    step, gen, token = _ticket_fields(ticket)
    path = os.path.abspath(path)
    directory = os.path.dirname(path)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        h = hashlib.sha256()
        with open(tmp, "wb") as f:
            if callable(data):
                data(f)
            else:
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
        with open(tmp, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        size = os.path.getsize(tmp)
        _check_fence(directory, token)  # early: a stale save is not even reported
        meta = {"step": step, "generation": gen, "token": token, "size": size,
                "sha256": h.hexdigest(), "file": os.path.basename(path)}
        with _DirLock(directory):
            newest = _check_fence(directory, token)
            # reported only now: a save the fence refuses above is never counted as saved
            if report and not ftbpf.saved(step, ticket):
                raise StaleTokenError(errno.ESTALE, "the agents refused the save of step %d in "
                                      "generation %d (a newer generation was decided, or this "
                                      "node is cut off): %s not committed" % (step, gen, path))
            mtmp = "%s%s.tmp.%d" % (path, META_SUFFIX, os.getpid())
            with open(mtmp, "wb") as f:
                f.write(json.dumps(meta, sort_keys=True).encode())
                f.flush()
                os.fsync(f.fileno())
            # the data first, the metadata (the commit marker) last: a crash between leaves
            # data that does not match (or has no) metadata, which is never loaded
            os.replace(tmp, path)
            os.replace(mtmp, path + META_SUFFIX)
            _raise_fence(directory, token, newest)
            _fsync_dir(directory)
        return meta
    except BaseException:
        if report:  # the agents end the request without this save instead of waiting for it
            ftbpf.save_failed(step)
        raise
    finally:
        for t in (tmp, "%s%s.tmp.%d" % (path, META_SUFFIX, os.getpid())):
            try:
                os.unlink(t)
            except FileNotFoundError:
                pass


def _read_meta(path):
    try:
        with open(path + META_SUFFIX, "rb") as f:
            meta = json.loads(f.read(_META_MAX))
        for k in ("step", "generation", "token"):
            meta[k] = int(meta[k])
    except FileNotFoundError:
        raise CheckpointError(errno.ENOENT, "%s was never committed (no %s)"
                              % (path, META_SUFFIX))
    except (ValueError, KeyError, TypeError) as e:
        raise CheckpointError(errno.EBADMSG, "%s%s: unreadable metadata (%s)"
                              % (path, META_SUFFIX, e))
    return meta


def _verify_token(path, meta, step, max_token):
    if step is not None and meta["step"] != int(step):
        raise CheckpointError(errno.EBADMSG, "%s holds step %d, not %d"
                              % (path, meta["step"], int(step)))
    if max_token is None:
        max_token = ftbpf.fence_token()
    if max_token and meta["token"] > max_token:
        raise StaleTokenError(errno.ESTALE, "%s was committed with token %d, newer than this "
                              "process's %d: this process belongs to a generation the job has "
                              "left behind" % (path, meta["token"], max_token))


def load_file(path, reader=None, step=None, max_token=None):
    """Resume from the checkpoint file `path`: verify its metadata (committed, size, SHA-256,
    `step` when given) and that its token is no newer than `max_token` (default: this
    process's own, ftbpf.fence_token(); 0 skips the check). Returns (value, metadata): value is
    reader(binary file) when a reader is given, else the bytes. CheckpointError for a file that
    was not committed or does not match; StaleTokenError for a token newer than ours."""
    path = os.path.abspath(path)
    meta = _read_meta(path)
    _verify_token(path, meta, step, max_token)
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
            size = f.tell()
    except FileNotFoundError:
        raise CheckpointError(errno.ENOENT, "%s: metadata without its data" % path)
    if size != meta.get("size") or h.hexdigest() != meta.get("sha256"):
        raise CheckpointError(errno.EBADMSG, "%s does not match its metadata (a torn or "
                              "foreign write): not loaded" % path)
    with open(path, "rb") as f:
        value = reader(f) if reader is not None else f.read()
    return value, meta


# ---- torch.distributed.checkpoint ----
def _dcp():
    """torch.distributed.checkpoint, or torch 1.13's torch.distributed._shard.checkpoint."""
    errs = []
    for name in ("torch.distributed.checkpoint", "torch.distributed._shard.checkpoint"):
        try:
            return __import__(name, fromlist=["FileSystemWriter"])
        except Exception as e:  # ImportError, or a torch whose module fails to import
            errs.append("%s: %s" % (name, e))
    raise FtbpfError(errno.ENOTSUP, "torch.distributed.checkpoint is not usable here (%s); "
                     "use save_file/load_file" % "; ".join(errs))


def _fenced_writer(dcp, path, ticket, fence_dir, report):
    step, gen, token = _ticket_fields(ticket)

    class FencedWriter(dcp.FileSystemWriter):
        """Each rank reports its save once its data is written (a refused one fails the save:
        DCP never commits it); the coordinator refuses a stale token before DCP's metadata
        (DCP's own commit) is written, and writes the token into it."""

        def write_data(self, plan, planner):
            fut = super(FencedWriter, self).write_data(plan, planner)
            if report:
                fut.wait()
                if not ftbpf.saved(step, ticket):
                    raise StaleTokenError(errno.ESTALE, "the agents refused the save of step "
                                          "%d in generation %d: %s not committed"
                                          % (step, gen, path))
            return fut

        def finish(self, metadata, results):
            with _DirLock(fence_dir):
                newest = _check_fence(fence_dir, token)
                fence = {"step": step, "generation": gen, "token": token}
                try:
                    metadata.ftbpf_fence = fence  # pickled with DCP's .metadata
                except AttributeError:
                    pass
                r = super(FencedWriter, self).finish(metadata, results)
                _write_atomic(os.path.join(path, "ftbpf" + META_SUFFIX),
                              json.dumps(fence, sort_keys=True).encode())
                _raise_fence(fence_dir, token, newest)
                _fsync_dir(path)
                return r

    return FencedWriter(path)


def save_dcp(state_dict, path, ticket, fence_dir=None, report=True, **kwargs):
    """Save `state_dict` with torch.distributed.checkpoint into the directory `path`, fenced by
    `ticket`: the token goes into DCP's metadata and into path/ftbpf.ftbpf.json, and the commit
    is refused (StaleTokenError) when a newer token was committed in fence_dir (default: the
    parent of path, where every step's checkpoint directory lives).
    report: once its data is written, each rank tells the agents it saved (ftbpf.saved); a
    save they refuse raises before DCP commits; a save that raises tells them it failed
    (ftbpf.save_failed).
    kwargs go to DCP's save_state_dict (process_group, coordinator_rank, no_dist)."""
    dcp = _dcp()
    step, gen, _ = _ticket_fields(ticket)
    path = os.path.abspath(path)
    fence_dir = os.path.abspath(fence_dir or os.path.dirname(path))
    os.makedirs(path, exist_ok=True)
    try:
        _check_fence(fence_dir, _ticket_fields(ticket)[2])  # stale: not even written
        dcp.save_state_dict(state_dict, _fenced_writer(dcp, path, ticket, fence_dir, report),
                            **kwargs)
        return _read_meta(os.path.join(path, "ftbpf"))
    except BaseException:
        if report:  # the agents end the request without this save instead of waiting for it
            ftbpf.save_failed(step)
        raise


def load_dcp(state_dict, path, step=None, max_token=None, **kwargs):
    """Load `state_dict` in place from the DCP checkpoint `path`, once its fence record
    (path/ftbpf.ftbpf.json, and the token in DCP's metadata) says it was committed at `step`
    with a token no newer than `max_token` (default: this process's own). Returns the fence
    record. kwargs go to DCP's load_state_dict."""
    dcp = _dcp()
    path = os.path.abspath(path)
    meta = _read_meta(os.path.join(path, "ftbpf"))
    _verify_token(path, meta, step, max_token)
    reader = dcp.FileSystemReader(path)
    inner = getattr(reader.read_metadata(), "ftbpf_fence", None)
    if inner is not None and int(inner.get("token", -1)) != meta["token"]:
        raise CheckpointError(errno.EBADMSG, "%s: DCP's metadata has token %s, its fence record "
                              "%d" % (path, inner.get("token"), meta["token"]))
    dcp.load_state_dict(state_dict, reader, **kwargs)
    return meta
