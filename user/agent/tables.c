/* The per-user shares as the agent watches them: see tables.h. */
#include "agent/tables.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>

#include "agent/eventlog.h"
#include "agent/views.h"
#include "lib/jsonx.h"
#include "lib/shares.h"
#include "os/clock.h"
#include "watch/tracker.h"

#define SAY_EVERY_NS (60 * CLOCK_NS_PER_S)

struct user_seen {
	uint32_t uid;
	uint64_t refused[SHARE__N]; /* refusals said (or known at the start) */
	uint64_t said_ns[SHARE__N];
};

struct tables {
	struct tracker *tr;
	struct eventlog *el;
	struct user_seen *u; /* one per user with a count: at most FTBPF_USAGE_USERS */
	int n, cap;
	int64_t held[SHARE__N];
	uint64_t refused[SHARE__N];
	uint64_t now;
};

struct tables *tables_new(struct tracker *tr, struct eventlog *el)
{
	struct tables *tb = calloc(1, sizeof(*tb));

	if (tb) {
		tb->tr = tr;
		tb->el = el;
	}
	return tb;
}

void tables_free(struct tables *tb)
{
	if (!tb)
		return;
	free(tb->u);
	free(tb);
}

static struct user_seen *seen_of(struct tables *tb, uint32_t uid, int *ret_new)
{
	*ret_new = 0;
	for (int i = 0; i < tb->n; i++)
		if (tb->u[i].uid == uid)
			return &tb->u[i];
	if (tb->n == tb->cap) {
		int cap = tb->cap ? tb->cap * 2 : 16;
		struct user_seen *nu;

		if (cap > FTBPF_USAGE_USERS + 1)
			return NULL;
		nu = realloc(tb->u, (size_t)cap * sizeof(*nu));
		if (!nu)
			return NULL;
		tb->u = nu;
		tb->cap = cap;
	}
	tb->u[tb->n] = (struct user_seen){.uid = uid};
	*ret_new = 1;
	return &tb->u[tb->n++];
}

/* uid has refused places of table t in all: say the new ones, at most once a minute. */
static void say(struct tables *tb, struct user_seen *s, int t, uint64_t refused, int64_t held)
{
	const struct share_info *si = share_info(t);

	if (refused <= s->refused[t] || (s->said_ns[t] && tb->now - s->said_ns[t] < SAY_EVERY_NS))
		return;
	eventlog_emit(tb->el, view_share_full(si->name, s->uid, held, si->share, si->reserve,
					      refused - s->refused[t]));
	s->refused[t] = refused;
	s->said_ns[t] = tb->now;
}

void tables_refused(struct tables *tb, uid_t uid, int t, int64_t held, uint64_t now)
{
	struct user_seen *s;
	int fresh;

	if (t < 0 || t >= SHARE__N)
		return;
	tb->refused[t]++;
	tb->now = now;
	s = seen_of(tb, (uint32_t)uid, &fresh);
	if (s)
		say(tb, s, t, s->refused[t] + 1, held);
}

void tables_held(struct tables *tb, int t, int64_t held)
{
	if (t >= SHARE_KERNEL_N && t < SHARE__N)
		tb->held[t] = held;
}

struct tick_ctx {
	struct tables *tb;
};

static int tick_one(void *ctx, uint32_t uid, const struct ftbpf_usage *u)
{
	struct tables *tb = ((struct tick_ctx *)ctx)->tb;
	struct user_seen *s;
	int fresh;

	if (uid == FTBPF_UID_ALL) {
		for (int t = 0; t < SHARE_KERNEL_N; t++) {
			tb->held[t] = u->held[t];
			tb->refused[t] = u->refused[t];
		}
		return 0;
	}
	s = seen_of(tb, uid, &fresh);
	for (int t = 0; s && t < SHARE_KERNEL_N; t++) {
		if (fresh) /* refusals before this agent: said by the one before */
			s->refused[t] = u->refused[t];
		else
			say(tb, s, t, u->refused[t], u->held[t]);
	}
	return 0;
}

void tables_tick(struct tables *tb, uint64_t now)
{
	struct tick_ctx c = {tb};

	tb->now = now;
	tracker_usage_foreach(tb->tr, tick_one, &c);
}

void tables_status(const struct tables *tb, struct json_object *o, struct json_object *c)
{
	struct json_object *a = json_object_new_array();
	char key[64];

	for (int t = 0; t < SHARE__N; t++) {
		const struct share_info *si = share_info(t);
		struct json_object *r = json_object_new_object();

		jstr(r, "name", si->name);
		jint(r, "size", si->size);
		jint(r, "share", si->share);
		jint(r, "reserve", si->reserve);
		jint(r, "held", tb->held[t]);
		jint(r, "refused", (int64_t)tb->refused[t]);
		json_object_array_add(a, r);
		if (t == SHARE_ENDED)
			continue; /* never refused: the oldest is forgotten (ranks_forgotten_at_share) */
		snprintf(key, sizeof(key), "share_refused_%s", si->name);
		jint(c, key, (int64_t)tb->refused[t]);
	}
	json_object_object_add(o, "tables", a);
}
