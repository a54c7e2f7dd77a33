#!/bin/bash
# time-limit: 120
# The test runner selects tests by whole names: a name that is not a test (a letter prefix of
# the old naming, a prefix of a real name, a typo) fails the run before anything runs; every
# test file is named by its area, so none is left out of a full run; a good name runs that test.
. "$(dirname "$0")/lib.sh"
RUN=$ROOT/tests/integration/run.sh
for bad in t_b detect_ detect_healthy_x no_such_test; do
	out=$("$RUN" "$bad" 2>&1); rc=$?
	[ $rc -eq 2 ] && grep -q "no test named '$bad'" <<<"$out" && ! grep -q "^running" <<<"$out" &&
		pass "'$bad' is refused (exit 2, nothing run)" || fail "'$bad': rc=$rc: $out"
done
out=$("$RUN" ops_config no_such_test 2>&1); rc=$?
[ $rc -eq 2 ] && ! grep -q "^running" <<<"$out" && pass "one bad name among good ones: nothing runs" || fail "mixed selection: rc=$rc: $out"
cd "$ROOT/tests/integration"
helpers="lib.sh netns.sh cluster.sh xhnet.sh run.sh"
unnamed=$(for f in *.sh; do case " $helpers " in *" $f "*) continue ;; esac
	grep -qE '^(detect|timers|ci|mesh|decide|sec|ops|gpu|top)_[a-z0-9_]+\.sh$' <<<"$f" || echo "$f"; done)
[ -z "$unnamed" ] && pass "every test file is named AREA_WHAT.sh" || fail "not selected by a full run: $unnamed"
out=$("$RUN" ops_deploy 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "running 1 tests: ops_deploy" <<<"$out" && grep -q "integration: 1 passed, 0 failed" <<<"$out" &&
	pass "a whole name runs that test and says so" || fail "ops_deploy by name: rc=$rc: $(tail -5 <<<"$out")"
finish
