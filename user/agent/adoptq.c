/* The adoption reader's worker thread: see adoptq.h. */
#include "agent/adoptq.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "lib/ident.h"
#include "os/pidfd.h"
#include "os/procfs.h"

#define ENVIRON_MAX	(256 * 1024)
#define WAITING_MAX	4096 /* exec events waiting to be read */
#define WAITING_PER_UID 256  /* ... of one user (the kernel's exec budget: 256 a second) */
#define READY_MAX	4096 /* candidates waiting for the loop */
#define UIDS_MAX	64   /* users with exec events waiting */

struct req {
	int pid;
	uid_t uid;
};

struct cand {
	struct cand *next;
	int pid, pidfd, err, walked;
	struct rank_ident id;
};

struct uid_count {
	uid_t uid;
	int n;
};

struct adoptq {
	pthread_t th;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int efd;
	uint64_t netns;
	struct req ring[WAITING_MAX]; /* waiting exec events, a ring */
	int head, nwait;
	struct uid_count uids[UIDS_MAX];
	int walk, stop;
	struct cand *ready, **ready_tail;
	int nready;
	struct adoptq_counters cnt;
	char *env; /* the worker's */
};

static int uid_slot(struct adoptq *q, uid_t uid, int add)
{
	int free_slot = -1;

	for (int i = 0; i < UIDS_MAX; i++) {
		if (q->uids[i].n && q->uids[i].uid == uid)
			return i;
		if (!q->uids[i].n && free_slot < 0)
			free_slot = i;
	}
	if (add && free_slot >= 0) {
		q->uids[free_slot].uid = uid;
		return free_slot;
	}
	return -1;
}

/* Read pid's environment; a rank candidate is queued for the loop. Not under mu. */
static void read_one(struct adoptq *q, int pid, int walked)
{
	struct cand *c;
	struct rank_ident id;
	ssize_t n;
	int pidfd, r;

	if (q->netns) {
		uint64_t ns;

		if (procfs_netns(pid, &ns) < 0 || ns != q->netns)
			return; /* another agent's */
	}
	pidfd = pidfd_open_pid(pid);
	if (pidfd < 0)
		return;
	n = procfs_environ(pid, q->env, ENVIRON_MAX);
	/* what was read is the process the pidfd names, not a later one at the pid */
	if (n <= 0 || pidfd_signal(pidfd, 0) < 0) {
		close(pidfd);
		return;
	}
	r = ident_from_environ(q->env, (size_t)n, &id);
	if (r < 0 && r != -EINVAL) {
		close(pidfd);
		return; /* no rank */
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(pidfd);
		return;
	}
	c->pid = pid;
	c->pidfd = pidfd;
	c->err = r;
	c->id = id;
	c->walked = walked;
	pthread_mutex_lock(&q->mu);
	if (q->nready >= READY_MAX) {
		pthread_mutex_unlock(&q->mu);
		close(pidfd);
		free(c);
		return;
	}
	*q->ready_tail = c;
	q->ready_tail = &c->next;
	q->nready++;
	pthread_mutex_unlock(&q->mu);
	(void)!write(q->efd, &(uint64_t){1}, sizeof(uint64_t));
}

static int walk_one(void *ctx, int pid)
{
	struct adoptq *q = ctx;

	if (__atomic_load_n(&q->stop, __ATOMIC_RELAXED))
		return 1;
	read_one(q, pid, 1);
	__atomic_add_fetch(&q->cnt.reads, 1, __ATOMIC_RELAXED);
	return 0;
}

static void *worker(void *arg)
{
	struct adoptq *q = arg;

	pthread_mutex_lock(&q->mu);
	while (!q->stop) {
		if (q->nwait) {
			struct req rq = q->ring[q->head];
			int s = uid_slot(q, rq.uid, 0);

			q->head = (q->head + 1) % WAITING_MAX;
			q->nwait--;
			if (s >= 0)
				q->uids[s].n--;
			pthread_mutex_unlock(&q->mu);
			read_one(q, rq.pid, 0);
			__atomic_add_fetch(&q->cnt.reads, 1, __ATOMIC_RELAXED);
			pthread_mutex_lock(&q->mu);
		} else if (q->walk) {
			q->walk = 0;
			q->cnt.walks++;
			pthread_mutex_unlock(&q->mu);
			procfs_foreach_pid(0, walk_one, q);
			pthread_mutex_lock(&q->mu);
		} else {
			pthread_cond_wait(&q->cv, &q->mu);
		}
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

struct adoptq *adoptq_new(uint64_t netns)
{
	struct adoptq *q = calloc(1, sizeof(*q));
	int r;

	if (!q)
		return NULL;
	q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	q->env = malloc(ENVIRON_MAX);
	q->netns = netns;
	q->ready_tail = &q->ready;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	if (q->efd < 0 || !q->env || (r = pthread_create(&q->th, NULL, worker, q)) != 0) {
		adoptq_free(q);
		errno = ENOMEM;
		return NULL;
	}
	q->started = 1;
	return q;
}

void adoptq_free(struct adoptq *q)
{
	if (!q)
		return;
	if (q->started) {
		pthread_mutex_lock(&q->mu);
		__atomic_store_n(&q->stop, 1, __ATOMIC_RELAXED);
		pthread_cond_signal(&q->cv);
		pthread_mutex_unlock(&q->mu);
		pthread_join(q->th, NULL);
	}
	while (q->ready) {
		struct cand *c = q->ready;

		q->ready = c->next;
		close(c->pidfd);
		free(c);
	}
	if (q->efd >= 0)
		close(q->efd);
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->cv);
	free(q->env);
	free(q);
}

int adoptq_fd(const struct adoptq *q)
{
	return q->efd;
}

int adoptq_exec(struct adoptq *q, int pid, uid_t uid)
{
	int s, r = 0;

	pthread_mutex_lock(&q->mu);
	s = uid_slot(q, uid, 1);
	if (q->nwait >= WAITING_MAX || s < 0 || q->uids[s].n >= WAITING_PER_UID) {
		q->cnt.refused++;
		r = -EAGAIN;
	} else {
		q->ring[(q->head + q->nwait) % WAITING_MAX] = (struct req){pid, uid};
		q->nwait++;
		q->uids[s].n++;
		pthread_cond_signal(&q->cv);
	}
	pthread_mutex_unlock(&q->mu);
	return r;
}

void adoptq_walk(struct adoptq *q)
{
	pthread_mutex_lock(&q->mu);
	q->walk = 1;
	pthread_cond_signal(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

int adoptq_take(struct adoptq *q, int max, adoptq_fn fn, void *ctx)
{
	uint64_t v;
	int left;

	(void)!read(q->efd, &v, sizeof(v));
	for (int i = 0; i < max; i++) {
		struct cand *c;

		pthread_mutex_lock(&q->mu);
		c = q->ready;
		if (c) {
			q->ready = c->next;
			if (!q->ready)
				q->ready_tail = &q->ready;
			q->nready--;
		}
		pthread_mutex_unlock(&q->mu);
		if (!c)
			break;
		fn(ctx, c->pid, c->pidfd, c->err, &c->id, c->walked);
		free(c);
	}
	pthread_mutex_lock(&q->mu);
	left = q->nready;
	pthread_mutex_unlock(&q->mu);
	if (left) /* readable again: the loop comes back after its other work */
		(void)!write(q->efd, &(uint64_t){1}, sizeof(uint64_t));
	return left;
}

void adoptq_counters(struct adoptq *q, struct adoptq_counters *ret)
{
	pthread_mutex_lock(&q->mu);
	*ret = q->cnt;
	ret->reads = __atomic_load_n(&q->cnt.reads, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&q->mu);
}
