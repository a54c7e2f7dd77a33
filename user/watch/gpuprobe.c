#include "watch/gpuprobe.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "ftbpf/abi.h"
#include "lib/gpuapi.h"
#include "lib/maps.h"
#include "os/elfsym.h"
#include "os/log.h"
#include "os/mapfile.h"
#include "os/procmem.h"
#include "watch/tracker.h"

#define REFUSED_MAX    1024 /* files refused or without probe sites: not opened again */
#define FILES_PER_SCAN 16   /* new library files opened per process and scan */
#define MAPS_LINES_MAX 65536
#define LIB_SIZE_MAX   (8ull << 30) /* libtorch_cuda.so is ~1 GiB */
#define LIB_BYTES_MAX  (256u << 20) /* symbol and string tables parsed per library */
#define LIB_SECONDS    10	    /* per library: parse and attach */

struct lib {
	struct gpuprobe_lib_info info;
	unsigned dev_major, dev_minor; /* identity: one set of probes per file */
	uint64_t ino;
	struct bpf_link **links; /* owned, nlinks of them */
	int nlinks;
};

struct file_id {
	unsigned dev_major, dev_minor;
	uint64_t ino;
};

struct gpuprobe {
	struct tracker *tr; /* not owned */
	int launch;
	pthread_mutex_t mu; /* the table, for readers on other threads */
	struct lib libs[GPUPROBE_MAX_LIBS];
	int nlibs;
	struct file_id refused[REFUSED_MAX]; /* the scanning thread's only */
	int nrefused;
	uint64_t nrefused_total;
};

int gpuprobe_new(struct tracker *tr, int launch, struct gpuprobe **ret)
{
	struct gpuprobe *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		free(g);
		return -ENOTSUP;
	}
	g->tr = tr;
	g->launch = launch;
	pthread_mutex_init(&g->mu, NULL);
	*ret = g;
	return 0;
}

void gpuprobe_free(struct gpuprobe *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->nlibs; i++) {
		/* the reverse of attaching: each entry probe goes before its return probe, so
		 * that no call is seen entering without a return probe to end it */
		for (int j = g->libs[i].nlinks - 1; j >= 0; j--)
			bpf_link__destroy(g->libs[i].links[j]);
		free(g->libs[i].links);
	}
	pthread_mutex_destroy(&g->mu);
	free(g);
}

/* The functions to probe in one library, from its ELF symbol table: every symbol that is one
 * of ours (variants included), once per address (aliases share one: pncclAllReduce and
 * ncclAllReduce, cuCtxSynchronize and a variant the driver aliases to it). */
#define MAX_PROBES 256

struct probe_site {
	size_t off;
	uint64_t vaddr; /* the symbol's st_value (MPI: where a predefined communicator lies) */
	int k;		/* gpuapi_syms entry */
};

struct sites_ctx {
	const struct gpuprobe *g;
	int kind;
	uint64_t world; /* MPI: st_value of ompi_mpi_comm_world, 0 none */
	struct probe_site site[MAX_PROBES];
	int n;
};

static int sites_one(void *ctx, Elf *e, const char *name, const GElf_Sym *sym)
{
	struct sites_ctx *c = ctx;
	GElf_Shdr tsh;
	size_t off;
	int k;

	if (c->kind == GPUAPI_LIB_MPI && GELF_ST_TYPE(sym->st_info) == STT_OBJECT &&
	    sym->st_shndx != SHN_UNDEF && !strcmp(name, "ompi_mpi_comm_world")) {
		c->world = sym->st_value;
		return 0;
	}
	if (GELF_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_shndx == SHN_UNDEF ||
	    sym->st_shndx >= SHN_LORESERVE ||
	    (name[0] != 'c' && name[0] != 'n' && name[0] != 'M' && name[0] != 'f'))
		return 0;
	k = gpuapi_match(name, c->kind);
	if (k < 0 || (gpuapi_syms[k].launch && !c->g->launch) ||
	    !gelf_getshdr(elf_getscn(e, sym->st_shndx), &tsh) || sym->st_value < tsh.sh_addr)
		return 0;
	off = sym->st_value - tsh.sh_addr + tsh.sh_offset;
	for (int i = 0; i < c->n; i++)
		if (c->site[i].off == off)
			return 0;
	if (c->n < MAX_PROBES)
		c->site[c->n++] = (struct probe_site){off, sym->st_value, k};
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Parse the library open at fd and attach the probes, through /proc/self/fd/N: the kernel
 * resolves that to the inode we checked, whatever the path in the maps leads to now. */
static int probe_lib(struct gpuprobe *g, struct lib *l, int fd)
{
	struct elfsym_limits lim = {LIB_BYTES_MAX, mono_ns() + LIB_SECONDS * 1000000000ull};
	struct sites_ctx *c = calloc(1, sizeof(*c));
	char fdpath[32];
	int r;

	if (!c)
		return -ENOMEM;
	c->g = g;
	c->kind = l->info.kind;
	r = elfsym_foreach_fd(fd, &lim, sites_one, c);
	if (r < 0) {
		free(c);
		return r;
	}
	l->links = calloc((size_t)c->n * 2 + 1, sizeof(*l->links));
	if (!l->links) {
		free(c);
		return -ENOMEM;
	}
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	for (int i = 0; i < c->n; i++) {
		const struct gpuapi_sym *s = &gpuapi_syms[c->site[i].k];
		uint64_t cookie = s->cookie;

		/* MPI_COMM_WORLD from the probed function, when it is within 2 GiB of it */
		if (s->lib == GPUAPI_LIB_MPI && c->world) {
			int64_t d = (int64_t)(c->world - c->site[i].vaddr);

			if (d > INT32_MIN && d < INT32_MAX)
				cookie |= (uint64_t)(uint32_t)(int32_t)d << 32;
		}

		/* The return probe first: a call that begins between the two attachments then
		 * shows its return alone (ignored), never its entry alone (a call "in flight"
		 * whose return cannot be seen; gpu.bpf.h ends such calls, and counts them). */
		for (int ret = !!(s->cookie & FTBPF_COOKIE_RET); ret >= 0; ret--) {
			struct bpf_link *link = NULL;

			r = tracker_uprobe_attach(g->tr, fdpath, c->site[i].off, cookie, ret,
						  &link);
			if (r < 0) {
				if (!l->info.err)
					l->info.err = r;
				log_msg(LOG_WARN, "uprobe at %s+0x%zx (%s)%s: %s", l->info.path,
					c->site[i].off, s->name, ret ? " (return)" : "",
					strerror(-r));
				continue;
			}
			l->links[l->nlinks++] = link;
		}
		l->info.probes++;
	}
	free(c);
	return 0;
}

static int is_refused(const struct gpuprobe *g, const struct maps_entry *m)
{
	for (int i = 0; i < g->nrefused; i++)
		if (g->refused[i].ino == m->ino && g->refused[i].dev_major == m->dev_major &&
		    g->refused[i].dev_minor == m->dev_minor)
			return 1;
	return 0;
}

/* A file looked at and not kept: not opened again (while the list has room). */
static int remember(struct gpuprobe *g, const struct maps_entry *m)
{
	if (g->nrefused == REFUSED_MAX)
		return 0;
	g->refused[g->nrefused++] = (struct file_id){m->dev_major, m->dev_minor, m->ino};
	return 1;
}

static void refuse(struct gpuprobe *g, const struct maps_entry *m, const char *path, uid_t uid,
		   const char *why)
{
	__atomic_add_fetch(&g->nrefused_total, 1, __ATOMIC_RELAXED);
	if (remember(g, m)) /* logged once per file, at most REFUSED_MAX times */
		log_msg(LOG_WARN, "%s (uid %u) not probed: %s", path, (unsigned)uid, why);
}

static int known(struct gpuprobe *g, const struct maps_entry *m)
{
	for (int i = 0; i < g->nlibs; i++)
		if (g->libs[i].ino == m->ino && g->libs[i].dev_major == m->dev_major &&
		    g->libs[i].dev_minor == m->dev_minor)
			return 1;
	return 0;
}

/* May uid add a library? Its own share, and the last places are root's. */
static const char *over_quota(const struct gpuprobe *g, uid_t uid)
{
	int mine = 0;

	if (g->nlibs >= GPUPROBE_MAX_LIBS)
		return "the probe table is full";
	if (uid == 0)
		return NULL;
	for (int i = 0; i < g->nlibs; i++)
		mine += g->libs[i].info.uid == uid;
	if (mine >= GPUPROBE_LIBS_PER_UID)
		return "this user's ranks brought too many libraries";
	if (g->nlibs >= GPUPROBE_MAX_LIBS - GPUPROBE_ROOT_RESERVE)
		return "the places left in the probe table are root's";
	return NULL;
}

static int scan_one(struct gpuprobe *g, const struct procmem *pm, const struct maps_entry *m,
		    const char *path, int kind, uid_t uid)
{
	struct lib l = {0};
	const char *quota = over_quota(g, uid);
	struct stat st;
	int fd, r;

	if (quota) {
		refuse(g, m, path, uid, quota);
		return 0;
	}
	/* from here the file is opened: 1 kept, -1 not kept */
	fd = mapfile_open(pm->dirfd, m, LIB_SIZE_MAX, &st);
	if (fd < 0) {
		if (fd != -ENOENT && fd != -ESRCH) /* gone: not the file's fault */
			refuse(g, m, path, uid, strerror(-fd));
		return -1;
	}
	snprintf(l.info.path, sizeof(l.info.path), "%s", path);
	l.info.kind = kind;
	l.info.uid = uid;
	l.dev_major = m->dev_major;
	l.dev_minor = m->dev_minor;
	l.ino = m->ino;
	r = probe_lib(g, &l, fd);
	close(fd); /* the probes hold the inode */
	if (r < 0 && !l.info.err)
		l.info.err = r;
	/* PyTorch's CUDA library may have NCCL linked in, or not (then NCCL is a library of its
	 * own): finding nothing there is normal, not worth a warning */
	log_msg(l.info.probes || strstr(path, "libtorch_cuda") ? LOG_INFO : LOG_WARN,
		"%s library %s (pid %d, uid %u): %d functions probed%s%s", gpuapi_lib_name(kind),
		path, pm->pid, (unsigned)uid, l.info.probes, l.info.err ? ": " : "",
		l.info.err ? strerror(-l.info.err) : "");
	if (!l.info.probes) { /* nothing to keep: remembered, takes no place in the table */
		free(l.links);
		remember(g, m);
		return -1;
	}
	pthread_mutex_lock(&g->mu);
	g->libs[g->nlibs++] = l;
	pthread_mutex_unlock(&g->mu);
	return 1;
}

int gpuprobe_scan(struct gpuprobe *g, int pid, int pidfd, uid_t uid)
{
	char line[4096 + 256];
	struct procmem pm;
	int added = 0, opened = 0, lines = 0, fd, r;
	FILE *f;

	r = procmem_open(&pm, pid, pidfd);
	if (r < 0)
		return r;
	fd = procmem_openat(&pm, "maps", 0);
	f = fd >= 0 ? fdopen(fd, "re") : NULL;
	if (!f) {
		r = fd < 0 ? fd : -ENOMEM;
		if (fd >= 0)
			close(fd);
		procmem_close(&pm);
		return r;
	}
	while (opened < FILES_PER_SCAN && lines++ < MAPS_LINES_MAX &&
	       fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		struct maps_entry m;
		char path[512];
		int kind;

		if (len && line[len - 1] == '\n') {
			line[--len] = 0;
		} else if (len == sizeof(line) - 1) {
			int ch;

			while ((ch = fgetc(f)) != EOF && ch != '\n')
				;
			continue;
		}
		if (maps_parse_line(line, len, &m) || !strchr(m.perms, 'x') || !m.ino ||
		    !m.path_len || m.path[0] != '/' || m.path_len >= sizeof(path))
			continue;
		memcpy(path, m.path, m.path_len);
		path[m.path_len] = 0;
		kind = gpuapi_lib_of(path);
		if (!kind || known(g, &m) || is_refused(g, &m))
			continue;
		r = scan_one(g, &pm, &m, path, kind, uid);
		opened += r != 0; /* a file refused by the quota was not opened */
		added += r > 0;
	}
	fclose(f);
	procmem_close(&pm);
	return added;
}

int gpuprobe_count(struct gpuprobe *g)
{
	int n;

	if (!g)
		return 0;
	pthread_mutex_lock(&g->mu);
	n = g->nlibs;
	pthread_mutex_unlock(&g->mu);
	return n;
}

int gpuprobe_info(struct gpuprobe *g, int i, struct gpuprobe_lib_info *ret)
{
	int r = -ENOENT;

	if (!g)
		return -ENOENT;
	pthread_mutex_lock(&g->mu);
	if (i >= 0 && i < g->nlibs) {
		*ret = g->libs[i].info;
		r = 0;
	}
	pthread_mutex_unlock(&g->mu);
	return r;
}

uint64_t gpuprobe_refused(struct gpuprobe *g)
{
	return g ? __atomic_load_n(&g->nrefused_total, __ATOMIC_RELAXED) : 0;
}
