/*
 * A pytest test's id as pytest itself writes it: relative to its rootdir (the directory of the
 * project's pytest.ini, or pyproject.toml / tox.ini / setup.cfg with a pytest section; else
 * the directory it was run from when the test is under it; else the test file's own
 * directory, as for `pytest /abs/path/test_x.py`), and its JUnit classname and name as
 * pytest's --junitxml makes them.
 */
#ifndef FTBPF_CI_TESTID_H
#define FTBPF_CI_TESTID_H

#include <stddef.h>

/* The rootdir of the test file (an absolute path); cwd: where pytest runs, may be NULL. */
void testid_rootdir(const char *file, const char *cwd, char *out, size_t len);
/* "FILE::FUNC" with FILE relative to rootdir when it is under it (else as it is). */
void testid_make(const char *file, const char *func, const char *rootdir, char *out, size_t len);
/* pytest's JUnit names of an id: "tests/test_io.py::test_reads" -> "tests.test_io", "test_reads". */
void testid_junit(const char *id, char *classname, size_t clen, char *name, size_t nlen);

#endif
