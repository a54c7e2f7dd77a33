#!/bin/bash
# time-limit: 60
# The deployment files are what the agent accepts: the Kubernetes manifest is well-formed (a
# DaemonSet in the host's PID namespace, capabilities rather than privileged, bpffs, tracefs and
# the socket's hostPath mounted) and the agent takes its arguments (every flag exists, every
# value is valid: `ftbpfd ARGS --print-config`), with safe defaults (the metrics token from a
# required Secret mounted as a file of its own, liveness asked on the control socket, a memory
# limit); the image recipe installs what it copies.
. "$(dirname "$0")/lib.sh"
Y=$ROOT/contrib/kubernetes/ftbpfd-daemonset.yaml
OUT=$(/usr/bin/python3 - "$Y" <<'PY' 2>&1
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
ds = [d for d in docs if d.get("kind") == "DaemonSet"]
assert len(ds) == 1 and ds[0]["apiVersion"] == "apps/v1", "one apps/v1 DaemonSet"
spec = ds[0]["spec"]["template"]["spec"]
assert spec["hostPID"] is True, "hostPID"
assert ds[0]["spec"]["selector"]["matchLabels"].items() <= ds[0]["spec"]["template"]["metadata"]["labels"].items(), "selector matches"
c = spec["containers"][0]
sc = c["securityContext"]
assert sc.get("privileged") is False, "not privileged"
assert {"BPF", "PERFMON", "KILL"} <= set(sc["capabilities"]["add"]), "capabilities"
mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
vols = {v["name"]: v for v in spec["volumes"]}
assert set(mounts) <= set(vols), "every mount has a volume"
paths = {v["hostPath"]["path"] for v in vols.values() if "hostPath" in v}
assert {"/sys/fs/bpf", "/sys/kernel/tracing", "/run/ftbpf"} <= paths, "host paths"
for v in vols.values():
    if "hostPath" in v:
        assert mounts[v["name"]] == v["hostPath"]["path"], "mounted where the host has it: " + v["name"]
# safe defaults: the metrics token from a Secret, as a file of its own that only root reads
args = dict(a[2:].split("=", 1) for a in c["args"] if "=" in a)
tok = args.get("metrics-token-file")
assert tok, "a metrics token"
m = [m for m in c["volumeMounts"] if m["mountPath"] == tok]
assert m and m[0].get("subPath"), "the token is a file of its own (subPath), not a link"
sv = vols[m[0]["name"]]
assert "secret" in sv and sv["secret"].get("defaultMode") == 0o400 and not sv["secret"].get("optional"), "a required Secret, mode 0400"
# liveness on the control socket, not on the token-protected metrics port
lp = c["livenessProbe"]
assert "exec" in lp and "/run/ftbpf/ftbpfd.sock" in lp["exec"]["command"], "liveness on the control socket"
assert c["resources"]["limits"]["memory"], "a memory limit"
print(" ".join(c["args"]))
PY
)
[ $? -eq 0 ] && pass "the DaemonSet is well-formed (hostPID, capabilities, bpffs, tracefs, socket path; a metrics token from a Secret, liveness on the control socket, a memory limit)" || fail "manifest: $OUT"
ARGS=$OUT
"$B/ftbpfd" $ARGS --print-config >"$T/cfg" 2>&1 && pass "ftbpfd accepts the manifest's arguments: $ARGS" ||
	fail "ftbpfd rejects the manifest's arguments: $(cat "$T/cfg")"
grep -q "metrics_listen = 0.0.0.0:9464" "$T/cfg" && pass "the scraped port is the one the manifest announces" ||
	fail "metrics_listen: $(grep metrics "$T/cfg")"
D=$ROOT/contrib/container/Dockerfile
for f in $(sed -n 's/^COPY --from=build \/out\([^ ]*\) .*/\1/p' "$D"); do
	case $f in
	/usr/sbin/ftbpfd | /usr/bin/ftbpf | /usr/lib/libftbpf.so.0) ;;
	*) fail "the image copies $f, which make install PREFIX=/usr does not make" ;;
	esac
done
grep -q "make install DESTDIR=/out PREFIX=/usr" "$D" && pass "the image recipe copies what make install PREFIX=/usr makes" || fail "Dockerfile"
finish
