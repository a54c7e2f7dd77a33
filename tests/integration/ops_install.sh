#!/bin/bash
# time-limit: 200
# make install into a scratch DESTDIR: the binaries run from there, the Python binding is put
# where this system's python3 looks (site-packages of PREFIX) and imports from there with the
# installed libftbpf, the man pages (hand-written sections merged with the generated ones:
# FILES, EXIT STATUS, EXAMPLES in each; every config key in ftbpfd.conf(5), every CLI command
# in ftbpf(1)) render without a warning, bash completion, docs, contrib/ under share/ftbpf and
# the unit are there; make uninstall takes it all away but the config file.
. "$(dirname "$0")/lib.sh"
D=$T/root
make -s -C "$ROOT" install DESTDIR="$D" >"$T/install.log" 2>&1 || { fail "make install: $(tail -5 "$T/install.log")"; finish; }
for b in sbin/ftbpfd bin/ftbpf bin/ftbpf-ci bin/ftbpf-top; do
	"$D/usr/local/$b" --version >/dev/null 2>&1 && pass "$b runs from the install" || fail "$b --version"
done
SITE=$(/usr/bin/python3 -c 'import site; print([d for d in site.getsitepackages() if d.startswith("/usr/local/lib/")][0])')
[ -f "$D$SITE/ftbpf/__init__.py" ] && pass "the binding is in $SITE (on python3's path)" || fail "binding not in $SITE: $(find "$D" -name __init__.py)"
OUT=$(cd / && PYTHONPATH=$D$SITE LD_LIBRARY_PATH=$D/usr/local/lib FTBPF_SOCKET=$T/nope timeout 30 /usr/bin/python3 -c '
import ftbpf; ftbpf.ping(); print(ftbpf.__file__, ftbpf._lib._name)' 2>/dev/null)
echo "$OUT" | grep -q "^$D$SITE/ftbpf/__init__.py libftbpf.so.0$" && pass "import ftbpf from the install, with the installed libftbpf" || fail "import: $OUT"
MD=$D/usr/local/share/man
for m in man8/ftbpfd.8 man5/ftbpfd.conf.5 man1/ftbpf.1 man1/ftbpf-ci.1 man1/ftbpf-top.1; do
	for sec in NAME SYNOPSIS DESCRIPTION CONFIGURATION FILES "EXIT STATUS" EXAMPLES "SEE ALSO"; do
		[ "$m" = man5/ftbpfd.conf.5 ] && { [ "$sec" = "EXIT STATUS" ] || [ "$sec" = CONFIGURATION ]; } && continue
		grep -q "^\.SH $sec\$" "$MD/$m" || fail "man page $m has no $sec section"
	done
	W=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$MD/$m" 2>&1 >/dev/null)
	[ -z "$W" ] || fail "man $m: $W"
	grep -q '@[A-Z_]*' "$MD/$m" && grep -n '^@' "$MD/$m" && fail "$m: a marker left unmerged"
done
pass "five man pages with NAME, SYNOPSIS, DESCRIPTION, CONFIGURATION, FILES, EXIT STATUS, EXAMPLES, SEE ALSO; no roff warnings"
CONF=$(MANWIDTH=200 man -l "$MD/man5/ftbpfd.conf.5" 2>/dev/null)
MISSING=$("$B/ftbpf-mangen" key-names | while read -r k; do echo "$CONF" | grep -qE "^ +$k = " || echo "$k"; done)
[ -z "$MISSING" ] && pass "ftbpfd.conf(5) has every config key ($("$B/ftbpf-mangen" key-names | wc -l))" || fail "keys missing from ftbpfd.conf(5): $MISSING"
MANW=$(MANWIDTH=200 man -l "$MD/man1/ftbpf.1" 2>/dev/null)
for c in status events explain signal timers peers version checkpoint decisions; do
	echo "$MANW" | grep -qE "^ +$c( |$)" || fail "ftbpf(1) lacks the command $c"
done
echo "$MANW" | grep -q -- '--check' && pass "ftbpf(1) lists the CLI's commands (and status --check)" || fail "ftbpf.1"
MANW=$(MANWIDTH=200 man -l "$MD/man1/ftbpf-top.1" 2>/dev/null)
echo "$MANW" | grep -qE '^ +--width N$' && echo "$MANW" | grep -qE '^ +-d, --delay SECS$' &&
	pass "ftbpf-top(1)'s options from its --help, one entry each" || fail "ftbpf-top options: $(echo "$MANW" | sed -n '/^OPTIONS/,/^KEYS/p')"
grep -q '/usr/local/share/ftbpf/contrib/' "$MD/man8/ftbpfd.8" && pass "FILES names the installed paths" || fail "FILES paths"
for f in prometheus/ftbpf-alerts.yml prometheus/ftbpf-alerts.test.yml grafana/ftbpf-dashboard.json kubernetes/ftbpfd-daemonset.yaml container/Dockerfile ftbpfd.conf; do
	[ -f "$D/usr/local/share/ftbpf/contrib/$f" ] || fail "contrib/$f not installed"
done
pass "contrib/ (alert rules, dashboard, manifest, image recipe) under share/ftbpf/contrib"
bash -c ". '$D/usr/local/share/bash-completion/completions/ftbpf' && complete -p ftbpf" | grep -q _ftbpf &&
	pass "bash completion" || fail "completion"
[ -f "$D/usr/local/share/doc/ftbpf/README.md" ] && grep -q "file:///usr/local/share/doc/ftbpf/README.md" "$D/etc/systemd/system/ftbpfd.service" &&
	pass "the docs the unit's Documentation= names are installed" || fail "docs"
if command -v systemd-analyze >/dev/null; then
	sed "s|/usr/local/sbin/ftbpfd|$D/usr/local/sbin/ftbpfd|" "$D/etc/systemd/system/ftbpfd.service" >"$T/ftbpfd.service"
	systemd-analyze verify "$T/ftbpfd.service" >"$T/verify.out" 2>&1 && pass "systemd-analyze verify: the unit is valid" ||
		fail "systemd-analyze verify: $(cat "$T/verify.out")"
	# the sandboxing's score (informational: a host-wide BPF agent needs root's reach)
	EXP=$(systemd-analyze security --offline=true "$T/ftbpfd.service" 2>/dev/null | sed -n 's/.*Overall exposure level for [^:]*: //p')
	[ -n "$EXP" ] && log "systemd-analyze security: exposure $EXP"
fi
make -s -C "$ROOT" uninstall DESTDIR="$D" >>"$T/install.log" 2>&1 || fail "make uninstall"
LEFT=$(find "$D" -type f | sed "s|^$D||")
[ "$LEFT" = /etc/ftbpf/ftbpfd.conf ] && pass "make uninstall leaves only the config file" || fail "left: $LEFT"
finish
