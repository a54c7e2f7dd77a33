/*
 * The mock NCCL's RAS service (tests/mock/nccl_ras.c): what NCCL 2.24+ runs in every process, a
 * thread listening on NCCL_RAS_ADDR (default localhost:28028, SO_REUSEPORT: a user's jobs share
 * the port) that answers STATUS with every communicator's ranks. The mock's ranks of a
 * communicator share their records (below) in the communicator's shared file: each process's
 * RAS thread stamps its ranks' heartbeat every 200 ms, so a stopped or dead process goes
 * missing as NCCL's RAS sees it (unresponsive after 2 s without a heartbeat; considered dead
 * when its process is gone, or after 60 s x NCCL_RAS_TIMEOUT_FACTOR).
 */
#ifndef FTBPF_MOCK_RAS_H
#define FTBPF_MOCK_RAS_H

#include <stdint.h>

struct mock_ras_rank {
	int32_t pid;
	int32_t pad;
	uint64_t hb_ns;	      /* CLOCK_MONOTONIC of its last heartbeat */
	uint64_t launched[6]; /* collectives its host issued, by NCCL function (1..5) */
};

/* A communicator of this process: ranks[0..nranks) are shared with the other ranks. */
void mock_ras_add(uint64_t hash, int nranks, int rank, struct mock_ras_rank *ranks);
void mock_ras_remove(struct mock_ras_rank *ranks);

#endif
