/* The inspector's worker thread (see inspector.h). */
#include "watch/inspector.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "os/procfs.h"
#include "os/rasclient.h"
#include "proto/ras_proto.h"
#include "watch/gpuprobe.h"
#include "watch/pystack.h"

#define PENDING_MAX	256
#define PENDING_PER_UID 16

enum job_kind { JOB_PY, JOB_GPU, JOB_RAS, JOB_KINDS };

struct job {
	struct job *next;
	enum job_kind kind;
	int pid, pidfd;
	uid_t uid;
	uint64_t deadline; /* JOB_PY, JOB_RAS */
	inspector_py_fn fn;
	inspector_ras_fn ras_fn;
	void *ctx;
	int answered; /* the loop answered it -ETIMEDOUT while the worker ran it */
	int err;
	char why[160];
	struct py_stack *stack;
	int jpids[INSPECTOR_RAS_PIDS], njpids; /* JOB_RAS: the job's ranks here */
	struct ras_answer ras;
	struct ras_report *report;
};

struct inspector {
	/* a worker per kind: Python stacks (someone waits for them) never wait behind a long
	 * probe scan (a 1 GiB libtorch_cuda.so) or a RAS query (seconds on a stopped server) */
	pthread_t th[JOB_KINDS];
	int started[JOB_KINDS];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int efd;
	struct job *queue; /* waiting, oldest first */
	struct job *running[JOB_KINDS];
	struct job *done; /* answered by the worker, not yet polled */
	int stop;
	struct gpuprobe *gp;
	struct pystack_cache *cache; /* the worker's */
	struct inspector_counters cnt;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void job_free(struct job *j)
{
	if (!j)
		return;
	if (j->pidfd >= 0)
		close(j->pidfd);
	free(j->stack);
	free(j->ras.text);
	free(j->report);
	free(j);
}

/* The oldest waiting job of a kind. Under mu. */
static struct job *take(struct inspector *in, enum job_kind kind)
{
	for (struct job **p = &in->queue; *p; p = &(*p)->next)
		if ((*p)->kind == kind) {
			struct job *j = *p;

			*p = j->next;
			j->next = NULL;
			return j;
		}
	return NULL;
}

/* NCCL RAS: ask, check who answered, keep what concerns the job. */
static void run_ras(struct job *j)
{
	struct rasclient_query q = {j->pid, j->pidfd, j->jpids, j->njpids, j->deadline};
	int nspids[INSPECTOR_RAS_PIDS], n = 0;

	j->err = rasclient_query(&q, &j->ras, j->why, sizeof(j->why));
	if (j->err || !j->ras.json)
		return; /* text (an NCCL before 2.28.7): the caller says so */
	for (int i = 0; i < j->njpids; i++)
		if (procfs_nspid(j->jpids[i], &nspids[n]) == 0)
			n++;
	j->report = malloc(sizeof(*j->report));
	if (!j->report) {
		j->err = -ENOMEM;
		snprintf(j->why, sizeof(j->why), "out of memory");
		return;
	}
	/* no pid known (all gone): keep nothing rather than every communicator */
	j->err = ras_json_parse(j->ras.text, j->ras.len, nspids, n ? n : 1, j->report, j->why,
				sizeof(j->why));
}

static void run(struct inspector *in, struct job *j)
{
	if (j->kind == JOB_RAS) {
		run_ras(j);
		return;
	}
	if (j->kind == JOB_GPU) {
		if (in->gp)
			(void)gpuprobe_scan(in->gp, j->pid, j->pidfd, j->uid);
		return;
	}
	if (mono_ns() > j->deadline) {
		j->err = -ETIMEDOUT;
		snprintf(j->why, sizeof(j->why), "not read: the inspector was busy");
		return;
	}
	j->stack = malloc(sizeof(*j->stack));
	if (!j->stack) {
		j->err = -ENOMEM;
		snprintf(j->why, sizeof(j->why), "out of memory");
		return;
	}
	j->err = pystack_read(in->cache, j->pid, j->pidfd, j->deadline, j->stack, j->why,
			      sizeof(j->why));
}

struct worker_arg {
	struct inspector *in;
	enum job_kind kind;
};

static void *worker(void *arg)
{
	struct worker_arg *wa = arg;
	struct inspector *in = wa->in;
	enum job_kind kind = wa->kind;
	uint64_t one = 1;

	free(wa);
	pthread_mutex_lock(&in->mu);
	while (!in->stop) {
		struct job *j = take(in, kind);

		if (!j) {
			pthread_cond_wait(&in->cv, &in->mu);
			continue;
		}
		in->running[kind] = j;
		pthread_mutex_unlock(&in->mu);
		run(in, j);
		pthread_mutex_lock(&in->mu);
		in->running[kind] = NULL;
		if (j->kind == JOB_GPU || j->answered) {
			job_free(j);
			continue;
		}
		j->next = in->done;
		in->done = j;
		if (write(in->efd, &one, sizeof(one)) < 0)
			(void)0; /* the counter is full: it is readable anyway */
	}
	pthread_mutex_unlock(&in->mu);
	return NULL;
}

struct inspector *inspector_new(struct gpuprobe *gp)
{
	struct inspector *in = calloc(1, sizeof(*in));
	int r;

	if (!in)
		return NULL;
	in->gp = gp;
	in->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	in->cache = pystack_cache_new();
	pthread_mutex_init(&in->mu, NULL);
	pthread_cond_init(&in->cv, NULL);
	if (in->efd < 0 || !in->cache) {
		r = in->efd < 0 ? errno : ENOMEM;
		goto fail;
	}
	for (int k = 0; k < JOB_KINDS; k++) {
		struct worker_arg *wa = malloc(sizeof(*wa));

		if (!wa) {
			r = ENOMEM;
			goto fail;
		}
		*wa = (struct worker_arg){in, (enum job_kind)k};
		r = pthread_create(&in->th[k], NULL, worker, wa);
		if (r) {
			free(wa);
			goto fail;
		}
		in->started[k] = 1;
	}
	return in;
fail:
	inspector_free(in);
	errno = r;
	return NULL;
}

static void answer_all(struct job *list, int err, const char *why)
{
	while (list) {
		struct job *j = list;

		list = j->next;
		if (j->kind == JOB_PY && j->fn)
			j->fn(j->ctx, j->pid, err ? err : j->err, err ? NULL : j->stack,
			      err ? why : j->why);
		if (j->kind == JOB_RAS && j->ras_fn)
			j->ras_fn(j->ctx, err ? err : j->err, err ? NULL : &j->ras,
				  err ? NULL : j->report, err ? why : j->why);
		job_free(j);
	}
}

void inspector_free(struct inspector *in)
{
	struct job *q, *d;

	if (!in)
		return;
	pthread_mutex_lock(&in->mu);
	in->stop = 1;
	pthread_cond_broadcast(&in->cv);
	pthread_mutex_unlock(&in->mu);
	for (int k = 0; k < JOB_KINDS; k++) {
		struct timespec ts;

		if (!in->started[k])
			continue;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 2;
		if (pthread_timedjoin_np(in->th[k], NULL, &ts)) {
			/* stuck in the kernel on a job (a hung file system): leave it, and what it
			 * uses, to the process's exit */
			return;
		}
	}
	q = in->queue;
	d = in->done;
	in->queue = in->done = NULL;
	answer_all(d, 0, NULL);
	answer_all(q, -ECANCELED, "the agent is stopping");
	pystack_cache_free(in->cache);
	if (in->efd >= 0)
		close(in->efd);
	pthread_cond_destroy(&in->cv);
	pthread_mutex_destroy(&in->mu);
	free(in);
}

int inspector_fd(const struct inspector *in)
{
	return in->efd;
}

void inspector_poll(struct inspector *in)
{
	struct job *done, *late = NULL, **p;
	uint64_t now = mono_ns(), cnt;
	struct job copy[JOB_KINDS];
	int nlate = 0;

	if (read(in->efd, &cnt, sizeof(cnt)) < 0)
		(void)0; /* nothing signalled: a poll for time limits */
	pthread_mutex_lock(&in->mu);
	done = in->done;
	in->done = NULL;
	for (p = &in->queue; *p;) {
		struct job *j = *p;

		if (j->kind != JOB_GPU && now > j->deadline) {
			in->cnt.timed_out++;
			*p = j->next;
			j->next = late;
			late = j;
		} else {
			p = &j->next;
		}
	}
	for (int k = 0; k < JOB_KINDS; k++) {
		struct job *r = in->running[k];

		if (k == JOB_GPU || !r || r->answered || now <= r->deadline)
			continue;
		/* the worker is stuck on it (a slow file system, a huge file, a server that
		 * never ends its reply): answer now; the worker frees it when it comes back */
		r->answered = 1;
		copy[nlate] = *r;
		copy[nlate].next = NULL;
		copy[nlate].stack = NULL;
		copy[nlate].report = NULL;
		copy[nlate].ras.text = NULL;
		copy[nlate].pidfd = -1;
		nlate++;
	}
	in->cnt.timed_out += (uint64_t)nlate;
	pthread_mutex_unlock(&in->mu);
	answer_all(done, 0, NULL);
	answer_all(late, -ETIMEDOUT, "not read within the time limit (the inspector is busy)");
	for (int i = 0; i < nlate; i++) {
		struct job *r = &copy[i];

		if (r->kind == JOB_PY && r->fn)
			r->fn(r->ctx, r->pid, -ETIMEDOUT, NULL, "not read within the time limit");
		if (r->kind == JOB_RAS && r->ras_fn)
			r->ras_fn(r->ctx, -ETIMEDOUT, NULL, NULL,
				  "no answer within the time limit");
	}
}

static int submit(struct inspector *in, struct job *j)
{
	int n = 0, nuid = 0, dup = 0;

	pthread_mutex_lock(&in->mu);
	for (struct job *q = in->queue; q; q = q->next) {
		n++;
		nuid += q->uid == j->uid;
		dup |= j->kind == JOB_GPU && q->kind == JOB_GPU && q->pid == j->pid;
	}
	if (dup || n >= PENDING_MAX || (j->uid != 0 && nuid >= PENDING_PER_UID)) {
		in->cnt.refused += !dup;
		pthread_mutex_unlock(&in->mu);
		job_free(j);
		return dup ? 0 : -EAGAIN;
	}
	in->cnt.jobs++;
	struct job **p = &in->queue;

	while (*p)
		p = &(*p)->next;
	*p = j;
	pthread_cond_broadcast(&in->cv); /* the worker of its kind */
	pthread_mutex_unlock(&in->mu);
	return 0;
}

static struct job *job_new(enum job_kind kind, int pid, int pidfd, uid_t uid)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->kind = kind;
	j->pid = pid;
	j->uid = uid;
	j->pidfd = pidfd >= 0 ? fcntl(pidfd, F_DUPFD_CLOEXEC, 3) : -1;
	return j;
}

int inspector_pystack(struct inspector *in, int pid, int pidfd, uid_t uid, double timeout_s,
		      inspector_py_fn fn, void *ctx)
{
	struct job *j = job_new(JOB_PY, pid, pidfd, uid);

	if (!j)
		return -ENOMEM;
	j->deadline = mono_ns() + (uint64_t)(timeout_s * 1e9);
	j->fn = fn;
	j->ctx = ctx;
	return submit(in, j);
}

int inspector_gpuprobe(struct inspector *in, int pid, int pidfd, uid_t uid)
{
	struct job *j;

	if (!in->gp)
		return -EOPNOTSUPP;
	j = job_new(JOB_GPU, pid, pidfd, uid);
	return j ? submit(in, j) : -ENOMEM;
}

int inspector_ras(struct inspector *in, int pid, int pidfd, uid_t uid, const int *job_pids,
		  int njob, double timeout_s, inspector_ras_fn fn, void *ctx)
{
	struct job *j = job_new(JOB_RAS, pid, pidfd, uid);

	if (!j)
		return -ENOMEM;
	for (int i = 0; i < njob && j->njpids < INSPECTOR_RAS_PIDS; i++)
		j->jpids[j->njpids++] = job_pids[i];
	j->deadline = mono_ns() + (uint64_t)(timeout_s * 1e9);
	j->ras_fn = fn;
	j->ctx = ctx;
	return submit(in, j);
}

struct waiter {
	int done, err;
	struct py_stack *out;
	char *why;
	size_t whylen;
};

static void wait_done(void *ctx, int pid, int err, const struct py_stack *s, const char *why)
{
	struct waiter *w = ctx;

	(void)pid;
	w->done = 1;
	w->err = err;
	if (!err && s)
		memcpy(w->out, s, sizeof(*s));
	else
		snprintf(w->why, w->whylen, "%s", why ? why : strerror(-err));
}

int inspector_pystack_wait(struct inspector *in, int pid, int pidfd, double timeout_s,
			   struct py_stack *out, char *why, size_t whylen)
{
	struct waiter w = {0, 0, out, why, whylen};
	int r = inspector_pystack(in, pid, pidfd, 0, timeout_s, wait_done, &w);

	if (r < 0) {
		snprintf(why, whylen, "%s", strerror(-r));
		return r;
	}
	while (!w.done) {
		struct pollfd pfd = {in->efd, POLLIN, 0};

		(void)poll(&pfd, 1, 100); /* at most 100 ms late on the time limit */
		inspector_poll(in);
	}
	return w.err;
}

void inspector_counters(const struct inspector *in, struct inspector_counters *ret)
{
	pthread_mutex_lock((pthread_mutex_t *)&in->mu);
	*ret = in->cnt;
	pthread_mutex_unlock((pthread_mutex_t *)&in->mu);
}
