#!/usr/bin/python3
"""ftbpf.checkpoint without an agent: the fencing token where the checkpoint lands. A stale token
is refused, a newer one accepted, resume verifies the metadata and the token, a torn write is
never committed, and a save without a ticket is refused. The DCP helper runs over a stand-in
for torch.distributed.checkpoint (Debian's torch 1.13 cannot import it on Python 3.11)."""
import errno
import json
import os
import sys
import tempfile
import types
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
os.environ["FTBPF_SOCKET"] = "/nonexistent/ftbpf-unit-test.sock"  # no agent, whatever runs here

import ftbpf  # noqa: E402
from ftbpf import checkpoint as ck  # noqa: E402

RUN1 = 1 << 32


def ticket(step, gen, run=1):
    return ftbpf.SaveTicket(step, gen, (run << 32) | gen)


class PlainFile(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        # the agent's side is tested in C (test_client_fence): here it always accepts
        self.saved = mock.patch.object(ftbpf, "saved", return_value=True)
        self.saved.start()
        self.token = mock.patch.object(ftbpf, "fence_token", return_value=0)
        self.token.start()
        mock.patch.object(ftbpf, "save_failed").start()

    def tearDown(self):
        mock.patch.stopall()
        self.tmp.cleanup()

    def path(self, step):
        return os.path.join(self.d, "ckpt.%d" % step)

    def test_commit_and_resume(self):
        meta = ck.save_file(self.path(10), b"state10", ticket(10, 2))
        self.assertEqual((meta["step"], meta["generation"], meta["token"]), (10, 2, RUN1 | 2))
        self.assertEqual(ck.newest_token(self.d), RUN1 | 2)
        data, m = ck.load_file(self.path(10), step=10)
        self.assertEqual(data, b"state10")
        self.assertEqual(m["token"], RUN1 | 2)
        with open(self.path(10) + ck.META_SUFFIX) as f:
            self.assertEqual(json.load(f)["token"], RUN1 | 2)
        # a writer function and a reader
        ck.save_file(self.path(11), lambda f: f.write(b"x" * 5), ticket(11, 2))
        n, _ = ck.load_file(self.path(11), reader=lambda f: len(f.read()))
        self.assertEqual(n, 5)
        self.assertEqual(sorted(os.listdir(self.d)),
                         sorted([".ftbpf-fence", ".ftbpf-fence.lock", "ckpt.10",
                                 "ckpt.10.ftbpf.json", "ckpt.11", "ckpt.11.ftbpf.json"]))
        ftbpf.save_failed.assert_not_called()

    def test_stale_token_refused(self):
        ck.save_file(self.path(20), b"new", ticket(20, 3))
        # a rank of generation 2 wakes up late and tries to commit: refused, nothing written,
        # and its save not reported to the agents as done
        ftbpf.saved.reset_mock()
        with self.assertRaises(ck.StaleTokenError):
            ck.save_file(self.path(15), b"old", ticket(15, 2))
        ftbpf.saved.assert_not_called()
        # ... but said failed: the agents end the request instead of waiting for it (issue 32)
        ftbpf.save_failed.assert_called_once_with(15)
        self.assertFalse(os.path.exists(self.path(15)))
        with self.assertRaises(ck.StaleTokenError):  # nor over the newer checkpoint
            ck.save_file(self.path(20), b"old", ticket(20, 2))
        self.assertEqual(ck.load_file(self.path(20))[0], b"new")
        # a later run's generation 0 is newer than any generation of the run before
        with self.assertRaises(ck.StaleTokenError):
            ck.save_file(self.path(21), b"x", ticket(21, 99, run=0))
        ck.save_file(self.path(30), b"run2", ticket(30, 0, run=2))
        self.assertEqual(ck.newest_token(self.d), 2 << 32)
        with self.assertRaises(ck.StaleTokenError):
            ck.save_file(self.path(31), b"x", ticket(31, 1000, run=1))
        self.assertEqual([f for f in os.listdir(self.d) if ".tmp." in f], [])

    def test_same_and_newer_accepted(self):
        ck.save_file(self.path(5), b"r0", ticket(5, 1))
        ck.save_file(self.path(6), b"r1", ticket(6, 1))  # another rank, the same generation
        ck.save_file(self.path(7), b"g2", ticket(7, 2))
        self.assertEqual(ck.newest_token(self.d), RUN1 | 2)

    def test_refused_by_agents_not_committed(self):
        with mock.patch.object(ftbpf, "saved", return_value=False):
            with self.assertRaises(ck.StaleTokenError):
                ck.save_file(self.path(8), b"x", ticket(8, 1))
        self.assertEqual(os.listdir(self.d), [".ftbpf-fence.lock"])  # nothing committed

    def test_fenced_off_under_the_lock_not_reported(self):
        # a newer token committed between the early check and the lock: the save is refused
        # and never reported to the agents as saved (they would count a rank that did not)
        real, calls = ck._check_fence, []

        def fence(directory, token):
            calls.append(token)
            if len(calls) == 2:
                real(directory, token + 1)  # (a newer one landed meanwhile)
                raise ck.StaleTokenError(errno.ESTALE, "a newer token was committed")
            return real(directory, token)
        ftbpf.saved.reset_mock()
        with mock.patch.object(ck, "_check_fence", side_effect=fence):
            with self.assertRaises(ck.StaleTokenError):
                ck.save_file(self.path(9), b"x", ticket(9, 1))
        self.assertEqual(len(calls), 2)
        ftbpf.saved.assert_not_called()
        self.assertFalse(os.path.exists(self.path(9)))

    def test_no_ticket_refused(self):
        with self.assertRaises(ck.StaleTokenError):
            ck.save_file(self.path(1), b"x", None)
        with self.assertRaises(ck.StaleTokenError):
            ck.save_file(self.path(1), b"x", True)  # a bare bool is no ticket
        self.assertFalse(os.path.exists(self.path(1)))

    def test_torn_write_not_committed(self):
        def crash(f):
            f.write(b"half")
            raise OSError("disk gone")
        with self.assertRaises(OSError):
            ck.save_file(self.path(3), crash, ticket(3, 1))
        self.assertEqual(os.listdir(self.d), [])
        with self.assertRaises(ck.CheckpointError):
            ck.load_file(self.path(3))
        # data renamed but the metadata never written (a crash between the renames)
        with open(self.path(4), "wb") as f:
            f.write(b"data")
        with self.assertRaises(ck.CheckpointError):
            ck.load_file(self.path(4))
        # the data changed after its commit (a torn overwrite, another writer)
        ck.save_file(self.path(5), b"good", ticket(5, 1))
        with open(self.path(5), "wb") as f:
            f.write(b"bad!")
        with self.assertRaises(ck.CheckpointError):
            ck.load_file(self.path(5))
        with open(self.path(5) + ck.META_SUFFIX, "w") as f:
            f.write("{not json")
        with self.assertRaises(ck.CheckpointError):
            ck.load_file(self.path(5))

    def test_resume_verifies(self):
        ck.save_file(self.path(9), b"s", ticket(9, 4))
        with self.assertRaises(ck.CheckpointError):
            ck.load_file(self.path(9), step=8)  # not the step to resume from
        # a process whose own token is older than the checkpoint's is of a left-behind run
        with self.assertRaises(ck.StaleTokenError):
            ck.load_file(self.path(9), max_token=RUN1 | 3)
        with mock.patch.object(ftbpf, "fence_token", return_value=RUN1 | 3):
            with self.assertRaises(ck.StaleTokenError):
                ck.load_file(self.path(9))
        with mock.patch.object(ftbpf, "fence_token", return_value=2 << 32):
            self.assertEqual(ck.load_file(self.path(9))[1]["token"], RUN1 | 4)


class SavedWithoutTicket(unittest.TestCase):
    def test_saved_needs_a_ticket_with_an_agent(self):
        with mock.patch.object(ftbpf, "_handle_or_none", return_value=object()), \
                mock.patch.object(ftbpf, "_last_ticket", None):
            with self.assertRaises(ftbpf.StaleTokenError):
                ftbpf.saved(10)
            with mock.patch.object(ftbpf, "_last_ticket", ticket(9, 1)):
                with self.assertRaises(ftbpf.StaleTokenError):
                    ftbpf.saved(10)  # the last ticket is of another step

    def test_ticket_repr(self):
        self.assertIn("token=%d" % (RUN1 | 2), repr(ticket(1, 2)))


class FakeDCP(object):
    """torch.distributed.checkpoint's shape: a writer whose finish() writes .metadata (pickled)."""

    class Metadata(object):
        pass

    class FileSystemWriter(object):
        def __init__(self, path):
            self.path = path

        def write_data(self, plan, planner):
            with open(os.path.join(self.path, "data"), "w") as f:
                json.dump(plan, f)
            return types.SimpleNamespace(wait=lambda: None, value=lambda: [])

        def finish(self, metadata, results):
            import pickle
            with open(os.path.join(self.path, ".metadata"), "wb") as f:
                pickle.dump(metadata, f)

    class FileSystemReader(object):
        def __init__(self, path):
            self.path = path

        def read_metadata(self):
            import pickle
            with open(os.path.join(self.path, ".metadata"), "rb") as f:
                return pickle.load(f)

    @staticmethod
    def save_state_dict(state_dict, writer, **kw):
        writer.write_data(state_dict, None)
        writer.finish(FakeDCP.Metadata(), [])

    @staticmethod
    def load_state_dict(state_dict, reader, **kw):
        with open(os.path.join(reader.path, "data")) as f:
            state_dict.update(json.load(f))


class DCP(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        mock.patch.object(ftbpf, "saved", return_value=True).start()
        mock.patch.object(ftbpf, "fence_token", return_value=0).start()
        mock.patch.object(ftbpf, "save_failed").start()
        mod = types.ModuleType("fake_dcp")
        for k in ("FileSystemWriter", "FileSystemReader", "save_state_dict", "load_state_dict"):
            setattr(mod, k, getattr(FakeDCP, k))
        mock.patch.object(ck, "_dcp", return_value=mod).start()

    def tearDown(self):
        mock.patch.stopall()
        self.tmp.cleanup()

    def test_dcp_fenced(self):
        p = os.path.join(self.d, "step-10")
        meta = ck.save_dcp({"w": 1}, p, ticket(10, 2))
        self.assertEqual(meta["token"], RUN1 | 2)
        sd = {}
        self.assertEqual(ck.load_dcp(sd, p, step=10)["step"], 10)
        self.assertEqual(sd, {"w": 1})
        self.assertEqual(FakeDCP.FileSystemReader(p).read_metadata().ftbpf_fence["token"], RUN1 | 2)
        # a stale generation's commit: DCP's metadata (its commit) never written
        old = os.path.join(self.d, "step-8")
        with self.assertRaises(ck.StaleTokenError):
            ck.save_dcp({"w": 0}, old, ticket(8, 1))
        ftbpf.save_failed.assert_called_once_with(8)  # said failed: its request ends
        self.assertFalse(os.path.exists(os.path.join(old, ".metadata")))
        with self.assertRaises(ck.CheckpointError):
            ck.load_dcp({}, old)
        with self.assertRaises(ck.StaleTokenError):
            ck.load_dcp({}, p, max_token=RUN1 | 1)
        # the agents refuse this rank's save: reported after its data, DCP never commits
        refused = os.path.join(self.d, "step-12")
        with mock.patch.object(ftbpf, "saved", return_value=False) as saved:
            with self.assertRaises(ck.StaleTokenError):
                ck.save_dcp({"w": 2}, refused, ticket(12, 2))
            saved.assert_called_once()
        self.assertTrue(os.path.exists(os.path.join(refused, "data")))
        self.assertFalse(os.path.exists(os.path.join(refused, ".metadata")))


if __name__ == "__main__":
    r = unittest.main(exit=False, verbosity=1).result
    sys.exit(len(r.failures) + len(r.errors))
