/* An ordered string map: see kvmap.h. */
#include "lib/kvmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void kvmap_init(struct kvmap *m)
{
	memset(m, 0, sizeof(*m));
}

void kvmap_fini(struct kvmap *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].key);
		free(m->v[i].value);
	}
	free(m->v);
	memset(m, 0, sizeof(*m));
}

/* The index of key, or where it would go (*found 0). */
static size_t find(const struct kvmap *m, const char *key, int *found)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(m->v[mid].key, key);

		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return lo;
}

int kvmap_set(struct kvmap *m, const char *key, const char *value)
{
	int found;
	size_t i = find(m, key, &found);
	char *v = strdup(value), *k;

	if (!v)
		return -ENOMEM;
	if (found) {
		free(m->v[i].value);
		m->v[i].value = v;
		return 0;
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		struct kv *nv = realloc(m->v, cap * sizeof(*nv));

		if (!nv) {
			free(v);
			return -ENOMEM;
		}
		m->v = nv;
		m->cap = cap;
	}
	k = strdup(key);
	if (!k) {
		free(v);
		return -ENOMEM;
	}
	memmove(&m->v[i + 1], &m->v[i], (m->n - i) * sizeof(*m->v));
	m->v[i].key = k;
	m->v[i].value = v;
	m->n++;
	return 0;
}

int kvmap_del(struct kvmap *m, const char *key)
{
	int found;
	size_t i = find(m, key, &found);

	if (!found)
		return -ENOENT;
	free(m->v[i].key);
	free(m->v[i].value);
	memmove(&m->v[i], &m->v[i + 1], (m->n - i - 1) * sizeof(*m->v));
	m->n--;
	return 0;
}

const char *kvmap_get(const struct kvmap *m, const char *key)
{
	int found;
	size_t i = find(m, key, &found);

	return found ? m->v[i].value : NULL;
}

int kvmap_foreach(const struct kvmap *m, const char *prefix,
		  int (*fn)(void *ctx, const char *key, const char *value), void *ctx)
{
	size_t plen = strlen(prefix);
	int found, r;

	for (size_t i = find(m, prefix, &found); i < m->n; i++) {
		if (strncmp(m->v[i].key, prefix, plen))
			break;
		r = fn(ctx, m->v[i].key, m->v[i].value);
		if (r)
			return r;
	}
	return 0;
}

void kvmap_clear(struct kvmap *m, const char *prefix)
{
	size_t plen = strlen(prefix), j = 0;

	for (size_t i = 0; i < m->n; i++) {
		if (!strncmp(m->v[i].key, prefix, plen)) {
			free(m->v[i].key);
			free(m->v[i].value);
			continue;
		}
		m->v[j++] = m->v[i];
	}
	m->n = j;
}
