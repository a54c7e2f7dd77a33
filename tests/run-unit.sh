#!/bin/bash
# Runs the CUnit binaries; each exits with its number of failures, and each has its own time
# limit (UNIT_TIME_LIMIT seconds, 300 by default): one that hangs fails with a message.
rc=0
limit=${UNIT_TIME_LIMIT:-300}
for t in "$@"; do
	echo "== $t"
	timeout -k 10 "$limit" "$t"
	r=$?
	if [ $r -eq 124 ] || [ $r -eq 137 ]; then
		echo "FAIL: $t did not finish within ${limit}s"
	fi
	[ $r -eq 0 ] || rc=1
done
exit $rc
