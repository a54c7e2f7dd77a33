/*
 * libnccl-profiler-ftbpf.so: an NCCL profiler plugin that tells ftbpfd when each rank's device
 * began each collective, so that a hang in which every rank issued the same collective and none
 * completes (a kernel that never ends on one device, before it) names the rank whose device
 * never got there. NCCL loads it when the ranks' environment says NCCL_PROFILER_PLUGIN=<path of
 * this file> (NCCL 2.26 and later: profiler interface v4 or v5); the training code is not
 * changed. It keeps nothing and sends nothing: it calls ftbpf_nccl_device_reached(), an empty
 * function that the agent's uprobe reads the arguments of (docs/detection.md). No allocation on
 * NCCL's paths: a fixed ring of the collectives' handles per communicator.
 */
#include <stdlib.h>
#include <string.h>

#include "ftbpf/abi.h"
#include "plugin/ncclprof_abi.h"

#define RING 256 /* collectives in flight at once, at most (a power of two) */

struct comm_ctx;

struct coll_ev {
	struct comm_ctx *ctx;
	uint64_t begun; /* seqNumber + 1: collectives of its function begun, this one included */
	uint64_t count;
	uint32_t api;
	int reported;
};

#define FUNCS 6 /* AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, others */

struct comm_ctx {
	uint64_t hash;
	int rank, nranks;
	struct coll_ev ev[FUNCS][RING]; /* NCCL numbers each function's collectives apart */
};

static int kernel_ch_handle; /* what a kernel channel event's handle points to: nothing */

/* The agent's probe points: (key, begun, api, count, rank, nranks), and (hash) when NCCL is
 * done with a communicator. Empty on purpose. */
__attribute__((noinline, used, visibility("default"))) void
ftbpf_nccl_device_reached(uint64_t key, uint64_t begun, uint32_t api, uint64_t count, int rank,
			  int nranks)
{
	(void)key, (void)begun, (void)api, (void)count, (void)rank, (void)nranks;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline, used, visibility("default"))) void ftbpf_nccl_device_done(uint64_t hash)
{
	(void)hash;
	__asm__ volatile("" ::: "memory");
}

static uint32_t api_of(const char *func)
{
	static const struct {
		const char *name;
		uint32_t api;
	} f[] = {
	    {"AllReduce", FTBPF_API_NCCL_ALLREDUCE},
	    {"AllGather", FTBPF_API_NCCL_ALLGATHER},
	    {"ReduceScatter", FTBPF_API_NCCL_REDUCESCATTER},
	    {"Broadcast", FTBPF_API_NCCL_BROADCAST},
	    {"Reduce", FTBPF_API_NCCL_REDUCE},
	};

	for (size_t i = 0; func && i < sizeof(f) / sizeof(f[0]); i++)
		if (!strcmp(func, f[i].name))
			return f[i].api;
	return 0;
}

static ncclprof_result_t init_ctx(void **context, uint64_t hash, int *mask, int nranks, int rank)
{
	struct comm_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return 1; /* ncclSystemError: NCCL then runs without the plugin */
	c->hash = hash;
	c->rank = rank;
	c->nranks = nranks;
	*context = c;
	*mask = NCCLPROF_COLL | NCCLPROF_KERNEL_CH;
	return 0;
}

static ncclprof_result_t init_v5(void **context, uint64_t comm_id, int *mask, const char *name,
				 int nnodes, int nranks, int rank, ncclprof_logger_t logfn)
{
	(void)name, (void)nnodes, (void)logfn;
	return init_ctx(context, comm_id, mask, nranks, rank);
}

static ncclprof_result_t init_v4(void **context, int *mask, const char *name, uint64_t hash,
				 int nnodes, int nranks, int rank, ncclprof_logger_t logfn)
{
	(void)name, (void)nnodes, (void)logfn;
	return init_ctx(context, hash, mask, nranks, rank);
}

static ncclprof_result_t start_event(void *context, void **handle, struct ncclprof_descr *d)
{
	struct comm_ctx *c = context;
	uint8_t type = (uint8_t)d->type; /* v4's field is a byte, v5's its low byte */

	*handle = NULL;
	if (!c)
		return 0;
	if (type == NCCLPROF_COLL) {
		uint32_t api = api_of(d->coll.func);
		int f = api ? (int)(api - FTBPF_API_NCCL_ALLREDUCE) : FUNCS - 1;
		struct coll_ev *e = &c->ev[f][d->coll.seq_number & (RING - 1)];

		e->ctx = c;
		e->begun = d->coll.seq_number + 1;
		e->count = d->coll.count;
		e->api = api;
		e->reported = 0;
		*handle = e;
	} else if (type == NCCLPROF_KERNEL_CH) {
		struct coll_ev *e = d->parent;

		/* the first channel of its kernel to begin: the device reached the collective */
		if (e && e->ctx == c && !__atomic_exchange_n(&e->reported, 1, __ATOMIC_RELAXED))
			ftbpf_nccl_device_reached(c->hash ^
						      ((uint64_t)e->api * 0x9E3779B97F4A7C15ull),
						  e->begun, e->api, e->count, c->rank, c->nranks);
		*handle = &kernel_ch_handle;
	}
	return 0;
}

static ncclprof_result_t stop_event(void *handle)
{
	(void)handle; /* the ring's entries are reused, never freed */
	return 0;
}

static ncclprof_result_t record_event_state(void *handle, int state,
					    union ncclprof_state_args *args)
{
	(void)handle, (void)state, (void)args;
	return 0;
}

static ncclprof_result_t finalize(void *context)
{
	struct comm_ctx *c = context;

	if (c)
		ftbpf_nccl_device_done(c->hash);
	free(c);
	return 0;
}

__attribute__((visibility("default"))) const struct ncclprof_v5 ncclProfiler_v5 = {
    "ftbpf", init_v5, start_event, stop_event, record_event_state, finalize};
__attribute__((visibility("default"))) const struct ncclprof_v4 ncclProfiler_v4 = {
    "ftbpf", init_v4, start_event, stop_event, record_event_state, finalize};
