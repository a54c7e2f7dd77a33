/*
 * The agreement store on etcd (see store.h). Three threads, each with its own connection:
 *   watcher   reads every key under the prefix, then watches it from the next revision;
 *             when the watch ends (silent for 3 s, lost, compacted) it reads everything again.
 *             It owns nothing but its connection; the mirror is shared under the lock.
 *   requester carries out claims and puts in order, retrying one that failed until it
 *             succeeds.
 *   leaser    keeps this agent's lease alive (a new lease, and the leased keys put again,
 *             when it expired), on its own connection: a slow write never delays a
 *             keep-alive (a node is never lost to slow etcd writes).
 * The agent's thread reads the mirror under the lock; the threads wake its loop through an
 * eventfd when the mirror changed.
 */
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "agent/store_int.h"
#include "agent/store_seal.h"
#include "lib/decisions.h"
#include "lib/jsonx.h"
#include "lib/kvmap.h"
#include "lib/nodekeys.h"
#include "os/clock.h"
#include "os/etcdv3.h"
#include "os/log.h"
#include "os/loop.h"
#include "proto/store_record.h"

/* a silent watch is read again after this long (the lease's keep-alives say whether etcd
 * answers: the whole prefix is not read every 3 s) */
#define WATCH_IDLE_S 30
/* a watcher that cannot read the prefix this long makes the store unreachable (its mirror is
 * stale; the lease, which says whether we can be left out, is the leaser's: reachable_ms) */
#define STALE_MIRROR_MS 4000
/* The watch is checked against the store once a second (the newest revision under the prefix,
 * one small read): a watch that has not delivered a write this long after it was made is
 * behind (a stalled stream, a member cut off from the others that still serves it), the store
 * unreachable until a new watch caught up. Without it the mirror could be WATCH_IDLE_S stale
 * while every keep-alive answered. */
#define BEHIND_CHECK_MS 1000
#define WATCH_BEHIND_MS 2000
#define RETRY_MS	200
/* A claim not carried out this long after it was made is dropped (counted): what it decided
 * was about a moment that has passed (a partition, an unreachable store), and a decision must
 * not land long after its cause. The decider claims again if the cause still holds. */
#define CLAIM_EXPIRY_MS 5000

enum op_kind { OP_CLAIM, OP_PUT, OP_TTL, OP_DELETE };
#define LEASES_KNOWN	64
#define LEASE_REREAD_MS 500

/* Another agent's lease as last read (OP_TTL): its member key names it. */
struct lease_left {
	int64_t id, left_s;
	uint64_t at_ms, asked_ms; /* read, asked for (0: never) */
};

struct op {
	enum op_kind kind;
	int leased;
	uint64_t made_ms;
	char *key, *value; /* owned, key with the prefix; value as stored (sealed) */
	char *plain;	   /* owned: the value itself (what the mirror holds) */
	struct op *next;
};

struct store_etcd {
	struct store base;
	char prefix[128];
	int ttl_s;
	/* an answer this recent: reachable (dec_reachable_ms: no later than the ranks are held,
	 * before the lease, renewed every dec_lease_renew_ms, can run out: I6) */
	uint64_t reachable_ms;
	struct etcd_conn *wc, *rc, *lc; /* the watcher's, the requester's, the leaser's (owned) */
	pthread_t watcher, requester, leaser;
	int started;
	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t cv;
	struct kvmap mirror; /* keys without the prefix */
	struct kvmap
	    leased; /* leased keys (with the prefix) and values: put again on a new lease */
	struct op *head, *tail;
	int stop;
	uint64_t last_ok_ms;
	uint64_t watch_fail_ms;	  /* since when the watcher cannot read the prefix (0: it can) */
	int mirrored;		  /* the prefix was read in full once: the mirror means something */
	int64_t mirror_rev;	  /* the store's revision the mirror has caught up with */
	uint64_t behind_ms;	  /* since when a newer write is known than the mirror has */
	int64_t behind_rev;	  /* ... that write's revision */
	uint64_t behind_check_ms; /* the last check (the requester's thread) */
	int rewatch;		  /* the watch is behind: read the prefix again, watch anew */
	uint64_t watch_behind;	  /* times it was */
	int64_t lease;
	uint64_t claims_won, claims_lost, claims_expired, watch_restarts, ops_retried;
	struct lease_left leases[LEASES_KNOWN]; /* round robin */
	int nleases, next_lease;
	char error[200];
	struct store_seal seal; /* how records are sealed and opened (under mu) */
	uint64_t rejected_told;
	uint64_t bad_told;    /* malformed replies said (store_bad_replies) */
	char bad_why[200];    /* the last malformed reply's error */
	uint64_t lease_ok_ms; /* the lease last granted or renewed (mono) */
	/* the agent's side */
	int efd; /* owned */
	struct loop *loop;
	void (*changed)(void *ctx);
	void *ctx;
};

static uint64_t now_ms(void)
{
	return clock_mono_ns() / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Wake the agent's loop: the mirror changed. */
static void notify(struct store_etcd *s)
{
	uint64_t one = 1;

	if (write(s->efd, &one, sizeof(one)) < 0) {
		/* EAGAIN: a wake-up is pending already */
	}
}

static void set_error(struct store_etcd *s, struct etcd_conn *c)
{
	pthread_mutex_lock(&s->mu);
	snprintf(s->error, sizeof(s->error), "%s", etcd_conn_error(c));
	(void)etcd_conn_take_malformed(c, s->bad_why, sizeof(s->bad_why)); /* a new one only */
	pthread_mutex_unlock(&s->mu);
}

static void contact(struct store_etcd *s)
{
	pthread_mutex_lock(&s->mu);
	s->last_ok_ms = now_ms();
	s->error[0] = 0;
	pthread_mutex_unlock(&s->mu);
}

static const char *strip(const struct store_etcd *s, const char *key)
{
	size_t n = strlen(s->prefix);

	return strncmp(key, s->prefix, n) ? NULL : key + n;
}

/* ---- the watcher ---- */
static int collect(void *ctx, const char *key, const char *value)
{
	struct kvmap *m = ctx;

	return kvmap_set(m, key, value) < 0 ? -ENOMEM : 0;
}

static int apply_event(void *ctx, int put, const char *key, const char *value, int64_t rev)
{
	struct store_etcd *s = ctx;
	const char *k = strip(s, key);

	pthread_mutex_lock(&s->mu);
	if (rev > s->mirror_rev)
		s->mirror_rev = rev;
	if (!k) {
		pthread_mutex_unlock(&s->mu);
		return 0;
	}
	if (!put) {
		kvmap_del(&s->mirror, k);
		kvmap_del(&s->seal.refused, k); /* a record put there again is judged again */
	} else if ((value = store_seal_open(&s->seal, s->prefix, k, value))) {
		kvmap_set(&s->mirror, k, value);
		kvmap_del(&s->seal.refused, k); /* authentic again */
	} /* else refused: an authentic record it overwrote stays what we know (a forged or
	   * damaged value never erases a decision) */
	s->last_ok_ms = now_ms();
	pthread_mutex_unlock(&s->mu);
	notify(s);
	return 0;
}

static int stopping(void *ctx)
{
	struct store_etcd *s = ctx;
	int stop;

	pthread_mutex_lock(&s->mu);
	stop = s->stop;
	pthread_mutex_unlock(&s->mu);
	return stop;
}

/* The watch ends when the agent stops, or when it fell behind (rewatch). */
static int watch_stop(void *ctx)
{
	struct store_etcd *s = ctx;
	int stop;

	pthread_mutex_lock(&s->mu);
	stop = s->stop || s->rewatch;
	pthread_mutex_unlock(&s->mu);
	return stop;
}

static void *watcher(void *arg)
{
	struct store_etcd *s = arg;

	while (!stopping(s)) {
		struct kvmap all;
		int64_t rev = 0;
		int r;

		kvmap_init(&all);
		r = etcd_range(s->wc, s->prefix, collect, &all, &rev);
		if (r < 0) {
			kvmap_fini(&all);
			set_error(s, s->wc);
			pthread_mutex_lock(&s->mu);
			if (!s->watch_fail_ms)
				s->watch_fail_ms = now_ms();
			pthread_mutex_unlock(&s->mu);
			sleep_ms(500);
			continue;
		}
		pthread_mutex_lock(&s->mu);
		{
			struct kvmap was = s->mirror;

			kvmap_init(&s->mirror);
			for (size_t i = 0; i < all.n; i++) {
				const char *k = strip(s, all.v[i].key), *v;

				if (!k)
					continue;
				/* refused: the authentic value it overwrote stays */
				if ((v = store_seal_open(&s->seal, s->prefix, k, all.v[i].value)))
					kvmap_del(&s->seal.refused, k);
				else
					v = kvmap_get(&was, k);
				if (v)
					kvmap_set(&s->mirror, k, v);
			}
			kvmap_fini(&was);
		}
		s->last_ok_ms = now_ms();
		s->watch_fail_ms = 0;
		s->mirrored = 1;
		s->mirror_rev = rev;
		s->behind_ms = 0;
		s->rewatch = 0;
		s->error[0] = 0;
		pthread_mutex_unlock(&s->mu);
		kvmap_fini(&all);
		notify(s);
		r = etcd_watch(s->wc, s->prefix, rev + 1, apply_event, watch_stop, s, WATCH_IDLE_S);
		pthread_mutex_lock(&s->mu);
		s->watch_restarts++;
		pthread_mutex_unlock(&s->mu);
		if (r < 0 && r != -ESTALE) {
			set_error(s, s->wc);
			sleep_ms(RETRY_MS);
		}
	}
	return NULL;
}

/* ---- the requester ---- */
static void op_free(struct op *o)
{
	free(o->key);
	free(o->value);
	free(o->plain);
	free(o);
}

/* Carry out one op: 0, or -errno (to retry). */
static int run_op(struct store_etcd *s, struct op *o, int64_t lease)
{
	const char *k = strip(s, o->key);
	char *existing = NULL;
	int r;

	if (o->kind == OP_TTL) {
		int64_t id = strtoll(o->value, NULL, 10), left = 0;

		r = etcd_lease_time_to_live(s->rc, id, &left);
		if (r == 0) {
			pthread_mutex_lock(&s->mu);
			for (int i = 0; i < s->nleases; i++)
				if (s->leases[i].id == id) {
					s->leases[i].left_s = left;
					s->leases[i].at_ms = now_ms();
				}
			pthread_mutex_unlock(&s->mu);
			notify(s);
		}
		return r;
	}
	if (o->kind == OP_DELETE) {
		r = etcd_delete_prefix(s->rc, o->key);
		if (r == 0) {
			pthread_mutex_lock(&s->mu);
			for (size_t i = 0; i < s->mirror.n;) {
				if (!strncmp(s->mirror.v[i].key, k, strlen(k))) {
					kvmap_del(&s->mirror, s->mirror.v[i].key);
					continue;
				}
				i++;
			}
			pthread_mutex_unlock(&s->mu);
		}
		return r;
	}
	if (o->kind == OP_PUT) {
		if (o->leased && lease <= 0)
			return -EAGAIN; /* the leaser has no lease yet: put with the next one */
		r = etcd_put(s->rc, o->key, o->value, o->leased ? lease : 0);
		if (r == 0) {
			pthread_mutex_lock(&s->mu);
			kvmap_set(&s->mirror, k, o->plain);
			pthread_mutex_unlock(&s->mu);
		}
		return r;
	}
	r = etcd_create(s->rc, o->key, o->value, 0, &existing);
	if (r < 0)
		return r;
	pthread_mutex_lock(&s->mu);
	{
		/* the value that stands: ours, or an earlier claimer's when it is authentic */
		const char *v =
		    r == 1 ? o->plain : store_seal_open(&s->seal, s->prefix, k, existing);

		if (v)
			kvmap_set(&s->mirror, k, v);
	}
	if (r == 1)
		s->claims_won++;
	else
		s->claims_lost++;
	pthread_mutex_unlock(&s->mu);
	free(existing);
	return 0;
}

/* Keep this agent's lease alive; a new one, with every leased key put again, when it expired.
 * 0, or -errno (unreachable: tried again later; the lease may still hold). */
static int keep_lease(struct store_etcd *s, int64_t *lease)
{
	struct kvmap again;
	int r;

	if (*lease > 0) {
		r = etcd_lease_keepalive(s->lc, *lease);
		if (r != -ENOENT)
			return r;
		log_warn("etcd: our lease expired; taking a new one");
		*lease = 0;
	}
	r = etcd_lease_grant(s->lc, s->ttl_s, lease);
	if (r < 0)
		return r;
	kvmap_init(&again);
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->leased.n; i++)
		kvmap_set(&again, s->leased.v[i].key, s->leased.v[i].value);
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < again.n && r == 0; i++)
		r = etcd_put(s->lc, again.v[i].key, again.v[i].value, *lease);
	kvmap_fini(&again);
	if (r < 0) {
		*lease = 0; /* grant again, and put them all, at the next try */
		return r;
	}
	/* published once its keys are back under it (a lease that changes means one ran out) */
	pthread_mutex_lock(&s->mu);
	s->lease = *lease;
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static void *leaser(void *arg)
{
	struct store_etcd *s = arg;
	uint64_t next_renew = 0;
	int64_t lease = 0;

	while (!stopping(s)) {
		uint64_t now = now_ms();

		if (!lease || now >= next_renew) {
			if (keep_lease(s, &lease) == 0) {
				contact(s);
				pthread_mutex_lock(&s->mu);
				s->lease_ok_ms = now_ms();
				pthread_mutex_unlock(&s->mu);
				next_renew = now + dec_lease_renew_ms(s->ttl_s);
			} else {
				set_error(s, s->lc);
				next_renew = now + RETRY_MS;
				if (!lease) {
					pthread_mutex_lock(&s->mu);
					s->lease = 0; /* leased puts wait for the next one */
					pthread_mutex_unlock(&s->mu);
				}
			}
		}
		sleep_ms(50);
	}
	return NULL;
}

/* Is the watch behind the store (the newest write under the prefix not in the mirror)? Checked
 * once a second from the requester's thread; behind for WATCH_BEHIND_MS, the watcher starts
 * again from a full read. */
static void check_behind(struct store_etcd *s)
{
	uint64_t now = now_ms();
	int64_t newest = 0;

	pthread_mutex_lock(&s->mu);
	if (!s->mirrored || now - s->behind_check_ms < BEHIND_CHECK_MS) {
		pthread_mutex_unlock(&s->mu);
		return;
	}
	s->behind_check_ms = now;
	pthread_mutex_unlock(&s->mu);
	if (etcd_newest_mod(s->rc, s->prefix, &newest) < 0)
		return; /* the requests' own failures say the store is away */
	pthread_mutex_lock(&s->mu);
	if (newest <= s->mirror_rev) {
		s->behind_ms = 0;
	} else if (!s->behind_ms || s->mirror_rev >= s->behind_rev) {
		/* a write not delivered yet (a few ms in flight, or newer than the one the last
		 * check waited for, which arrived): its own clock, from now */
		s->behind_ms = now;
		s->behind_rev = newest;
	} else if (now - s->behind_ms >= WATCH_BEHIND_MS && !s->rewatch) {
		s->rewatch = 1;
		s->watch_behind++;
		log_warn(
		    "etcd: the watch of %s is behind (revision %lld written, %lld seen for %llu "
		    "ms): decisions wait while it is read again",
		    s->prefix, (long long)newest, (long long)s->mirror_rev,
		    (unsigned long long)(now - s->behind_ms));
	}
	pthread_mutex_unlock(&s->mu);
}

static void *requester(void *arg)
{
	struct store_etcd *s = arg;
	int64_t lease;

	for (;;) {
		struct op *list, *o;
		struct timespec ts;
		int failed = 0;

		pthread_mutex_lock(&s->mu);
		if (!s->head && !s->stop) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 250 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&s->cv, &s->mu, &ts);
		}
		if (s->stop) {
			pthread_mutex_unlock(&s->mu);
			return NULL;
		}
		list = s->head;
		s->head = s->tail = NULL;
		lease = s->lease;
		pthread_mutex_unlock(&s->mu);
		for (o = list; o && !failed;) {
			struct op *next = o->next;

			if ((o->kind == OP_CLAIM && now_ms() - o->made_ms > CLAIM_EXPIRY_MS) ||
			    (o->kind == OP_TTL && now_ms() - o->made_ms > LEASE_REREAD_MS * 4)) {
				pthread_mutex_lock(&s->mu);
				s->claims_expired++;
				pthread_mutex_unlock(&s->mu);
				op_free(o);
				o = next;
				continue;
			}
			if (run_op(s, o, lease) < 0) {
				failed = 1;
				break;
			}
			op_free(o);
			o = next;
			notify(s);
		}
		if (failed) { /* put back what is left, in order, before anything newer */
			struct op *last = o;

			set_error(s, s->rc);
			while (last->next)
				last = last->next;
			pthread_mutex_lock(&s->mu);
			last->next = s->head;
			s->head = o;
			if (!s->tail)
				s->tail = last;
			s->ops_retried++;
			pthread_mutex_unlock(&s->mu);
			sleep_ms(RETRY_MS);
		} else {
			if (list)
				contact(s);
			check_behind(s); /* after the queued work: a slow check delays no claim */
		}
	}
}

/* ---- the store's operations (the agent's thread) ---- */
static int enqueue(struct store_etcd *s, enum op_kind kind, const char *key, const char *value,
		   int leased)
{
	struct op *o = calloc(1, sizeof(*o));
	int r = -ENOMEM;

	if (o && asprintf(&o->key, "%s%s", s->prefix, key) >= 0 && (o->plain = strdup(value)))
		r = s->seal.auth && kind != OP_TTL
			? store_seal_value(&s->seal, key, value, &o->value)
		    : (o->value = strdup(value)) ? 0
						 : -ENOMEM;
	if (r < 0) {
		if (o) {
			o->value = NULL;
			op_free(o);
		}
		return r;
	}
	o->kind = kind;
	o->leased = leased;
	o->made_ms = now_ms();
	pthread_mutex_lock(&s->mu);
	if (leased)
		kvmap_set(&s->leased, o->key, o->value); /* put again as stored */
	/* a put of a key that waits already takes its place: only the last value is written
	 * (a report rewritten at every look, a member put again while etcd is slow, must not
	 * pile up into a burst of writes that starves everything behind it) */
	for (struct op *q = s->head; kind == OP_PUT && q; q = q->next) {
		char *v = q->value, *pl = q->plain;

		if (q->kind != OP_PUT || strcmp(q->key, o->key))
			continue;
		q->value = o->value;
		q->plain = o->plain;
		q->leased = leased;
		o->value = v;
		o->plain = pl;
		pthread_mutex_unlock(&s->mu);
		op_free(o);
		return 0;
	}
	if (s->tail)
		s->tail->next = o;
	else
		s->head = o;
	s->tail = o;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static int etcd_claim(struct store *b, const char *key, const char *value)
{
	struct store_etcd *s = (struct store_etcd *)b;
	int known;

	pthread_mutex_lock(&s->mu);
	known = kvmap_get(&s->mirror, key) != NULL;
	pthread_mutex_unlock(&s->mu);
	return known ? 0 : enqueue(s, OP_CLAIM, key, value, 0);
}

static int etcd_put_(struct store *b, const char *key, const char *value, int leased)
{
	struct store_etcd *s = (struct store_etcd *)b;
	const char *old;
	int same;

	pthread_mutex_lock(&s->mu);
	old = kvmap_get(&s->mirror, key);
	/* what etcd holds there was refused (the mirror kept the authentic value it overwrote):
	 * written again, which repairs it */
	same = old && !strcmp(old, value) && !kvmap_get(&s->seal.refused, key);
	pthread_mutex_unlock(&s->mu);
	return same ? 0 : enqueue(s, OP_PUT, key, value, leased);
}

static int etcd_delete_prefix_(struct store *b, const char *prefix)
{
	return enqueue((struct store_etcd *)b, OP_DELETE, prefix, "", 0);
}

static char *etcd_get(struct store *b, const char *key)
{
	struct store_etcd *s = (struct store_etcd *)b;
	const char *v;
	char *copy;

	pthread_mutex_lock(&s->mu);
	v = kvmap_get(&s->mirror, key);
	copy = v ? strdup(v) : NULL;
	pthread_mutex_unlock(&s->mu);
	return copy;
}

static int etcd_list(struct store *b, const char *prefix,
		     int (*fn)(void *ctx, const char *key, const char *value), void *ctx)
{
	struct store_etcd *s = (struct store_etcd *)b;
	struct kvmap snap;
	int r;

	kvmap_init(&snap);
	pthread_mutex_lock(&s->mu);
	kvmap_foreach(&s->mirror, prefix, collect, &snap);
	pthread_mutex_unlock(&s->mu);
	r = kvmap_foreach(&snap, "", fn, ctx);
	kvmap_fini(&snap);
	return r;
}

static int etcd_reachable(struct store *b, uint64_t *last_ok_ms)
{
	struct store_etcd *s = (struct store_etcd *)b;
	uint64_t last;

	uint64_t failing, behind;
	int mirrored;

	pthread_mutex_lock(&s->mu);
	last = s->last_ok_ms;
	failing = s->watch_fail_ms;
	mirrored = s->mirrored;
	behind = s->mirror_rev < s->behind_rev ? s->behind_ms : 0;
	pthread_mutex_unlock(&s->mu);
	*last_ok_ms = last;
	/* the lease may be granted before the prefix was read: an empty mirror is not "no record"
	 * (a restarted agent would take its ranks for a new run's) */
	if (!mirrored)
		return 0;
	/* the lease's keepalives answer while the mirror may be stale: a watcher that cannot read
	 * the prefix makes the store unreachable (nothing is decided on a stale mirror) */
	if (failing && now_ms() - failing >= STALE_MIRROR_MS)
		return 0;
	if (behind && now_ms() - behind >= WATCH_BEHIND_MS)
		return 0; /* the mirror is stale: nothing is decided on it */
	return last && now_ms() - last < s->reachable_ms;
}

static void etcd_counters(struct store *b, struct json_object *c)
{
	struct store_etcd *s = (struct store_etcd *)b;
	struct etcd_stats ws, rs, ls, *w = &ws, *r = &rs, *l = &ls;

	etcd_conn_stats(s->wc, &ws);
	etcd_conn_stats(s->rc, &rs);
	etcd_conn_stats(s->lc, &ls);

	pthread_mutex_lock(&s->mu);
	jint(c, "keys", (int64_t)s->mirror.n);
	jint(c, "claims_won", (int64_t)s->claims_won);
	jint(c, "claims_lost", (int64_t)s->claims_lost);
	jint(c, "claims_expired", (int64_t)s->claims_expired);
	jint(c, "ops_retried", (int64_t)s->ops_retried);
	jint(c, "watch_restarts", (int64_t)s->watch_restarts);
	jint(c, "watch_behind", (int64_t)s->watch_behind);
	jint(c, "requests", (int64_t)(w->requests + r->requests + l->requests));
	jint(c, "failures", (int64_t)(w->failures + r->failures + l->failures));
	jint(c, "bad_replies", (int64_t)(w->bad_replies + r->bad_replies + l->bad_replies));
	jint(c, "records_not_text", (int64_t)(w->skipped + r->skipped + l->skipped));
	jint(c, "records_rejected", (int64_t)s->seal.rejected);
	jbool(c, "records_authenticated", s->seal.auth);
	jstr(c, "error", *s->error ? s->error : NULL);
	pthread_mutex_unlock(&s->mu);
}

static uint64_t etcd_rejected(struct store *b, char *key, size_t klen, char *why, size_t wlen)
{
	struct store_etcd *s = (struct store_etcd *)b;
	uint64_t n;

	pthread_mutex_lock(&s->mu);
	n = s->seal.rejected - s->rejected_told;
	s->rejected_told = s->seal.rejected;
	snprintf(key, klen, "%s", s->seal.rej_key);
	snprintf(why, wlen, "%s", s->seal.rej_why);
	pthread_mutex_unlock(&s->mu);
	return n;
}

static uint64_t etcd_bad_replies(struct store *b, char *why, size_t wlen)
{
	struct store_etcd *s = (struct store_etcd *)b;
	struct etcd_stats ws, rs, ls;
	uint64_t all, n;

	etcd_conn_stats(s->wc, &ws);
	etcd_conn_stats(s->rc, &rs);
	etcd_conn_stats(s->lc, &ls);
	all = ws.bad_replies + rs.bad_replies + ls.bad_replies;
	pthread_mutex_lock(&s->mu);
	n = all - s->bad_told;
	s->bad_told = all;
	snprintf(why, wlen, "%s", *s->bad_why ? s->bad_why : "malformed reply (not kept)");
	pthread_mutex_unlock(&s->mu);
	return n;
}

static void etcd_close(struct store *b)
{
	struct store_etcd *s = (struct store_etcd *)b;

	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	if (s->started) {
		pthread_join(s->leaser, NULL);
		pthread_join(s->requester, NULL);
		pthread_join(s->watcher, NULL);
	}
	while (s->head) {
		struct op *o = s->head;

		s->head = o->next;
		op_free(o);
	}
	etcd_conn_free(s->wc);
	etcd_conn_free(s->rc);
	etcd_conn_free(s->lc);
	kvmap_fini(&s->mirror);
	kvmap_fini(&s->leased);
	store_seal_fini(&s->seal);
	if (s->efd >= 0)
		close(s->efd);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
}

static int64_t etcd_lease(struct store *b, uint64_t *ret_renewed_ms)
{
	struct store_etcd *s = (struct store_etcd *)b;
	int64_t l;

	pthread_mutex_lock(&s->mu);
	l = s->lease;
	*ret_renewed_ms = s->lease_ok_ms;
	pthread_mutex_unlock(&s->mu);
	return l;
}

static int etcd_lease_left(struct store *b, int64_t lease, int64_t *ret_s, uint64_t *ret_at_ms)
{
	struct store_etcd *s = (struct store_etcd *)b;
	struct lease_left *l = NULL;
	uint64_t now = now_ms();
	int ask = 0, r = -EAGAIN;
	char v[32];

	if (lease <= 0)
		return -EINVAL;
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < s->nleases && !l; i++)
		if (s->leases[i].id == lease)
			l = &s->leases[i];
	if (!l) {
		l = &s->leases[s->nleases < LEASES_KNOWN ? s->nleases++ : s->next_lease++];
		s->next_lease %= LEASES_KNOWN;
		*l = (struct lease_left){.id = lease};
	}
	if (l->at_ms && now - l->at_ms <= LEASE_REREAD_MS * 2) {
		*ret_s = l->left_s;
		*ret_at_ms = l->at_ms;
		r = 0;
	}
	if (!l->asked_ms || now - l->asked_ms >= LEASE_REREAD_MS) {
		l->asked_ms = now;
		ask = 1;
	}
	pthread_mutex_unlock(&s->mu);
	if (ask) {
		snprintf(v, sizeof(v), "%lld", (long long)lease);
		enqueue(s, OP_TTL, "", v, 0);
	}
	return r;
}

static const struct store_ops etcd_ops = {
    .lease = etcd_lease,
    .lease_left = etcd_lease_left,
    .kind = "etcd",
    .claim = etcd_claim,
    .put = etcd_put_,
    .get = etcd_get,
    .delete_prefix = etcd_delete_prefix_,
    .list = etcd_list,
    .reachable = etcd_reachable,
    .counters = etcd_counters,
    .rejected = etcd_rejected,
    .bad_replies = etcd_bad_replies,
    .close = etcd_close,
};

static void on_changed(void *ctx, uint32_t arg, uint32_t events)
{
	struct store_etcd *s = ctx;
	uint64_t n;

	(void)arg, (void)events;
	if (read(s->efd, &n, sizeof(n)) > 0 && s->changed)
		s->changed(s->ctx);
}

struct store *store_etcd_open(const struct store_opts *o, char *err, size_t errlen)
{
	struct store_etcd *s = calloc(1, sizeof(*s));
	struct etcd_opts eo = {.endpoints = o->endpoints,
			       .cacert = o->cacert,
			       .cert = o->cert,
			       .key = o->key,
			       .user = o->user,
			       .password = o->password,
			       .timeout_ms = 2000};
	int h, r;

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->base.ops = &etcd_ops;
	s->efd = -1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	kvmap_init(&s->mirror);
	kvmap_init(&s->leased);
	snprintf(s->prefix, sizeof(s->prefix), "%s",
		 o->prefix && *o->prefix ? o->prefix : "/ftbpf/");
	s->ttl_s = o->lease_ttl_s >= 1 ? (int)o->lease_ttl_s : 5;
	s->reachable_ms = o->reachable_ms ? o->reachable_ms : dec_reachable_ms(s->ttl_s, s->ttl_s);
	store_seal_init(&s->seal, o->cluster_key,
			o->cluster_key && o->node_sk && o->node ? o->node_keys : NULL, o->node_sk,
			o->node);
	s->loop = o->loop;
	s->changed = o->changed;
	s->ctx = o->ctx;
	s->wc = etcd_conn_new(&eo, err, errlen);
	s->rc = s->wc ? etcd_conn_new(&eo, err, errlen) : NULL;
	s->lc = s->rc ? etcd_conn_new(&eo, err, errlen) : NULL;
	if (!s->lc)
		goto fail;
	s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	h = s->efd < 0 ? -errno : loop_handler(s->loop, on_changed, s, 0);
	r = h < 0 ? h : loop_add(s->loop, s->efd, EPOLLIN, h, 0);
	if (r < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-r));
		goto fail;
	}
	if (pthread_create(&s->watcher, NULL, watcher, s)) {
		snprintf(err, errlen, "cannot start a thread");
		goto fail;
	}
	if (pthread_create(&s->requester, NULL, requester, s)) {
		pthread_mutex_lock(&s->mu);
		s->stop = 1;
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->watcher, NULL);
		snprintf(err, errlen, "cannot start a thread");
		goto fail;
	}
	if (pthread_create(&s->leaser, NULL, leaser, s)) {
		pthread_mutex_lock(&s->mu);
		s->stop = 1;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->watcher, NULL);
		pthread_join(s->requester, NULL);
		snprintf(err, errlen, "cannot start a thread");
		goto fail;
	}
	s->started = 1;
	return &s->base;
fail:
	etcd_close(&s->base);
	return NULL;
}
