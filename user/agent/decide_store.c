/* Decisions: what the store holds for a job; claims and puts. See decide_int.h. */
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/decide_int.h"
#include "agent/eventlog.h"
#include "agent/store.h"
#include "agent/timersvc.h"
#include "agent/views.h"
#include "ftbpf/slot.h"
#include "lib/config.h"
#include "lib/decisions.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "os/clock.h"
#include "os/log.h"
#include "os/pidfd.h"
#include "os/procfs.h"

/* ---- jobs ---- */
void dc_job_prefix(char *buf, size_t len, uid_t uid, const char *id)
{
	size_t o = (size_t)snprintf(buf, len, "jobs/%u/", (unsigned)uid);

	for (; *id && o + 5 < len; id++) {
		if (*id == '/' || *id == '%')
			o += (size_t)snprintf(buf + o, len - o, "%%%02X", (unsigned char)*id);
		else
			buf[o++] = *id;
	}
	snprintf(buf + o, len - o, "/");
}

/* ---- reading the store ---- */
static int load_one(void *ctx, const char *key, const char *value)
{
	struct djob *dj = ctx;
	const char *k = key + strlen(dj->prefix);
	uint64_t g, n;

	if (dec_key_numbers(k, "gen", &g, NULL) == 0) {
		struct dec_gen x;

		if (dec_gen_parse(value, &x) < 0 || x.generation != g)
			return 0; /* malformed: not ours to follow */
		if (!x.stop && x.cause != DEC_CAUSE_PREEMPTION && x.cause != DEC_CAUSE_OPERATOR &&
		    dj->nfail < MAX_GENS)
			dj->fail_at[dj->nfail++] = x.at_ms;
		if (*x.node && dj->nfault < MAX_GENS)
			snprintf(dj->fault_node[dj->nfault++], DEC_NODE_LEN, "%s", x.node);
		if (g > dj->gen) {
			dj->gen = g;
			dj->g = x;
		}
	} else if (dec_key_numbers(k, "done", &g, &n) == 0) {
		struct dec_done x;

		if (dec_done_parse(value, &x) == 0 && x.step > dj->last_complete)
			dj->last_complete = x.step;
	} else if (!strncmp(k, "members/", 8) && dj->nmem < MAX_NODES) {
		struct node_member *m = &dj->mem[dj->nmem];

		if (dec_node_valid(k + 8) && dec_member_parse(value, &m->m) == 0) {
			snprintf(m->node, sizeof(m->node), "%s", k + 8);
			dj->nmem++;
		}
	}
	return 0;
}

/* Second pass: the current generation's checkpoint request and the reports on it. */
static int load_ckpt(void *ctx, const char *key, const char *value)
{
	struct djob *dj = ctx;
	const char *k = key + strlen(dj->prefix);
	uint64_t g, n;

	if (dec_key_numbers(k, "ckpt", &g, &n) == 0 && g == dj->gen && n > dj->ck_n) {
		struct dec_ckpt x;

		if (dec_ckpt_parse(value, &x) == 0 && x.id == n && x.generation == g) {
			dj->ck_n = n;
			dj->ck = x;
		}
	}
	return 0;
}

static int load_reports(void *ctx, const char *key, const char *value)
{
	struct djob *dj = ctx;
	const char *node = strrchr(key, '/') + 1;
	struct node_report *r;

	if (dj->nrep == MAX_NODES || !dec_node_valid(node))
		return 0;
	r = &dj->rep[dj->nrep];
	if (dec_report_parse(value, &r->r) == 0) {
		snprintf(r->node, sizeof(r->node), "%s", node);
		dj->nrep++;
	}
	return 0;
}

void dc_load(struct decider *d, struct djob *dj)
{
	char key[DEC_KEY_LEN * 2], rel[DEC_KEY_LEN], *v;

	dj->gen = 0;
	memset(&dj->g, 0, sizeof(dj->g));
	dj->g.resume_step = -1;
	dj->nfail = dj->nfault = dj->nmem = dj->nrep = 0;
	dj->ck_n = 0;
	dj->ck_done = 0;
	dj->last_complete = -1;
	store_list(d->st, dj->prefix, load_one, dj);
	store_list(d->st, dj->prefix, load_ckpt, dj);
	if (!dj->ck_n)
		return;
	dec_key_done(rel, sizeof(rel), dj->gen, dj->ck_n);
	snprintf(key, sizeof(key), "%s%s", dj->prefix, rel);
	v = store_get(d->st, key);
	dj->ck_done = v != NULL;
	if (v) {
		struct dec_done dn;

		dj->done_at_ms = dec_done_parse(v, &dn) == 0 ? dn.at_ms : 0;
	}
	free(v);
	dec_key_report(rel, sizeof(rel), dj->gen, dj->ck_n, "");
	snprintf(key, sizeof(key), "%s%s", dj->prefix, rel);
	store_list(d->st, key, load_reports, dj);
}

const struct node_member *dc_member(const struct djob *dj, const char *node)
{
	for (int i = 0; i < dj->nmem; i++)
		if (!strcmp(dj->mem[i].node, node))
			return &dj->mem[i];
	return NULL;
}

int dc_excluded(const struct djob *dj, const char *node)
{
	for (int i = 0; i < dj->g.nexcluded; i++)
		if (!strcmp(dj->g.excluded[i], node))
			return 1;
	return 0;
}

/* ---- claims ---- */
int dc_can_decide(struct decider *d)
{
	uint64_t last;

	return store_reachable(d->st, &last);
}

int dc_claim(struct decider *d, struct djob *dj, const char *rel, const char *value)
{
	char key[DEC_KEY_LEN * 2];

	snprintf(key, sizeof(key), "%s%s", dj->prefix, rel);
	d->claims++;
	return store_claim(d->st, key, value);
}

void dc_put(struct decider *d, struct djob *dj, const char *rel, const char *value, int leased)
{
	char key[DEC_KEY_LEN * 2];

	snprintf(key, sizeof(key), "%s%s", dj->prefix, rel);
	store_put(d->st, key, value, leased);
}
