/* Python stacks from outside the process (see pystack.h). */
#include "watch/pystack.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/maps.h"
#include "lib/pyver.h"
#include "os/elfsym.h"
#include "os/mapfile.h"
#include "os/procmem.h"

#define CANDIDATES_MAX 4	    /* interpreter files looked at per process */
#define MAPS_LINES_MAX 65536	    /* of /proc/PID/maps read */
#define ELF_SIZE_MAX   (1ull << 31) /* an interpreter file larger than 2 GiB is not one */
#define ELF_BYTES_MAX  (32u << 20)  /* of symbol and string tables parsed per file */
#define CACHE_N	       64

/* ---- what the interpreter file says, cached by the file's identity ---- */
struct cache_entry {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	uint64_t used;
	int err;	     /* the parse's result: 0, or -errno (cached too) */
	uint64_t runtime;    /* _PyRuntime - first load address, 0 none */
	uint64_t py_version; /* Py_Version - first load address, 0 none */
};

struct pystack_cache {
	struct cache_entry e[CACHE_N];
	uint64_t clock;
};

struct pystack_cache *pystack_cache_new(void)
{
	return calloc(1, sizeof(struct pystack_cache));
}

void pystack_cache_free(struct pystack_cache *c)
{
	free(c);
}

static struct cache_entry *cache_find(struct pystack_cache *c, const struct stat *st)
{
	for (int i = 0; i < CACHE_N; i++) {
		struct cache_entry *e = &c->e[i];

		if (e->used && e->dev == st->st_dev && e->ino == st->st_ino &&
		    e->size == st->st_size && e->mtime.tv_sec == st->st_mtim.tv_sec &&
		    e->mtime.tv_nsec == st->st_mtim.tv_nsec) {
			e->used = ++c->clock;
			return e;
		}
	}
	return NULL;
}

static struct cache_entry *cache_add(struct pystack_cache *c, const struct stat *st)
{
	struct cache_entry *e = &c->e[0];

	for (int i = 1; i < CACHE_N; i++) /* the least recently used */
		if (c->e[i].used < e->used)
			e = &c->e[i];
	memset(e, 0, sizeof(*e));
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->size = st->st_size;
	e->mtime = st->st_mtim;
	e->used = ++c->clock;
	return e;
}

struct sym_ctx {
	uint64_t runtime, py_version, first_load;
	int have_load;
};

static int sym_one(void *ctx, Elf *e, const char *name, const GElf_Sym *sym)
{
	struct sym_ctx *c = ctx;

	if (!sym->st_value || sym->st_shndx == SHN_UNDEF || (name[0] != '_' && name[0] != 'P'))
		return 0;
	if (!strcmp(name, "_PyRuntime"))
		c->runtime = sym->st_value;
	else if (!strcmp(name, "Py_Version"))
		c->py_version = sym->st_value;
	else
		return 0;
	if (!c->have_load && elfsym_first_load(e, &c->first_load) == 0)
		c->have_load = 1;
	return c->runtime && c->py_version ? 1 : 0;
}

static int parse_file(int fd, uint64_t deadline, struct cache_entry *ce)
{
	struct elfsym_limits lim = {ELF_BYTES_MAX, deadline};
	struct sym_ctx s = {0};
	int r = elfsym_foreach_fd(fd, &lim, sym_one, &s);

	if (r < 0)
		return r;
	if (!s.runtime || !s.have_load || s.runtime < s.first_load)
		return -ENOENT;
	ce->runtime = s.runtime - s.first_load;
	ce->py_version = s.py_version >= s.first_load ? s.py_version - s.first_load : 0;
	return 0;
}

/* ---- the candidates: python3.X / libpython3.X files the process maps ---- */
struct cand {
	struct maps_entry m; /* path points into path[] */
	char path[512];
	struct pyver v;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int find_candidates(const struct procmem *pm, uint64_t deadline, struct cand *out,
			   int *ret_n)
{
	char line[4096 + 256];
	int fd = procmem_openat(pm, "maps", 0), n = 0, lines = 0;
	FILE *f;

	if (fd < 0)
		return fd;
	f = fdopen(fd, "re");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	while (n < CANDIDATES_MAX && lines < MAPS_LINES_MAX && fgets(line, sizeof(line), f)) {
		size_t len = strlen(line), blen;
		struct maps_entry m;
		struct pyver v;
		const char *base;
		int dup = 0;

		lines++;
		if ((lines & 1023) == 0 && deadline && mono_ns() > deadline)
			break;
		if (len && line[len - 1] == '\n')
			line[--len] = 0;
		else if (len == sizeof(line) - 1) { /* longer than any path: skip the rest */
			int ch;

			while ((ch = fgetc(f)) != EOF && ch != '\n')
				;
			continue;
		}
		if (maps_parse_line(line, len, &m) || m.offset || !m.ino || m.path_len == 0 ||
		    m.path[0] != '/' || m.path_len >= sizeof(out[0].path))
			continue;
		base = maps_basename(&m, &blen);
		if (pyver_of_name(base, blen, &v))
			continue;
		for (int i = 0; i < n && !dup; i++) /* one file, however often it is mapped */
			dup = out[i].m.ino == m.ino && out[i].m.dev_major == m.dev_major &&
			      out[i].m.dev_minor == m.dev_minor;
		if (dup)
			continue;
		out[n].m = m;
		memcpy(out[n].path, m.path, m.path_len);
		out[n].path[m.path_len] = 0;
		out[n].m.path = out[n].path;
		out[n].v = v;
		n++;
	}
	fclose(f);
	*ret_n = n;
	return 0;
}

/* The interpreter of pid: where _PyRuntime is, and its version. */
struct interp {
	uint64_t runtime;
	int major, minor;
	char flags[4];
};

static int find_interp(struct pystack_cache *c, const struct procmem *pm, uint64_t deadline,
		       struct interp *ret, char *why, size_t whylen)
{
	struct cand *cand = calloc(CANDIDATES_MAX, sizeof(*cand));
	int n = 0, r, last = -ENOENT;

	if (!cand)
		return -ENOMEM;
	r = find_candidates(pm, deadline, cand, &n);
	if (r < 0) {
		free(cand);
		snprintf(why, whylen, "its memory map cannot be read: %s", strerror(-r));
		return r == -ENOENT ? -ESRCH : r;
	}
	for (int i = 0; i < n; i++) {
		struct cache_entry *ce;
		struct stat st;
		uint64_t bias, hex = 0;
		int fd = mapfile_open(pm->dirfd, &cand[i].m, ELF_SIZE_MAX, &st);

		if (fd < 0) {
			last = fd;
			snprintf(why, whylen, "%s: %s", cand[i].path, strerror(-fd));
			continue;
		}
		ce = cache_find(c, &st);
		if (!ce) {
			ce = cache_add(c, &st);
			ce->err = parse_file(fd, deadline, ce);
			if (ce->err == -ETIMEDOUT)
				ce->used = 0; /* not a property of the file: try again next time */
		}
		close(fd);
		if (ce->err < 0) {
			last = ce->err;
			snprintf(why, whylen, "%s: %s", cand[i].path,
				 ce->err == -ENOENT ? "no _PyRuntime symbol" : strerror(-ce->err));
			continue;
		}
		bias = cand[i].m.start;
		ret->runtime = bias + ce->runtime;
		ret->major = cand[i].v.major;
		ret->minor = cand[i].v.minor;
		memcpy(ret->flags, cand[i].v.flags, sizeof(ret->flags));
		/* Py_Version (3.11+) says the version better than any file name */
		if (ce->py_version && procmem_read(pm, bias + ce->py_version, &hex, 8) == 0 &&
		    (hex >> 24 & 0xff) == 3) {
			ret->major = 3;
			ret->minor = (int)(hex >> 16 & 0xff);
		}
		free(cand);
		return 0;
	}
	free(cand);
	if (!n)
		snprintf(why, whylen, "not a CPython process");
	return last == -ETIMEDOUT ? -ETIMEDOUT : n ? (last == -ENOENT ? -ENOENT : last) : -ENOENT;
}

/* ---- reading the interpreter's memory ---- */
struct reader {
	const struct procmem *pm;
	const struct py_layout *l;
};

static uint64_t r64(const struct reader *rd, uint64_t addr)
{
	uint64_t v = 0;

	if (procmem_read(rd->pm, addr, &v, sizeof(v)))
		return 0;
	return v;
}

/* A str object as text: compact ASCII or latin-1 strings; "?" otherwise. */
static void rstr(const struct reader *rd, uint64_t obj, char *buf, size_t len)
{
	const struct py_layout *l = rd->l;
	uint64_t n = r64(rd, obj + l->str_length);
	uint32_t state = 0;
	unsigned kind;

	snprintf(buf, len, "?");
	if (!obj || procmem_read(rd->pm, obj + l->str_state, &state, sizeof(state)))
		return;
	kind = (state >> 2) & 7;
	if (!(state & (1u << 5)) || kind != 1) /* not compact, or not 1 byte per char */
		return;
	if (n >= len)
		n = len - 1;
	if (procmem_read(rd->pm,
			 obj + ((state & (1u << 6)) ? l->str_ascii_data : l->str_compact_data), buf,
			 n))
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

/* The line of code unit `target` from a 3.11+ location table (PEP 657 format). */
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

static int frame_line(const struct reader *rd, uint64_t code, uint64_t instr)
{
	const struct py_layout *l = rd->l;
	uint8_t table[4096];
	uint64_t lt = r64(rd, code + l->co_linetable), n = lt ? r64(rd, lt + l->bytes_size) : 0;
	uint64_t start = code + l->co_code_adaptive;
	int32_t first = 0;

	if (!lt || n > sizeof(table) || procmem_read(rd->pm, lt + l->bytes_data, table, n) ||
	    procmem_read(rd->pm, code + l->co_firstlineno, &first, sizeof(first)))
		return -1;
	if (instr < start || instr - start > (1u << 28))
		return first; /* not started yet */
	return pystack_line_of(table, n, first, (unsigned)((instr - start) / 2));
}

static void thread_name(const struct procmem *pm, int tid, char *buf, size_t len)
{
	char p[48];
	ssize_t n;
	int fd;

	buf[0] = 0;
	if (tid <= 0)
		return;
	snprintf(p, sizeof(p), "task/%d/comm", tid);
	fd = procmem_openat(pm, p, 0);
	if (fd < 0)
		return;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = 0;
}

static int read_thread(const struct reader *rd, uint64_t ts, uint64_t deadline,
		       struct py_stack *out)
{
	const struct py_layout *l = rd->l;
	struct py_thread *t = &out->t[out->nthreads++];
	uint64_t fr = r64(rd, ts + l->ts_frame);

	memset(t, 0, sizeof(*t));
	t->thread_id = r64(rd, ts + l->ts_thread_id);
	t->tid = (int)r64(rd, ts + l->ts_native_tid);
	thread_name(rd->pm, t->tid, t->name, sizeof(t->name));
	t->first = out->nframes;
	if (l->cframe)
		fr = fr ? r64(rd, fr + l->cf_current) : 0;
	for (int depth = 0; fr && depth < PY_DEPTH_MAX; depth++) {
		struct py_frame *f;
		uint64_t code;
		uint8_t owner = 0;

		if (deadline && mono_ns() > deadline)
			return -ETIMEDOUT;
		if (l->owner_cstack >= 0 &&
		    procmem_read(rd->pm, fr + l->fr_owner, &owner, 1) == 0 &&
		    owner == (uint8_t)l->owner_cstack) {
			fr = r64(rd, fr + l->fr_previous); /* an entry frame: no Python code */
			continue;
		}
		code = r64(rd, fr + l->fr_code);
		if (!code)
			break;
		if (out->nframes == PY_FRAMES_MAX) {
			t->truncated = 1;
			break;
		}
		f = &out->f[out->nframes++];
		rstr(rd, r64(rd, code + l->co_filename), f->file, sizeof(f->file));
		rstr(rd, r64(rd, code + l->co_name), f->func, sizeof(f->func));
		f->line = frame_line(rd, code, r64(rd, fr + l->fr_instr));
		t->n++;
		fr = r64(rd, fr + l->fr_previous);
	}
	if (fr && t->n >= PY_DEPTH_MAX)
		t->truncated = 1;
	return 0;
}

int pystack_read(struct pystack_cache *c, int pid, int pidfd, uint64_t deadline_ns,
		 struct py_stack *out, char *why, size_t whylen)
{
	struct procmem pm;
	struct interp in = {0};
	struct py_layout dl;
	struct reader rd;
	uint64_t interp = 0, ts = 0, seen[PY_THREADS_MAX];
	int r;

	memset(out, 0, offsetof(struct py_stack, f));
	out->nframes = 0;
	r = procmem_open(&pm, pid, pidfd);
	if (r < 0) {
		snprintf(why, whylen, "the process cannot be read: %s", strerror(-r));
		return r;
	}
	r = find_interp(c, &pm, deadline_ns, &in, why, whylen);
	if (r < 0)
		goto out;
	snprintf(out->version, sizeof(out->version), "%d.%d", in.major, in.minor);
	rd.pm = &pm;
	rd.l = pyver_layout(in.major, in.minor);
	if (!rd.l || strchr(in.flags, 't')) {
		snprintf(why, whylen,
			 "CPython %s%s: only the 3.11, 3.12 and 3.13 layouts are known",
			 out->version, strchr(in.flags, 't') ? " (free-threaded)" : "");
		r = -ENOTSUP;
		goto out;
	}
	if (rd.l->from_debug_offsets) {
		uint8_t buf[PYVER_DEBUG_OFFSETS_SIZE];

		if (procmem_read(&pm, in.runtime, buf, sizeof(buf)) ||
		    pyver_debug_offsets(buf, sizeof(buf), &dl, why, whylen)) {
			if (!*why)
				snprintf(why, whylen, "_Py_DebugOffsets cannot be read");
			r = -ENOTSUP;
			goto out;
		}
		rd.l = &dl;
	}
	/* the interpreter whose first thread points back at it (checks the layout, too) */
	for (int k = 0; k < 2 && !ts && (k == 0 || rd.l->rt_interp_head[k]); k++) {
		uint64_t i = r64(&rd, in.runtime + rd.l->rt_interp_head[k]);
		uint64_t t = i ? r64(&rd, i + rd.l->is_threads_head) : 0;

		if (i && !interp)
			interp = i;
		if (t && r64(&rd, t + rd.l->ts_interp) == i) {
			interp = i;
			ts = t;
		}
	}
	if (!ts) {
		snprintf(why, whylen,
			 interp ? "CPython %s: no Python thread state found"
				: "CPython %s: no interpreter (not started, or ended)",
			 out->version);
		r = interp ? -EPROTO : -ENOENT;
		goto out;
	}
	while (ts && out->nthreads < PY_THREADS_MAX) {
		int dup = 0;

		for (int i = 0; i < out->nthreads && !dup; i++)
			dup = seen[i] == ts;
		if (dup)
			break; /* a cycle: memory changing under us */
		seen[out->nthreads] = ts;
		r = read_thread(&rd, ts, deadline_ns, out);
		if (r < 0) {
			snprintf(why, whylen, "past the time limit");
			goto out;
		}
		ts = r64(&rd, ts + rd.l->ts_next);
	}
	r = 0;
out:
	procmem_close(&pm);
	return r;
}
