/* Kernel symbolizer: /proc/kallsyms sorted once, then binary search. Needs root for addresses. */
#include "os/ksyms.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ksym {
	uint64_t addr;
	char *name; /* points into names */
};

struct ksyms {
	struct ksym *syms; /* owned */
	size_t n;
	char *names; /* owned, all names back to back */
};

static int cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

struct ksyms *ksyms_load(void)
{
	struct ksyms *k = calloc(1, sizeof(*k));
	size_t cap = 0, ncap = 0, nlen = 0;
	size_t *offs = NULL;
	char line[512], name[256], type;
	unsigned long long addr;
	FILE *f;

	if (!k)
		return NULL;
	f = fopen("/proc/kallsyms", "re");
	if (!f) {
		free(k);
		return NULL;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || !addr)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (k->n == cap) {
			cap = cap ? cap * 2 : 65536;
			struct ksym *ns = realloc(k->syms, cap * sizeof(*ns));
			size_t *no = realloc(offs, cap * sizeof(*no));

			if (ns)
				k->syms = ns;
			if (no)
				offs = no;
			if (!ns || !no)
				goto fail;
		}
		size_t l = strlen(name) + 1;
		if (nlen + l > ncap) {
			ncap = ncap ? ncap * 2 : 1 << 20;
			char *nn = realloc(k->names, ncap);

			if (!nn)
				goto fail;
			k->names = nn;
		}
		memcpy(k->names + nlen, name, l);
		offs[k->n] = nlen;
		k->syms[k->n].addr = addr;
		k->n++;
		nlen += l;
	}
	fclose(f);
	for (size_t i = 0; i < k->n; i++)
		k->syms[i].name = k->names + offs[i];
	free(offs);
	qsort(k->syms, k->n, sizeof(*k->syms), cmp);
	if (!k->n) {
		ksyms_free(k);
		errno = EPERM;
		return NULL;
	}
	return k;
fail:
	fclose(f);
	free(offs);
	ksyms_free(k);
	errno = ENOMEM;
	return NULL;
}

void ksyms_free(struct ksyms *k)
{
	if (!k)
		return;
	free(k->syms);
	free(k->names);
	free(k);
}

const char *ksyms_format(const struct ksyms *k, uint64_t addr, char *buf, size_t len)
{
	size_t lo = 0, hi;

	if (!k || !k->n || addr < k->syms[0].addr) {
		snprintf(buf, len, "0x%llx", (unsigned long long)addr);
		return buf;
	}
	hi = k->n;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	snprintf(buf, len, "%s+0x%llx", k->syms[lo].name,
		 (unsigned long long)(addr - k->syms[lo].addr));
	return buf;
}
