/*
 * A C program that embeds CPython through the shared libpython3.11 (Debian's libpython3.11-dev:
 * the interpreter lives in libpython3.11.so.1.0, not in the executable, as with pyenv and the
 * official python:3.11 images) and runs the Python file given: `pyembed FILE`.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	FILE *f;
	int r;

	if (argc != 2)
		return 2;
	f = fopen(argv[1], "r");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	Py_Initialize();
	r = PyRun_SimpleFileEx(f, argv[1], 1);
	Py_Finalize();
	return r ? 1 : 0;
}
