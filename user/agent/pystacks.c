/* Python stacks in explain replies and hang reports (see pystacks.h). */
#include "agent/pystacks.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>

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

int pystacks_explain(struct inspector *ins, struct ctl_server *ctl, const struct rank *k,
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

void pystacks_hang(struct inspector *ins, struct eventlog *el, const struct job *j,
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
