/* The gate a job part passes before it is believed: see partgate.h. */
#include "agent/partgate.h"

#include <json-c/json.h>

#include "agent/eventlog.h"
#include "agent/mesh.h"
#include "lib/jsonx.h"
#include "lib/partclaim.h"
#include "lib/ranks.h"
#include "os/clock.h"
#include "os/log.h"
#include "proto/part_proto.h"

/* part_refused, to root: a host spoke about a job it may not */
static struct json_object *refused_event(const struct part_packet *p, const char *from,
					 const char *why, uint64_t count)
{
	struct json_object *o = json_object_new_object();

	jstr(o, "type", "part_refused"); /* not view_event: views.h includes jobparts.h */
	jint(o, "uid", 0);
	jint(o, "job_uid", p->part.uid);
	jstr(o, "job", p->part.job);
	jstr(o, "from", from);
	jstr(o, "why", why);
	jint(o, "refused", (int64_t)count);
	return o;
}

int partgate_pass(struct partgate *g, const struct job *j, const struct part_packet *p,
		  uint64_t now)
{
	struct pc_job pj = {.member = -1};
	enum pc_verdict v;
	uint64_t held;
	char a[32];

	if (!j)
		return 1; /* not ours to judge: a job not here is dropped after (parts_not_ours) */
	meshaddr_format(&p->from, a, sizeof(a));
	pj.world = job_world_size(j);
	if (g->member)
		pj.member = g->member(g->member_ctx, p->part.uid, p->part.job, a);
	v = partclaim_judge(&pj, &p->part);
	if (v == PC_OK)
		return 1;
	if (v == PC_NOT_MEMBER)
		g->not_member++;
	else
		g->outside_world++;
	if (!g->rl.interval_ns)
		g->rl.interval_ns = 60 * CLOCK_NS_PER_S;
	if (ratelimit_pass(&g->rl, now, &held)) { /* a peer cannot flood the log */
		log_info("job parts: refused a part of job %s from %s: %s (%llu refused)",
			 p->part.job, a, partclaim_why(v),
			 (unsigned long long)(g->not_member + g->outside_world));
		if (g->el)
			eventlog_emit(g->el, refused_event(p, a, partclaim_why(v),
							   g->not_member + g->outside_world));
	}
	return 0;
}

void partgate_counters(const struct partgate *g, struct json_object *c)
{
	jint(c, "parts_not_member", (int64_t)g->not_member);
	jint(c, "parts_outside_world", (int64_t)g->outside_world);
}
