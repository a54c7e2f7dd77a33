/* What the store holds for one run of a job, read into struct dp_records (decide_load.h). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/decide_load.h"
#include "lib/decide_records.h"

struct load_ctx {
	const char *prefix;
	struct dp_records *r;
	const struct dl_reader *rd;
	int members_only; /* with the node keys: decisions only by the run's members */
};

/* A record that is not what it says (malformed, too big, of another shape): not followed, and
 * said to the reader's owner. */
static void refuse(struct load_ctx *lc, const char *key, const char *value, const char *why)
{
	if (lc->rd->refuse)
		lc->rd->refuse(lc->rd->ctx, key, value, why);
}

/* Is node a member of the run (a members/ record of its own)? */
static int is_member(const struct dp_records *r, const char *node)
{
	return dp_member(r, node) != NULL;
}

/* First pass: the run's members (a decision is then bound to them). */
static int load_member(void *ctx, const char *key, const char *value)
{
	struct load_ctx *lc = ctx;
	struct dp_records *r = lc->r;
	const char *k = key + strlen(lc->prefix);
	struct dec_member m;
	int rc;

	if (strncmp(k, "members/", 8))
		return 0;
	if (!dec_node_valid(k + 8) || dec_member_parse(value, &m) < 0)
		refuse(lc, key, value, "malformed member record");
	else if ((rc = dr_add_member(r, k + 8, &m)) == -ENOMEM)
		refuse(lc, key, value, "member record not followed: out of memory");
	else if (rc < 0)
		refuse(lc, key, value, "member record of a node already a member");
	return 0;
}

static int load_one(void *ctx, const char *key, const char *value)
{
	struct load_ctx *lc = ctx;
	struct dp_records *r = lc->r;
	const char *k = key + strlen(lc->prefix);
	uint64_t g;

	if (dec_key_numbers(k, "gen", &g, NULL) == 0) {
		struct dec_gen x;

		if (dec_gen_parse(value, &x) < 0 || x.generation != g) {
			refuse(lc, key, value, "malformed generation record");
			return 0; /* malformed: not ours to follow */
		}
		/* with the node keys, its signer is x.by (store_etcd.c): one of the run's nodes */
		if (lc->members_only && !is_member(r, x.by)) {
			refuse(lc, key, value, "decided by a node that is no member of the run");
			return 0;
		}
		if (!x.stop && x.cause != DEC_CAUSE_PREEMPTION && x.cause != DEC_CAUSE_OPERATOR &&
		    r->nfail < DP_MAX_GENS)
			r->fail_at[r->nfail++] = x.at_ms;
		if (*x.node && r->nfault < DP_MAX_GENS)
			snprintf(r->fault_node[r->nfault++], DEC_NODE_LEN, "%s", x.node);
		if (g > r->gen) {
			r->gen = g;
			r->g = x;
		}
	} else if (!strncmp(k, "members/", 8)) {
		/* read by load_member */
	} else if (strncmp(k, "ckpt/", 5) && strncmp(k, "done/", 5) && strncmp(k, "bind/", 5) &&
		   strncmp(k, "saved/", 6) && strncmp(k, "out/", 4)) {
		refuse(lc, key, value, "not a decision key");
	}
	return 0;
}

/* Second pass: the current generation's checkpoint request. */
static int load_ckpt(void *ctx, const char *key, const char *value)
{
	struct load_ctx *lc = ctx;
	struct dp_records *r = lc->r;
	const char *k = key + strlen(lc->prefix);
	uint64_t g, n;

	if (dec_key_numbers(k, "ckpt", &g, &n) == 0) {
		struct dec_ckpt x;

		if (dec_ckpt_parse(value, &x) < 0 || x.id != n || x.generation != g)
			refuse(lc, key, value, "malformed checkpoint record");
		else if (lc->members_only && !is_member(r, x.by))
			refuse(lc, key, value, "asked by a node that is no member of the run");
		else if (g == r->gen && n > r->ck_n) { /* I4: only the current generation's */
			r->ck_n = n;
			r->ck = x;
		}
	} else if (!strncmp(k, "out/", 4)) { /* out/<g>/<node>: left out of g as it runs */
		char gs[32];
		const char *node = strchr(k + 4, '/');
		struct dec_out x;
		int cur, bad;

		if (!node || node - (k + 4) != 20 || !dec_node_valid(node + 1)) {
			refuse(lc, key, value, "malformed left-out record");
			return 0;
		}
		snprintf(gs, sizeof(gs), "gen/%.20s", k + 4);
		cur = dec_key_numbers(gs, "gen", &g, NULL) == 0 && g == r->gen;
		bad = dec_out_parse(value, &x) < 0;
		if (bad || !dp_out_believed(r, &x, lc->members_only)) {
			refuse(lc, key, value,
			       bad ? "malformed left-out record"
				   : "left out by a node that is no member of the run");
			/* ours goes over it (without the memory to note it: ours is claimed, and
			 * refused, until there is) */
			if (cur && dr_add_out_refused(r, node + 1) < 0)
				refuse(lc, key, value, "refused left-out record: out of memory");
			return 0;
		}
		if (cur && dr_add_out(r, node + 1, x.ranks) < 0)
			refuse(lc, key, value, "left-out record not followed: out of memory");
	} else if (dec_key_numbers(k, "done", &g, &n) == 0) {
		char bkey[DEC_KEY_LEN * 3], rel[DEC_KEY_LEN], *bv;
		struct dec_bind b;
		struct dec_done dn;
		int rc;

		if (g !=
		    r->gen) { /* I3, I4: only this generation's count; the others are checked */
			struct dec_done x;

			if (dec_done_parse(value, &x) < 0)
				refuse(lc, key, value, "malformed completion record");
			return 0;
		}
		dec_key_bind(rel, sizeof(rel), g, n);
		snprintf(bkey, sizeof(bkey), "%s%s", lc->prefix, rel);
		bv = lc->rd->get(lc->rd->ctx, bkey);
		rc = dp_done_step(r, bv && dec_bind_parse(bv, &b) == 0 ? &b : NULL, value, &dn);
		free(bv);
		if (rc == -EINVAL)
			refuse(lc, key, value, "malformed completion record");
		else if (rc == -EPERM)
			refuse(lc, key, value, "completed by a node that is no member of the run");
		else if (rc < 0)
			refuse(lc, key, value,
			       "completion record of a step its request was not bound to");
		else if (dn.step > r->last_complete)
			r->last_complete = dn.step;
	}
	return 0;
}

static int load_reports(void *ctx, const char *key, const char *value)
{
	struct dp_records *r = ((struct load_ctx *)ctx)->r;
	const char *node = strrchr(key, '/') + 1;
	struct dec_report x;
	int rc;

	if (!dec_node_valid(node))
		refuse(ctx, key, value, "report of no valid node");
	else if (dec_report_parse(value, &x) < 0)
		refuse(ctx, key, value, "malformed report");
	else if ((rc = dr_add_report(r, node, &x)) == -ENOMEM)
		refuse(ctx, key, value, "report not followed: out of memory");
	else if (rc < 0)
		refuse(ctx, key, value, "second report of a node");
	return 0;
}

/* The run record's resume step (-1 none); *ret_known: the record is there. */
static int64_t run_resume(const struct dl_reader *rd, const char *jprefix, uint64_t run,
			  int *ret_known)
{
	char key[DEC_KEY_LEN * 3], rel[DEC_KEY_LEN], *v;
	struct dec_run x;
	int64_t step = -1;

	dec_key_run(rel, sizeof(rel), run);
	snprintf(key, sizeof(key), "%s%s", jprefix, rel);
	v = rd->get(rd->ctx, key);
	*ret_known = v && dec_run_parse(v, &x) == 0;
	if (*ret_known)
		step = x.resume_step;
	free(v);
	return step;
}

void dl_begin(struct dp_records *r, uint64_t run, int members_only)
{
	memset(r, 0, offsetof(struct dp_records, fail_at));
	r->g.resume_step = -1;
	r->nfail = r->nfault = 0;
	dr_reset(r); /* the node tables keep their memory */
	r->ck_n = 0;
	r->ck_done = r->bound = r->done_refused = 0;
	r->done_at_ms = 0;
	r->run = run;
	r->members_only = members_only;
	r->run_resume = -1;
	r->last_complete = -1;
}

void dl_load(const struct dl_reader *rd, const char *jprefix, const char *prefix,
	     struct dp_records *r)
{
	struct load_ctx lc = {prefix, r, rd, r->members_only};
	char key[DEC_KEY_LEN * 3], rel[DEC_KEY_LEN], *v;

	if (!r->run)
		return; /* no rank registered here yet: nothing to follow */
	r->run_resume = run_resume(rd, jprefix, r->run, &r->run_known);
	rd->list(rd->ctx, prefix, load_member, &lc);
	rd->list(rd->ctx, prefix, load_one, &lc);
	r->last_complete = r->gen ? r->g.resume_step : r->run_resume;
	rd->list(rd->ctx, prefix, load_ckpt, &lc);
	if (!r->ck_n)
		return;
	dec_key_bind(rel, sizeof(rel), r->gen, r->ck_n);
	snprintf(key, sizeof(key), "%s%s", prefix, rel);
	if ((v = rd->get(rd->ctx, key))) {
		struct dec_bind b;

		if (dec_bind_parse(v, &b) == 0) {
			r->bound = 1;
			r->bind_target = b.target;
		} else {
			refuse(&lc, key, v, "malformed bind record");
		}
		free(v);
	}
	dec_key_done(rel, sizeof(rel), r->gen, r->ck_n);
	snprintf(key, sizeof(key), "%s%s", prefix, rel);
	v = rd->get(rd->ctx, key);
	/* I2: a malformed or another step's completion record is refused (load_ckpt), not
	 * taken for this request's completion */
	r->ck_done = dp_request_done(r, v, &r->done_at_ms);
	r->done_refused = v != NULL && !r->ck_done;
	free(v);
	dec_key_report(rel, sizeof(rel), r->gen, r->ck_n, "");
	snprintf(key, sizeof(key), "%s%s", prefix, rel);
	rd->list(rd->ctx, key, load_reports, &lc);
}
