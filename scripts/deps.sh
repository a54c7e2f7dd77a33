#!/bin/sh
# Installs the Debian packages ftbpf needs to build and test, only when some are missing.
set -e
missing=""
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && { echo "deps: all installed"; exit 0; }
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing:$missing (run as root: sudo make deps)" >&2
	exit 1
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends $missing
