/* The job as one object across hosts: see jobparts.h. */
#include "agent/jobparts.h"

#include <arpa/inet.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/eventlog.h"
#include "agent/mesh.h"
#include "agent/partgate.h"
#include "agent/partlocal.h"
#include "lib/growbuf.h"
#include "lib/jsonx.h"
#include "lib/nodekeys.h"
#include "lib/ranks.h"
#include "os/clock.h"
#include "os/log.h"
#include "proto/cadparts.h"
#include "proto/part_proto.h"
#include "proto/partbook.h"
#include "proto/swim.h"

#define MS	    1000000ull
#define HOLD	    (1500 * MS) /* a hang report waits this long for missing parts */
#define MAX_CHUNKS  8
#define MAX_PARTS   (JV_MAX_PARTS)
#define EDGES_EVERY (1000 * MS) /* a stalled job's sockets are looked at this often */
struct pub { /* what this host told about one job, and its last waits-for edges */
	uint32_t uid;
	char job[FTBPF_JOB_LEN];
	struct partbook_pub sched; /* when its part goes out */
	uint64_t hung_ns, seen_ns;
	uint64_t edges_ns; /* when the sockets were last looked at (at most every EDGES_EVERY) */
	int nedges[MAX_CHUNKS];
	struct jv_edge edges[MAX_CHUNKS][JV_MAX_EDGES];
	int nres;
	struct jv_res res[JV_MAX_RES];
	struct cad_timing cad;	     /* its cadence parts */
	struct mesh_addr cad_ask[8]; /* hosts new to the job: ours to them at the next look */
	int ncad_ask;
};

struct cnt {
	uint64_t rx, tx, tx_errors, bad[7], misdirected, stale, not_ours, bad_source;
};

struct jobparts {
	struct jobparts_opts o;
	struct partlocal pl;
	uint8_t key[MESH_KEY_BYTES];
	struct mesh_addr self;
	char node[JV_NODE_LEN];
	uint64_t seq;
	struct partbook book; /* the other hosts' parts, and the rules they are held by */
	struct pub *pv;
	int np, pcap;
	struct cnt c;
	uint64_t log_window_ns;
	int logged;
	struct jv_part chunks[MAX_CHUNKS];
	struct jv_part parts[MAX_PARTS]; /* scratch: the parts of one verdict */
	struct jv_host *hosts;
	int hcap;
	struct cadparts *cp;
	struct partgate gate; /* who may speak about a job */
};

static uint64_t wall_ms(void)
{
	return clock_real_ns() / 1000000;
}

static int same_job(const struct jv_part *p, uint32_t uid, const char *job)
{
	return p->uid == uid && !strcmp(p->job, job);
}

/* ---- receiving: authenticated, meant for us, fresh, then believable ---- */
static void note_drop(struct jobparts *jp, const struct part_packet *p, const char *why)
{
	uint64_t now = clock_mono_ns();
	char a[32];

	if (now - jp->log_window_ns > 10 * CLOCK_NS_PER_S) {
		jp->log_window_ns = now;
		jp->logged = 0;
	}
	if (jp->logged++ >= 10) /* at most 10 per 10 s: a peer cannot flood the log */
		return;
	meshaddr_format(&p->from, a, sizeof(a));
	log_debug("job parts: ignored a part of job %s from %s: %s", p->part.job, a, why);
}

static void accept_part(struct jobparts *jp, const struct part_packet *p, int member, uint64_t now)
{
	struct job *j = ranks_job_find(jp->o.ranks, p->part.uid, p->part.job);
	enum partbook_verdict v;

	if (!j) {
		jp->c.not_ours++;
		return;
	}
	v = partbook_offer(&jp->book, p, member, j, now);
	if (v != PARTBOOK_ACCEPTED && v != PARTBOOK_NO_ROOM)
		note_drop(jp, p, partbook_verdict_text(v));
}

static struct pub *pub_find(struct jobparts *jp, uint32_t uid, const char *job);

static void accept_cad(struct jobparts *jp, const struct part_packet *p, int member, uint64_t now)
{
	struct job *j = ranks_job_find(jp->o.ranks, p->part.uid, p->part.job);
	struct pub *pb;

	if (cadparts_accept(jp->cp, p, member, j, now) > 0 &&
	    (pb = pub_find(jp, p->part.uid, p->part.job)) && pb->ncad_ask < 8)
		pb->cad_ask[pb->ncad_ask++] = p->from; /* a host new to the job: ours, to it */
}

/* With the node keys, a part must be signed by its sender's own key (lib/nodekeys.h): a host
 * that holds the cluster key speaks for itself only. PART_OK or PART_E_SIG. */
static int signed_by_sender(const struct jobparts *jp, const uint8_t *buf, size_t len,
			    const struct part_packet *p)
{
	const struct nodekey *k;

	if (!jp->o.keys)
		return PART_OK;
	k = nodekeys_by_addr(jp->o.keys, &p->from);
	return k ? part_verify(buf, len, p, k->pub) : PART_E_SIG;
}

static void on_part(void *ctx, const uint8_t *buf, size_t len, const struct mesh_addr *src)
{
	struct jobparts *jp = ctx;
	const struct swim *sw = mesh_swim(jp->o.mesh);
	const struct swim_member *sm;
	struct part_packet p;
	struct mesh_packet mp = {0};
	int r, member;

	jp->c.rx++;
	r = part_decode(buf, len, jp->key, &p);
	/* the sender it names is the datagram's source: no host speaks for a made-up one */
	if (r == PART_OK && !meshaddr_eq(&p.from, src)) {
		jp->c.bad_source++;
		return;
	}
	if (r == PART_OK)
		r = signed_by_sender(jp, buf, len, &p);
	if (r != PART_OK) {
		jp->c.bad[-r]++;
		return;
	}
	mp.to = p.to;
	mp.to_boot = p.to_boot;
	mp.sent_ms = p.sent_ms;
	r = mesh_proto_check_dest(&mp, &jp->self, swim_boot(sw), wall_ms());
	if (r != MESH_OK) {
		if (r == MESH_E_DEST)
			jp->c.misdirected++;
		else
			jp->c.stale++;
		return;
	}
	sm = swim_find(sw, &p.from);
	if (sm && sm->boot && p.boot < sm->boot) {
		jp->c.stale++; /* from an earlier life of the sender */
		return;
	}
	if (!partbook_fresh_seq(&jp->book, &p.from, p.boot, p.seq))
		return;
	member = sm && sm->boot == p.boot && (sm->state == MESH_ALIVE || sm->state == MESH_SUSPECT);
	if (!partgate_pass(&jp->gate, ranks_job_find(jp->o.ranks, p.part.uid, p.part.job), &p,
			   clock_mono_ns()))
		return;
	if (p.flags & PART_F_CAD)
		accept_cad(jp, &p, member, clock_mono_ns());
	else
		accept_part(jp, &p, member, clock_mono_ns());
}

/* ---- sending ---- */
static void send_parts(struct jobparts *jp, const struct mesh_addr *to, const struct jv_part *cv,
		       int nc, uint8_t flags, uint32_t ttl_ms)
{
	const struct swim_member *sm = swim_find(mesh_swim(jp->o.mesh), to);
	uint8_t buf[PART_MAX_PACKET];

	for (int i = 0; i < nc; i++) {
		struct part_packet p = {.from = jp->self,
					.to = *to,
					.boot = swim_boot(mesh_swim(jp->o.mesh)),
					.seq = ++jp->seq,
					.to_boot = sm ? sm->boot : 0,
					.sent_ms = wall_ms(),
					.ttl_ms = ttl_ms,
					.flags = flags,
					.text_rank = -1};
		const struct jv_part *c = &cv[i];
		int best = 59, len;

		/* the words of its most suspicious rank ride along (a culprit's first) */
		for (int k = 0; k < c->nranks; k++) {
			int s = c->ranks[k].score + (c->ranks[k].flags & JV_R_CULPRIT ? 200 : 0);

			if (s > best) {
				best = s;
				p.text_rank = c->ranks[k].rank;
			}
		}
		p.part = *c;
		if (flags & PART_F_CAD) /* the clock exchange with its receiver */
			cadparts_stamp(jp->cp, to, clock_mono_ns(), &p);
		len = part_encode_signed(&p, jp->key, jp->o.sk, buf, sizeof(buf));
		if (len < 0)
			continue;
		if (mesh_send_raw(jp->o.mesh, to, buf, (size_t)len) < 0)
			jp->c.tx_errors++;
		else
			jp->c.tx++;
	}
}

static void send_chunks(struct jobparts *jp, const struct mesh_addr *to, int nc, uint8_t flags)
{
	send_parts(jp, to, jp->chunks, nc, flags, PARTBOOK_TTL_MS);
}

/* To every live member (all), or to the hosts whose fresh parts of j we hold. */
static void send_to(struct jobparts *jp, const struct job *j, int nc, int all, uint8_t flags)
{
	const struct swim *sw = mesh_swim(jp->o.mesh);

	for (int i = 0; i < swim_count(sw); i++) {
		const struct swim_member *m = swim_member_at(sw, i);

		if (m->state != MESH_ALIVE && m->state != MESH_SUSPECT)
			continue;
		if (all || partbook_is_job_host(&jp->book, (uint32_t)j->uid, j->id, &m->addr))
			send_chunks(jp, &m->addr, nc, flags);
	}
}

static uint64_t publish_after(const struct jobparts *jp, const struct job *j)
{
	return partbook_publish_after(jp->o.dp->soft_ns, jp->o.dp->soft_auto, jp->o.dp->auto_k,
				      jp->o.dp->auto_floor_ns, j->arr.p99_interval_s);
}

static struct pub *pub_find(struct jobparts *jp, uint32_t uid, const char *job)
{
	for (int i = 0; i < jp->np; i++)
		if (jp->pv[i].uid == uid && !strcmp(jp->pv[i].job, job))
			return &jp->pv[i];
	return NULL;
}

static struct pub *pub_of(struct jobparts *jp, const struct job *j)
{
	struct pub *pb = pub_find(jp, (uint32_t)j->uid, j->id);

	if (pb)
		return pb;
	if (growbuf_items((void **)&jp->pv, &jp->pcap, jp->np, sizeof(*jp->pv)) < 0)
		return NULL;
	memset(&jp->pv[jp->np], 0, sizeof(jp->pv[0]));
	jp->pv[jp->np].uid = (uint32_t)j->uid;
	snprintf(jp->pv[jp->np].job, sizeof(jp->pv[0].job), "%s", j->id);
	return &jp->pv[jp->np++];
}

/* The job's part to whom partbook_schedule says, then to the hosts that asked for a reply. */
static void publish(struct jobparts *jp, const struct job *j, struct pub *pb, int nc, int stalled,
		    uint64_t now)
{
	struct partbook_send sd = partbook_schedule(
	    &pb->sched, stalled, partbook_digest(jp->chunks, nc), j->xv.nmissing, now);

	if (sd.to != PARTBOOK_SEND_NONE)
		send_to(jp, j, nc, sd.to == PARTBOOK_SEND_ALL, sd.flags);
	for (int i = 0;
	     (i = partbook_next_reply(&jp->book, (uint32_t)j->uid, j->id, &pb->sched, now, i)) >= 0;
	     i++)
		send_chunks(jp, &jp->book.rv[i].from, nc, PART_F_REPLY);
}

/* ---- cadence parts ---- */
static void cad_publish(struct jobparts *jp, const struct job *j, struct pub *pb, uint64_t now)
{
	const struct swim *sw = mesh_swim(jp->o.mesh);
	struct jv_part *cv = jp->parts; /* scratch: the verdict is made after */
	uint32_t ttl_ms = 0;
	int all = 0, nc = cadparts_build(jp->cp, j, &pb->cad, now, cv, MAX_CHUNKS, &all, &ttl_ms);

	for (int i = 0; nc && i < swim_count(sw); i++) {
		const struct swim_member *m = swim_member_at(sw, i);

		if ((m->state == MESH_ALIVE || m->state == MESH_SUSPECT) &&
		    (all || cadparts_is_host(jp->cp, j, &m->addr, now)))
			send_parts(jp, &m->addr, cv, nc, PART_F_CAD | (all ? 0 : PART_F_REPLY),
				   ttl_ms);
	}
	/* hosts new to the job get ours now (unless it just went to the job's hosts, them
	 * included), not at the next period */
	if (pb->ncad_ask && !nc) {
		nc = cadparts_parts(jp->cp, j, cv, MAX_CHUNKS);
		ttl_ms = (uint32_t)(3 * cad_part_period_ns(pb->cad.hosts) / MS);
		for (int i = 0; nc && i < pb->ncad_ask; i++)
			send_parts(jp, &pb->cad_ask[i], cv, nc, PART_F_CAD | PART_F_REPLY, ttl_ms);
	}
	pb->ncad_ask = 0;
}

int jobparts_cad_remote(void *ctx, const struct job *j, uint64_t now, struct cad_remote **out,
			int max)
{
	return cadparts_remote(((struct jobparts *)ctx)->cp, j, now, out, max);
}

int jobparts_firsts(void *ctx, const struct job *j, uint64_t now, struct arr_remote *out, int max)
{
	return cadparts_firsts(((struct jobparts *)ctx)->cp, j, now, out, max);
}

void jobparts_clocks_json(const struct jobparts *jp, struct json_object *arr)
{
	cadparts_clocks_json(jp->cp, clock_mono_ns(), arr);
}

/* ---- the verdict ---- */
static int gather(struct jobparts *jp, const struct job *j, int nc)
{
	int n = 0;

	for (int i = 0; i < nc && n < MAX_PARTS; i++)
		jp->parts[n++] = jp->chunks[i];
	return n +
	       partbook_gather(&jp->book, (uint32_t)j->uid, j->id, jp->parts + n, MAX_PARTS - n);
}

static int hosts_of(struct jobparts *jp)
{
	const struct swim *sw = jp->o.mesh ? mesh_swim(jp->o.mesh) : NULL;
	int n = sw ? swim_count(sw) : 0;

	if (growbuf_items((void **)&jp->hosts, &jp->hcap, n, sizeof(*jp->hosts)) < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		const struct swim_member *m = swim_member_at(sw, i);

		meshaddr_format(&m->addr, jp->hosts[i].node, sizeof(jp->hosts[i].node));
		jp->hosts[i].ip = m->addr.ip;
		jp->hosts[i].down = m->state == MESH_DEAD || m->state == MESH_LEFT;
	}
	return n;
}

static int in_list(const int *v, int n, int x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

/* The job-wide verdict becomes the job's: reports, actions and views read job->res and each
 * rank's culprit flag; only the culprit's own host marks a rank of its own. */
static void apply(struct job *j, const struct jv_verdict *v)
{
	j->res.hung = v->hung;
	j->res.hard = v->hard;
	j->res.failed = v->failed;
	j->res.no_progress_ns = v->no_progress_ns;
	j->res.rule = v->rule;
	snprintf(j->res.why, sizeof(j->res.why), "%s", v->why);
	j->res.n_culprits = 0;
	for (int m = 0; m < j->nmembers; m++) {
		struct rank *k = j->members[m];
		int dup = 0;

		for (int o = 0; o < j->nmembers && k->s.exited; o++)
			dup |= o != m && j->members[o]->id.rank == k->id.rank &&
			       !j->members[o]->s.exited;
		k->d.hung = v->hung && !k->s.exited;
		k->d.culprit = (v->hung || v->failed) && v->culprit_here && !dup &&
			       in_list(v->culprit_ranks, v->n_culprits, k->id.rank);
		if (k->d.culprit && j->res.n_culprits < DET_MAX_CULPRITS)
			j->res.culprits[j->res.n_culprits++] = m;
	}
}

static int distinct_ranks(const struct job *j)
{
	int n = 0;

	for (int m = 0; m < j->nmembers; m++) {
		int seen = 0;

		for (int o = 0; o < m; o++)
			seen |= j->members[o]->id.rank == j->members[m]->id.rank;
		n += !seen;
	}
	return n;
}

static int needs_resolution(const struct jobparts *jp, const struct job *j)
{
	for (int i = 0; i < jp->book.nr; i++) {
		const struct jv_part *p = &jp->book.rv[i].part;

		if (jp->book.rv[i].stale_ns || !same_job(p, (uint32_t)j->uid, j->id))
			continue;
		for (int k = 0; k < p->nedges; k++)
			if (p->edges[k].to_rank == -1 &&
			    partlocal_is_local_ip(&jp->pl, p->edges[k].peer.ip))
				return 1;
	}
	return 0;
}

/* This host's part of j into jp->chunks and, with the other hosts' parts, jp->parts (*ret_n
 * of them). The sockets are looked at every EDGES_EVERY while edges are wanted; in between
 * the last edges and resolutions hold. Returns the number of chunks. */
static int local_part(struct jobparts *jp, const struct job *j, struct pub *pb, int edges,
		      int spans, uint64_t now, int *ret_n)
{
	int fresh = edges && now - pb->edges_ns >= EDGES_EVERY, nc, n;

	if (fresh)
		partlocal_refresh(&jp->pl, now);
	nc = partlocal_build(&jp->pl, j, jp->node, now, fresh, jp->chunks, MAX_CHUNKS);
	n = gather(jp, j, nc);
	if (fresh) {
		if (spans)
			partlocal_resolve(&jp->pl, jp->parts + nc, n - nc, &jp->chunks[0]);
		pb->edges_ns = now;
		pb->nres = jp->chunks[0].nres;
		memcpy(pb->res, jp->chunks[0].res, sizeof(pb->res));
		for (int i = 0; i < nc; i++) {
			pb->nedges[i] = jp->chunks[i].nedges;
			memcpy(pb->edges[i], jp->chunks[i].edges, sizeof(pb->edges[i]));
		}
	} else if (edges && nc) {
		jp->chunks[0].nres = pb->nres;
		memcpy(jp->chunks[0].res, pb->res, sizeof(pb->res));
		for (int i = 0; i < nc; i++) {
			jp->chunks[i].nedges = pb->nedges[i];
			memcpy(jp->chunks[i].edges, pb->edges[i], sizeof(pb->edges[i]));
		}
	} else {
		pb->edges_ns = 0;
	}
	for (int i = 0; i < nc; i++) /* gather took them before the edges were settled */
		jp->parts[i] = jp->chunks[i];
	*ret_n = n;
	return nc;
}

void jobparts_job(struct jobparts *jp, struct job *j, uint64_t now)
{
	int world = job_world_size(j), spans, stalled, nc, n = 0, nh, edges;
	struct pub *pb = pub_of(jp, j);
	struct det_pace pace = {0};
	struct jv_verdict v;

	if (!pb)
		return;
	pb->seen_ns = now;
	spans = jp->o.mesh && world > distinct_ranks(j);
	if (spans)
		cad_publish(jp, j, pb, now);
	/* no progress here for a quarter of the soft timeout (at least 1 s): the job's other
	 * hosts hear of it well before a verdict is due, and a healthy job whose steps wait a
	 * second on the device says nothing */
	stalled = (j->res.live && j->res.no_progress_ns >= publish_after(jp, j)) || j->res.failed;
	edges = spans ? stalled || needs_resolution(jp, j)
		      /* here alone: the graph adds only to weaker evidence than a death or
		       * NCCL's, and a job too big for our parts is the detector's alone */
		      : stalled && j->res.rule != DET_RULE_DEAD && j->res.rule != DET_RULE_NCCL &&
			    j->nmembers <= MAX_CHUNKS * JV_MAX_RANKS;
	if (!spans && !edges) {
		j->xv.valid = 0;
		snprintf(j->xv.culprit_node, sizeof(j->xv.culprit_node), "%s", jp->node);
		return;
	}
	nc = local_part(jp, j, pb, edges, spans, now, &n);
	if (!nc)
		return;
	nh = hosts_of(jp);
	pace.p99_step_ns = (uint64_t)(j->cad.p99_step_s * 1e9);
	pace.p99_coll_ns = (uint64_t)(j->arr.p99_interval_s * 1e9);
	if (jobview_eval(jp->parts, n, 0, jp->hosts, nh, now, jp->o.dp, &pace, &v) < 0)
		return;
	if (!spans && !v.graph) { /* this host alone, and the graph adds nothing */
		j->xv.valid = 0;
		snprintf(j->xv.culprit_node, sizeof(j->xv.culprit_node), "%s", jp->node);
		return;
	}
	v.valid = 1;
	/* a verdict made without some hosts' parts waits a moment for them: the report goes
	 * out once per stall, and should name the right rank */
	if ((v.hung || v.failed) && !pb->hung_ns)
		pb->hung_ns = now;
	else if (!v.hung && !v.failed)
		pb->hung_ns = 0;
	v.hold =
	    spans && (v.hung || v.failed) && (v.nmissing || v.pending) && now - pb->hung_ns < HOLD;
	j->xv = v;
	apply(j, &v);
	if (spans)
		publish(jp, j, pb, nc, stalled, now);
}

void jobparts_tick(struct jobparts *jp, uint64_t now)
{
	partbook_expire(&jp->book, jp->o.ranks, now);
	cadparts_tick(jp->cp, jp->o.ranks, now);
	for (int i = 0; i < jp->np; i++)
		if (now - jp->pv[i].seen_ns > 10 * CLOCK_NS_PER_S)
			jp->pv[i--] = jp->pv[--jp->np];
}

void jobparts_peer_event(struct jobparts *jp, const char *type, const struct swim_member *m)
{
	uint64_t now = clock_mono_ns();

	if (strcmp(type, "peer_dead") && strcmp(type, "peer_left") &&
	    strcmp(type, "peer_restarted"))
		return;
	partbook_host_gone(&jp->book, &m->addr, now);
	cadparts_forget_host(jp->cp, &m->addr); /* its ranks' cadence is no longer judged */
}

/* ---- views ---- */
void jobparts_counters(const struct jobparts *jp, struct json_object *c)
{
	static const char *bad[] = {"",
				    "parts_bad_size",
				    "parts_bad_magic",
				    "parts_bad_version",
				    "parts_bad_mac",
				    "parts_bad_field",
				    "parts_bad_signature"};

	jint(c, "parts_rx", (int64_t)jp->c.rx);
	jint(c, "parts_tx", (int64_t)jp->c.tx);
	jint(c, "parts_tx_errors", (int64_t)jp->c.tx_errors);
	jint(c, "parts_accepted", (int64_t)jp->book.c.accepted);
	for (int i = 1; i <= 6; i++)
		jint(c, bad[i], (int64_t)jp->c.bad[i]);
	jint(c, "parts_bad_source", (int64_t)jp->c.bad_source);
	partgate_counters(&jp->gate, c);
	jint(c, "parts_misdirected", (int64_t)jp->c.misdirected);
	jint(c, "parts_stale", (int64_t)jp->c.stale);
	jint(c, "parts_replayed", (int64_t)jp->book.c.replayed);
	jint(c, "parts_not_ours", (int64_t)jp->c.not_ours);
	jint(c, "parts_claim_our_ranks", (int64_t)jp->book.c.claims_ours);
	jint(c, "parts_rank_conflict", (int64_t)jp->book.c.conflict);
	jint(c, "parts_world_mismatch", (int64_t)jp->book.c.world_mismatch);
	jint(c, "parts_bad_seq", (int64_t)jp->book.c.bad_seq);
	jint(c, "parts_expired", (int64_t)jp->book.c.expired);
	cadparts_counters(jp->cp, c);
	jint(c, "socket_dumps", (int64_t)jp->pl.dumps);
}

struct json_object *jobparts_remote_ranks(const struct jobparts *jp, const struct job *j,
					  uint64_t now)
{
	struct json_object *arr = json_object_new_array();

	for (int i = 0; i < jp->book.nr; i++) {
		const struct partbook_remote *r = &jp->book.rv[i];

		if (r->stale_ns || !same_job(&r->part, (uint32_t)j->uid, j->id))
			continue;
		for (int k = 0; k < r->part.nranks; k++) {
			const struct jv_rank *x = &r->part.ranks[k];
			struct json_object *o = json_object_new_object();
			double age = (double)(now - r->part.at_ns) / 1e9;

			jint(o, "rank", x->rank);
			jstr(o, "node", r->part.node);
			jint(o, "pid", x->pid);
			jstr(o, "state", det_state_name((enum rank_state)x->state));
			jstr(o, "reason", x->reason[0] ? x->reason : NULL);
			jdbl(o, "no_progress_s", x->progress_age_ms / 1000.0 + age);
			jbool(o, "exited", x->flags & JV_R_EXITED);
			jbool(o, "culprit",
			      !strcmp(j->xv.culprit_node, r->part.node) &&
				  in_list(j->xv.culprit_ranks, j->xv.n_culprits, x->rank) &&
				  (j->xv.hung || j->xv.failed));
			if (x->flags & JV_R_COMM)
				jint(o, "nccl_seq", (int64_t)x->comm_seq);
			jdbl(o, "part_age_s", age);
			cadparts_rank_json(jp->cp, j, x->rank, &r->from, now, o);
			json_object_array_add(arr, o);
		}
	}
	/* ranks known from their cadence only (a healthy job sends no other part) */
	for (int it = 0;;) {
		struct mesh_addr from;
		uint64_t age;
		const struct cad_remote *x = cadparts_next(jp->cp, j, now, &it, &from, &age);
		struct json_object *o;

		if (!x)
			break;
		if (job_holds_live(j, x->rank) ||
		    partbook_holds_rank(&jp->book, (uint32_t)j->uid, j->id, &from, x->rank))
			continue;
		o = json_object_new_object();
		jint(o, "rank", x->rank);
		jstr(o, "node", x->node);
		cadparts_json(x, age, o);
		json_object_array_add(arr, o);
	}
	return arr;
}

/* Which evidence named the culprit (or, on_device, why none is). */
static const char *evidence_of(enum det_rule rule, int graph)
{
	if (graph)
		return "waits_for";
	switch (rule) {
	case DET_RULE_DEAD:
		return "first_to_die";
	case DET_RULE_NCCL:
		return "nccl_seq";
	case DET_RULE_MAJORITY:
		return "odd_one_out";
	case DET_RULE_ONLY:
		return "only_rank";
	case DET_RULE_SCORE:
		return "most_suspicious";
	case DET_RULE_DEVICE:
		return "device";
	case DET_RULE_ON_DEVICE:
		return "on_device";
	default:
		return NULL;
	}
}

void jobparts_job_json(struct json_object *o, const struct job *j)
{
	const struct jv_verdict *v = &j->xv;
	struct json_object *cr;
	int named = v->valid && (v->hung || v->failed) && v->n_culprits;

	if (!v->valid) {
		jstr(o, "culprit_node", j->res.n_culprits ? v->culprit_node : NULL);
		jstr(o, "evidence",
		     j->res.hung || j->res.failed ? evidence_of(j->res.rule, 0) : NULL);
		return;
	}
	cr = json_object_new_array();
	for (int i = 0; named && i < v->n_culprits; i++)
		json_object_array_add(cr, json_object_new_int(v->culprit_ranks[i]));
	json_object_object_add(o, "culprit_ranks", cr);
	jstr(o, "culprit_node",
	     (v->hung || v->failed) && v->culprit_node[0] ? v->culprit_node : NULL);
	jstr(o, "culprit_state", named ? v->culprit_state : NULL);
	jbool(o, "culprit_here", named && v->culprit_here);
	jstr(o, "evidence", v->hung || v->failed ? evidence_of(v->rule, v->graph) : NULL);
	jint(o, "hosts", v->hosts);
	jint(o, "job_ranks", v->ranks);
	jint(o, "world_size", v->world);
	jstr(o, "missing_ranks", v->nmissing ? v->missing : NULL);
}

/* ---- lifecycle ---- */
struct jobparts *jobparts_new(const struct jobparts_opts *o)
{
	struct jobparts *jp = calloc(1, sizeof(*jp));

	if (!jp)
		return NULL;
	jp->o = *o;
	jp->gate = (struct partgate){.member = o->member, .member_ctx = o->member_ctx, .el = o->el};
	{
		/* a test's way to make this host's clock differ from the others' (hosts in
		 * network namespaces share one CLOCK_MONOTONIC): milliseconds, never for use */
		const char *skew = getenv("FTBPF_TEST_CLOCK_SKEW_MS");

		jp->cp = cadparts_new(skew ? (int64_t)(atof(skew) * 1e6) : 0);
	}
	if (!jp->cp) {
		free(jp);
		return NULL;
	}
	snprintf(jp->node, sizeof(jp->node), "%s", o->node && *o->node ? o->node : "localhost");
	if (o->mesh) {
		jp->self = *mesh_self(o->mesh);
		meshaddr_format(&jp->self, jp->node, sizeof(jp->node));
		mesh_part_key(o->mesh, jp->key);
		mesh_set_part_handler(o->mesh, on_part, jp);
	}
	return jp;
}

void jobparts_free(struct jobparts *jp)
{
	if (!jp)
		return;
	if (jp->o.mesh)
		mesh_set_part_handler(jp->o.mesh, NULL, NULL);
	partlocal_fini(&jp->pl);
	memset(jp->key, 0, sizeof(jp->key));
	partbook_fini(&jp->book);
	free(jp->pv);
	free(jp->hosts);
	cadparts_free(jp->cp);
	free(jp);
}
