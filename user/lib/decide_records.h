/* The node tables of what the store holds for a job (struct dp_records: members, reports on the
 * current request, nodes left out, refused left-out records): no fixed size, each grows by
 * doubling as records are added, and is kept across looks (dr_reset empties them, the next
 * look fills them again without allocating). Members and reports stay sorted by node name, the
 * order the policy's lookups search (dp_member, dp_report). */
#ifndef FTBPF_DECIDE_RECORDS_H
#define FTBPF_DECIDE_RECORDS_H

#include "lib/decide_policy.h"

/* Add node's member record, its report, in node order. 0; -EEXIST node has one already (the
 * first is kept); -ENOMEM no memory for it (the table unchanged: the record is not added; for
 * a member, r->mem_short is set: the look loses no member). */
int dr_add_member(struct dp_records *r, const char *node, const struct dec_member *m);
int dr_add_report(struct dp_records *r, const char *node, const struct dec_report *x);
/* Node left out of the current generation with ranks; node's left-out record refused. 0 or
 * -ENOMEM (not added). */
int dr_add_out(struct dp_records *r, const char *node, int ranks);
int dr_add_out_refused(struct dp_records *r, const char *node);
/* Empty the node tables (their memory kept for the next look), mem_short cleared. */
void dr_reset(struct dp_records *r);
/* Free the node tables and zero all of r. */
void dr_clear(struct dp_records *r);

#endif
