#!/bin/bash
# Runs the CUnit binaries; each exits with its number of failures.
rc=0
for t in "$@"; do
	echo "== $t"
	"$t" || rc=1
done
exit $rc
