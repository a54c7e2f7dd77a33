/* The event loop: see loop.h. */
#include "os/loop.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define LOOP_HANDLERS 32
#define LOOP_BATCH    64 /* events taken per turn */

struct loop_handler {
	loop_fn fn;
	void *ctx;
	int urgent;
};

struct loop {
	int epfd;
	struct loop_handler h[LOOP_HANDLERS];
	int nh;
};

struct loop *loop_new(void)
{
	struct loop *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		int e = errno;

		free(l);
		errno = e;
		return NULL;
	}
	return l;
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	close(l->epfd);
	free(l);
}

int loop_handler(struct loop *l, loop_fn fn, void *ctx, int urgent)
{
	if (l->nh == LOOP_HANDLERS)
		return -ENOSPC;
	l->h[l->nh] = (struct loop_handler){fn, ctx, urgent};
	return l->nh++;
}

static int ctl(struct loop *l, int op, int fd, uint32_t events, int handler, uint32_t arg)
{
	struct epoll_event ev = {.events = events};

	if (handler < 0 || handler >= l->nh)
		return -EINVAL;
	ev.data.u64 = ((uint64_t)handler << 32) | arg;
	return epoll_ctl(l->epfd, op, fd, &ev) < 0 ? -errno : 0;
}

int loop_add(struct loop *l, int fd, uint32_t events, int handler, uint32_t arg)
{
	return ctl(l, EPOLL_CTL_ADD, fd, events, handler, arg);
}

int loop_mod(struct loop *l, int fd, uint32_t events, int handler, uint32_t arg)
{
	return ctl(l, EPOLL_CTL_MOD, fd, events, handler, arg);
}

int loop_del(struct loop *l, int fd)
{
	return epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL) < 0 ? -errno : 0;
}

static void dispatch(struct loop *l, const struct epoll_event *ev, int urgent)
{
	unsigned id = (unsigned)(ev->data.u64 >> 32);

	if (id < (unsigned)l->nh && l->h[id].urgent == urgent)
		l->h[id].fn(l->h[id].ctx, (uint32_t)ev->data.u64, ev->events);
}

int loop_once(struct loop *l, int timeout_ms)
{
	struct epoll_event evs[LOOP_BATCH];
	int n = epoll_wait(l->epfd, evs, LOOP_BATCH, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++)
		dispatch(l, &evs[i], 1);
	for (int i = 0; i < n; i++)
		dispatch(l, &evs[i], 0);
	return n;
}

int loop_timer_at(int fd, uint64_t deadline_ns)
{
	struct itimerspec its = {0};

	if (deadline_ns) {
		its.it_value.tv_sec = (time_t)(deadline_ns / 1000000000ull);
		its.it_value.tv_nsec = (long)(deadline_ns % 1000000000ull);
		if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
			its.it_value.tv_nsec = 1; /* all zeros would disarm it */
	}
	return timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL) < 0 ? -errno : 0;
}
