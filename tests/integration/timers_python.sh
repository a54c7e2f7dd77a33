#!/bin/bash
# The Python binding: ftbpf.expires() (default scope file#line, like torch), ping/step, and
# ftbpf.TimerClient plugged into torch.distributed.elastic.timer so torch's own expires()
# is enforced from the kernel. Imported from the build tree.
. "$(dirname "$0")/lib.sh"
start_agent --soft-timeout 60 --hard-timeout 600 --action report || exit 1
export FTBPF_SOCKET=$SOCK PYTHONPATH=$B/python
P="/usr/bin/python3 $ROOT/tests/workloads/py_timer.py"
$P expires-blocked >"$T/a.out" 2>&1; rc=$?
[ $rc -eq 137 ] && pass "ftbpf.expires(): blocked Python process killed" || fail "expires-blocked rc=$rc $(cat "$T/a.out")"
wait_until 3 has_event timer_expired '.source=="slot" and (.scope | test("py_timer.py#[0-9]+"))' &&
	pass "default scope is file#line" || fail "scope: $(events_of timer_expired | tail -1)"
$P expires-release >"$T/b.out" 2>&1; rc=$?
[ $rc -eq 0 ] && grep -q survived "$T/b.out" && pass "expires() released in time: no signal (200 rounds)" || fail "expires-release rc=$rc $(cat "$T/b.out")"
$P torch-syscalls >"$T/c.out" 2>&1; rc=$?
[ $rc -eq 137 ] && pass "torch's expires() on ftbpf.TimerClient: killed" || fail "torch-syscalls rc=$rc $(cat "$T/c.out")"
wait_until 3 has_event timer_expired '.enforced_by=="kernel" and .comm=="python3"' &&
	pass "enforced in the kernel at syscall entry" || fail "not kernel-enforced: $(events_of timer_expired | tail -1)"
$P torch-release >"$T/d.out" 2>&1; rc=$?
[ $rc -eq 0 ] && pass "torch's expires() released in time: no signal" || fail "torch-release rc=$rc $(cat "$T/d.out")"
finish
