#include "gpuprobe.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "elfsym.h"
#include "ftbpf/tracker.h"
#include "gpuapi.h"
#include "log.h"
#include "tracker.h"

#define MAX_LIBS 32

struct lib {
	char path[512];
	unsigned long dev_major, dev_minor, ino; /* identity: one set of probes per file */
	int kind;
	int probes;
	int err;
	struct bpf_link **links; /* owned, nlinks of them */
	int nlinks;
};

struct gpuprobe {
	struct tracker *tr; /* not owned */
	int launch;
	struct lib libs[MAX_LIBS];
	int nlibs;
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
	*ret = g;
	return 0;
}

void gpuprobe_free(struct gpuprobe *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->nlibs; i++) {
		for (int j = 0; j < g->libs[i].nlinks; j++)
			bpf_link__destroy(g->libs[i].links[j]);
		free(g->libs[i].links);
	}
	free(g);
}

/* File offsets of the wanted functions (0 when absent), from the ELF symbol tables. */
struct offsets_ctx {
	const struct gpuprobe *g;
	int kind;
	size_t *off; /* per gpuapi_syms entry: file offset, 0 not found */
	int found;
};

static int offsets_one(void *ctx, Elf *e, const char *name, const GElf_Sym *sym)
{
	struct offsets_ctx *c = ctx;
	GElf_Shdr tsh;

	if (GELF_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_shndx == SHN_UNDEF ||
	    sym->st_shndx >= SHN_LORESERVE || (name[0] != 'c' && name[0] != 'n'))
		return 0;
	for (size_t k = 0; k < gpuapi_nsyms; k++) {
		const struct gpuapi_sym *s = &gpuapi_syms[k];

		if ((int)s->lib != c->kind || c->off[k] || (s->launch && !c->g->launch) ||
		    strcmp(s->name, name))
			continue;
		if (gelf_getshdr(elf_getscn(e, sym->st_shndx), &tsh)) {
			c->off[k] = sym->st_value - tsh.sh_addr + tsh.sh_offset;
			c->found++;
		}
		break;
	}
	return 0;
}

/* The file offsets of the probed functions of a library of this kind; returns how many. */
static int find_offsets(const struct gpuprobe *g, const char *path, int kind, size_t *off)
{
	struct offsets_ctx c = {g, kind, off, 0};
	int r = elfsym_foreach(path, offsets_one, &c);

	return r < 0 ? r : c.found;
}

static int probe_lib(struct gpuprobe *g, struct lib *l, const char *fspath)
{
	size_t off[128] = {0};
	int n, r;

	if (gpuapi_nsyms > sizeof(off) / sizeof(off[0]))
		return -E2BIG;
	n = find_offsets(g, fspath, l->kind, off);
	if (n < 0)
		return n;
	l->links = calloc((size_t)n * 2 + 1, sizeof(*l->links));
	if (!l->links)
		return -ENOMEM;
	for (size_t k = 0; k < gpuapi_nsyms; k++) {
		if (!off[k])
			continue;
		for (int ret = 0; ret <= !!(gpuapi_syms[k].cookie & FTBPF_COOKIE_RET); ret++) {
			struct bpf_link *link = NULL;

			r = tracker_uprobe_attach(g->tr, fspath, off[k], gpuapi_syms[k].cookie, ret,
						  &link);
			if (r < 0) {
				if (!l->err)
					l->err = r;
				log_msg(LOG_WARN, "uprobe %s%s in %s: %s", gpuapi_syms[k].name,
					ret ? " (return)" : "", l->path, strerror(-r));
				continue;
			}
			l->links[l->nlinks++] = link;
		}
		l->probes++;
	}
	return 0;
}

int gpuprobe_scan(struct gpuprobe *g, int pid)
{
	char p[64], line[1024];
	int added = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/maps", pid);
	f = fopen(p, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long maj, min, ino;
		char perms[8], path[512], fspath[600];
		int kind, known = 0, r;
		struct lib *l;

		if (sscanf(line, "%*s %7s %*s %lx:%lx %lu %511s", perms, &maj, &min, &ino, path) !=
			5 ||
		    !strchr(perms, 'x') || path[0] != '/' || strstr(line, "(deleted)"))
			continue;
		kind = gpuapi_lib_of(path);
		if (!kind)
			continue;
		for (int i = 0; i < g->nlibs && !known; i++)
			known = g->libs[i].ino == ino && g->libs[i].dev_major == maj &&
				g->libs[i].dev_minor == min;
		if (known)
			continue;
		if (g->nlibs == MAX_LIBS) {
			log_msg(LOG_WARN, "%s not probed: %d libraries probed already", path,
				MAX_LIBS);
			continue;
		}
		l = &g->libs[g->nlibs++];
		memset(l, 0, sizeof(*l));
		snprintf(l->path, sizeof(l->path), "%s", path);
		l->dev_major = maj;
		l->dev_minor = min;
		l->ino = ino;
		l->kind = kind;
		/* the file as the process sees it, whatever its mount namespace */
		snprintf(fspath, sizeof(fspath), "/proc/%d/root%s", pid, path);
		r = probe_lib(g, l, fspath);
		if (r < 0 && !l->err)
			l->err = r;
		log_msg(l->probes ? LOG_INFO : LOG_WARN,
			"%s library %s (pid %d): %d functions probed%s%s",
			kind == GPUAPI_LIB_CUDA ? "CUDA" : "NCCL", path, pid, l->probes,
			l->err ? ": " : "", l->err ? strerror(-l->err) : "");
		added++;
	}
	fclose(f);
	return added;
}

int gpuprobe_count(const struct gpuprobe *g)
{
	return g ? g->nlibs : 0;
}

int gpuprobe_info(const struct gpuprobe *g, int i, struct gpuprobe_lib_info *ret)
{
	if (!g || i < 0 || i >= g->nlibs)
		return -ENOENT;
	ret->path = g->libs[i].path;
	ret->kind = g->libs[i].kind;
	ret->probes = g->libs[i].probes;
	ret->err = g->libs[i].err;
	return 0;
}
