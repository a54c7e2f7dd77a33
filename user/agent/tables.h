/*
 * The tables a user's processes grow (lib/shares.h), as the agent watches them: what each
 * holds, the refusals at a user's share or root's reserve (the kernel's, read from its counts
 * each scan, and the agent's own), counted in status and said to root by a `share_full` event
 * per user and table at most once a minute.
 */
#ifndef FTBPF_TABLES_H
#define FTBPF_TABLES_H

#include <stdint.h>
#include <sys/types.h>

struct tables;
struct tracker;
struct eventlog;
struct json_object;

struct tables *tables_new(struct tracker *tr, struct eventlog *el);
void tables_free(struct tables *tb);
/* The agent refused uid a place of its own table t (enum share_table) while uid held held. */
void tables_refused(struct tables *tb, uid_t uid, int t, int64_t held, uint64_t now);
/* What the agent's own table t holds now (the kernel's are read by tables_tick). */
void tables_held(struct tables *tb, int t, int64_t held);
/* Each scan: the kernel's refusals since the last one. */
void tables_tick(struct tables *tb, uint64_t now);
/* Into the agent's status: "tables" (each table's size, share, reserve, held, refused) in o,
 * share_refused_TABLE in counters c. */
void tables_status(const struct tables *tb, struct json_object *o, struct json_object *c);

#endif
