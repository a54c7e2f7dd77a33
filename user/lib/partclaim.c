/* Whether a host may speak about a job: see partclaim.h. */
#include "lib/partclaim.h"

enum pc_verdict partclaim_judge(const struct pc_job *j, const struct jv_part *pt)
{
	if (j->member == 0)
		return PC_NOT_MEMBER;
	for (int i = 0; i < pt->nranks; i++)
		if (pt->ranks[i].rank < 0 || (j->world > 0 && pt->ranks[i].rank >= j->world))
			return PC_OUT_OF_WORLD;
	return PC_OK;
}

const char *partclaim_why(enum pc_verdict v)
{
	switch (v) {
	case PC_OK:
		return "";
	case PC_NOT_MEMBER:
		return "sender is no member of the job's run";
	case PC_OUT_OF_WORLD:
		return "ranks outside the job's world";
	}
	return "?";
}
