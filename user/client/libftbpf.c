/*
 * libftbpf: slot fast path (compare-and-swap on the process's own shared page) and the
 * control-socket fallback. See include/ftbpf/ftbpf.h for the contract.
 */
#include "ftbpf/ftbpf.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ftbpf/slot.h"

#define REMOTE_BASE 1000
#define REMOTE_MAX  256
#define SCOPE_MAX   128

struct ftbpf {
	int sock;
	struct ftbpf_slot *slot;  /* owned mapping */
	pthread_mutex_t lock;	  /* the socket and the remote table */
	char *remote[REMOTE_MAX]; /* owned scope names of socket-held timers */
	uint64_t wait_ns;	  /* the longest wait at a step boundary (FTBPF_ACK_TIMEOUT) */
	/* the last save ticket should_save handed out (ftbpf_saved fences with it) */
	int64_t ticket_step; /* -1 none */
	uint64_t ticket_generation, ticket_token;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: no syscall */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Send one request line; read one reply line into buf. Caller holds the lock. */
static int roundtrip(struct ftbpf *h, const char *req, char *buf, size_t len, int *ret_fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	size_t got = 0, n = strlen(req);

	if (send(h->sock, req, n, MSG_NOSIGNAL) != (ssize_t)n)
		return -errno;
	while (got < len - 1) {
		struct iovec iov = {buf + got, len - 1 - got};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
		ssize_t r;

		if (ret_fd) {
			mh.msg_control = cbuf;
			mh.msg_controllen = sizeof(cbuf);
		}
		r = recvmsg(h->sock, &mh, MSG_CMSG_CLOEXEC);
		if (r <= 0)
			return r == 0 ? -ECONNRESET : -errno;
		if (ret_fd) {
			struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

			if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
				memcpy(ret_fd, CMSG_DATA(cm), sizeof(int));
		}
		got += (size_t)r;
		if (memchr(buf, '\n', got))
			break;
	}
	buf[got] = 0;
	return strstr(buf, "\"ok\":true") ? 0 : -EPROTO;
}

/* JSON string body: quotes, backslashes and control characters escaped. */
static void escape(const char *in, char *out, size_t len)
{
	size_t o = 0;

	for (; *in && o + 7 < len; in++) {
		unsigned char c = (unsigned char)*in;

		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c < 0x20) {
			o += (size_t)snprintf(out + o, len - o, "\\u%04x", c);
		} else {
			out[o++] = (char)c;
		}
	}
	out[o] = 0;
}

/* FTBPF_AGENT_WAIT seconds (0: none): how long a process waits for an agent that does not
 * listen, or goes away before it answers (being restarted), before it goes on without one; once
 * per process, so that a process that asks again (Python does every 5 s) does not wait again. */
static int agent_wait_spent;

static int agent_gone(int r)
{
	return r == -ENOENT || r == -ECONNREFUSED || r == -ECONNRESET || r == -EPIPE;
}

/* Connect and send the registration req; its reply in buf, the slot's fd in *ret_fd. */
static int register_agent(struct ftbpf *h, const struct sockaddr_un *addr, const char *req,
			  char *buf, size_t len, int *ret_fd)
{
	uint64_t until = 0;

	for (;;) {
		struct timespec ts = {0, 50000000};
		const char *w;
		double s;
		int r;

		h->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (h->sock < 0)
			return -errno;
		r = connect(h->sock, (const struct sockaddr *)addr, sizeof(*addr)) < 0 ? -errno : 0;
		if (r == 0 && (r = roundtrip(h, req, buf, len, ret_fd)) == 0) {
			__atomic_store_n(&agent_wait_spent, 0, __ATOMIC_RELAXED);
			return 0;
		}
		if (!agent_gone(r) || __atomic_load_n(&agent_wait_spent, __ATOMIC_RELAXED))
			return r;
		close(h->sock);
		h->sock = -1;
		if (*ret_fd >= 0) {
			close(*ret_fd);
			*ret_fd = -1;
		}
		if (!until) {
			w = getenv("FTBPF_AGENT_WAIT");
			s = w ? strtod(w, NULL) : 0;
			if (!(s > 0 && s <= 3600))
				return r;
			until = mono_ns() + (uint64_t)(s * 1e9);
		}
		if (mono_ns() > until) {
			__atomic_store_n(&agent_wait_spent, 1, __ATOMIC_RELAXED);
			return r;
		}
		nanosleep(&ts, NULL);
	}
}

int ftbpf_open(const char *socket_path, const char *job, int rank, struct ftbpf **ret)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	char req[256], buf[1024], ej[140] = "";
	struct ftbpf *h;
	int fd = -1, r;
	void *p;

	if (!socket_path || !*socket_path)
		socket_path = getenv("FTBPF_SOCKET");
	if (!socket_path || !*socket_path)
		socket_path = "/run/ftbpf/ftbpfd.sock";
	if (strlen(socket_path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	h = calloc(1, sizeof(*h));
	if (h) {
		const char *t = getenv("FTBPF_ACK_TIMEOUT");
		double w = t ? strtod(t, NULL) : 60.0;

		h->wait_ns = (uint64_t)((w > 0 && w < 86400 ? w : 60.0) * 1e9);
		h->ticket_step = -1;
	}
	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	strcpy(addr.sun_path, socket_path);
	if (!job || !*job)
		job = getenv("FTBPF_JOB");
	if (job && !*job)
		job = NULL;
	if (job)
		escape(job, ej, sizeof(ej));
	snprintf(req, sizeof(req), "{\"v\":1,\"cmd\":\"register\"%s%s%s%s}\n",
		 job ? ",\"job\":\"" : "", ej, job ? "\"" : "", "");
	if (rank >= 0) {
		size_t l = strlen(req);

		snprintf(req + l - 2, sizeof(req) - l + 2, ",\"rank\":%d}\n", rank);
	}
	r = register_agent(h, &addr, req, buf, sizeof(buf), &fd);
	if (r < 0) {
		if (fd >= 0) /* a slot came with a refusal: not ours to keep */
			close(fd);
		goto fail;
	}
	if (fd < 0) {
		r = -EPROTO;
		goto fail;
	}
	p = mmap(NULL, sizeof(struct ftbpf_slot), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		r = -errno;
		goto fail;
	}
	h->slot = p;
	if (h->slot->magic != FTBPF_SLOT_MAGIC || h->slot->version != FTBPF_SLOT_VERSION) {
		r = -EPROTO;
		goto fail;
	}
	*ret = h;
	return 0;
fail:
	ftbpf_close(h);
	return r;
}

/* Long scopes ("/long/path/train.py#123") keep their informative end: "~" + the last bytes. */
static void set_scope(char *dst, const char *scope)
{
	size_t n = strlen(scope);

	if (n < FTBPF_SLOT_SCOPE_LEN) {
		memcpy(dst, scope, n + 1);
		return;
	}
	dst[0] = '~';
	memcpy(dst + 1, scope + n - (FTBPF_SLOT_SCOPE_LEN - 2), FTBPF_SLOT_SCOPE_LEN - 2);
	dst[FTBPF_SLOT_SCOPE_LEN - 1] = 0;
}

static void lower_earliest(struct ftbpf_slot *s, uint64_t d)
{
	uint64_t e = __atomic_load_n(&s->earliest_ns, __ATOMIC_ACQUIRE);

	while ((e == 0 || d < e) &&
	       !__atomic_compare_exchange_n(&s->earliest_ns, &e, d, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE))
		;
}

/* Recompute the earliest armed deadline; retried if an acquire raced us. */
static void recompute_earliest(struct ftbpf_slot *s)
{
	uint64_t e = __atomic_load_n(&s->earliest_ns, __ATOMIC_ACQUIRE), m;

	do {
		m = 0;
		for (int i = 0; i < FTBPF_SLOT_TIMERS; i++) {
			uint64_t d = __atomic_load_n(&s->timers[i].deadline_ns, __ATOMIC_ACQUIRE);

			if (__atomic_load_n(&s->timers[i].state, __ATOMIC_ACQUIRE) ==
				FTBPF_TS_ARMED &&
			    d && (!m || d < m))
				m = d;
		}
	} while (!__atomic_compare_exchange_n(&s->earliest_ns, &e, m, 0, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
}

#define FTBPF_TIMER_MAX_S 31536000.0

static int remote_acquire(struct ftbpf *h, const char *scope, double expires_in, int sig)
{
	char req[512], buf[1024], es[SCOPE_MAX * 6 + 1];
	int id = -1, r;

	escape(scope, es, sizeof(es));
	pthread_mutex_lock(&h->lock);
	for (int i = 0; i < REMOTE_MAX && id < 0; i++)
		if (!h->remote[i])
			id = i;
	if (id < 0) {
		pthread_mutex_unlock(&h->lock);
		return -ENOSPC;
	}
	/* the agent keys socket timers by scope: make it unique per acquisition */
	h->remote[id] = malloc(SCOPE_MAX + 16);
	if (!h->remote[id]) {
		pthread_mutex_unlock(&h->lock);
		return -ENOMEM;
	}
	snprintf(h->remote[id], SCOPE_MAX + 16, "%.100s#r%d", es, id);
	snprintf(req, sizeof(req),
		 "{\"v\":1,\"cmd\":\"timer_acquire\",\"scope\":\"%s\",\"expires_in\":%.9f,"
		 "\"signal\":%d}\n",
		 h->remote[id], expires_in, sig);
	r = roundtrip(h, req, buf, sizeof(buf), NULL);
	if (r < 0) {
		free(h->remote[id]);
		h->remote[id] = NULL;
	}
	pthread_mutex_unlock(&h->lock);
	return r < 0 ? r : REMOTE_BASE + id;
}

int ftbpf_timer_acquire(struct ftbpf *h, const char *scope, double expires_in, int sig)
{
	struct ftbpf_slot *s;
	uint64_t d;

	if (!h || !scope || !(expires_in >= 0) || sig < 0 || sig > 64)
		return -EINVAL;
	if (!sig)
		sig = SIGKILL;
	if (expires_in > FTBPF_TIMER_MAX_S) /* never overflow the deadline: a year is "never" */
		expires_in = FTBPF_TIMER_MAX_S;
	s = h->slot;
	d = mono_ns() + (uint64_t)(expires_in * 1e9);
	for (int i = 0; i < FTBPF_SLOT_TIMERS; i++) {
		struct ftbpf_slot_timer *t = &s->timers[i];
		uint64_t free_ = FTBPF_TS_FREE;

		if (__atomic_load_n(&t->state, __ATOMIC_RELAXED) != FTBPF_TS_FREE ||
		    !__atomic_compare_exchange_n(&t->state, &free_, FTBPF_TS_BUSY, 0,
						 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		set_scope(t->scope, scope);
		t->sig = (uint32_t)sig;
		__atomic_store_n(&t->deadline_ns, d ? d : 1, __ATOMIC_RELEASE);
		__atomic_store_n(&t->state, FTBPF_TS_ARMED, __ATOMIC_RELEASE);
		lower_earliest(s, d ? d : 1);
		return i;
	}
	return remote_acquire(h, scope, expires_in, sig);
}

int ftbpf_timer_release(struct ftbpf *h, int id)
{
	if (!h)
		return -EINVAL;
	if (id >= 0 && id < FTBPF_SLOT_TIMERS) {
		struct ftbpf_slot_timer *t = &h->slot->timers[id];
		uint64_t st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);

		if (st != FTBPF_TS_ARMED && st != FTBPF_TS_FIRED)
			return -EINVAL;
		/* armed -> busy so that neither the kernel nor the agent fires it meanwhile */
		if (st == FTBPF_TS_ARMED &&
		    !__atomic_compare_exchange_n(&t->state, &st, FTBPF_TS_BUSY, 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE) &&
		    st != FTBPF_TS_FIRED)
			return -EINVAL;
		__atomic_store_n(&t->deadline_ns, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&t->state, FTBPF_TS_FREE, __ATOMIC_RELEASE);
		recompute_earliest(h->slot);
		return 0; /* released, or expired already: a no-op, as in torch */
	}
	if (id >= REMOTE_BASE && id < REMOTE_BASE + REMOTE_MAX) {
		char req[256], buf[1024];
		int r;

		pthread_mutex_lock(&h->lock);
		if (!h->remote[id - REMOTE_BASE]) {
			pthread_mutex_unlock(&h->lock);
			return -EINVAL;
		}
		snprintf(req, sizeof(req), "{\"v\":1,\"cmd\":\"timer_release\",\"scope\":\"%s\"}\n",
			 h->remote[id - REMOTE_BASE]);
		r = roundtrip(h, req, buf, sizeof(buf), NULL);
		free(h->remote[id - REMOTE_BASE]);
		h->remote[id - REMOTE_BASE] = NULL;
		pthread_mutex_unlock(&h->lock);
		return r;
	}
	return -EINVAL;
}

void ftbpf_ping(struct ftbpf *h)
{
	if (!h)
		return;
	__atomic_fetch_add(&h->slot->progress, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&h->slot->ping_ns, mono_ns(), __ATOMIC_RELEASE);
}

void ftbpf_step(struct ftbpf *h, uint64_t step)
{
	uint64_t now;

	if (!h)
		return;
	now = mono_ns();
	__atomic_store_n(&h->slot->step, step, __ATOMIC_RELAXED);
	__atomic_store_n(&h->slot->step_ns, now, __ATOMIC_RELAXED);
	__atomic_store_n(&h->slot->ping_ns, now, __ATOMIC_RELEASE);
}

int ftbpf_slot_timers_in_use(const struct ftbpf *h)
{
	int n = 0;

	for (int i = 0; h && i < FTBPF_SLOT_TIMERS; i++)
		n += __atomic_load_n(&h->slot->timers[i].state, __ATOMIC_RELAXED) != FTBPF_TS_FREE;
	return n;
}

/* ---- coordinated checkpoints and restarts ---- */
static const struct ftbpf_slot_decision *dec(const struct ftbpf *h)
{
	return h && h->slot ? &h->slot->dec : NULL;
}

int ftbpf_checkpoint_requested(const struct ftbpf *h)
{
	const struct ftbpf_slot_decision *d = dec(h);

	if (!d)
		return 0;
	if (__atomic_load_n(&d->action, __ATOMIC_ACQUIRE) != FTBPF_ACT_NONE)
		return 1;
	if (__atomic_load_n(&d->ckpt_state, __ATOMIC_ACQUIRE) == FTBPF_CK_PENDING)
		return 1;
	return __atomic_load_n(&d->ckpt_state, __ATOMIC_ACQUIRE) == FTBPF_CK_REQUESTED &&
	       __atomic_load_n(&h->slot->saved_step, __ATOMIC_RELAXED) <
		   __atomic_load_n(&d->ckpt_step, __ATOMIC_RELAXED);
}

/*
 * A step boundary with a pending request (FTBPF_CK_PENDING): acknowledge it at the first one
 * (the agents bind the step once every rank of the job acknowledged it: none can be past it),
 * and wait at the next ones until it is bound. Also wait while the agent says hold. 1: go on
 * and look at the decision again; 0: go on as it is (an exit was decided, or waited too long).
 */
static int boundary(struct ftbpf *h, int64_t step)
{
	const struct ftbpf_slot_decision *d = &h->slot->dec;
	struct ftbpf_slot *s = h->slot;
	uint64_t until = 0;

	for (;;) {
		uint32_t state = __atomic_load_n(&d->ckpt_state, __ATOMIC_SEQ_CST);
		uint64_t id = __atomic_load_n(&d->ckpt_id, __ATOMIC_SEQ_CST);
		int wait = __atomic_load_n(&s->hold, __ATOMIC_ACQUIRE) != 0;
		struct timespec ts = {0, 1000000};

		if (__atomic_load_n(&d->action, __ATOMIC_ACQUIRE) != FTBPF_ACT_NONE)
			return 0;
		if (state == FTBPF_CK_PENDING) {
			if (__atomic_load_n(&s->ack_id, __ATOMIC_ACQUIRE) != id) {
				__atomic_store_n(&s->ack_step, step, __ATOMIC_RELAXED);
				__atomic_store_n(&s->ack_id, id, __ATOMIC_SEQ_CST);
			} else if (__atomic_load_n(&s->ack_step, __ATOMIC_RELAXED) < step) {
				wait = 1; /* past the boundary it acknowledged: wait for the step */
			}
		}
		if (!wait)
			return 1;
		if (!until)
			until = mono_ns() + h->wait_ns;
		else if (mono_ns() > until)
			return 0;
		nanosleep(&ts, NULL);
	}
}

int ftbpf_should_save_gen(struct ftbpf *h, int64_t step, uint64_t *ret_generation)
{
	const struct ftbpf_slot_decision *d = dec(h);

	if (step < 0)
		return -EINVAL;
	if (!d)
		return 0;
	/* a step reached is progress (the hang detector's): a rank that sleeps between steps is
	 * not hung while it steps on; one held at a boundary pings no more */
	if (__atomic_load_n(&h->slot->step, __ATOMIC_RELAXED) != (uint64_t)step)
		__atomic_store_n(&h->slot->ping_ns, mono_ns(), __ATOMIC_RELEASE);
	/* the step first, then the decision: the agent writes the decision first, then reads the
	 * step (a rank it reads at step s sees the request by step s + 1) */
	__atomic_store_n(&h->slot->step, (uint64_t)step, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	boundary(h, step);
	if (__atomic_load_n(&d->ckpt_state, __ATOMIC_ACQUIRE) != FTBPF_CK_REQUESTED ||
	    __atomic_load_n(&d->ckpt_step, __ATOMIC_RELAXED) != step ||
	    __atomic_load_n(&h->slot->saved_step, __ATOMIC_RELAXED) >= step)
		return 0;
	__atomic_store_n(&h->slot->saving_step, step, __ATOMIC_RELEASE);
	h->ticket_generation = __atomic_load_n(&h->slot->own_generation, __ATOMIC_ACQUIRE);
	h->ticket_token = __atomic_load_n(&h->slot->fence_token, __ATOMIC_ACQUIRE);
	h->ticket_step = step;
	if (ret_generation)
		*ret_generation = h->ticket_generation;
	return 1;
}

int ftbpf_should_save(struct ftbpf *h, int64_t step)
{
	return ftbpf_should_save_gen(h, step, NULL);
}

int ftbpf_save_ticket(const struct ftbpf *h, int64_t step, uint64_t *ret_generation,
		      uint64_t *ret_token)
{
	if (step < 0)
		return -EINVAL;
	if (!h || !dec(h) || h->ticket_step != step)
		return -ENOENT;
	if (ret_generation)
		*ret_generation = h->ticket_generation;
	if (ret_token)
		*ret_token = h->ticket_token;
	return 0;
}

int ftbpf_saved_gen(struct ftbpf *h, int64_t step, uint64_t generation)
{
	const struct ftbpf_slot_decision *d = dec(h);

	if (step < 0)
		return -EINVAL;
	if (!d)
		return 0;
	/* a newer generation was decided, or this node cannot reach the others: what was saved
	 * must not be committed (the fencing token is stale) */
	if (__atomic_load_n(&d->generation, __ATOMIC_ACQUIRE) != generation ||
	    __atomic_load_n(&h->slot->own_generation, __ATOMIC_ACQUIRE) != generation ||
	    __atomic_load_n(&d->action, __ATOMIC_ACQUIRE) == FTBPF_ACT_STOP ||
	    __atomic_load_n(&h->slot->hold, __ATOMIC_ACQUIRE)) {
		(void)ftbpf_save_failed(h, step); /* the request must not wait for it */
		return -ESTALE;
	}
	__atomic_store_n(&h->slot->failed_step, 0, __ATOMIC_RELAXED); /* saved again: made good */
	__atomic_store_n(&h->slot->saved_generation, generation + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&h->slot->saved_ns, mono_ns(), __ATOMIC_RELAXED);
	__atomic_store_n(&h->slot->saved_step, step, __ATOMIC_RELEASE);
	return 0;
}

int ftbpf_save_failed(struct ftbpf *h, int64_t step)
{
	if (step < 0)
		return -EINVAL;
	if (!dec(h))
		return 0;
	__atomic_store_n(&h->slot->failed_step, (uint64_t)step + 1, __ATOMIC_RELEASE);
	return 0;
}

int ftbpf_saved(struct ftbpf *h, int64_t step)
{
	if (step < 0)
		return -EINVAL;
	if (!dec(h))
		return 0;
	/* fenced with the ticket should_save gave for this step, never with whatever generation
	 * the slot says now (a save begun in G and reported after G+1 was decided is stale) */
	if (h->ticket_step != step)
		return -ENOENT;
	return ftbpf_saved_gen(h, step, h->ticket_generation);
}

/* A generation being decided for the job here (a rank of it failed and a restarted one asks
 * where to resume), or no run known yet (the store not read): wait until it is decided, 10 s
 * at most. 0 settled, -EAGAIN still not. */
static uint64_t settle_wait_ns = 10000000000ull;

static int settle(const struct ftbpf *h)
{
	uint64_t until = 0;

	while (h && h->slot && __atomic_load_n(&h->slot->settling, __ATOMIC_ACQUIRE)) {
		struct timespec ts = {0, 2000000};

		if (!until)
			until = mono_ns() + settle_wait_ns;
		else if (mono_ns() > until)
			return -EAGAIN;
		nanosleep(&ts, NULL);
	}
	return 0;
}

uint64_t ftbpf_generation(const struct ftbpf *h)
{
	const struct ftbpf_slot_decision *d = dec(h);

	(void)settle(h);
	return d ? __atomic_load_n(&d->generation, __ATOMIC_ACQUIRE) : 0;
}

uint64_t ftbpf_fence_token(const struct ftbpf *h)
{
	(void)settle(h);
	return dec(h) ? __atomic_load_n(&h->slot->fence_token, __ATOMIC_ACQUIRE) : 0;
}

int ftbpf_action(const struct ftbpf *h)
{
	const struct ftbpf_slot_decision *d = dec(h);

	return d ? (int)__atomic_load_n(&d->action, __ATOMIC_ACQUIRE) : FTBPF_ACTION_NONE;
}

int ftbpf_exit_code(const struct ftbpf *h)
{
	const struct ftbpf_slot_decision *d = dec(h);
	int c = d ? (int)__atomic_load_n(&d->exit_code, __ATOMIC_ACQUIRE) : 0;

	return c ? c : 42;
}

static const char *cause_name(uint32_t c)
{
	static const char *const names[] = {"",	    "preemption", "rank_died",
					    "hang", "node_dead",  "operator"};

	return c < sizeof(names) / sizeof(names[0]) ? names[c] : "";
}

int ftbpf_restart_info(const struct ftbpf *h, struct ftbpf_restart_info *ri)
{
	const struct ftbpf_slot_decision *d = dec(h);
	struct ftbpf_slot_decision c;
	uint64_t s1, s2;

	int unsettled;

	if (!ri)
		return -EINVAL;
	unsettled = settle(h);
	memset(ri, 0, sizeof(*ri));
	ri->resume_step = ri->ckpt_step = -1;
	ri->exit_code = 42;
	if (!d)
		return 0;
	for (int tries = 0; tries < 1000; tries++) { /* the agent writes under a sequence lock */
		s1 = __atomic_load_n(&d->seq, __ATOMIC_ACQUIRE);
		memcpy(&c, (const void *)d, sizeof(c));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&d->seq, __ATOMIC_RELAXED);
		if (!(s1 & 1) && s1 == s2)
			break;
	}
	ri->generation = c.generation;
	ri->resume_step = c.resume_step;
	ri->ckpt_step = c.ckpt_step;
	ri->ckpt_state = (int)c.ckpt_state;
	ri->action = (int)c.action;
	ri->exit_code = c.exit_code ? (int)c.exit_code : 42;
	snprintf(ri->cause, sizeof(ri->cause), "%s", cause_name(c.cause));
	ri->nexcluded = c.nexcluded > FTBPF_MAX_EXCLUDED ? FTBPF_MAX_EXCLUDED : (int)c.nexcluded;
	for (int i = 0; i < ri->nexcluded; i++)
		snprintf(ri->excluded[i], sizeof(ri->excluded[i]), "%.*s", FTBPF_NODE_LEN - 1,
			 c.excluded[i]);
	return unsettled;
}

void ftbpf_close(struct ftbpf *h)
{
	if (!h)
		return;
	if (h->slot) {
		for (int i = 0; i < FTBPF_SLOT_TIMERS; i++)
			if (__atomic_load_n(&h->slot->timers[i].state, __ATOMIC_RELAXED) ==
			    FTBPF_TS_ARMED)
				ftbpf_timer_release(h, i);
		munmap(h->slot, sizeof(*h->slot));
	}
	for (int i = 0; i < REMOTE_MAX; i++)
		if (h->remote[i] && h->sock >= 0)
			ftbpf_timer_release(h, REMOTE_BASE + i);
	if (h->sock >= 0)
		close(h->sock);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
