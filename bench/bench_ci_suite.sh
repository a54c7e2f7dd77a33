#!/bin/sh
# A synthetic test suite for `make bench`: many short processes, as a test runner makes.
# ROUNDS (default 10) times: the project's CUnit binaries, 100 /bin/true, 2 Python starts.
B=${1:-build}
for r in $(seq "${ROUNDS:-10}"); do
	for t in "$B"/tests/test_*; do "$t" >/dev/null 2>&1 || exit 1; done
	for i in $(seq 100); do /bin/true; done
	/usr/bin/python3 -c 'import json, unittest' || exit 1
	/usr/bin/python3 -c 'import sys; sys.exit(0)' || exit 1
done
