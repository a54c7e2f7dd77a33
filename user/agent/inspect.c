/* Python stacks in explain replies and hang reports (see inspect.h). */
#include "agent/inspect.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/ctl.h"
#include "agent/eventlog.h"
#include "agent/views.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "watch/inspector.h"

struct explain_wait {
	struct ctl_server *ctl;
	uint64_t token;
	struct json_object *o;
};

static void explain_done(void *ctx, int pid, int err, const struct py_stack *s, const char *why)
{
	struct explain_wait *w = ctx;

	view_python_stack(w->o, pid, err, s, why);
	ctl_reply_later(w->ctl, w->token, w->o);
	free(w);
}

int inspect_explain(struct inspector *ins, struct ctl_server *ctl, const struct rank *k,
		    struct json_object *o)
{
	struct explain_wait *w;
	int r;

	if (!ins || k->s.exited)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return 0;
	w->ctl = ctl;
	w->o = o;
	r = inspector_pystack(ins, k->pid, k->pidfd, k->uid, PYSTACKS_TIMEOUT_S, explain_done, w);
	if (r < 0) {
		jstr(o, "python_stack_error", "not read: too many inspections wait (try again)");
		free(w);
		return 0;
	}
	w->token = ctl_defer(ctl);
	return 1;
}

struct many_wait {
	struct inspector *ins;
	struct ctl_server *ctl;
	uint64_t token;
	struct json_object *o;
	int n, next, pending;
	struct inspect_target t[]; /* their pidfds: owned until asked for */
};

struct many_one {
	struct many_wait *w;
	int i;
};

static void many_next(struct many_wait *w);

static void many_done(void *ctx, int pid, int err, const struct py_stack *s, const char *why)
{
	struct many_one *one = ctx;
	struct many_wait *w = one->w;

	view_python_stack(w->t[one->i].o, pid, err, s, why);
	free(one);
	w->pending--;
	many_next(w);
}

/* Ask for the next stacks (as many as may wait at once). */
static void many_submit(struct many_wait *w)
{
	while (w->next < w->n && w->pending < PYSTACKS_PARALLEL) {
		struct inspect_target *t = &w->t[w->next];
		struct many_one *one = calloc(1, sizeof(*one));
		int r = -ENOMEM;

		if (one) {
			*one = (struct many_one){w, w->next};
			r = inspector_pystack(w->ins, t->pid, t->pidfd, t->uid, PYSTACKS_TIMEOUT_S,
					      many_done, one);
		}
		if (r == -EAGAIN && w->pending) { /* the queue is full: after the next answer */
			free(one);
			break;
		}
		close(t->pidfd); /* the inspector has its own copy */
		t->pidfd = -1;
		w->next++;
		if (r < 0) {
			free(one);
			jstr(t->o, "python_stack_error", "not read: too many inspections wait");
			continue;
		}
		w->pending++;
	}
}

/* An answer came: the next; when every one is in, the reply goes out. */
static void many_next(struct many_wait *w)
{
	many_submit(w);
	if (w->next == w->n && !w->pending) {
		ctl_reply_later(w->ctl, w->token, w->o);
		free(w);
	}
}

int inspect_many(struct inspector *ins, struct ctl_server *ctl, struct json_object *o,
		 const struct inspect_target *t, int n)
{
	struct many_wait *w;

	if (!ins || n <= 0 || !(w = calloc(1, sizeof(*w) + (size_t)n * sizeof(*t)))) {
		for (int i = 0; i < n; i++)
			close(t[i].pidfd);
		return 0;
	}
	*w = (struct many_wait){.ins = ins, .ctl = ctl, .o = o, .n = n};
	memcpy(w->t, t, (size_t)n * sizeof(*t));
	many_submit(w); /* answers come from inspector_poll, never from here */
	if (!w->pending) {
		free(w); /* none could be asked for: the errors are in o */
		return 0;
	}
	w->token = ctl_defer(ctl);
	return 1;
}

struct hang_wait {
	struct eventlog *el;
	struct json_object *ev;
	int left;
};

struct hang_one {
	struct hang_wait *w;
	struct json_object *rank; /* in w->ev */
};

static void hang_left(struct hang_wait *w)
{
	if (--w->left > 0)
		return;
	eventlog_emit(w->el, w->ev);
	free(w);
}

static void hang_done(void *ctx, int pid, int err, const struct py_stack *s, const char *why)
{
	struct hang_one *one = ctx;

	view_python_stack(one->rank, pid, err, s, why);
	hang_left(one->w);
	free(one);
}

void inspect_hang(struct inspector *ins, struct eventlog *el, const struct job *j,
		  struct json_object *ev)
{
	struct hang_wait *w = calloc(1, sizeof(*w));
	struct json_object *arr = NULL;

	if (!w) {
		eventlog_emit(el, ev);
		return;
	}
	w->el = el;
	w->ev = ev;
	w->left = 1; /* ours, until every read is asked for */
	json_object_object_get_ex(ev, "ranks", &arr);
	for (int i = 0; ins && arr && i < j->nmembers && i < (int)json_object_array_length(arr);
	     i++) {
		const struct rank *k = j->members[i]; /* view_hang adds them in this order */
		struct hang_one *one;

		if (k->s.exited || !(k->d.culprit || j->nmembers <= PY_STACK_ALL_RANKS))
			continue;
		one = calloc(1, sizeof(*one));
		if (!one)
			break;
		one->w = w;
		one->rank = json_object_array_get_idx(arr, i);
		if (inspector_pystack(ins, k->pid, k->pidfd, k->uid, PYSTACKS_TIMEOUT_S, hang_done,
				      one) < 0) {
			jstr(one->rank, "python_stack_error",
			     "not read: too many inspections wait");
			free(one);
			continue;
		}
		w->left++;
	}
	hang_left(w);
}
