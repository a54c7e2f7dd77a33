/* Coordinated decisions, pure logic: see decisions.h. */
#include "lib/decisions.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonx.h"

static const char *const cause_names[DEC_CAUSE__N] = {
    [DEC_CAUSE_NONE] = "",
    [DEC_CAUSE_PREEMPTION] = "preemption",
    [DEC_CAUSE_RANK_DIED] = "rank_died",
    [DEC_CAUSE_HANG] = "hang",
    [DEC_CAUSE_NODE_DEAD] = "node_dead",
    [DEC_CAUSE_OPERATOR] = "operator",
};

const char *dec_cause_name(enum dec_cause c)
{
	return (unsigned)c < DEC_CAUSE__N ? cause_names[c] : "";
}

int dec_cause_parse(const char *name)
{
	for (int i = 0; i < DEC_CAUSE__N; i++)
		if (!strcmp(name, cause_names[i]))
			return i;
	return -EINVAL;
}

int dec_node_valid(const char *node)
{
	size_t n = strlen(node);

	if (n == 0 || n >= DEC_NODE_LEN)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = node[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == ':' || c == '-'))
			return 0;
	}
	return 1;
}

/* ---- JSON values ---- */
static int emit(struct json_object *o, char *buf, size_t len)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	int r = strlen(s) < len ? 0 : -ENOSPC;

	if (r == 0)
		memcpy(buf, s, strlen(s) + 1);
	json_object_put(o);
	return r;
}

/* An object parsed from json, NULL when it is not one. */
static struct json_object *object_of(const char *json)
{
	struct json_object *o;

	if (!json || strlen(json) > DEC_VALUE_MAX)
		return NULL;
	o = json_tokener_parse(json);
	if (o && !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* Field getters: 0, or -EINVAL when absent (unless optional) or of the wrong type. */
static int get_i64(struct json_object *o, const char *k, int64_t *v, int optional)
{
	struct json_object *x;

	if (!json_object_object_get_ex(o, k, &x))
		return optional ? 0 : -EINVAL;
	if (!json_object_is_type(x, json_type_int))
		return -EINVAL;
	*v = json_object_get_int64(x);
	return 0;
}

static int get_u64(struct json_object *o, const char *k, uint64_t *v, int optional)
{
	int64_t x = 0;
	int r = get_i64(o, k, &x, optional);

	if (r < 0 || x < 0)
		return -EINVAL;
	if (json_object_object_get_ex(o, k, NULL))
		*v = (uint64_t)x;
	return 0;
}

static int get_int(struct json_object *o, const char *k, int *v, int min, int max, int optional)
{
	int64_t x = *v;

	if (get_i64(o, k, &x, optional) < 0 || x < min || x > max)
		return -EINVAL;
	*v = (int)x;
	return 0;
}

static int get_str(struct json_object *o, const char *k, char *buf, size_t len, int optional)
{
	struct json_object *x;
	const char *s;

	if (!json_object_object_get_ex(o, k, &x))
		return optional ? 0 : -EINVAL;
	if (!json_object_is_type(x, json_type_string) || !(s = json_object_get_string(x)) ||
	    strlen(s) >= len)
		return -EINVAL;
	memcpy(buf, s, strlen(s) + 1);
	return 0;
}

static int get_cause(struct json_object *o, enum dec_cause *c)
{
	char name[32];
	int r = get_str(o, "cause", name, sizeof(name), 0);

	if (r == 0 && (r = dec_cause_parse(name)) >= 0)
		*c = (enum dec_cause)r;
	return r < 0 ? -EINVAL : 0;
}

int dec_gen_format(const struct dec_gen *d, char *buf, size_t len)
{
	struct json_object *o = json_object_new_object(), *ex = json_object_new_array();

	jint(o, "generation", (int64_t)d->generation);
	jstr(o, "cause", dec_cause_name(d->cause));
	jbool(o, "stop", d->stop);
	jint(o, "resume_step", d->resume_step);
	jstr(o, "node", d->node);
	jstr(o, "by", d->by);
	for (int i = 0; i < d->nexcluded && i < DEC_MAX_EXCLUDED; i++)
		json_object_array_add(ex, json_object_new_string(d->excluded[i]));
	json_object_object_add(o, "excluded", ex);
	jint(o, "at_ms", (int64_t)d->at_ms);
	jstr(o, "why", d->why);
	if (d->world > 0)
		jint(o, "world", d->world);
	return emit(o, buf, len);
}

int dec_gen_parse(const char *json, struct dec_gen *d)
{
	struct json_object *o = object_of(json), *ex, *b;
	int r = o ? 0 : -EINVAL;

	memset(d, 0, sizeof(*d));
	d->resume_step = -1;
	if (r == 0)
		r = get_u64(o, "generation", &d->generation, 0);
	if (r == 0)
		r = get_cause(o, &d->cause);
	if (r == 0 && json_object_object_get_ex(o, "stop", &b)) {
		if (json_object_is_type(b, json_type_boolean))
			d->stop = json_object_get_boolean(b);
		else
			r = -EINVAL;
	}
	if (r == 0)
		r = get_i64(o, "resume_step", &d->resume_step, 1);
	if (r == 0 && d->resume_step < -1)
		r = -EINVAL;
	if (r == 0)
		r = get_str(o, "node", d->node, sizeof(d->node), 1);
	if (r == 0)
		r = get_str(o, "by", d->by, sizeof(d->by), 1);
	if (r == 0)
		r = get_u64(o, "at_ms", &d->at_ms, 1);
	if (r == 0)
		r = get_str(o, "why", d->why, sizeof(d->why), 1);
	if (r == 0)
		r = get_int(o, "world", &d->world, 0, 1 << 24, 1);
	if (r == 0 && json_object_object_get_ex(o, "excluded", &ex)) {
		if (!json_object_is_type(ex, json_type_array) ||
		    json_object_array_length(ex) > DEC_MAX_EXCLUDED)
			r = -EINVAL;
		for (size_t i = 0; r == 0 && i < json_object_array_length(ex); i++) {
			struct json_object *x = json_object_array_get_idx(ex, i);
			const char *s = json_object_get_string(x);

			if (!json_object_is_type(x, json_type_string) || !dec_node_valid(s))
				r = -EINVAL;
			else
				snprintf(d->excluded[d->nexcluded++], DEC_NODE_LEN, "%s", s);
		}
	}
	if (r == 0 && d->generation == 0)
		r = -EINVAL; /* generation 0 is the first run: never decided */
	json_object_put(o);
	return r;
}

int dec_ckpt_format(const struct dec_ckpt *c, char *buf, size_t len)
{
	struct json_object *o = json_object_new_object();

	jint(o, "generation", (int64_t)c->generation);
	jint(o, "id", (int64_t)c->id);
	jint(o, "target", c->target);
	jstr(o, "cause", dec_cause_name(c->cause));
	jstr(o, "by", c->by);
	jint(o, "at_ms", (int64_t)c->at_ms);
	jstr(o, "why", c->why);
	return emit(o, buf, len);
}

int dec_ckpt_parse(const char *json, struct dec_ckpt *c)
{
	struct json_object *o = object_of(json);
	int r = o ? 0 : -EINVAL;

	memset(c, 0, sizeof(*c));
	if (r == 0)
		r = get_u64(o, "generation", &c->generation, 0);
	if (r == 0)
		r = get_u64(o, "id", &c->id, 0);
	if (r == 0)
		r = get_i64(o, "target", &c->target, 0);
	if (r == 0 && c->target < 0)
		r = -EINVAL;
	if (r == 0)
		r = get_cause(o, &c->cause);
	if (r == 0)
		r = get_str(o, "by", c->by, sizeof(c->by), 1);
	if (r == 0)
		r = get_u64(o, "at_ms", &c->at_ms, 1);
	if (r == 0)
		r = get_str(o, "why", c->why, sizeof(c->why), 1);
	if (r == 0 && c->id == 0)
		r = -EINVAL;
	json_object_put(o);
	return r;
}

int dec_report_format(const struct dec_report *rp, char *buf, size_t len)
{
	struct json_object *o = json_object_new_object();

	jint(o, "ranks", rp->ranks);
	jint(o, "saved", rp->saved);
	jint(o, "max_step", rp->max_step);
	jint(o, "world", rp->world);
	jint(o, "acked", rp->acked);
	jint(o, "max_ack", rp->max_ack);
	jint(o, "missed", rp->missed);
	if (rp->failed) /* absent when none: an older agent's parser is not asked to know it */
		jint(o, "failed", rp->failed);
	return emit(o, buf, len);
}

int dec_report_parse(const char *json, struct dec_report *rp)
{
	struct json_object *o = object_of(json);
	int r = o ? 0 : -EINVAL;

	memset(rp, 0, sizeof(*rp));
	rp->max_step = rp->max_ack = -1;
	if (r == 0)
		r = get_int(o, "ranks", &rp->ranks, 0, 1 << 20, 0);
	if (r == 0)
		r = get_int(o, "saved", &rp->saved, 0, 1 << 20, 0);
	if (r == 0)
		r = get_i64(o, "max_step", &rp->max_step, 0);
	if (r == 0 && rp->max_step < -1)
		r = -EINVAL;
	if (r == 0)
		r = get_int(o, "world", &rp->world, 0, 1 << 24, 1);
	if (r == 0)
		r = get_int(o, "acked", &rp->acked, 0, 1 << 20, 1);
	if (r == 0)
		r = get_i64(o, "max_ack", &rp->max_ack, 1);
	if (r == 0 && rp->max_ack < -1)
		r = -EINVAL;
	if (r == 0)
		r = get_int(o, "missed", &rp->missed, 0, 1 << 20, 1);
	if (r == 0)
		r = get_int(o, "failed", &rp->failed, 0, 1 << 20, 1);
	json_object_put(o);
	return r;
}

int dec_done_format(const struct dec_done *d, char *buf, size_t len)
{
	struct json_object *o = json_object_new_object();

	jint(o, "step", d->step);
	jint(o, "at_ms", (int64_t)d->at_ms);
	if (*d->by)
		jstr(o, "by", d->by);
	return emit(o, buf, len);
}

int dec_done_parse(const char *json, struct dec_done *d)
{
	struct json_object *o = object_of(json);
	int r = o ? 0 : -EINVAL;

	memset(d, 0, sizeof(*d));
	if (r == 0)
		r = get_i64(o, "step", &d->step, 0);
	if (r == 0 && d->step < 0)
		r = -EINVAL;
	if (r == 0)
		r = get_u64(o, "at_ms", &d->at_ms, 1);
	if (r == 0)
		r = get_str(o, "by", d->by, sizeof(d->by), 1);
	if (r == 0 && *d->by && !dec_node_valid(d->by))
		r = -EINVAL;
	json_object_put(o);
	return r;
}

int dec_out_format(const struct dec_out *x, char *buf, size_t len)
{
	struct json_object *o = json_object_new_object();

	jint(o, "ranks", x->ranks);
	if (*x->by)
		jstr(o, "by", x->by);
	return emit(o, buf, len);
}

int dec_out_parse(const char *json, struct dec_out *x)
{
	struct json_object *o = object_of(json);
	int r = o ? 0 : -EINVAL;

	memset(x, 0, sizeof(*x));
	if (r == 0)
		r = get_int(o, "ranks", &x->ranks, 0, 1 << 20, 0);
	if (r == 0)
		r = get_str(o, "by", x->by, sizeof(x->by), 1);
	if (r == 0 && *x->by && !dec_node_valid(x->by))
		r = -EINVAL;
	json_object_put(o);
	return r;
}

int dec_member_format(const struct dec_member *m, char *buf, size_t len)
{
	struct json_object *o = json_object_new_object();

	jint(o, "ranks", m->ranks);
	jint(o, "generation", (int64_t)m->generation);
	jbool(o, "excluded", m->excluded);
	if (m->lease > 0) {
		jint(o, "lease", m->lease);
		jint(o, "lease_ttl_s", m->lease_ttl_s);
	}
	if (*m->mesh)
		jstr(o, "mesh", m->mesh);
	return emit(o, buf, len);
}

int dec_member_parse(const char *json, struct dec_member *m)
{
	struct json_object *o = object_of(json);
	int r = o ? 0 : -EINVAL;

	memset(m, 0, sizeof(*m));
	if (r == 0)
		r = get_int(o, "ranks", &m->ranks, 0, 1 << 20, 0);
	if (r == 0)
		r = get_u64(o, "generation", &m->generation, 1);
	if (r == 0) {
		struct json_object *b;

		if (json_object_object_get_ex(o, "excluded", &b)) {
			if (json_object_is_type(b, json_type_boolean))
				m->excluded = json_object_get_boolean(b);
			else
				r = -EINVAL;
		}
	}
	if (r == 0 && json_object_object_get_ex(o, "lease", NULL)) { /* optional, together */
		uint64_t l = 0;

		r = get_u64(o, "lease", &l, 1);
		m->lease = (int64_t)l;
		m->lease_ttl_s = 5;
		if (r == 0)
			r = get_int(o, "lease_ttl_s", &m->lease_ttl_s, 1, 3600, 1);
		if (r == 0 && (int64_t)l < 0)
			r = -EINVAL;
	}
	if (r == 0 && json_object_object_get_ex(o, "mesh", NULL)) { /* optional: a node name */
		r = get_str(o, "mesh", m->mesh, sizeof(m->mesh), 1);
		if (r == 0 && !dec_node_valid(m->mesh))
			r = -EINVAL;
	}
	json_object_put(o);
	return r;
}

int dec_bind_format(const struct dec_bind *b, char *buf, size_t len)
{
	struct json_object *o = json_object_new_object();

	jint(o, "target", b->target);
	jint(o, "at_ms", (int64_t)b->at_ms);
	return emit(o, buf, len);
}

int dec_bind_parse(const char *json, struct dec_bind *b)
{
	struct json_object *o = object_of(json);
	int r = o ? 0 : -EINVAL;

	memset(b, 0, sizeof(*b));
	if (r == 0)
		r = get_i64(o, "target", &b->target, 0);
	if (r == 0 && b->target < 0)
		r = -EINVAL;
	if (r == 0)
		r = get_u64(o, "at_ms", &b->at_ms, 1);
	json_object_put(o);
	return r;
}

int dec_run_format(const struct dec_run *rn, char *buf, size_t len)
{
	struct json_object *o = json_object_new_object();

	jint(o, "run", (int64_t)rn->run);
	jint(o, "resume_step", rn->resume_step);
	jstr(o, "by", rn->by);
	jint(o, "at_ms", (int64_t)rn->at_ms);
	if (rn->launch[0])
		jstr(o, "launch", rn->launch);
	return emit(o, buf, len);
}

int dec_run_parse(const char *json, struct dec_run *rn)
{
	struct json_object *o = object_of(json);
	int r = o ? 0 : -EINVAL;

	memset(rn, 0, sizeof(*rn));
	rn->resume_step = -1;
	if (r == 0)
		r = get_u64(o, "run", &rn->run, 0);
	if (r == 0)
		r = get_i64(o, "resume_step", &rn->resume_step, 1);
	if (r == 0 && (rn->resume_step < -1 || rn->run == 0))
		r = -EINVAL;
	if (r == 0)
		r = get_str(o, "by", rn->by, sizeof(rn->by), 1);
	if (r == 0)
		r = get_u64(o, "at_ms", &rn->at_ms, 1);
	if (r == 0)
		r = get_str(o, "launch", rn->launch, sizeof(rn->launch), 1);
	json_object_put(o);
	return r;
}

int dec_launches_format(const struct dec_launches *l, char *buf, size_t len)
{
	struct json_object *o = json_object_new_object();

	jint(o, "run", (int64_t)l->run);
	jstr(o, "id", l->id);
	jstr(o, "by", l->by);
	jint(o, "at_ms", (int64_t)l->at_ms);
	return emit(o, buf, len);
}

int dec_launches_parse(const char *json, struct dec_launches *l)
{
	struct json_object *o = object_of(json);
	int r = o ? 0 : -EINVAL;

	memset(l, 0, sizeof(*l));
	if (r == 0)
		r = get_u64(o, "run", &l->run, 0);
	if (r == 0 && l->run == 0)
		r = -EINVAL;
	if (r == 0)
		r = get_str(o, "id", l->id, sizeof(l->id), 0);
	if (r == 0)
		r = get_str(o, "by", l->by, sizeof(l->by), 1);
	if (r == 0)
		r = get_u64(o, "at_ms", &l->at_ms, 1);
	json_object_put(o);
	return r;
}

int dec_launch_format(const struct dec_launch *l, char *buf, size_t len)
{
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();

	jint(o, "run", (int64_t)l->run);
	for (int i = 0; i < l->nlaunchers && i < DEC_MAX_LAUNCHERS; i++)
		json_object_array_add(a, json_object_new_string(l->launchers[i]));
	json_object_object_add(o, "launchers", a);
	return emit(o, buf, len);
}

int dec_launch_parse(const char *json, struct dec_launch *l)
{
	struct json_object *o = object_of(json), *a;
	int r = o ? 0 : -EINVAL;

	memset(l, 0, sizeof(*l));
	if (r == 0)
		r = get_u64(o, "run", &l->run, 0);
	if (r == 0 && (!json_object_object_get_ex(o, "launchers", &a) ||
		       !json_object_is_type(a, json_type_array) ||
		       json_object_array_length(a) > DEC_MAX_LAUNCHERS))
		r = -EINVAL;
	for (size_t i = 0; r == 0 && i < json_object_array_length(a); i++) {
		struct json_object *x = json_object_array_get_idx(a, i);
		const char *v = json_object_get_string(x);

		if (!json_object_is_type(x, json_type_string) || strlen(v) >= 40)
			r = -EINVAL;
		else
			snprintf(l->launchers[l->nlaunchers++], 40, "%s", v);
	}
	json_object_put(o);
	return r;
}

/* ---- keys ---- */
void dec_key_bind(char *buf, size_t len, uint64_t g, uint64_t n)
{
	snprintf(buf, len, "bind/%020" PRIu64 "/%020" PRIu64, g, n);
}

void dec_key_out(char *buf, size_t len, uint64_t g, const char *node)
{
	snprintf(buf, len, "out/%020" PRIu64 "/%s", g, node);
}

void dec_key_run(char *buf, size_t len, uint64_t r)
{
	snprintf(buf, len, "run/%020" PRIu64, r);
}

void dec_key_launch(char *buf, size_t len, const char *node)
{
	snprintf(buf, len, "launch/%s", node);
}

void dec_key_launches(char *buf, size_t len, const char *key)
{
	snprintf(buf, len, "launches/%s", key);
}

void dec_key_gen(char *buf, size_t len, uint64_t g)
{
	snprintf(buf, len, "gen/%020" PRIu64, g);
}

void dec_key_ckpt(char *buf, size_t len, uint64_t g, uint64_t n)
{
	snprintf(buf, len, "ckpt/%020" PRIu64 "/%020" PRIu64, g, n);
}

void dec_key_done(char *buf, size_t len, uint64_t g, uint64_t n)
{
	snprintf(buf, len, "done/%020" PRIu64 "/%020" PRIu64, g, n);
}

void dec_key_report(char *buf, size_t len, uint64_t g, uint64_t n, const char *node)
{
	snprintf(buf, len, "saved/%020" PRIu64 "/%020" PRIu64 "/%s", g, n, node);
}

void dec_key_member(char *buf, size_t len, const char *node)
{
	snprintf(buf, len, "members/%s", node);
}

/* A 20-digit number at *p; advances p. */
static int number(const char **p, uint64_t *v)
{
	uint64_t x = 0;

	for (int i = 0; i < 20; i++) {
		if ((*p)[i] < '0' || (*p)[i] > '9')
			return -EINVAL;
		if (x > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		x = x * 10 + (uint64_t)((*p)[i] - '0');
	}
	*p += 20;
	*v = x;
	return 0;
}

int dec_key_numbers(const char *key, const char *kind, uint64_t *g, uint64_t *n)
{
	size_t k = strlen(kind);
	const char *p = key;

	if (strncmp(p, kind, k) || p[k] != '/')
		return -EINVAL;
	p += k + 1;
	if (number(&p, g) < 0)
		return -EINVAL;
	if (!n)
		return *p ? -EINVAL : 0;
	if (*p++ != '/' || number(&p, n) < 0 || *p)
		return -EINVAL;
	return 0;
}

/* ---- rules ---- */
int64_t dec_target(int64_t max_step, int margin)
{
	if (margin < 1)
		margin = 1;
	return (max_step < 0 ? 0 : max_step) + margin;
}

int dec_retarget(const struct dec_ckpt *ck, const struct dec_report *local)
{
	return local->max_step > ck->target && local->saved < local->ranks;
}

int dec_budget_spent(const uint64_t *at_ms, int n, uint64_t now_ms, int max_restarts,
		     double window_s)
{
	uint64_t window = (uint64_t)(window_s * 1000);
	int recent = 0;

	if (max_restarts < 0)
		return 0; /* no budget: restart forever */
	for (int i = 0; i < n; i++)
		if (at_ms[i] <= now_ms && now_ms - at_ms[i] <= window)
			recent++;
	return recent >= max_restarts;
}

/* ---- the shared store's timing ---- */
uint64_t dec_lease_renew_ms(int ttl_s)
{
	uint64_t third = ttl_s > 0 ? (uint64_t)ttl_s * 1000 / 3 : 0;

	return third < 500 ? third : 500;
}

double dec_hold_after_s(int ttl_s, double fence_after_s)
{
	double hold = ttl_s / 2.0;

	return hold > fence_after_s ? fence_after_s : hold;
}

#define REACHABLE_MAX_MS 4000

uint64_t dec_reachable_ms(int ttl_s, double fence_after_s)
{
	uint64_t hold = (uint64_t)(dec_hold_after_s(ttl_s, fence_after_s) * 1000);
	uint64_t w = hold < REACHABLE_MAX_MS ? hold : REACHABLE_MAX_MS;
	uint64_t floor = 2 * dec_lease_renew_ms(ttl_s);

	return w > floor ? w : floor;
}

uint64_t dec_unreachable_ms(int reachable, uint64_t last_ok_ms, uint64_t opened_ms, uint64_t now_ms)
{
	uint64_t since = last_ok_ms ? last_ok_ms : opened_ms;

	return reachable || !since || since > now_ms ? 0 : now_ms - since;
}

const char *dec_key_node(const char *key)
{
	const char *c[5] = {NULL};
	int n = 0;

	/* the last five components, newest first */
	for (const char *p = key + strlen(key); p > key && n < 5;) {
		const char *q = p;

		while (q > key && q[-1] != '/')
			q--;
		c[n++] = q;
		p = q > key ? q - 1 : key;
	}
	if (n >= 2 && (!strncmp(c[1], "members/", 8) || !strncmp(c[1], "launch/", 7)))
		return c[0];
	if (n >= 4 && !strncmp(c[3], "saved/", 6))
		return c[0];
	return NULL;
}
