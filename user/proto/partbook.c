/* The cross-host part book: see partbook.h. */
#include "proto/partbook.h"

#include <stdlib.h>
#include <string.h>

#include "lib/growbuf.h"

void partbook_init(struct partbook *b)
{
	memset(b, 0, sizeof(*b));
}

void partbook_fini(struct partbook *b)
{
	free(b->rv);
	free(b->sv);
	memset(b, 0, sizeof(*b));
}

static int same_job(const struct jv_part *p, uint32_t uid, const char *job)
{
	return p->uid == uid && !strcmp(p->job, job);
}

static void drop(struct partbook *b, int i)
{
	b->rv[i] = b->rv[--b->nr];
}

int partbook_fresh_seq(struct partbook *b, const struct mesh_addr *from, uint64_t boot,
		       uint64_t seq)
{
	struct mesh_replay *w = NULL;

	for (int i = 0; i < b->ns && !w; i++)
		if (meshaddr_eq(&b->sv[i].a, from))
			w = &b->sv[i].r;
	if (!w && b->ns < PARTBOOK_MAX_REMOTE &&
	    !growbuf_items((void **)&b->sv, &b->scap, b->ns, sizeof(*b->sv))) {
		memset(&b->sv[b->ns], 0, sizeof(b->sv[0]));
		b->sv[b->ns].a = *from;
		w = &b->sv[b->ns++].r;
	}
	if (!w || mesh_proto_replay_check(w, boot, seq) != MESH_OK) {
		b->c.replayed++;
		return 0;
	}
	return 1;
}

static int shares_rank(const struct jv_part *a, const struct jv_part *b)
{
	for (int i = 0; i < a->nranks; i++)
		if (jobview_part_rank(b, a->ranks[i].rank) >= 0)
			return 1;
	return 0;
}

/* The same rank, process and communicator cannot go back. */
static int seq_went_back(const struct jv_part *old, const struct jv_part *pt)
{
	for (int k = 0; k < pt->nranks; k++) {
		int o = jobview_part_rank(old, pt->ranks[k].rank);
		const struct jv_rank *x = &pt->ranks[k], *y;

		if (o < 0)
			continue;
		y = &old->ranks[o];
		if (x->pid == y->pid && (x->flags & y->flags & JV_R_COMM) &&
		    x->comm_id == y->comm_id && x->comm_seq < y->comm_seq)
			return 1;
	}
	return 0;
}

/* Is what the part says believable next to what we know? PARTBOOK_ACCEPTED (with *ret_same
 * the index of the sender's earlier part of this chunk, or -1), or why not. */
static enum partbook_verdict believe(struct partbook *b, const struct part_packet *p, int member,
				     const struct job *j, int *ret_same)
{
	const struct jv_part *pt = &p->part;
	int w = job_world_size(j);

	*ret_same = -1;
	if (w > 0 && pt->world_size > 0 && w != pt->world_size)
		return PARTBOOK_WORLD_MISMATCH;
	for (int i = 0; i < pt->nranks; i++)
		if (job_holds_live(j, pt->ranks[i].rank))
			return PARTBOOK_CLAIMS_OURS; /* our ranks are ours: we see them */
	for (int i = 0; i < b->nr; i++) {
		struct partbook_remote *r = &b->rv[i];

		if (!same_job(&r->part, pt->uid, pt->job) || r->stale_ns)
			continue;
		if (meshaddr_eq(&r->from, &p->from)) {
			if (r->part.chunk != pt->chunk)
				continue;
			*ret_same = i;
			if (seq_went_back(&r->part, pt))
				return PARTBOOK_BAD_SEQ;
			continue;
		}
		if (!shares_rank(&r->part, pt))
			continue;
		/* two hosts claim a rank: a live member of the mesh beats a stranger; else the
		 * first claim holds until it expires */
		if (member && !r->member) {
			b->c.conflict++;
			drop(b, i--); /* (the sender's own part, if any, was before i: it stays) */
			continue;
		}
		return PARTBOOK_CONFLICT;
	}
	return PARTBOOK_ACCEPTED;
}

enum partbook_verdict partbook_offer(struct partbook *b, const struct part_packet *p, int member,
				     const struct job *j, uint64_t now)
{
	enum partbook_verdict v;
	struct partbook_remote *r;
	int same;

	v = believe(b, p, member, j, &same);
	switch (v) {
	case PARTBOOK_ACCEPTED:
		break;
	case PARTBOOK_WORLD_MISMATCH:
		b->c.world_mismatch++;
		return v;
	case PARTBOOK_CLAIMS_OURS:
		b->c.claims_ours++;
		return v;
	case PARTBOOK_BAD_SEQ:
		b->c.bad_seq++;
		return v;
	default:
		b->c.conflict++;
		return v;
	}
	if (same < 0) {
		if (b->nr >= PARTBOOK_MAX_REMOTE ||
		    growbuf_items((void **)&b->rv, &b->rcap, b->nr, sizeof(*b->rv)) < 0)
			return PARTBOOK_NO_ROOM;
		same = b->nr++;
		memset(&b->rv[same], 0, sizeof(b->rv[0]));
	}
	r = &b->rv[same];
	r->part = p->part;
	meshaddr_format(&p->from, r->part.node, sizeof(r->part.node));
	r->part.at_ns = now;
	r->part.stale = 0;
	r->from = p->from;
	r->boot = p->boot;
	r->member = member;
	r->expires_ns =
	    now +
	    (uint64_t)(p->ttl_ms < PARTBOOK_TTL_MS ? p->ttl_ms : PARTBOOK_TTL_MS) * PARTBOOK_MS;
	r->stale_ns = 0;
	r->want_reply |= !(p->flags & PART_F_REPLY);
	b->c.accepted++;
	if (p->flags & PART_F_GONE)
		r->part.nranks = r->part.nedges = r->part.nres = 0;
	return PARTBOOK_ACCEPTED;
}

const char *partbook_verdict_text(enum partbook_verdict v)
{
	switch (v) {
	case PARTBOOK_ACCEPTED:
		return "accepted";
	case PARTBOOK_WORLD_MISMATCH:
		return "another world size";
	case PARTBOOK_CLAIMS_OURS:
		return "ranks this host holds";
	case PARTBOOK_BAD_SEQ:
		return "NCCL sequence numbers went back";
	case PARTBOOK_CONFLICT:
		return "ranks another host holds";
	default:
		return "no room";
	}
}

void partbook_expire(struct partbook *b, const struct ranks *ranks, uint64_t now)
{
	for (int i = 0; i < b->nr; i++) {
		struct partbook_remote *r = &b->rv[i];

		if (!r->stale_ns && now >= r->expires_ns) {
			r->stale_ns = now;
			b->c.expired++;
		}
		if ((r->stale_ns && now - r->stale_ns > PARTBOOK_STALE_KEEP_NS) ||
		    !ranks_job_find(ranks, r->part.uid, r->part.job))
			drop(b, i--);
	}
}

void partbook_host_gone(struct partbook *b, const struct mesh_addr *a, uint64_t now)
{
	for (int i = 0; i < b->nr; i++)
		if (meshaddr_eq(&b->rv[i].from, a) && !b->rv[i].stale_ns) {
			b->rv[i].stale_ns = now;
			b->c.expired++;
		}
}

int partbook_is_job_host(const struct partbook *b, uint32_t uid, const char *job,
			 const struct mesh_addr *a)
{
	for (int i = 0; i < b->nr; i++)
		if (meshaddr_eq(&b->rv[i].from, a) && !b->rv[i].stale_ns &&
		    same_job(&b->rv[i].part, uid, job))
			return 1;
	return 0;
}

int partbook_holds_rank(const struct partbook *b, uint32_t uid, const char *job,
			const struct mesh_addr *from, int rank)
{
	for (int i = 0; i < b->nr; i++)
		if (!b->rv[i].stale_ns && same_job(&b->rv[i].part, uid, job) &&
		    meshaddr_eq(&b->rv[i].from, from) &&
		    jobview_part_rank(&b->rv[i].part, rank) >= 0)
			return 1;
	return 0;
}

int partbook_gather(const struct partbook *b, uint32_t uid, const char *job, struct jv_part *out,
		    int max)
{
	int n = 0;

	for (int pass = 0; pass < 2; pass++) /* fresh parts first, then the stale */
		for (int i = 0; i < b->nr && n < max; i++)
			if (same_job(&b->rv[i].part, uid, job) && !b->rv[i].stale_ns == !pass) {
				out[n] = b->rv[i].part;
				out[n++].stale = pass;
			}
	return n;
}

/* ---- sending ---- */
static uint32_t fnv(uint32_t h, const void *p, size_t n)
{
	const uint8_t *c = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 16777619u;
	return h;
}

uint32_t partbook_digest(const struct jv_part *c, int nc)
{
	uint32_t h = 2166136261u;

	for (int i = 0; i < nc; i++) {
		for (int k = 0; k < c[i].nranks; k++) {
			const struct jv_rank *r = &c[i].ranks[k];
			uint32_t moving =
			    r->progress_age_ms < PARTBOOK_PUBLISH_MIN_NS / PARTBOOK_MS;

			h = fnv(h, &r->rank, sizeof(r->rank));
			h = fnv(h, &r->state, 1);
			h = fnv(h, &r->flags, 1);
			h = fnv(h, &r->syscall, sizeof(r->syscall));
			h = fnv(h, &r->comm_seq, sizeof(r->comm_seq));
			h = fnv(h, &moving, sizeof(moving));
		}
		for (int k = 0; k < c[i].nedges; k++)
			h = fnv(h, &c[i].edges[k], sizeof(c[i].edges[k]));
		for (int k = 0; k < c[i].nres; k++)
			h = fnv(h, &c[i].res[k], sizeof(c[i].res[k]));
	}
	return h;
}

uint64_t partbook_publish_after(uint64_t soft_ns, int soft_auto, double auto_k,
				uint64_t auto_floor_ns, double p99_interval_s)
{
	uint64_t soft = soft_ns, coll;

	if (soft_auto && p99_interval_s > 0) {
		coll = (uint64_t)(auto_k * p99_interval_s * 1e9);
		if (coll < auto_floor_ns)
			coll = auto_floor_ns;
		if (coll < soft)
			soft = coll;
	}
	return soft / 4 > PARTBOOK_PUBLISH_MIN_NS ? soft / 4 : PARTBOOK_PUBLISH_MIN_NS;
}

struct partbook_send partbook_schedule(struct partbook_pub *pb, int stalled, uint32_t digest,
				       int missing, uint64_t now)
{
	struct partbook_send s = {PARTBOOK_SEND_NONE, 0};

	if (stalled) {
		if (!pb->publishing || digest != pb->digest ||
		    now - pb->sent_ns >= PARTBOOK_REFRESH_NS) {
			int all = !pb->publishing ||
				  (missing && now - pb->bcast_ns >= PARTBOOK_REBROADCAST_NS);

			s.to = all ? PARTBOOK_SEND_ALL : PARTBOOK_SEND_HOLDERS;
			if (all)
				pb->bcast_ns = now;
			pb->sent_ns = now;
			pb->digest = digest;
		}
		pb->publishing = 1;
	} else if (pb->publishing) { /* progress here again: say so once */
		s.to = PARTBOOK_SEND_HOLDERS;
		s.flags = PART_F_REPLY;
		pb->publishing = 0;
		pb->sent_ns = now;
	}
	return s;
}

int partbook_next_reply(struct partbook *b, uint32_t uid, const char *job,
			const struct partbook_pub *pb, uint64_t now, int from)
{
	for (int i = from < 0 ? 0 : from; i < b->nr; i++) {
		struct partbook_remote *r = &b->rv[i];

		if (!r->want_reply || !same_job(&r->part, uid, job) || r->stale_ns)
			continue;
		r->want_reply = 0;
		if (pb->sent_ns == now || now - r->replied_ns < PARTBOOK_REFRESH_NS / 2)
			continue;
		r->replied_ns = now;
		return i;
	}
	return -1;
}
