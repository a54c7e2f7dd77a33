#!/bin/bash
# time-limit: 60
# ftbpf-ci writes its reports without following links (issue 31: run as root in a workspace
# nobody owns, --report and --junit followed nobody's symbolic links and overwrote root-only
# files). nobody plants report.json as a link to a root-only file, and out/ as a link to a
# root-only directory; root runs ftbpf-ci --timeout 1 with --report and --junit there: both
# refused with a message, the root-only files unchanged and nothing created in root's
# directory; the same run with plain paths in the workspace writes both reports.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/root" "$T/ws"
chmod 700 "$T/root"
echo "root's secret" >"$T/root/secret" && chmod 600 "$T/root/secret"
echo "root's junit" >"$T/root/j.xml" && chmod 600 "$T/root/j.xml"
SUM0=$(cat "$T/root/secret" "$T/root/j.xml" | md5sum)
chown nobody "$T/ws"
as_nobody ln -s "$T/root/secret" "$T/ws/report.json"
as_nobody ln -s "$T/root" "$T/ws/out"
cd "$T/ws" || exit 1
"$B/ftbpf-ci" --timeout 1 --grace 1 --report report.json --junit out/j.xml -- sleep 30 >"$T/ci1.out" 2>&1
RC=$?
cd - >/dev/null || exit 1
[ "$RC" -eq 125 ] || fail "ftbpf-ci exit $RC (want 125, the timeout)"
SUM1=$(cat "$T/root/secret" "$T/root/j.xml" | md5sum)
[ "$SUM0" = "$SUM1" ] && pass "root's files unchanged" || fail "root's files overwritten: $(head -c 200 "$T/root/secret")"
[ "$(ls "$T/root" | wc -l)" -eq 2 ] && pass "nothing created in root's directory" || fail "root's directory: $(ls "$T/root")"
grep -q -- "--report .*symbolic link" "$T/ci1.out" && grep -q -- "--junit .*" "$T/ci1.out" &&
	pass "both refused with a message: $(grep -E -- '--(report|junit)' "$T/ci1.out" | paste -sd'|' | head -c 300)" ||
	fail "no refusal said: $(tail -5 "$T/ci1.out")"
# plain paths in the workspace: written
as_nobody mkdir "$T/ws/r"
cd "$T/ws" || exit 1
"$B/ftbpf-ci" --timeout 1 --grace 1 --report r/report.json --junit r/j.xml -- sleep 30 >"$T/ci2.out" 2>&1
cd - >/dev/null || exit 1
jq -e '.verdict // .kind // true' "$T/ws/r/report.json" >/dev/null 2>&1 && grep -q '<testsuites>' "$T/ws/r/j.xml" &&
	pass "plain paths: both reports written" || fail "reports not written: $(tail -3 "$T/ci2.out")"
finish
