#!/bin/bash
# time-limit: 200
# make install into a scratch DESTDIR: the binaries run from there, the Python binding is put
# where this system's python3 looks (site-packages of PREFIX) and imports from there with the
# installed libftbpf, man pages (from each tool's --help), bash completion, docs and the unit
# are there; make uninstall takes it all away but the config file.
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
for m in man8/ftbpfd.8 man1/ftbpf.1 man1/ftbpf-ci.1 man1/ftbpf-top.1; do
	grep -q '^\.TH ' "$D/usr/local/share/man/$m" && grep -q "^\.SH DESCRIPTION" "$D/usr/local/share/man/$m" || fail "man page $m"
done
grep -qF -- '\-\-check' "$D/usr/local/share/man/man1/ftbpf.1" && pass "man pages made from --help (ftbpf.1 documents status --check)" || fail "ftbpf.1"
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
