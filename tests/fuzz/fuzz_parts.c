/*
 * libFuzzer target: job parts from peers. Byte 0 picks the path: even, the input is a packet
 * as it arrives (size, magic, version, MAC); odd, the rest gets a valid MAC first, so that the
 * field checks behind it are reached. A decoded part is then judged with a part of ours (the
 * verdict must survive any authenticated part); its cadence records are judged beside a rank
 * of ours (so must the straggler rule).
 */
#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>

#include "lib/jobview.h"
#include "proto/part_proto.h"

static const uint8_t key[MESH_KEY_BYTES] = "ftbpf-fuzz-key-0123456789abcdef";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct part_packet p;
	static struct jv_part parts[2];
	static uint8_t buf[PART_MAX_PACKET];
	struct jv_verdict v;
	struct det_params dp;
	size_t n;

	if (size < 1)
		return 0;
	n = size - 1 > sizeof(buf) ? sizeof(buf) : size - 1;
	memcpy(buf, data + 1, n);
	if ((data[0] & 1) && n >= PART_HDR_BYTES + MESH_MAC_BYTES)
		crypto_auth_hmacsha256(buf + n - MESH_MAC_BYTES, buf, n - MESH_MAC_BYTES, key);
	if (part_decode(buf, n, key, &p) != PART_OK)
		return 0;
	memset(&parts[0], 0, sizeof(parts[0]));
	strcpy(parts[0].node, "10.0.0.1:7946");
	strcpy(parts[0].job, p.part.job);
	parts[0].world_size = p.part.world_size;
	parts[0].nchunks = 1;
	parts[0].nranks = 1;
	parts[0].ranks[0] = (struct jv_rank){.rank = 0, .state = RS_BLOCKED, .syscall = SYS_futex};
	parts[1] = p.part;
	strcpy(parts[1].node, "10.0.0.2:7946");
	parts[1].at_ns = 50000000000ull;
	det_params_from_seconds(&dp, 5, 60, 3);
	dp.soft_auto = 1;
	{
		struct det_pace pace = {.p99_coll_ns = 100000000ull, .p99_step_ns = 400000000ull};

		jobview_eval(parts, 2, 0, NULL, 0, 60000000000ull, &dp, &pace, &v);
	}
	{ /* a peer's first arrivals, judged against a rank here */
		static struct arr_rank ar;
		static struct arr_job aj;
		static struct arr_remote f;
		struct arr_rank *one[1] = {&ar};

		memset(&ar, 0, sizeof(ar));
		memset(&aj, 0, sizeof(aj));
		memset(&f, 0, sizeof(f));
		arr_remote_merge(&f, &p.part.first);
		arr_remote_merge(&f, &p.part.first); /* twice: the same run again */
		f.err_s = 0.001;
		aj.comm = f.comm ? f.comm : 7;
		for (uint64_t q = 1; q <= 300; q++)
			arr_rank_add(&ar, aj.comm, q, 59000000000ull + q * 3000000ull);
		arr_job_eval(one, 1, &f, 1, 60000000000ull, 10, &aj);
	}
	{
		static struct cad_rank cr[JV_MAX_RANKS + 1];
		struct cad_rank *rp[JV_MAX_RANKS + 1];
		struct cad_params cp;
		static struct cad_job cj;
		int m = 0;

		cad_params_default(&cp);
		memset(&cr[0], 0, sizeof(cr[0]));
		cr[0].valid = 1, cr[0].own_frac = 0.5, cr[0].wait_frac = 0.5;
		rp[m++] = &cr[0];
		for (int i = 0; i < p.part.ncad; i++) {
			memset(&cr[m], 0, sizeof(cr[m]));
			cad_rank_from_summary(&cr[m], &p.part.cad[i]);
			rp[m] = &cr[m];
			m++;
		}
		cad_job_eval(rp, m, 60000000000ull, &cp, &cj);
	}
	/* and back: what was decoded encodes */
	p.part = parts[1];
	part_encode(&p, key, buf, sizeof(buf));
	return 0;
}
