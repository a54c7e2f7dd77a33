/* The kernel's events into the rank table and the event log: see kevents.h. */
#include "agent/kevents.h"

#include <stdio.h>
#include <string.h>

#include "agent/adopt.h"
#include "agent/decide.h"
#include "agent/eventlog.h"
#include "agent/timersvc.h"
#include "agent/views.h"
#include "lib/ranks.h"
#include "watch/tracker.h"

static void on_exec(struct kevents *kv, struct rank *k, const struct ftbpf_event *e)
{
	struct ftbpf_proc p;

	if (k) {
		snprintf(k->comm, sizeof(k->comm), "%.15s", e->comm);
		adopt_exec_recheck(kv->ad, k, (int)e->tgid);
		return;
	}
	if (!e->flags) { /* code: the real uid that exec'd (the reader's share) */
		adopt_exec_event(kv->ad, (int)e->tgid, (uid_t)e->code);
		return;
	}
	if (adopt_exec_recheck(kv->ad, NULL, (int)e->tgid))
		return;
	/* a rank's child ran a new program: the rank itself, when a wrapper started it */
	adopt_exec_child(kv->ad, (int)e->tgid, (int)e->ppid);
	if (ranks_find_live(kv->ranks, (int)e->tgid))
		return;
	/* else keep its name current */
	if (tracker_proc_get(kv->tr, e->tgid, &p) == 0) {
		memcpy(p.comm, e->comm, sizeof(p.comm));
		(void)tracker_proc_put(kv->tr, e->tgid, &p); /* it exited meanwhile: no matter */
	}
}

static void on_exit_event(struct kevents *kv, struct rank *k, const struct ftbpf_event *e)
{
	const struct rank *owner;

	timersvc_exited(kv->ts, (int)e->tgid);
	if (!k) {
		/* a child: the kernel deleted its entry; the event names its rank */
		owner = ranks_find(kv->ranks, (int)e->owner);
		if (owner)
			eventlog_emit(kv->el, view_child_exit(e, owner));
		return;
	}
	k->s.asked = rank_asked(k); /* what a decision asked of it, before its slot goes */
	timersvc_slot_drop(kv->ts, k);
	k->s.exited = 1;
	k->s.exit_code = e->code;
	k->s.exit_ns = e->ts_ns;
	k->s.sender_pid = e->sender_pid;
	snprintf(k->s.sender_comm, sizeof(k->s.sender_comm), "%.15s", e->sender_comm);
	k->exit_reported = 1;
	eventlog_emit(kv->el, view_rank_exit(k));
}

static void on_signal(struct kevents *kv, struct rank *k, const struct ftbpf_event *e)
{
	struct rank_sig rs = {.ts_ns = e->ts_ns,
			      .sig = e->sig,
			      .delivered = e->type == FTBPF_EV_DELIVER,
			      .sender_pid = e->sender_pid};
	struct ftbpf_proc p;
	uint32_t uid;

	snprintf(rs.sender_comm, sizeof(rs.sender_comm), "%.15s", e->sender_comm);
	if (k) {
		rank_add_signal(k, &rs);
		uid = k->uid;
		if (e->type == FTBPF_EV_SIGNAL && kv->dc && !k->timers_only)
			decide_on_signal(kv->dc, k, e->sig, e->sender_pid);
	} else if (tracker_proc_get(kv->tr, e->tgid, &p) == 0) {
		uid = p.uid; /* a rank's child */
	} else {
		return;
	}
	eventlog_emit(kv->el, view_signal(e, k, uid));
}

void kevents_on_event(void *ctx, const struct ftbpf_event *e)
{
	struct kevents *kv = ctx;
	struct rank *k = ranks_find_live(kv->ranks, (int)e->tgid);
	const struct rank *owner;

	kv->events++;
	switch (e->type) {
	case FTBPF_EV_EXEC:
		on_exec(kv, k, e);
		return;
	case FTBPF_EV_FORK:
		owner = ranks_find(kv->ranks, (int)e->owner);
		if (owner)
			eventlog_emit(kv->el, view_child((int)e->tgid, (int)e->ppid, owner, NULL));
		return;
	case FTBPF_EV_EXIT:
		on_exit_event(kv, k, e);
		return;
	case FTBPF_EV_SIGNAL:
	case FTBPF_EV_DELIVER:
		on_signal(kv, k, e);
		return;
	case FTBPF_EV_TIMER: {
		struct json_object *o = view_kernel_timer(e, k);

		/* escalation first: the kernel sent SIGTERM, SIGKILL follows after the grace */
		timersvc_kernel_fired(kv->ts, k);
		eventlog_emit(kv->el, o);
		return;
	}
	case FTBPF_EV_OOM:
		if (k)
			k->oom_victim = 1;
		eventlog_emit(kv->el, view_oom(e, k));
		return;
	}
}
