/*
 * The cross-host part book: the parts other hosts sent of this host's jobs and the rules they
 * are held by, and when this host tells its own. Pure: the caller (agent/jobparts.c) decodes
 * and authenticates datagrams, sends, applies verdicts and logs; time comes in as arguments.
 *
 * Receiving, after authentication: a sender's (boot, seq) must be new (one replay window per
 * sender); then a part is believed unless it names another world size than the job's here,
 * claims a rank a live process here holds (our ranks are ours: we see them), takes an NCCL
 * sequence number of the same rank, process and communicator back, or claims a rank another
 * host's fresh part holds (a live member of the mesh beats a stranger; else the first claim
 * holds until it expires). A believed part lives for its sender's TTL (at most
 * PARTBOOK_TTL_MS), then is stale (kept PARTBOOK_STALE_KEEP_NS: where missing ranks were last
 * seen), then forgotten; a host that died, left or restarted makes its parts stale at once.
 *
 * Sending: a job's part goes out while the job stalls here (to every live member the first
 * time and every PARTBOOK_REBROADCAST_NS while some of its ranks are missing, else to the
 * hosts of the job), again when what it says changes or after PARTBOOK_REFRESH_NS; once more,
 * as a reply, when the job moves again; a host whose part asks for a reply gets ours (at most
 * every half refresh).
 */
#ifndef FTBPF_PARTBOOK_H
#define FTBPF_PARTBOOK_H

#include <stdint.h>

#include "lib/jobview.h"
#include "lib/meshaddr.h"
#include "lib/ranks.h"
#include "proto/mesh_proto.h"
#include "proto/part_proto.h"

#define PARTBOOK_MS		1000000ull
#define PARTBOOK_TTL_MS		3500 /* a part not refreshed this long is stale */
#define PARTBOOK_STALE_KEEP_NS	(600 * 1000 * PARTBOOK_MS) /* then forgotten */
#define PARTBOOK_REFRESH_NS	(1000 * PARTBOOK_MS)	   /* an unchanged part again after this */
#define PARTBOOK_REBROADCAST_NS (2000 * PARTBOOK_MS) /* to every member while ranks are missing */
#define PARTBOOK_PUBLISH_MIN_NS (1000 * PARTBOOK_MS) /* publish after a quarter of soft, >= this */
#define PARTBOOK_MAX_REMOTE	4096		     /* parts held, senders known */

struct partbook_remote {
	struct jv_part part; /* node: the sender's address */
	struct mesh_addr from;
	uint64_t boot;
	uint64_t expires_ns, stale_ns; /* stale_ns: when it went stale, 0 while fresh */
	int member;		       /* the sender was a live mesh member of that boot */
	int want_reply;
	uint64_t replied_ns;
};

struct partbook_sender {
	struct mesh_addr a;
	struct mesh_replay r;
};

struct partbook_counts {
	uint64_t accepted, replayed, claims_ours, conflict, world_mismatch, bad_seq, expired;
};

struct partbook {
	struct partbook_remote *rv;
	int nr, rcap;
	struct partbook_sender *sv;
	int ns, scap;
	struct partbook_counts c;
};

/* What became of an offered part. */
enum partbook_verdict {
	PARTBOOK_ACCEPTED = 0,
	PARTBOOK_WORLD_MISMATCH, /* another world size than the job's here */
	PARTBOOK_CLAIMS_OURS,	 /* a rank a live process here holds */
	PARTBOOK_BAD_SEQ,	 /* an NCCL sequence number went back */
	PARTBOOK_CONFLICT,	 /* a rank another host's fresh part holds */
	PARTBOOK_NO_ROOM,	 /* PARTBOOK_MAX_REMOTE parts held, or no memory */
};

void partbook_init(struct partbook *b);
void partbook_fini(struct partbook *b);
/* Is (boot, seq) new from this sender? 1, or 0 (a replay, counted; or no room for the sender). */
int partbook_fresh_seq(struct partbook *b, const struct mesh_addr *from, uint64_t boot,
		       uint64_t seq);
/* Offer an authenticated part (not a cadence part) of job j, this host's (member: its sender
 * is a live member of the mesh, of the boot it names) at now. The verdict; a refusal is
 * counted. */
enum partbook_verdict partbook_offer(struct partbook *b, const struct part_packet *p, int member,
				     const struct job *j, uint64_t now);
/* The verdict in words, for the log. */
const char *partbook_verdict_text(enum partbook_verdict v);
/* Parts past their TTL go stale; stale ones past PARTBOOK_STALE_KEEP_NS, and those of a job
 * this host no longer has (not in ranks), are forgotten. */
void partbook_expire(struct partbook *b, const struct ranks *ranks, uint64_t now);
/* A host died, left or restarted: its parts are stale from now. */
void partbook_host_gone(struct partbook *b, const struct mesh_addr *a, uint64_t now);
/* Does host a hold a fresh part of job (uid, job)? */
int partbook_is_job_host(const struct partbook *b, uint32_t uid, const char *job,
			 const struct mesh_addr *a);
/* Does host from's fresh part of the job name rank? */
int partbook_holds_rank(const struct partbook *b, uint32_t uid, const char *job,
			const struct mesh_addr *from, int rank);
/* The parts held of the job, the fresh ones first, then the stale (marked stale), into out
 * (at most max). Their number. */
int partbook_gather(const struct partbook *b, uint32_t uid, const char *job, struct jv_part *out,
		    int max);

/* ---- sending ---- */
/* What this host told of one job. */
struct partbook_pub {
	int publishing; /* its stall is being told */
	uint64_t sent_ns, bcast_ns;
	uint32_t digest; /* of what was told last */
};
enum partbook_to {
	PARTBOOK_SEND_NONE = 0,
	PARTBOOK_SEND_HOLDERS, /* to the hosts holding a fresh part of the job */
	PARTBOOK_SEND_ALL,     /* to every live member */
};
struct partbook_send {
	enum partbook_to to;
	uint8_t flags; /* PART_F_REPLY for the last part after a stall */
};
/* What a part says that is news (states, flags, sequence numbers, progress, edges). */
uint32_t partbook_digest(const struct jv_part *c, int nc);
/* How long a job goes without progress here before its stall is told: a quarter of the soft
 * timeout or, with soft_timeout = auto and a collective pace (p99 interval, s), of what its
 * collective rule gives (auto_k x the pace, at least auto_floor_ns), at least
 * PARTBOOK_PUBLISH_MIN_NS. */
uint64_t partbook_publish_after(uint64_t soft_ns, int soft_auto, double auto_k,
				uint64_t auto_floor_ns, double p99_interval_s);
/* The job stalls here (stalled), its part now says digest, some of its ranks are missing
 * (no host told of them): where its part goes now; pb is updated as if it went. */
struct partbook_send partbook_schedule(struct partbook_pub *pb, int stalled, uint32_t digest,
				       int missing, uint64_t now);
/* The next held part of the job at or after index from whose host asked for a reply: its index
 * (its host is due our part as a reply now: it is marked replied), or -1. A host asks once per
 * part; it is answered unless our part went out just now (pb->sent_ns == now) or it was
 * answered less than half a refresh ago. */
int partbook_next_reply(struct partbook *b, uint32_t uid, const char *job,
			const struct partbook_pub *pb, uint64_t now, int from);

#endif
