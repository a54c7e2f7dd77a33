#!/bin/bash
# Config file and flags: file:line errors, range checks, flags override the file, --help lists
# every option.
. "$(dirname "$0")/lib.sh"
printf 'soft_timeout = 10\n# comment\n\nhard_timeout = 5x\n' >"$T/bad1.conf"
"$B/ftbpfd" --config "$T/bad1.conf" --print-config >"$T/o" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "bad1.conf:4: hard_timeout: '5x' is not a number" "$T/o" && pass "file:line error for a bad number" || fail "bad number: $rc $(cat "$T/o")"
printf 'soft_timeout = 0.01\n' >"$T/bad2.conf"
"$B/ftbpfd" --config "$T/bad2.conf" --print-config >"$T/o" 2>&1
grep -q "bad2.conf:1: soft_timeout: 0.01 is out of range" "$T/o" && pass "range check" || fail "range: $(cat "$T/o")"
printf 'no_such_key = 1\n' >"$T/bad3.conf"
"$B/ftbpfd" --config "$T/bad3.conf" --print-config >"$T/o" 2>&1
grep -q "bad3.conf:1: unknown key 'no_such_key'" "$T/o" && pass "unknown key" || fail "unknown key: $(cat "$T/o")"
printf 'action = explode\n' >"$T/bad4.conf"
"$B/ftbpfd" --config "$T/bad4.conf" --print-config >"$T/o" 2>&1
grep -q "bad4.conf:1: action: 'explode' is not one of" "$T/o" && pass "enum check" || fail "enum: $(cat "$T/o")"
printf 'soft_timeout = 100\nhard_timeout = 50\n' >"$T/bad5.conf"
"$B/ftbpfd" --config "$T/bad5.conf" --print-config >"$T/o" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "shorter than soft_timeout" "$T/o" && pass "hard < soft refused" || fail "hard<soft: $(cat "$T/o")"
"$B/ftbpfd" --config "$T/missing.conf" >"$T/o" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "No such file" "$T/o" && pass "missing explicit config is an error" || fail "missing config: $rc"
printf 'soft_timeout = 12\nhard_timeout = 700\naction = kill\nsoft_signal = USR1\n' >"$T/good.conf"
"$B/ftbpfd" --config "$T/good.conf" --hard-timeout 800 --print-config >"$T/o" 2>&1
grep -q '^soft_timeout = 12$' "$T/o" && grep -q '^hard_timeout = 800$' "$T/o" && grep -q '^action = kill$' "$T/o" &&
	grep -q '^soft_signal = USR1$' "$T/o" && pass "file values, flags override" || fail "override: $(cat "$T/o")"
FTBPF_SOCKET=/tmp/x.sock "$B/ftbpfd" --print-config | grep -q '^socket = /tmp/x.sock$' && pass "FTBPF_SOCKET honoured" || fail "FTBPF_SOCKET"
"$B/ftbpfd" --soft-timeout abc >"$T/o" 2>&1; [ $? -eq 2 ] && grep -q "soft-timeout" "$T/o" && pass "bad flag value refused" || fail "bad flag"
"$B/ftbpfd" --help >"$T/help"
for f in --config --socket --soft-timeout --hard-timeout --action --state-dir --pin-dir --log-file --grace --soft-signal --scan-interval; do
	grep -q -- "$f " "$T/help" || fail "--help lacks $f"
done
pass "--help lists the options"
# the shipped example config parses
"$B/ftbpfd" --config "$ROOT/contrib/ftbpfd.conf" --print-config >/dev/null && pass "contrib/ftbpfd.conf parses" || fail "example config broken"
# a second agent on the same state dir is refused
start_agent --soft-timeout 30 --hard-timeout 60 || exit 1
"$B/ftbpfd" --socket "$T/other.sock" --state-dir "$T/state" --pin-dir "$PIN-x" --log-file "$T/x.jsonl" >"$T/o" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "in use by another ftbpfd" "$T/o" && pass "state dir lock" || fail "lock: $rc $(cat "$T/o")"
rm -rf "$PIN-x"
finish
