/* The simulator's model of etcd (sim_store.h). */
#include "sim_store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void ss_init(struct sim_store *s)
{
	memset(s, 0, sizeof(*s));
	s->rev = 1;
	s->next_lease = 1000;
}

void ss_free(struct sim_store *s)
{
	for (int i = 0; i < s->n; i++) {
		for (int j = 0; j < s->keys[i].nv; j++)
			free(s->keys[i].v[j].value);
		free(s->keys[i].v);
		free(s->keys[i].key);
	}
	free(s->keys);
	free(s->leases);
	free(s->rev_at_ms);
	memset(s, 0, sizeof(*s));
}

static void *grow(void *p, int *cap, int need, size_t size)
{
	if (need <= *cap)
		return p;
	*cap = *cap ? *cap * 2 : 16;
	if (*cap < need)
		*cap = need;
	p = realloc(p, (size_t)*cap * size);
	if (!p)
		abort(); /* the simulator has no use for a run without its memory */
	return p;
}

/* The index of key, or -(insertion point) - 1. */
static int find(const struct sim_store *s, const char *key)
{
	int lo = 0, hi = s->n - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2, c = strcmp(s->keys[mid].key, key);

		if (!c)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -lo - 1;
}

static const struct ss_ver *ver_at(const struct ss_key *k, uint64_t rev)
{
	for (int j = k->nv - 1; j >= 0; j--)
		if (k->v[j].rev <= rev)
			return &k->v[j];
	return NULL;
}

static void new_rev(struct sim_store *s, uint64_t now_ms)
{
	s->rev++;
	s->rev_at_ms = grow(s->rev_at_ms, &s->rev_at_cap, s->nrev_at + 2, sizeof(uint64_t));
	s->rev_at_ms[s->nrev_at++] = now_ms;
	s->rev_at_ms[s->nrev_at++] = s->rev;
}

static void set(struct sim_store *s, uint64_t now_ms, const char *key, const char *value,
		int64_t lease)
{
	int i = find(s, key);
	struct ss_key *k;

	if (i < 0) {
		if (!value)
			return;
		i = -i - 1;
		s->keys = grow(s->keys, &s->cap, s->n + 1, sizeof(*s->keys));
		memmove(&s->keys[i + 1], &s->keys[i], (size_t)(s->n - i) * sizeof(*s->keys));
		memset(&s->keys[i], 0, sizeof(s->keys[i]));
		s->keys[i].key = strdup(key);
		s->n++;
	}
	k = &s->keys[i];
	new_rev(s, now_ms);
	k->v = grow(k->v, &k->cap, k->nv + 1, sizeof(*k->v));
	k->v[k->nv++] = (struct ss_ver){s->rev, value ? lease : 0, value ? strdup(value) : NULL};
}

int ss_claim(struct sim_store *s, uint64_t now_ms, const char *key, const char *value,
	     int64_t lease)
{
	if (ss_get_at(s, key, UINT64_MAX))
		return 0;
	set(s, now_ms, key, value, lease);
	return 1;
}

void ss_put(struct sim_store *s, uint64_t now_ms, const char *key, const char *value,
	    int64_t lease)
{
	int i = find(s, key);

	if (i >= 0) {
		const struct ss_ver *v = &s->keys[i].v[s->keys[i].nv - 1];

		if (v->value && v->lease == lease && !strcmp(v->value, value))
			return;
	}
	set(s, now_ms, key, value, lease);
}

void ss_delete(struct sim_store *s, uint64_t now_ms, const char *key)
{
	if (ss_get_at(s, key, UINT64_MAX))
		set(s, now_ms, key, NULL, 0);
}

const char *ss_get_at(const struct sim_store *s, const char *key, uint64_t rev)
{
	int i = find(s, key);
	const struct ss_ver *v;

	if (i < 0)
		return NULL;
	v = ver_at(&s->keys[i], rev);
	return v ? v->value : NULL;
}

uint64_t ss_created_at(const struct sim_store *s, const char *key, uint64_t rev)
{
	int i = find(s, key);
	uint64_t at = 0;

	if (i < 0)
		return 0;
	for (int j = 0; j < s->keys[i].nv && s->keys[i].v[j].rev <= rev; j++) {
		if (!s->keys[i].v[j].value)
			at = 0;
		else if (!at)
			at = s->keys[i].v[j].rev;
	}
	return at;
}

int ss_list_at(const struct sim_store *s, const char *prefix, uint64_t rev,
	       int (*fn)(void *ctx, const char *key, const char *value), void *ctx)
{
	size_t pl = strlen(prefix);
	int i = find(s, prefix);

	if (i < 0)
		i = -i - 1;
	for (; i < s->n && !strncmp(s->keys[i].key, prefix, pl); i++) {
		const struct ss_ver *v = ver_at(&s->keys[i], rev);
		int r;

		if (v && v->value && (r = fn(ctx, s->keys[i].key, v->value)))
			return r;
	}
	return 0;
}

uint64_t ss_rev_at_time(const struct sim_store *s, uint64_t ms)
{
	int lo = 0, hi = s->nrev_at / 2 - 1;
	uint64_t rev = 1;

	while (lo <= hi) { /* the last change at or before ms */
		int mid = (lo + hi) / 2;

		if (s->rev_at_ms[2 * mid] <= ms) {
			rev = s->rev_at_ms[2 * mid + 1];
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return rev;
}

static struct ss_lease *lease_of(const struct sim_store *s, int64_t id)
{
	for (int i = s->nleases - 1; i >= 0; i--)
		if (s->leases[i].id == id)
			return &s->leases[i];
	return NULL;
}

int64_t ss_grant(struct sim_store *s, uint64_t now_ms, int ttl_ms)
{
	s->leases = grow(s->leases, &s->leases_cap, s->nleases + 1, sizeof(*s->leases));
	s->leases[s->nleases] =
	    (struct ss_lease){s->next_lease++, now_ms + (uint64_t)ttl_ms, ttl_ms, 1};
	return s->leases[s->nleases++].id;
}

int ss_keepalive(struct sim_store *s, uint64_t now_ms, int64_t id)
{
	struct ss_lease *l = lease_of(s, id);

	if (!l || !l->alive || l->expires_ms <= now_ms)
		return -ENOENT;
	l->expires_ms = now_ms + (uint64_t)l->ttl_ms;
	return 0;
}

int ss_expire(struct sim_store *s, uint64_t now_ms)
{
	int n = 0;

	for (int i = 0; i < s->nleases; i++) {
		struct ss_lease *l = &s->leases[i];

		if (!l->alive || l->expires_ms > now_ms)
			continue;
		l->alive = 0;
		n++;
		for (int k = 0; k < s->n; k++) {
			const struct ss_ver *v = &s->keys[k].v[s->keys[k].nv - 1];

			if (v->value && v->lease == l->id)
				set(s, now_ms, s->keys[k].key, NULL, 0);
		}
	}
	/* the dead leases are forgotten (a keepalive of one finds none: expired) */
	for (int i = s->nleases - 1; i >= 0; i--)
		if (!s->leases[i].alive)
			s->leases[i] = s->leases[--s->nleases];
	return n;
}

int64_t ss_lease_left(const struct sim_store *s, uint64_t now_ms, int64_t id)
{
	const struct ss_lease *l = lease_of(s, id);

	if (!l || !l->alive || l->expires_ms <= now_ms)
		return -1;
	return (int64_t)(l->expires_ms - now_ms);
}
