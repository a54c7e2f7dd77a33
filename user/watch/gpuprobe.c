#include "watch/gpuprobe.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "os/elfsym.h"
#include "ftbpf/abi.h"
#include "lib/gpuapi.h"
#include "os/log.h"
#include "watch/tracker.h"

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
		/* the reverse of attaching: each entry probe goes before its return probe, so
		 * that no call is seen entering without a return probe to end it */
		for (int j = g->libs[i].nlinks - 1; j >= 0; j--)
			bpf_link__destroy(g->libs[i].links[j]);
		free(g->libs[i].links);
	}
	free(g);
}

/* The functions to probe in one library, from its ELF symbol table: every symbol that is one
 * of ours (variants included), once per address (aliases share one: pncclAllReduce and
 * ncclAllReduce, cuCtxSynchronize and a variant the driver aliases to it). */
#define MAX_PROBES 256

struct probe_site {
	size_t off;
	int k; /* gpuapi_syms entry */
};

struct sites_ctx {
	const struct gpuprobe *g;
	int kind;
	struct probe_site site[MAX_PROBES];
	int n;
};

static int sites_one(void *ctx, Elf *e, const char *name, const GElf_Sym *sym)
{
	struct sites_ctx *c = ctx;
	GElf_Shdr tsh;
	size_t off;
	int k;

	if (GELF_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_shndx == SHN_UNDEF ||
	    sym->st_shndx >= SHN_LORESERVE || (name[0] != 'c' && name[0] != 'n'))
		return 0;
	k = gpuapi_match(name, c->kind);
	if (k < 0 || (gpuapi_syms[k].launch && !c->g->launch) ||
	    !gelf_getshdr(elf_getscn(e, sym->st_shndx), &tsh))
		return 0;
	off = sym->st_value - tsh.sh_addr + tsh.sh_offset;
	for (int i = 0; i < c->n; i++)
		if (c->site[i].off == off)
			return 0;
	if (c->n < MAX_PROBES)
		c->site[c->n++] = (struct probe_site){off, k};
	return 0;
}

static int probe_lib(struct gpuprobe *g, struct lib *l, const char *fspath)
{
	struct sites_ctx *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	c->g = g;
	c->kind = l->kind;
	r = elfsym_foreach(fspath, sites_one, c);
	if (r < 0) {
		free(c);
		return r;
	}
	l->links = calloc((size_t)c->n * 2 + 1, sizeof(*l->links));
	if (!l->links) {
		free(c);
		return -ENOMEM;
	}
	for (int i = 0; i < c->n; i++) {
		const struct gpuapi_sym *s = &gpuapi_syms[c->site[i].k];

		/* The return probe first: a call that begins between the two attachments then
		 * shows its return alone (ignored), never its entry alone (a call "in flight"
		 * whose return cannot be seen; gpu.bpf.h ends such calls, and counts them). */
		for (int ret = !!(s->cookie & FTBPF_COOKIE_RET); ret >= 0; ret--) {
			struct bpf_link *link = NULL;

			r = tracker_uprobe_attach(g->tr, fspath, c->site[i].off, s->cookie, ret,
						  &link);
			if (r < 0) {
				if (!l->err)
					l->err = r;
				log_msg(LOG_WARN, "uprobe at %s+0x%zx (%s)%s: %s", l->path,
					c->site[i].off, s->name, ret ? " (return)" : "",
					strerror(-r));
				continue;
			}
			l->links[l->nlinks++] = link;
		}
		l->probes++;
	}
	free(c);
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
		/* PyTorch's CUDA library may have NCCL linked in, or not (then NCCL is a library
		 * of its own): finding nothing there is normal, not worth a warning */
		log_msg(l->probes || strstr(path, "libtorch_cuda") ? LOG_INFO : LOG_WARN,
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
