/*
 * The part of NCCL's profiler plugin interface (ext-profiler, versions 4 and 5: NCCL 2.26 and
 * later) that ftbpf's plugin implements, declared from its documentation: the event types, the
 * descriptor's common head and the coll and kernelCh members, the state a kernel channel's end
 * is recorded with, and the two versioned tables NCCL looks up by name. Both versions lay the
 * descriptor out alike up to the members used here (v5 widens `type` to 64 bits: on a
 * little-endian host its low byte is v4's).
 */
#ifndef FTBPF_NCCLPROF_ABI_H
#define FTBPF_NCCLPROF_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef int ncclprof_result_t; /* ncclResult_t: 0 is ncclSuccess */
typedef void (*ncclprof_logger_t)(int level, unsigned long flags, const char *file, int line,
				  const char *fmt, ...);

enum {
	NCCLPROF_COLL = 1 << 1,	     /* ncclProfileColl: a collective launched by the host */
	NCCLPROF_KERNEL_CH = 1 << 6, /* ncclProfileKernelCh: a channel of its kernel began */
};
#define NCCLPROF_STATE_KERNEL_CH_STOP 22 /* ncclProfilerKernelChStop */

struct ncclprof_descr {
	uint64_t type; /* v4: uint8_t, at the same place */
	void *parent;  /* parentObj: for a kernel channel, the collective's handle */
	int rank;
	union {
		struct {
			uint64_t seq_number; /* per communicator and function, from 0 */
			const char *func;    /* "AllReduce", "Broadcast", ... */
			const void *send_buff;
			void *recv_buff;
			size_t count;
			int root;
			const char *datatype;
		} coll;
		struct {
			uint8_t channel_id;
			uint64_t ptimer; /* the GPU's globaltimer when the channel began */
		} kernel_ch;
	};
};

union ncclprof_state_args {
	struct {
		uint64_t ptimer;
	} kernel_ch;
	uint8_t pad[16];
};

struct ncclprof_v5 {
	const char *name;
	ncclprof_result_t (*init)(void **context, uint64_t comm_id, int *activation_mask,
				  const char *comm_name, int nnodes, int nranks, int rank,
				  ncclprof_logger_t logfn);
	ncclprof_result_t (*start_event)(void *context, void **handle, struct ncclprof_descr *d);
	ncclprof_result_t (*stop_event)(void *handle);
	ncclprof_result_t (*record_event_state)(void *handle, int state,
						union ncclprof_state_args *args);
	ncclprof_result_t (*finalize)(void *context);
};

struct ncclprof_v4 {
	const char *name;
	ncclprof_result_t (*init)(void **context, int *activation_mask, const char *comm_name,
				  uint64_t comm_hash, int nnodes, int nranks, int rank,
				  ncclprof_logger_t logfn);
	ncclprof_result_t (*start_event)(void *context, void **handle, struct ncclprof_descr *d);
	ncclprof_result_t (*stop_event)(void *handle);
	ncclprof_result_t (*record_event_state)(void *handle, int state,
						union ncclprof_state_args *args);
	ncclprof_result_t (*finalize)(void *context);
};

#endif
