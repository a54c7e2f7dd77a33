/* The agreement store: the local kind here, etcd's in store_etcd.c. See store.h. */
#include "agent/store.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/store_int.h"
#include "lib/jsonx.h"
#include "lib/kvmap.h"
#include "os/clock.h"
#include "os/log.h"
#include "os/statefile.h"

#define DECISIONS_FILE "decisions.json"
/* The file holds what is decided now and a bounded history: a user (not root) keeps at most
 * USER_KEYS_MAX keys, their oldest jobs going first. Without it, every claim rewrote a file
 * that any user could grow without end. (No job is forgotten for its age alone: a job that
 * has run for months still needs its generation.) */
#define USER_KEYS_MAX 4096
#define PRUNE_EVERY   256 /* saves */

struct store_local {
	struct store base;
	char dir[256];
	struct kvmap map;    /* every key */
	struct kvmap leased; /* the keys that vanish with this agent (not saved) */
	uint64_t saves, save_errors, pruned;
};

/* "jobs/<uid>/<job>/": the length of a key's job prefix, its uid; 0 when it is not a job's. */
static size_t job_prefix(const char *key, unsigned *ret_uid)
{
	const char *p;

	if (strncmp(key, "jobs/", 5) || sscanf(key + 5, "%u/", ret_uid) != 1 ||
	    !(p = strchr(key + 5, '/')) || !(p = strchr(p + 1, '/')))
		return 0;
	return (size_t)(p + 1 - key);
}

/* A record's time (its at_ms), 0 when it has none. */
static uint64_t record_ms(const char *value)
{
	struct json_object *o = json_tokener_parse(value), *t;
	uint64_t ms = 0;

	if (o && json_object_is_type(o, json_type_object) &&
	    json_object_object_get_ex(o, "at_ms", &t) && json_object_is_type(t, json_type_int))
		ms = (uint64_t)json_object_get_int64(t);
	json_object_put(o);
	return ms;
}

struct job_age {
	size_t first, n; /* its keys: map.v[first .. first + n) (the map is sorted) */
	unsigned uid;
	uint64_t newest_ms;
};

static int by_age(const void *a, const void *b)
{
	const struct job_age *x = a, *y = b;

	return x->newest_ms < y->newest_ms ? -1 : x->newest_ms > y->newest_ms;
}

static void drop_job(struct store_local *s, const struct job_age *j)
{
	char **keys = calloc(j->n, sizeof(*keys));

	for (size_t i = 0; keys && i < j->n; i++)
		keys[i] = strdup(s->map.v[j->first + i].key);
	for (size_t i = 0; keys && i < j->n; i++)
		if (keys[i]) {
			kvmap_del(&s->map, keys[i]);
			free(keys[i]);
		}
	free(keys);
	s->pruned++;
}

/* Forget the oldest jobs of a user with more than USER_KEYS_MAX keys. 1 when something went. */
static int local_prune(struct store_local *s)
{
	struct job_age *jobs = calloc(s->map.n + 1, sizeof(*jobs));
	size_t nj = 0, before = s->map.n;

	if (!jobs)
		return 0;
	for (size_t i = 0; i < s->map.n;) {
		unsigned uid;
		size_t pl = job_prefix(s->map.v[i].key, &uid), k = i;
		uint64_t newest = 0;

		if (!pl) {
			i++;
			continue;
		}
		for (; k < s->map.n && !strncmp(s->map.v[k].key, s->map.v[i].key, pl); k++) {
			uint64_t t = record_ms(s->map.v[k].value);

			newest = t > newest ? t : newest;
		}
		jobs[nj++] = (struct job_age){i, k - i, uid, newest};
		i = k;
	}
	qsort(jobs, nj, sizeof(*jobs), by_age); /* oldest first */
	/* keys move as others are deleted: drop by key, from the newest index down */
	for (size_t a = 0; a < nj; a++) {
		size_t user_keys = 0;

		for (size_t b = 0; b < nj; b++)
			user_keys += jobs[b].n && jobs[b].uid == jobs[a].uid ? jobs[b].n : 0;
		if (jobs[a].uid != 0 && user_keys > USER_KEYS_MAX) {
			struct job_age j = jobs[a];

			jobs[a].n = 0;
			/* the indexes of jobs after it (in the map) shift down by j.n */
			for (size_t b = 0; b < nj; b++)
				if (jobs[b].first > j.first)
					jobs[b].first -= j.n;
			drop_job(s, &j);
		}
	}
	free(jobs);
	return s->map.n != before;
}

static int local_save(struct store_local *s)
{
	struct json_object *o = json_object_new_object();
	int r;

	for (size_t i = 0; i < s->map.n; i++)
		if (!kvmap_get(&s->leased, s->map.v[i].key))
			json_object_object_add(o, s->map.v[i].key,
					       json_object_new_string(s->map.v[i].value));
	r = statefile_write(s->dir, DECISIONS_FILE, o);
	json_object_put(o);
	if (++s->saves % PRUNE_EVERY == 0 && local_prune(s))
		local_save(s);
	if (r < 0) {
		s->save_errors++;
		log_warn("cannot save %s/%s: %s (decisions are kept in memory)", s->dir,
			 DECISIONS_FILE, strerror(-r));
	}
	return r;
}

static int local_claim(struct store *b, const char *key, const char *value)
{
	struct store_local *s = (struct store_local *)b;
	int r;

	if (kvmap_get(&s->map, key))
		return 0; /* claimed before: that value stands */
	r = kvmap_set(&s->map, key, value);
	return r < 0 ? r : local_save(s);
}

static int local_put(struct store *b, const char *key, const char *value, int leased)
{
	struct store_local *s = (struct store_local *)b;
	const char *old = kvmap_get(&s->map, key);
	int r;

	if (old && !strcmp(old, value))
		return 0;
	r = kvmap_set(&s->map, key, value);
	if (r == 0 && leased)
		r = kvmap_set(&s->leased, key, "");
	return r < 0 || leased ? r : local_save(s);
}

static int local_delete_prefix(struct store *b, const char *prefix)
{
	struct store_local *s = (struct store_local *)b;
	size_t n = strlen(prefix);
	int gone = 0;

	for (size_t i = 0; i < s->map.n;) {
		if (!strncmp(s->map.v[i].key, prefix, n)) {
			kvmap_del(&s->leased, s->map.v[i].key);
			kvmap_del(&s->map, s->map.v[i].key);
			gone = 1;
			continue;
		}
		i++;
	}
	return gone ? local_save(s) : 0;
}

static char *local_get(struct store *b, const char *key)
{
	const char *v = kvmap_get(&((struct store_local *)b)->map, key);

	return v ? strdup(v) : NULL;
}

static int local_list(struct store *b, const char *prefix,
		      int (*fn)(void *ctx, const char *key, const char *value), void *ctx)
{
	return kvmap_foreach(&((struct store_local *)b)->map, prefix, fn, ctx);
}

static int local_reachable(struct store *b, uint64_t *last_ok_ms)
{
	(void)b;
	*last_ok_ms = clock_mono_ns() / 1000000;
	return 1;
}

static void local_counters(struct store *b, struct json_object *c)
{
	struct store_local *s = (struct store_local *)b;

	jint(c, "keys", (int64_t)s->map.n);
	jint(c, "saves", (int64_t)s->saves);
	jint(c, "save_errors", (int64_t)s->save_errors);
	jint(c, "jobs_pruned", (int64_t)s->pruned);
}

static void local_close(struct store *b)
{
	struct store_local *s = (struct store_local *)b;

	kvmap_fini(&s->map);
	kvmap_fini(&s->leased);
	free(s);
}

static const struct store_ops local_ops = {
    .kind = "local",
    .claim = local_claim,
    .put = local_put,
    .get = local_get,
    .delete_prefix = local_delete_prefix,
    .list = local_list,
    .reachable = local_reachable,
    .counters = local_counters,
    .close = local_close,
};

static struct store *local_open(const struct store_opts *o, char *err, size_t errlen)
{
	struct store_local *s = calloc(1, sizeof(*s));
	struct json_object *saved;

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->base.ops = &local_ops;
	snprintf(s->dir, sizeof(s->dir), "%s", o->state_dir);
	kvmap_init(&s->map);
	kvmap_init(&s->leased);
	saved = statefile_read(s->dir, DECISIONS_FILE);
	if (!saved && errno != ENOENT)
		log_warn("%s/%s unreadable (%s): starting without earlier decisions", s->dir,
			 DECISIONS_FILE, strerror(errno));
	if (saved) {
		json_object_object_foreach (saved, k, v) {
			if (json_object_is_type(v, json_type_string))
				kvmap_set(&s->map, k, json_object_get_string(v));
		}
		json_object_put(saved);
	}
	if (local_prune(s))
		local_save(s);
	return &s->base;
}

/* ---- the interface ---- */
struct store *store_open(const struct store_opts *o, char *err, size_t errlen)
{
	uint64_t at = clock_mono_ns() / 1000000;
	struct store *s = o->endpoints && *o->endpoints ? store_etcd_open(o, err, errlen)
							: local_open(o, err, errlen);

	if (s)
		s->opened_ms = at;
	return s;
}

uint64_t store_opened_ms(const struct store *s)
{
	return s->opened_ms;
}

void store_close(struct store *s)
{
	if (s)
		s->ops->close(s);
}

int store_shared(const struct store *s)
{
	return s->ops != &local_ops;
}

int store_reachable(struct store *s, uint64_t *last_ok_ms)
{
	return s->ops->reachable(s, last_ok_ms);
}

int store_claim(struct store *s, const char *key, const char *value)
{
	return s->ops->claim(s, key, value);
}

int store_put(struct store *s, const char *key, const char *value, int leased)
{
	return s->ops->put(s, key, value, leased);
}

int store_delete_prefix(struct store *s, const char *prefix)
{
	return s->ops->delete_prefix(s, prefix);
}

char *store_get(struct store *s, const char *key)
{
	return s->ops->get(s, key);
}

int store_list(struct store *s, const char *prefix,
	       int (*fn)(void *ctx, const char *key, const char *value), void *ctx)
{
	return s->ops->list(s, prefix, fn, ctx);
}

int64_t store_lease(struct store *s)
{
	uint64_t at;

	return s->ops->lease ? s->ops->lease(s, &at) : 0;
}

int64_t store_lease_renewed(struct store *s, uint64_t *ret_renewed_ms)
{
	*ret_renewed_ms = 0;
	return s->ops->lease ? s->ops->lease(s, ret_renewed_ms) : 0;
}

int store_lease_left(struct store *s, int64_t lease, int64_t *ret_s, uint64_t *ret_at_ms)
{
	return s->ops->lease_left ? s->ops->lease_left(s, lease, ret_s, ret_at_ms) : -ENOTSUP;
}

uint64_t store_rejected(struct store *s, char *key, size_t klen, char *why, size_t wlen)
{
	return s->ops->rejected ? s->ops->rejected(s, key, klen, why, wlen) : 0;
}

uint64_t store_bad_replies(struct store *s, char *why, size_t wlen)
{
	return s->ops->bad_replies ? s->ops->bad_replies(s, why, wlen) : 0;
}

struct json_object *store_json(struct store *s)
{
	struct json_object *o = json_object_new_object(), *c = json_object_new_object();
	uint64_t last = 0;
	int ok = store_reachable(s, &last);

	jstr(o, "kind", s->ops->kind);
	jbool(o, "shared", store_shared(s));
	jbool(o, "reachable", ok);
	jdbl(o, "last_ok_s_ago", last ? (double)(clock_mono_ns() / 1000000 - last) / 1000.0 : -1.0);
	s->ops->counters(s, c);
	json_object_object_add(o, "counters", c);
	return o;
}
