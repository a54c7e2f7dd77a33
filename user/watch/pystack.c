#include "watch/pystack.h"

#include "os/elfsym.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* CPython 3.11, x86-64 and arm64 (LP64) */
#define RT_INTERP_HEAD	 40 /* _PyRuntimeState.interpreters.head */
#define IS_THREADS_HEAD	 16 /* PyInterpreterState.threads.head */
#define TS_NEXT		 8  /* PyThreadState.next */
#define TS_CFRAME	 56 /* PyThreadState.cframe */
#define CF_CURRENT	 8  /* _PyCFrame.current_frame */
#define FR_CODE		 32 /* _PyInterpreterFrame.f_code */
#define FR_PREVIOUS	 48 /* _PyInterpreterFrame.previous */
#define FR_PREV_INSTR	 56 /* _PyInterpreterFrame.prev_instr */
#define CO_FIRSTLINENO	 72
#define CO_FILENAME	 112
#define CO_NAME		 120
#define CO_LINETABLE	 136
#define CO_CODE_ADAPTIVE 184
#define BYTES_SIZE	 16 /* PyVarObject.ob_size */
#define BYTES_DATA	 32 /* PyBytesObject.ob_sval */
#define STR_STATE	 32 /* PyASCIIObject.state */
#define STR_LENGTH	 16
#define STR_ASCII_DATA	 48
#define STR_COMPACT_DATA 72

static int rmem(int pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = {buf, len}, r = {(void *)(uintptr_t)addr, len};

	if (!addr)
		return -EFAULT;
	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static uint64_t r64(int pid, uint64_t addr)
{
	uint64_t v = 0;

	rmem(pid, addr, &v, sizeof(v));
	return v;
}

/* A str object as text: compact ASCII or latin-1 strings; "?" otherwise. */
static void rstr(int pid, uint64_t obj, char *buf, size_t len)
{
	uint64_t n = r64(pid, obj + STR_LENGTH);
	uint32_t state = 0;
	unsigned kind;

	snprintf(buf, len, "?");
	if (!obj || rmem(pid, obj + STR_STATE, &state, sizeof(state)))
		return;
	kind = (state >> 2) & 7;
	if (!(state & (1u << 5)) || kind != 1) /* not compact, or not 1 byte per char */
		return;
	if (n >= len)
		n = len - 1;
	if (rmem(pid, obj + ((state & (1u << 6)) ? STR_ASCII_DATA : STR_COMPACT_DATA), buf, n))
		snprintf(buf, len, "?");
	else
		buf[n] = 0;
}

static int varint(const uint8_t *b, size_t n, size_t *i, unsigned *ret)
{
	unsigned v, s = 6;

	if (*i >= n)
		return -1;
	v = b[*i] & 63;
	while (b[(*i)++] & 64) {
		if (*i >= n || s > 24)
			return -1;
		v |= (unsigned)(b[*i] & 63) << s;
		s += 6;
	}
	*ret = v;
	return 0;
}

static int svarint(const uint8_t *b, size_t n, size_t *i, int *ret)
{
	unsigned v;

	if (varint(b, n, i, &v))
		return -1;
	*ret = v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
	return 0;
}

/* The line of code unit `target` from a 3.11 location table (PEP 657 format). */
int pystack_line_of(const uint8_t *b, size_t n, int first, unsigned target)
{
	unsigned addr = 0, skip;
	int line = first, delta;
	size_t i = 0;

	while (i < n) {
		unsigned code = (b[i] >> 3) & 15, units = (b[i] & 7) + 1, have = 1;

		i++;
		delta = 0;
		if (code == 15) {
			have = 0;
		} else if (code == 14) {
			if (svarint(b, n, &i, &delta) || varint(b, n, &i, &skip) ||
			    varint(b, n, &i, &skip) || varint(b, n, &i, &skip))
				return -1;
		} else if (code == 13) {
			if (svarint(b, n, &i, &delta))
				return -1;
		} else if (code >= 10) {
			delta = (int)code - 10;
			i += 2;
		} else {
			i += 1;
		}
		line += delta;
		if (target >= addr && target < addr + units)
			return have ? line : -1;
		addr += units;
	}
	return -1;
}

static int frame_line(int pid, uint64_t code, uint64_t prev_instr)
{
	uint8_t table[4096];
	uint64_t lt = r64(pid, code + CO_LINETABLE), n = r64(pid, lt + BYTES_SIZE);
	int32_t first = 0;

	if (!lt || n > sizeof(table) || rmem(pid, lt + BYTES_DATA, table, n) ||
	    rmem(pid, code + CO_FIRSTLINENO, &first, sizeof(first)))
		return -1;
	if (prev_instr < code + CO_CODE_ADAPTIVE)
		return first; /* not started yet */
	return pystack_line_of(table, n, first,
			       (unsigned)((prev_instr - code - CO_CODE_ADAPTIVE) / 2));
}

/* The address of _PyRuntime in pid, from the python executable or libpython it maps. */
struct runtime_ctx {
	unsigned long start; /* where the file's first page is mapped */
	uint64_t addr;
};

static int runtime_one(void *ctx, Elf *e, const char *name, const GElf_Sym *sym)
{
	struct runtime_ctx *c = ctx;
	uint64_t lo = UINT64_MAX;
	GElf_Ehdr eh;

	if (!sym->st_value || strcmp(name, "_PyRuntime"))
		return 0;
	/* load bias: mapping start minus the first PT_LOAD's page */
	if (gelf_getehdr(e, &eh))
		for (size_t k = 0; k < eh.e_phnum; k++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)k, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < lo)
				lo = ph.p_vaddr & ~0xfffull;
		}
	c->addr = c->start - (lo == UINT64_MAX ? 0 : lo) + sym->st_value;
	return 1;
}

/* The address of _PyRuntime in pid, from the python3* / libpython3* it maps; ver gets the
 * version from the file name. */
static int find_runtime(int pid, uint64_t *ret, char *ver, size_t verlen)
{
	char path[64], line[1024];
	FILE *f;
	int r = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (r == -ENOENT && fgets(line, sizeof(line), f)) {
		unsigned long start, off;
		char file[512], full[600];
		const char *base, *p;
		struct runtime_ctx c;

		if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %511s", &start, &off, file) != 3 || off ||
		    file[0] != '/')
			continue;
		base = strrchr(file, '/') + 1;
		if (strncmp(base, "python3", 7) && strncmp(base, "libpython3", 10))
			continue;
		p = strstr(base, "python3.");
		snprintf(ver, verlen, "%.5s", p ? p + 6 : "3.?");
		snprintf(full, sizeof(full), "/proc/%d/root%s", pid, file);
		c.start = start;
		if (elfsym_foreach(full, runtime_one, &c) == 1) {
			*ret = c.addr;
			r = 0;
		}
	}
	fclose(f);
	return r;
}

int pystack_read(int pid, struct py_frame *frames, int max, char *why, size_t whylen)
{
	char ver[8] = "";
	uint64_t rt, interp, ts;
	int n = 0, r;

	r = find_runtime(pid, &rt, ver, sizeof(ver));
	if (r < 0) {
		snprintf(why, whylen, "not a CPython process");
		return r;
	}
	if (strcmp(ver, "3.11")) {
		snprintf(why, whylen, "CPython %s: only the 3.11 layout is known", ver);
		return -ENOTSUP;
	}
	interp = r64(pid, rt + RT_INTERP_HEAD);
	ts = interp ? r64(pid, interp + IS_THREADS_HEAD) : 0;
	if (!ts) {
		snprintf(why, whylen, "no Python thread state (interpreter not running)");
		return -ENOENT;
	}
	for (int t = 0; ts && t < 64 && n < max; t++, ts = r64(pid, ts + TS_NEXT)) {
		uint64_t fr = r64(pid, r64(pid, ts + TS_CFRAME) + CF_CURRENT);

		if (t > 0 && n < max) { /* thread separator */
			memset(&frames[n], 0, sizeof(frames[n]));
			frames[n++].line = -2;
		}
		for (int depth = 0; fr && depth < 256 && n < max; depth++) {
			uint64_t code = r64(pid, fr + FR_CODE);

			if (!code)
				break;
			rstr(pid, r64(pid, code + CO_FILENAME), frames[n].file,
			     sizeof(frames[n].file));
			rstr(pid, r64(pid, code + CO_NAME), frames[n].func, sizeof(frames[n].func));
			frames[n].line = frame_line(pid, code, r64(pid, fr + FR_PREV_INSTR));
			n++;
			fr = r64(pid, fr + FR_PREVIOUS);
		}
	}
	return n;
}
