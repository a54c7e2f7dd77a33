/*
 * The SWIM failure detector (Das, Gupta, Motivala 2002) with Lifeguard's refinements: probe,
 * indirect probe, suspicion with independent confirmations, dissemination piggybacked on
 * every packet, incarnations and restarts. Over 800 lines on purpose: it is one state machine
 * over one member table under an injected clock and I/O (swim.h); its invariants (who may
 * refute what, when a suspicion expires, which update wins) span every function here, and
 * splitting it would spread them. tests/unit/test_mesh.c and bench/mesh_sim.c drive it.
 */
#include "proto/swim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_QUEUE  4096
#define MAX_RELAYS 64

struct queued {
	struct mesh_update u;
	int sent;
};

struct relay { /* a PING we send for someone's PING-REQ */
	uint32_t our_probe, their_probe;
	struct mesh_addr requester, target;
	uint64_t expires_ms;
};

struct swim {
	struct swim_config c;
	struct swim_io io;
	struct mesh_addr self;
	uint64_t boot;
	uint32_t incarnation;
	uint64_t seq;
	struct mesh_health health;
	int lhm;      /* Lifeguard local health multiplier */
	int nlive;    /* members alive or suspect (kept by add_member and set_state) */
	int nsuspect; /* members suspect: the tick looks for expired suspicions only when > 0 */
	int ndead;    /* members dead: probe_dead looks for one only when > 0 */
	uint64_t suspect_due; /* <= the earliest suspicion deadline: the tick scans from then */
	/* members, with an open-addressing index by address */
	struct swim_member *m; /* owned */
	int n, cap;
	int *index; /* owned: slot -> member index + 1, 0 empty */
	int icap;
	/* probing */
	int *order; /* owned: member indices in probe order */
	int norder, next;
	uint32_t probe_seq;
	int inflight; /* member index, -1 none */
	uint32_t inflight_probe;
	int acked, indirect_sent;
	uint64_t sent_ms, round_end_ms;
	uint32_t rounds;
	struct relay relays[MAX_RELAYS];
	/* replay windows of the members that sent to us directly (open addressing by address) */
	struct replay_ent {
		struct mesh_addr a; /* port 0: empty */
		struct mesh_replay r;
	} * rp; /* owned */
	int nrp, rpcap;
	/* dissemination */
	struct queued *q; /* owned */
	int nq;
	struct swim_counters cnt;
};

const char *swim_state_name(int st)
{
	static const char *n[] = {"alive", "suspect", "dead", "left"};

	return st >= 0 && st <= MESH_LEFT ? n[st] : "?";
}

const char *swim_event_name(enum swim_event ev)
{
	switch (ev) {
	case SWIM_EV_JOIN:
		return "peer_join";
	case SWIM_EV_SUSPECT:
		return "peer_suspect";
	case SWIM_EV_DEAD:
		return "peer_dead";
	case SWIM_EV_ALIVE:
		return "peer_alive";
	case SWIM_EV_RESTARTED:
		return "peer_restarted";
	case SWIM_EV_LEFT:
		return "peer_left";
	case SWIM_EV_HEALTH:
		return "peer_health";
	case SWIM_EV_SELF_REFUTED:
		return "self_refuted";
	}
	return "?";
}

static uint32_t addr_hash(const struct mesh_addr *a)
{
	uint64_t h = ((uint64_t)a->ip << 16 | a->port) * 0x9E3779B97F4A7C15ull;

	return (uint32_t)(h >> 32);
}

static int find_idx(const struct swim *s, const struct mesh_addr *a)
{
	for (uint32_t i = addr_hash(a) & (uint32_t)(s->icap - 1);;
	     i = (i + 1) & (uint32_t)(s->icap - 1)) {
		int v = s->index[i];

		if (!v)
			return -1;
		if (meshaddr_eq(&s->m[v - 1].addr, a))
			return v - 1;
	}
}

static void index_put(struct swim *s, int idx)
{
	uint32_t i = addr_hash(&s->m[idx].addr) & (uint32_t)(s->icap - 1);

	while (s->index[i])
		i = (i + 1) & (uint32_t)(s->icap - 1);
	s->index[i] = idx + 1;
}

static int grow_to(struct swim *s, int ncap)
{
	int icap;
	struct swim_member *m = realloc(s->m, (size_t)ncap * sizeof(*m));
	int *order, *index;

	if (!m)
		return -1;
	s->m = m;
	order = realloc(s->order, (size_t)ncap * sizeof(*order));
	if (!order)
		return -1;
	s->order = order;
	icap = 16;
	while (icap < 2 * ncap) /* a power of two: probing masks with icap - 1 */
		icap *= 2;
	index = calloc((size_t)icap, sizeof(*index));
	if (!index)
		return -1;
	free(s->index);
	s->index = index;
	s->icap = icap;
	s->cap = ncap;
	for (int i = 0; i < s->n; i++)
		index_put(s, i);
	return 0;
}

static int grow(struct swim *s)
{
	return grow_to(s, s->cap ? s->cap * 2 : 16);
}

int swim_reserve(struct swim *s, int n)
{
	return n > s->cap ? grow_to(s, n) : 0;
}

static struct mesh_replay *replay_of(struct swim *s, const struct mesh_addr *a)
{
	uint32_t i;

	if (2 * (s->nrp + 1) > s->rpcap) { /* keep the load under one half */
		int ncap = s->rpcap ? s->rpcap * 2 : 64;
		struct replay_ent *old = s->rp, *nrp = calloc((size_t)ncap, sizeof(*nrp));

		if (!nrp)
			return NULL;
		s->rp = nrp;
		for (int k = 0; k < s->rpcap; k++) {
			if (!old[k].a.port)
				continue;
			for (i = addr_hash(&old[k].a) & (uint32_t)(ncap - 1); nrp[i].a.port;
			     i = (i + 1) & (uint32_t)(ncap - 1))
				;
			nrp[i] = old[k];
		}
		free(old);
		s->rpcap = ncap;
	}
	for (i = addr_hash(a) & (uint32_t)(s->rpcap - 1); s->rp[i].a.port;
	     i = (i + 1) & (uint32_t)(s->rpcap - 1))
		if (meshaddr_eq(&s->rp[i].a, a))
			return &s->rp[i].r;
	s->rp[i].a = *a;
	s->nrp++;
	return &s->rp[i].r;
}

static struct swim_member *add_member(struct swim *s, const struct mesh_addr *a, uint64_t now)
{
	struct swim_member *m;

	if (s->n == s->cap && grow(s) < 0)
		return NULL;
	m = &s->m[s->n];
	memset(m, 0, sizeof(*m));
	m->addr = *a;
	m->state = MESH_ALIVE;
	m->since_ms = now;
	s->nlive++;
	index_put(s, s->n);
	/* a new member joins the probe order at a random place */
	{
		int pos = s->norder ? (int)(s->io.rand(s->io.ctx) % (uint32_t)(s->norder + 1)) : 0;

		s->order[s->norder] = s->order[pos];
		s->order[pos] = s->n;
		s->norder++;
	}
	s->n++;
	return m;
}

struct swim *swim_new(const struct swim_config *c, const struct mesh_addr *self, uint64_t boot,
		      const struct swim_io *io)
{
	struct swim *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->c = *c;
	s->io = *io;
	s->self = *self;
	s->boot = boot;
	s->inflight = -1;
	s->health.culprit_rank = -1;
	s->q = calloc(MAX_QUEUE, sizeof(*s->q));
	if (!s->q || grow(s) < 0) {
		swim_free(s);
		return NULL;
	}
	return s;
}

void swim_free(struct swim *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n; i++)
		free(s->m[i].health);
	free(s->m);
	free(s->rp);
	free(s->index);
	free(s->order);
	free(s->q);
	free(s);
}

static int live_count(const struct swim *s)
{
	return s->nlive + 1; /* and ourselves */
}

static int is_live(int state)
{
	return state == MESH_ALIVE || state == MESH_SUSPECT;
}

/* ---- dissemination ---- */
static void enqueue(struct swim *s, const struct mesh_update *u)
{
	for (int i = 0; i < s->nq; i++)
		if (meshaddr_eq(&s->q[i].u.node, &u->node)) {
			s->q[i].u = *u;
			s->q[i].sent = 0;
			return;
		}
	if (s->nq == MAX_QUEUE) { /* drop the most-sent one */
		int worst = 0;

		for (int i = 1; i < s->nq; i++)
			if (s->q[i].sent > s->q[worst].sent)
				worst = i;
		s->q[worst] = s->q[--s->nq];
	}
	s->q[s->nq].u = *u;
	s->q[s->nq].sent = 0;
	s->nq++;
}

static void update_of(const struct swim_member *m, struct mesh_update *u)
{
	memset(u, 0, sizeof(*u));
	u->node = m->addr;
	u->state = m->state;
	u->incarnation = m->incarnation;
	u->boot = m->boot;
	u->has_health = m->health != NULL;
	if (m->health)
		u->health = *m->health;
	if (m->state == MESH_SUSPECT)
		u->accuser = m->accuser;
}

static void enqueue_member(struct swim *s, const struct swim_member *m)
{
	struct mesh_update u;

	update_of(m, &u);
	enqueue(s, &u);
}

static void enqueue_self(struct swim *s)
{
	struct mesh_update u = {0};

	u.node = s->self;
	u.state = MESH_ALIVE;
	u.incarnation = s->incarnation;
	u.boot = s->boot;
	u.has_health = 1;
	u.health = s->health;
	enqueue(s, &u);
}

/* Piggy-back the fewest-sent news (ties: oldest in the queue first). The queue holds one entry
 * per node (enqueue replaces), so the picks are distinct. Two passes over the queue: count the
 * entries by times sent, then take every entry below the threshold count and enough at it. */
static void select_news(struct swim *s, struct mesh_packet *p, int limit)
{
	enum { NB = 64 };
	int count[NB] = {0}, pick[MESH_MAX_UPDATES],
	    want = s->nq < MESH_MAX_UPDATES ? s->nq : MESH_MAX_UPDATES;
	int below = 0, t = 0, at_t = 0, n = 0;

	p->nupdates = 0;
	if (!want)
		return;
	for (int i = 0; i < s->nq; i++)
		count[s->q[i].sent < NB ? s->q[i].sent : NB - 1]++;
	while (below + count[t] < want) /* t: the bucket where the want-th pick falls */
		below += count[t++];
	for (int i = 0; i < s->nq && n < want; i++) {
		int b = s->q[i].sent < NB ? s->q[i].sent : NB - 1;

		if (b < t || (b == t && at_t++ < want - below))
			pick[n++] = i;
	}
	for (int k = 0; k < n; k++) {
		p->updates[k] = s->q[pick[k]].u;
		s->q[pick[k]].sent++;
	}
	p->nupdates = n;
	for (int k = n - 1; k >= 0; k--) /* descending: a swap-remove moves an entry not picked */
		if (s->q[pick[k]].sent >= limit)
			s->q[pick[k]] = s->q[--s->nq];
}

static void send_packet(struct swim *s, const struct mesh_addr *to, struct mesh_packet *p)
{
	int limit = s->c.retransmit_mult * (int)ceil(log10((double)live_count(s) + 1));

	int idx = find_idx(s, to);

	p->from = s->self;
	p->incarnation = s->incarnation;
	p->boot = s->boot;
	p->seq = ++s->seq;
	p->to = *to;
	p->to_boot = idx >= 0 ? s->m[idx].boot : 0;
	select_news(s, p, limit);
	s->cnt.sent++;
	s->io.send(s->io.ctx, to, p);
}

static void event(struct swim *s, enum swim_event ev, const struct swim_member *m, uint64_t now)
{
	if (s->io.event)
		s->io.event(s->io.ctx, ev, m, now);
}

/* ---- suspicion (memberlist's formula) ---- */
static uint64_t suspicion_timeout(const struct swim *s, int confirmations)
{
	double n = live_count(s), min, max, k = s->c.suspicion_confirmations, t;

	min = s->c.suspicion_mult * fmax(1.0, log10(fmax(n, 1.0))) * s->c.probe_interval_ms;
	max = s->c.suspicion_max_mult * min;
	if (k < 1)
		return (uint64_t)min;
	t = max - (max - min) * log((double)confirmations + 1) / log(k + 1);
	return (uint64_t)fmax(min, t);
}

static void set_state(struct swim *s, struct swim_member *m, int state, uint64_t now)
{
	s->nlive += is_live(state) - is_live(m->state);
	s->nsuspect += (state == MESH_SUSPECT) - (m->state == MESH_SUSPECT);
	s->ndead += (state == MESH_DEAD) - (m->state == MESH_DEAD);
	m->state = (uint8_t)state;
	m->since_ms = now;
	if (state == MESH_SUSPECT) {
		m->nconfirm = 0;
		memset(m->suspecters, 0, sizeof(m->suspecters));
		m->deadline_ms = now + suspicion_timeout(s, 0);
		if (m->deadline_ms < s->suspect_due)
			s->suspect_due = m->deadline_ms;
		s->cnt.suspected++;
	} else if (state == MESH_DEAD) {
		s->cnt.dead++;
	}
}

static void send_packet(struct swim *s, const struct mesh_addr *to, struct mesh_packet *p);

/* An independent suspicion of m by `accuser` (counted once each): the timeout shrinks. */
static void confirm(struct swim *s, struct swim_member *m, const struct mesh_addr *accuser)
{
	uint32_t who = addr_hash(accuser) | 1;

	for (int i = 0; i < m->nconfirm; i++)
		if (m->suspecters[i] == who)
			return;
	if (m->nconfirm < 4) {
		m->suspecters[m->nconfirm++] = who;
		m->deadline_ms = m->since_ms + suspicion_timeout(s, m->nconfirm);
		if (m->deadline_ms < s->suspect_due)
			s->suspect_due = m->deadline_ms;
	}
}

static void suspect(struct swim *s, struct swim_member *m, uint64_t now)
{
	struct mesh_packet p = {.type = MESH_PING, .probe = 0};

	if (m->state == MESH_SUSPECT && !meshaddr_eq(&m->accuser, &s->self)) {
		/* our own probe failed too: an independent confirmation, for us and for the others */
		struct mesh_update u;

		confirm(s, m, &s->self);
		update_of(m, &u);
		u.accuser = s->self;
		enqueue(s, &u);
		return;
	}
	if (m->state != MESH_ALIVE)
		return;
	set_state(s, m, MESH_SUSPECT, now);
	m->accuser = s->self;
	enqueue_member(s, m);
	event(s, SWIM_EV_SUSPECT, m, now);
	/* tell the suspect at once (it refutes if it is alive: the news is on top of the queue) */
	send_packet(s, &m->addr, &p);
}

/* ---- applying what others say ---- */
static void refute(struct swim *s, uint32_t inc, uint64_t now)
{
	if (inc >= s->incarnation)
		s->incarnation = inc + 1;
	if (s->lhm < s->c.max_local_health)
		s->lhm++; /* being suspected suggests we are the slow one */
	s->cnt.refuted++;
	enqueue_self(s);
	event(s, SWIM_EV_SELF_REFUTED, NULL, now);
}

static void apply(struct swim *s, const struct mesh_update *u, const struct mesh_addr *from,
		  uint64_t now)
{
	struct swim_member *m;
	int idx;

	if (meshaddr_eq(&u->node, &s->self)) {
		if (u->boot == s->boot && u->state != MESH_ALIVE && u->state != MESH_LEFT &&
		    u->incarnation >= s->incarnation)
			refute(s, u->incarnation, now);
		return;
	}
	idx = find_idx(s, &u->node);
	if (idx < 0) {
		if (u->state == MESH_DEAD || u->state == MESH_LEFT)
			return; /* news of a stranger's death: nothing to do */
		m = add_member(s, &u->node, now);
		if (!m)
			return;
		m->incarnation = u->incarnation;
		m->boot = u->boot;
		if (u->has_health && (m->health = malloc(sizeof(*m->health))))
			*m->health = u->health;
		if (u->state == MESH_SUSPECT) {
			set_state(s, m, MESH_SUSPECT, now);
			m->accuser = u->accuser;
		}
		enqueue_member(s, m);
		event(s, SWIM_EV_JOIN, m, now);
		return;
	}
	m = &s->m[idx];
	if (u->boot && m->boot && u->boot < m->boot)
		return; /* about an earlier life of the node */
	if (u->boot > m->boot) {
		int known = m->boot != 0;

		m->boot = u->boot;
		m->incarnation = u->incarnation;
		if (known) { /* (first contact is not news) */
			/* a new life, whatever the news says of it (a restarted node may be
			 * suspected before it answers its first probe): restarted, alive, and
			 * then the news applies to it below */
			if (m->state != MESH_ALIVE)
				set_state(s, m, MESH_ALIVE, now);
			enqueue_member(s, m);
			event(s, SWIM_EV_RESTARTED, m, now);
		}
	}
	if (u->has_health && (!m->health || u->health.version > m->health->version)) {
		if (!m->health && !(m->health = malloc(sizeof(*m->health))))
			return;
		*m->health = u->health;
		enqueue_member(s, m);
		event(s, SWIM_EV_HEALTH, m, now);
	}
	switch (u->state) {
	case MESH_ALIVE:
		if (u->incarnation > m->incarnation ||
		    (m->state == MESH_DEAD && u->boot == m->boot &&
		     u->incarnation > m->incarnation)) {
			int was = m->state;

			m->incarnation = u->incarnation;
			if (was != MESH_ALIVE) {
				set_state(s, m, MESH_ALIVE, now);
				event(s, SWIM_EV_ALIVE, m, now);
			}
			enqueue_member(s, m);
		}
		break;
	case MESH_SUSPECT:
		if ((m->state == MESH_ALIVE && u->incarnation >= m->incarnation) ||
		    (m->state == MESH_SUSPECT && u->incarnation > m->incarnation)) {
			m->incarnation = u->incarnation;
			set_state(s, m, MESH_SUSPECT, now);
			m->accuser = u->accuser;
			enqueue_member(s, m);
			event(s, SWIM_EV_SUSPECT, m, now);
		} else if (m->state == MESH_SUSPECT && u->incarnation == m->incarnation && from &&
			   u->accuser.port && !meshaddr_eq(&u->accuser, &m->accuser)) {
			confirm(s, m, &u->accuser); /* another node suspected it independently */
		}
		break;
	case MESH_DEAD:
	case MESH_LEFT:
		if (m->state != MESH_DEAD && m->state != MESH_LEFT &&
		    u->incarnation >= m->incarnation) {
			m->incarnation = u->incarnation;
			set_state(s, m, u->state, now);
			enqueue_member(s, m);
			event(s, u->state == MESH_DEAD ? SWIM_EV_DEAD : SWIM_EV_LEFT, m, now);
		}
		break;
	}
}

/* ---- receiving ---- */
static void send_ack(struct swim *s, const struct mesh_addr *to, uint32_t probe,
		     const struct mesh_addr *about)
{
	struct mesh_packet p = {.type = MESH_ACK, .probe = probe};

	p.target = *about;
	send_packet(s, to, &p);
}

void swim_receive(struct swim *s, const struct mesh_packet *p, uint64_t now)
{
	struct mesh_update sender = {0};
	struct mesh_replay *r;
	int idx;

	if (meshaddr_eq(&p->from, &s->self))
		return;
	/* the sender says it is alive: apply that first (it may be a new member) */
	sender.node = p->from;
	sender.state = p->type == MESH_LEAVE ? MESH_LEFT : MESH_ALIVE;
	sender.incarnation = p->incarnation;
	sender.boot = p->boot;
	idx = find_idx(s, &p->from);
	if (idx >= 0 && (r = replay_of(s, &p->from)) &&
	    mesh_proto_replay_check(r, p->boot, p->seq) != MESH_OK) {
		s->cnt.replays++;
		return;
	}
	s->cnt.received++;
	if (p->type == MESH_LEAVE && idx >= 0)
		sender.incarnation =
		    s->m[idx].incarnation > p->incarnation ? s->m[idx].incarnation : p->incarnation;
	apply(s, &sender, NULL, now);
	if (idx < 0) { /* a member now: start its replay window */
		idx = find_idx(s, &p->from);
		if (idx >= 0 && (r = replay_of(s, &p->from)))
			mesh_proto_replay_check(r, p->boot, p->seq);
	}
	for (int i = 0; i < p->nupdates; i++)
		apply(s, &p->updates[i], &p->from, now);

	switch (p->type) {
	case MESH_PING:
		send_ack(s, &p->from, p->probe, &s->self);
		break;
	case MESH_PING_REQ: {
		struct mesh_packet ping = {.type = MESH_PING, .probe = ++s->probe_seq};
		int slot = 0;

		for (int i = 1; i < MAX_RELAYS; i++)
			if (s->relays[i].expires_ms < s->relays[slot].expires_ms)
				slot = i;
		s->relays[slot].our_probe = ping.probe;
		s->relays[slot].their_probe = p->probe;
		s->relays[slot].requester = p->from;
		s->relays[slot].target = p->target;
		s->relays[slot].expires_ms = now + s->c.probe_interval_ms;
		send_packet(s, &p->target, &ping);
		break;
	}
	case MESH_ACK:
		if (s->inflight >= 0 && p->probe == s->inflight_probe &&
		    meshaddr_eq(&p->target, &s->m[s->inflight].addr)) {
			if (!s->acked && s->lhm > 0)
				s->lhm--;
			s->acked = 1;
			break;
		}
		for (int i = 0; i < MAX_RELAYS; i++) {
			struct relay *r = &s->relays[i];

			if (r->expires_ms > now && r->our_probe == p->probe &&
			    meshaddr_eq(&r->target, &p->from)) {
				send_ack(s, &r->requester, r->their_probe, &r->target);
				r->expires_ms = 0;
			}
		}
		break;
	case MESH_LEAVE:
		break;
	}
	/* a member we hold dead talks to us (a healed partition): tell it, so that it refutes */
	idx = find_idx(s, &p->from);
	if (idx >= 0 && s->m[idx].state == MESH_DEAD && s->m[idx].boot == p->boot &&
	    p->type != MESH_LEAVE)
		enqueue_member(s, &s->m[idx]);
}

/* ---- timers ---- */
static int probeable(const struct swim_member *m)
{
	return m->state == MESH_ALIVE || m->state == MESH_SUSPECT;
}

static void shuffle(struct swim *s)
{
	for (int i = s->norder - 1; i > 0; i--) {
		int j = (int)(s->io.rand(s->io.ctx) % (uint32_t)(i + 1)), t = s->order[i];

		s->order[i] = s->order[j];
		s->order[j] = t;
	}
}

/* Every few rounds, a PING to a random member held dead, with that news on top: a partition
 * that healed is noticed, and the member refutes. */
static void probe_dead(struct swim *s)
{
	struct mesh_packet p = {.type = MESH_PING, .probe = 0};
	int pick;

	if (!s->ndead)
		return;
	pick = (int)(s->io.rand(s->io.ctx) % (uint32_t)s->ndead);
	for (int i = 0; i < s->n; i++) {
		if (s->m[i].state != MESH_DEAD || pick--)
			continue;
		enqueue_member(s, &s->m[i]);
		send_packet(s, &s->m[i].addr, &p);
		return;
	}
}

static void start_probe(struct swim *s, uint64_t now)
{
	int idx = -1;
	struct mesh_packet p = {.type = MESH_PING};

	for (int tries = 0; tries < s->norder && idx < 0; tries++) {
		if (s->next >= s->norder) {
			s->next = 0;
			shuffle(s);
		}
		if (probeable(&s->m[s->order[s->next]]))
			idx = s->order[s->next];
		s->next++;
	}
	s->round_end_ms = now + (uint64_t)s->c.probe_interval_ms * (uint64_t)(s->lhm + 1);
	s->inflight = idx;
	if (++s->rounds % 10 == 0)
		probe_dead(s);
	if (idx < 0)
		return;
	if (s->m[idx].state == MESH_SUSPECT) /* Lifeguard's buddy system: tell the suspect */
		enqueue_member(s, &s->m[idx]);
	s->inflight_probe = p.probe = ++s->probe_seq;
	s->acked = 0;
	s->indirect_sent = 0;
	s->sent_ms = now;
	s->cnt.probes++;
	send_packet(s, &s->m[idx].addr, &p);
}

static void send_indirect(struct swim *s)
{
	struct mesh_packet p = {.type = MESH_PING_REQ, .probe = s->inflight_probe};
	int sent = 0;

	p.target = s->m[s->inflight].addr;
	for (int tries = 0;
	     tries < 4 * s->c.indirect_checks && sent < s->c.indirect_checks && s->n > 1; tries++) {
		int i = (int)(s->io.rand(s->io.ctx) % (uint32_t)s->n);

		if (i == s->inflight || s->m[i].state != MESH_ALIVE)
			continue;
		send_packet(s, &s->m[i].addr, &p);
		sent++;
	}
	s->cnt.indirect += (uint64_t)sent;
}

/* Suspicions whose deadline passed become deaths. The scan runs only once the earliest deadline
 * is due (suspect_due), and recomputes it from the suspicions that remain. */
static void expire_suspicions(struct swim *s, uint64_t now)
{
	uint64_t due = UINT64_MAX;

	if (!s->nsuspect || now < s->suspect_due)
		return;
	for (int i = 0; i < s->n; i++) {
		struct swim_member *m = &s->m[i];

		if (m->state != MESH_SUSPECT)
			continue;
		if (now >= m->deadline_ms) {
			set_state(s, m, MESH_DEAD, now);
			enqueue_member(s, m);
			event(s, SWIM_EV_DEAD, m, now);
		} else if (m->deadline_ms < due) {
			due = m->deadline_ms;
		}
	}
	s->suspect_due = due;
}

void swim_tick(struct swim *s, uint64_t now)
{
	expire_suspicions(s, now);
	if (s->inflight >= 0 && !s->acked && !s->indirect_sent &&
	    now >= s->sent_ms + (uint64_t)s->c.probe_timeout_ms * (uint64_t)(s->lhm + 1)) {
		s->indirect_sent = 1;
		send_indirect(s);
	}
	if (now >= s->round_end_ms) {
		if (s->inflight >= 0 && !s->acked) {
			if (s->lhm < s->c.max_local_health)
				s->lhm++;
			suspect(s, &s->m[s->inflight], now);
		}
		start_probe(s, now);
	}
}

void swim_set_health(struct swim *s, const struct mesh_health *h)
{
	uint32_t v = s->health.version + 1;

	s->health = *h;
	s->health.version = v;
	enqueue_self(s);
}

void swim_leave(struct swim *s, uint64_t now)
{
	struct mesh_packet p = {.type = MESH_LEAVE};

	(void)now;
	for (int i = 0; i < s->n; i++)
		if (probeable(&s->m[i]))
			send_packet(s, &s->m[i].addr, &p);
}

int swim_add_peer(struct swim *s, const struct mesh_addr *peer, uint64_t now)
{
	struct swim_member *m;

	if (meshaddr_eq(peer, &s->self) || find_idx(s, peer) >= 0)
		return 0;
	m = add_member(s, peer, now);
	return m ? 0 : -1;
}

int swim_count(const struct swim *s)
{
	return s->n;
}

const struct swim_member *swim_member_at(const struct swim *s, int i)
{
	return i >= 0 && i < s->n ? &s->m[i] : NULL;
}

const struct swim_member *swim_find(const struct swim *s, const struct mesh_addr *a)
{
	int i = find_idx(s, a);

	return i >= 0 ? &s->m[i] : NULL;
}

const struct swim_counters *swim_counters(const struct swim *s)
{
	return &s->cnt;
}

uint64_t swim_boot(const struct swim *s)
{
	return s->boot;
}

uint32_t swim_incarnation(const struct swim *s)
{
	return s->incarnation;
}

int swim_local_health(const struct swim *s)
{
	return s->lhm;
}
