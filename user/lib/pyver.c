/* CPython versions and layouts (see pyver.h). */
#include "lib/pyver.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int digits(const char *s, size_t n, size_t *i, int *ret)
{
	int v = 0;
	size_t start = *i;

	while (*i < n && s[*i] >= '0' && s[*i] <= '9' && *i - start < 3)
		v = v * 10 + (s[(*i)++] - '0');
	if (*i == start || (*i < n && s[*i] >= '0' && s[*i] <= '9'))
		return -EINVAL;
	*ret = v;
	return 0;
}

int pyver_of_name(const char *s, size_t n, struct pyver *ret)
{
	struct pyver v = {0};
	size_t i = 0, nf = 0;

	if (n >= 9 && !memcmp(s, "libpython", 9)) {
		v.lib = 1;
		i = 9;
	} else if (n >= 6 && !memcmp(s, "python", 6)) {
		i = 6;
	} else {
		return -EINVAL;
	}
	if (digits(s, n, &i, &v.major) || v.major != 3 || i >= n || s[i++] != '.' ||
	    digits(s, n, &i, &v.minor))
		return -EINVAL;
	while (i < n && strchr("dtm", s[i]) && s[i] && nf < sizeof(v.flags) - 1)
		v.flags[nf++] = s[i++];
	if (!v.lib) {
		if (i != n) /* python3.11-config, python3.11.py, python3.11dd... */
			return -EINVAL;
	} else {
		/* ".so", then only ".N" version suffixes */
		if (n - i < 3 || memcmp(s + i, ".so", 3))
			return -EINVAL;
		for (i += 3; i < n;) {
			int d;

			if (s[i++] != '.' || digits(s, n, &i, &d))
				return -EINVAL;
		}
	}
	*ret = v;
	return 0;
}

/* CPython 3.11 (Include/internal/pycore_frame.h, cpython/pystate.h, cpython/code.h, 3.11
 * branch): checked against Debian's 3.11 by tests/integration/detect_pystack_shared.sh. */
static const struct py_layout py311 = {
    .minor = 11,
    .rt_interp_head = {40, 0},
    .is_threads_head = 16,
    .ts_next = 8,
    .ts_interp = 16,
    .ts_thread_id = 152,
    .ts_native_tid = 160,
    .ts_frame = 56,
    .cframe = 1,
    .cf_current = 8, /* after int use_tracing */
    .fr_code = 32,
    .fr_previous = 48,
    .fr_instr = 56, /* prev_instr */
    .fr_owner = 69,
    .owner_cstack = -1,
    .co_firstlineno = 72,
    .co_filename = 112,
    .co_name = 120,
    .co_linetable = 136,
    .co_code_adaptive = 184,
    .str_state = 32,
    .str_length = 16,
    .str_ascii_data = 48, /* PyASCIIObject still has wstr */
    .str_compact_data = 72,
    .bytes_size = 16,
    .bytes_data = 32,
};

/* CPython 3.12 (same headers, 3.12 branch): _PyCFrame lost use_tracing, the frame starts with
 * f_code, entry frames are owned by the C stack (owner 3), PyASCIIObject lost wstr. The
 * runtime's interpreters.head is at 40, or at 48 where _finalizing_id precedes it: the reader
 * takes the one whose first thread points back to it. Checked against 3.12.1 (pyenv) where the
 * host has it (ci_faulthandler_xdist, detect_pystack_shared). */
static const struct py_layout py312 = {
    .minor = 12,
    .rt_interp_head = {40, 48},
    .is_threads_head = 72,
    .ts_next = 8,
    .ts_interp = 16,
    .ts_thread_id = 136,
    .ts_native_tid = 144,
    .ts_frame = 56,
    .cframe = 1,
    .cf_current = 0,
    .fr_code = 0,
    .fr_previous = 8,
    .fr_instr = 56, /* prev_instr */
    .fr_owner = 70,
    .owner_cstack = 3,
    .co_firstlineno = 68,
    .co_filename = 112,
    .co_name = 120,
    .co_linetable = 136,
    .co_code_adaptive = 192,
    .str_state = 32,
    .str_length = 16,
    .str_ascii_data = 40,
    .str_compact_data = 56,
    .bytes_size = 16,
    .bytes_data = 32,
};

/* CPython 3.13: the offsets come from the process (_PyRuntime.debug_offsets). */
static const struct py_layout py313 = {.minor = 13, .owner_cstack = 3, .from_debug_offsets = 1};

const struct py_layout *pyver_layout(int major, int minor)
{
	if (major != 3)
		return NULL;
	return minor == 11 ? &py311 : minor == 12 ? &py312 : minor == 13 ? &py313 : NULL;
}

/* _Py_DebugOffsets of 3.13 (Include/internal/pycore_runtime.h, 3.13 branch): an 8-byte
 * cookie, then uint64_t fields; each group starts with the size of its structure. */
enum {
	DO_VERSION = 1,
	DO_FREE_THREADED = 2,
	DO_RT_SIZE = 3,
	DO_RT_INTERP_HEAD = 5,
	DO_IS_SIZE = 6,
	DO_IS_THREADS_HEAD = 9,
	DO_TS_SIZE = 19,
	DO_TS_NEXT = 21,
	DO_TS_INTERP = 22,
	DO_TS_FRAME = 23,
	DO_TS_THREAD_ID = 24,
	DO_TS_NATIVE_TID = 25,
	DO_FR_SIZE = 28,
	DO_FR_PREVIOUS = 29,
	DO_FR_EXECUTABLE = 30,
	DO_FR_INSTR = 31,
	DO_FR_OWNER = 33,
	DO_CO_SIZE = 34,
	DO_CO_FILENAME = 35,
	DO_CO_NAME = 36,
	DO_CO_LINETABLE = 38,
	DO_CO_FIRSTLINENO = 39,
	DO_CO_ADAPTIVE = 43,
	DO_BYTES_SIZE = 64,
	DO_BYTES_OB_SIZE = 65,
	DO_BYTES_SVAL = 66,
	DO_STR_SIZE = 67,
	DO_STR_STATE = 68,
	DO_STR_LENGTH = 69,
	DO_STR_ASCII_SIZE = 70,
	DO_WORDS = 73,
};

int pyver_debug_offsets(const uint8_t *buf, size_t len, struct py_layout *ret, char *why,
			size_t whylen)
{
	static const struct {
		int size, field;
	} checks[] = {
	    {DO_RT_SIZE, DO_RT_INTERP_HEAD},   {DO_IS_SIZE, DO_IS_THREADS_HEAD},
	    {DO_TS_SIZE, DO_TS_NEXT},	       {DO_TS_SIZE, DO_TS_INTERP},
	    {DO_TS_SIZE, DO_TS_FRAME},	       {DO_TS_SIZE, DO_TS_THREAD_ID},
	    {DO_TS_SIZE, DO_TS_NATIVE_TID},    {DO_FR_SIZE, DO_FR_PREVIOUS},
	    {DO_FR_SIZE, DO_FR_EXECUTABLE},    {DO_FR_SIZE, DO_FR_INSTR},
	    {DO_FR_SIZE, DO_FR_OWNER},	       {DO_CO_SIZE, DO_CO_FILENAME},
	    {DO_CO_SIZE, DO_CO_NAME},	       {DO_CO_SIZE, DO_CO_LINETABLE},
	    {DO_CO_SIZE, DO_CO_FIRSTLINENO},   {DO_CO_SIZE, DO_CO_ADAPTIVE},
	    {DO_BYTES_SIZE, DO_BYTES_OB_SIZE}, {DO_STR_SIZE, DO_STR_STATE},
	    {DO_STR_SIZE, DO_STR_LENGTH},      {DO_STR_SIZE, DO_STR_ASCII_SIZE},
	};
	uint64_t w[DO_WORDS];
	struct py_layout l = py313;

	if (len < sizeof(w) || len < PYVER_DEBUG_OFFSETS_SIZE) {
		snprintf(why, whylen, "_Py_DebugOffsets: short read");
		return -EINVAL;
	}
	memcpy(w, buf, sizeof(w));
	if (memcmp(buf, "xdebugpy", 8)) {
		snprintf(why, whylen, "_Py_DebugOffsets: no \"xdebugpy\" cookie");
		return -EINVAL;
	}
	if ((w[DO_VERSION] >> 16) != 0x030d) {
		snprintf(why, whylen, "_Py_DebugOffsets: version 0x%llx is not 3.13",
			 (unsigned long long)w[DO_VERSION]);
		return -EINVAL;
	}
	if (w[DO_FREE_THREADED]) {
		snprintf(why, whylen, "a free-threaded CPython 3.13: its layout is not known");
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		uint64_t size = w[checks[i].size], off = w[checks[i].field];

		/* every structure is smaller than 1 MiB; every field fits in its structure (the
		 * data of bytes/str objects starts at their size) */
		if (!size || size > (1u << 20) || off > size) {
			snprintf(why, whylen, "_Py_DebugOffsets: offset %d out of range",
				 checks[i].field);
			return -EINVAL;
		}
	}
	l.rt_interp_head[0] = w[DO_RT_INTERP_HEAD];
	l.rt_interp_head[1] = 0;
	l.is_threads_head = w[DO_IS_THREADS_HEAD];
	l.ts_next = w[DO_TS_NEXT];
	l.ts_interp = w[DO_TS_INTERP];
	l.ts_frame = w[DO_TS_FRAME];
	l.cframe = 0;
	l.ts_thread_id = w[DO_TS_THREAD_ID];
	l.ts_native_tid = w[DO_TS_NATIVE_TID];
	l.fr_previous = w[DO_FR_PREVIOUS];
	l.fr_code = w[DO_FR_EXECUTABLE];
	l.fr_instr = w[DO_FR_INSTR]; /* instr_ptr: the instruction itself, not the one before */
	l.fr_owner = w[DO_FR_OWNER];
	l.co_filename = w[DO_CO_FILENAME];
	l.co_name = w[DO_CO_NAME];
	l.co_linetable = w[DO_CO_LINETABLE];
	l.co_firstlineno = w[DO_CO_FIRSTLINENO];
	l.co_code_adaptive = w[DO_CO_ADAPTIVE];
	l.bytes_size = w[DO_BYTES_OB_SIZE];
	l.bytes_data = w[DO_BYTES_SVAL];
	l.str_state = w[DO_STR_STATE];
	l.str_length = w[DO_STR_LENGTH];
	l.str_ascii_data = w[DO_STR_ASCII_SIZE];
	l.str_compact_data = w[DO_STR_ASCII_SIZE] + 16; /* + utf8_length, utf8 */
	l.from_debug_offsets = 0;
	*ret = l;
	return 0;
}
