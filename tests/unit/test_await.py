#!/usr/bin/python3
"""ftbpf.await_checkpoint without an agent (restart_info stood in for): a rank that saved the
agreed step waits while that request is in progress, and goes on at once when it completes, when
it failed (a save refused: issue 32), or when a newer request began (pending, or bound to
another step): a rank that waited on through a new request never acknowledged it at its next
step boundary, and every rank waited for it until the timeout."""
import os
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
os.environ["FTBPF_SOCKET"] = "/nonexistent/ftbpf-unit-test.sock"  # no agent, whatever runs here

import ftbpf  # noqa: E402


def info(state, step, action="none"):
    return {"generation": 0, "resume_step": -1, "checkpoint_step": step, "ckpt_state": state,
            "action": action, "exit_code": 42, "cause": "", "excluded": []}


class Await(unittest.TestCase):
    def run_with(self, seq, timeout=5.0):
        it = iter(seq)
        last = [seq[-1]]

        def next_info():
            try:
                last[0] = next(it)
            except StopIteration:
                pass
            return last[0]
        with mock.patch.object(ftbpf, "restart_info", side_effect=next_info) as ri, \
                mock.patch.object(ftbpf.time, "sleep"):
            r = ftbpf.await_checkpoint(timeout)
        return r, ri.call_count

    def test_waits_until_complete(self):
        r, n = self.run_with([info("requested", 12)] * 5 + [info("complete", 12, "restart")])
        self.assertEqual((r, n), ("restart", 6))
        r, n = self.run_with([info("requested", 12)] * 3 + [info("complete", 12)])
        self.assertEqual((r, n), ("none", 4))  # an operator's: keep training

    def test_failed_request_goes_on(self):
        r, n = self.run_with([info("requested", 12)] * 2 + [info("failed", 12)])
        self.assertEqual((r, n), ("none", 3))

    def test_newer_request_goes_on(self):
        # the failed request's successor began before this rank looked: pending, then bound
        r, n = self.run_with([info("requested", 12), info("pending", 12)])
        self.assertEqual((r, n), ("none", 2))
        r, n = self.run_with([info("requested", 12), info("requested", 15)])
        self.assertEqual((r, n), ("none", 2))

    def test_waits_for_the_step_it_saved(self):
        # issue 32 review: the request this rank saved (step 12) failed and a newer one was
        # bound at 15 before it looked: it must not wait for 15, which it can never reach
        with mock.patch.object(ftbpf, "_last_ticket", ftbpf.SaveTicket(12, 0, 0)):
            r, n = self.run_with([info("requested", 15)])
        self.assertEqual((r, n), ("none", 1))
        r, n = self.run_with([info("requested", 15)] * 3 + [info("complete", 15, "restart")])
        self.assertEqual((r, n), ("restart", 4))  # no ticket: the request as first seen
        with mock.patch.object(ftbpf, "_last_ticket", ftbpf.SaveTicket(12, 0, 0)):
            r, n = self.run_with([info("requested", 15)] * 3 + [info("complete", 15)])
        self.assertEqual((r, n), ("none", 1))

    def test_action_and_timeout(self):
        r, _ = self.run_with([info("requested", 12), info("requested", 12, "stop")])
        self.assertEqual(r, "stop")
        with mock.patch.object(ftbpf, "restart_info", return_value=info("requested", 12)), \
                mock.patch.object(ftbpf.time, "monotonic", side_effect=[0.0, 0.0, 0.5, 2.0]), \
                mock.patch.object(ftbpf.time, "sleep"):
            self.assertEqual(ftbpf.await_checkpoint(1.0), "none")


class WaitRestartInfo(unittest.TestCase):
    """Issue 32: a rank that starts while its agent cannot read the store is not handed
    generation 0 and no checkpoint as if decided: restart_info says decided False (the C call
    answered -EAGAIN), and wait_restart_info asks again until it is decided."""

    def test_asks_until_decided(self):
        import errno
        answers = [-errno.EAGAIN, -errno.EAGAIN, 0]

        def fake(h, ri):
            return answers.pop(0)
        fake_lib = mock.Mock()
        fake_lib.ftbpf_restart_info.side_effect = fake
        with mock.patch.object(ftbpf, "_handle_or_none", return_value=1), \
                mock.patch.object(ftbpf, "_lib", fake_lib):
            self.assertFalse(ftbpf.restart_info()["decided"])
            info = ftbpf.wait_restart_info(timeout=5)
        self.assertTrue(info["decided"])
        self.assertEqual(fake_lib.ftbpf_restart_info.call_count, 3)

    def test_timeout(self):
        import errno
        fake_lib = mock.Mock()
        fake_lib.ftbpf_restart_info.return_value = -errno.EAGAIN
        with mock.patch.object(ftbpf, "_handle_or_none", return_value=1), \
                mock.patch.object(ftbpf, "_lib", fake_lib):
            with self.assertRaises(TimeoutError):
                ftbpf.wait_restart_info(timeout=0)

    def test_no_agent_is_decided(self):
        self.assertTrue(ftbpf.restart_info()["decided"])


if __name__ == "__main__":
    r = unittest.main(exit=False, verbosity=1).result
    sys.exit(len(r.failures) + len(r.errors))
