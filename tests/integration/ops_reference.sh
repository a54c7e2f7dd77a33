#!/bin/bash
# time-limit: 60
# The references cannot drift from the code: every event type the agent's code writes is in
# docs/events.md's table, every command of the control protocol's table (user/proto/ctl_proto.c)
# is in docs/protocol.md, every CLI command and config key is in the generated man pages; the
# README stays a front door (at most 200 lines, the two commands first) whose links resolve.
# (No agent: it reads the sources and the build.)
. "$(dirname "$0")/lib.sh"
cd "$ROOT" || exit 1
# event types: the literals given to the event builders (view_event, view_rank_event,
# view_job_event, view_straggler, dc_log_preemption; also in a ?: pair, also over several
# lines), a type set by hand (jstr(o, "type", ...): partgate, which views.h cannot serve without
# an include cycle) and the mesh's peer_* names (proto/swim.c)
TYPES=$( (cat user/*/*.c | tr '\n' ' ' |
	grep -oE '(view_(rank_|job_)?event|view_straggler|dc_log_preemption)\([^;]*' |
	grep -oE '"[a-z_]+"' | tr -d '"'
	grep -hoE 'jstr\(o, "type", "[a-z_]+"\)' user/agent/*.c | grep -oE '"[a-z_]+"\)' | tr -d '")'
	grep -hoE 'return "peer_[a-z_]+"' user/proto/swim.c | grep -oE 'peer_[a-z_]+') | sort -u)
N=$(echo "$TYPES" | grep -c .)
[ "$N" -ge 25 ] && pass "$N event types found in the code" || fail "only $N event types found: has the way events are built changed? update this test ($TYPES)"
MISSING=$(for t in $TYPES; do grep -qE "^\| \`$t\` \|" docs/events.md || echo "$t"; done)
[ -z "$MISSING" ] && pass "every event type is in docs/events.md" || fail "event types missing from docs/events.md: $MISSING"
DOCONLY=$(grep -oE '^\| `[a-z_]+` \|' docs/events.md | grep -oE '[a-z_]+' | while read -r t; do echo "$TYPES" | grep -qx "$t" || echo "$t"; done)
[ -z "$DOCONLY" ] && pass "and docs/events.md lists no type the code does not write" || fail "in docs/events.md, not in the code: $DOCONLY"
# commands: the protocol's table, as the agent itself knows it
CMDS=$("$B/ftbpf-mangen" command-names)
[ "$(echo "$CMDS" | grep -c .)" -ge 10 ] || fail "command table: $CMDS"
MISSING=$(for c in $CMDS; do grep -qF "\"cmd\":\"$c\"" docs/protocol.md || echo "$c"; done)
[ -z "$MISSING" ] && pass "every control command ($(echo $CMDS)) is in docs/protocol.md" || fail "commands missing from docs/protocol.md: $MISSING"
MANW=$(MANWIDTH=200 man -l "$B/man/ftbpf.1" 2>/dev/null)
MISSING=$("$B/ftbpf" --help | sed -n 's/^  \([a-z_]\+\)\( .*\)\?$/\1/p' | while read -r c; do echo "$MANW" | grep -qE "^ +$c( |$)" || echo "$c"; done)
[ -z "$MISSING" ] && pass "every command of ftbpf --help is in ftbpf(1)" || fail "missing from ftbpf(1): $MISSING"
CONF=$(MANWIDTH=200 man -l "$B/man/ftbpfd.conf.5" 2>/dev/null)
MISSING=$("$B/ftbpf-mangen" key-names | while read -r k; do echo "$CONF" | grep -qE "^ +$k = " || echo "$k"; done)
[ -z "$MISSING" ] && pass "every config key is in ftbpfd.conf(5)" || fail "keys missing from ftbpfd.conf(5): $MISSING"
# the README: a front door
L=$(wc -l <README.md)
[ "$L" -le 200 ] && pass "README.md is $L lines" || fail "README.md is $L lines (at most 200)"
[ "$(sed -n 4p README.md)" = 'sudo make run    # fresh Debian 12: installs dependencies, builds, runs ftbpfd in the foreground with defaults' ] &&
	[ "$(sed -n 5p README.md)" = 'sudo make test   # installs dependencies, builds, runs unit, fuzz and integration tests (as root)' ] &&
	pass "the two commands come first" || fail "README's first commands: $(sed -n 3,6p README.md)"
grep -q '@[A-Z]*@' README.md && fail "README has an unfilled marker"
# every relative link of the README and docs/ resolves
BAD=$(for f in README.md docs/*.md; do
	grep -oE '\]\([^)#:]+(#[^)]*)?\)' "$f" | sed -E 's/^\]\(//; s/\)$//; s/#.*//' | while read -r l; do
		[ -z "$l" ] && continue
		[ -e "$(dirname "$f")/$l" ] || echo "$f -> $l"
	done
done)
[ -z "$BAD" ] && pass "every relative link in README.md and docs/ resolves" || fail "broken links: $BAD"
# `make run` builds what running needs, in parallel: from an empty build directory (-n: said,
# not done) it links the agent and the tools, no test, workload, fuzzer or bench
RUNPLAN=$(make -n --no-print-directory BUILD="$T/b" run 2>&1)
if echo "$RUNPLAN" | grep -q -- "-o $T/b/ftbpfd " && echo "$RUNPLAN" | grep -q -- "-o $T/b/ftbpf-top " &&
	! echo "$RUNPLAN" | grep -qE "$T/b/(tests|workloads|fuzz|bench_)"; then
	pass "make run builds the agent and the tools, not the tests ($(echo "$RUNPLAN" | grep -c -- ' -o ') outputs)"
else
	fail "make run's plan: $(echo "$RUNPLAN" | grep -oE -- "-o $T/b/[^ ]+" | sort | head -20 | paste -sd' ')"
fi
echo "$RUNPLAN" | grep -qE "make.* -j[0-9]+ " && pass "make run builds in parallel" || fail "make run is not parallel: $(echo "$RUNPLAN" | grep -m1 make)"
finish
