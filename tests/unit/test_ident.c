/* Rank identity from a process's environment (user/lib/ident.c): every launcher's variables,
 * precedence, malformed values. */
#include <CUnit/Basic.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/ident.h"

#define ENV(s) s, sizeof(s) - 1

static void test_ident(void)
{
	struct rank_ident r;

	CU_ASSERT_EQUAL(ident_from_environ(ENV("PATH=/bin\0HOME=/root\0"), &r), -ENOENT);
	CU_ASSERT_EQUAL(ident_from_environ(ENV("RANK=3\0WORLD_SIZE=8\0LOCAL_RANK=1\0"
					       "TORCHELASTIC_RUN_ID=abc\0"),
					   &r),
			0);
	CU_ASSERT_EQUAL(r.rank, 3);
	CU_ASSERT_EQUAL(r.world_size, 8);
	CU_ASSERT_EQUAL(r.local_rank, 1);
	CU_ASSERT_EQUAL(r.source, IDENT_TORCH);
	CU_ASSERT_STRING_EQUAL(r.job, "torch:abc");
	CU_ASSERT_EQUAL(ident_from_environ(ENV("MASTER_PORT=29500\0RANK=0\0WORLD_SIZE=2\0"
					       "MASTER_ADDR=10.0.0.1\0"),
					   &r),
			0);
	CU_ASSERT_STRING_EQUAL(r.job, "torch:10.0.0.1:29500");
	/* torchrun's default run id "none" names no job: two such jobs stay apart */
	CU_ASSERT_EQUAL(ident_from_environ(ENV("RANK=0\0WORLD_SIZE=2\0TORCHELASTIC_RUN_ID=none\0"
					       "MASTER_ADDR=127.0.0.1\0MASTER_PORT=29501\0"),
					   &r),
			0);
	CU_ASSERT_STRING_EQUAL(r.job, "torch:127.0.0.1:29501");
	/* RANK alone (no WORLD_SIZE) is too common a name to mean torch */
	CU_ASSERT_EQUAL(ident_from_environ(ENV("RANK=1\0"), &r), -ENOENT);
	CU_ASSERT_EQUAL(ident_from_environ(ENV("OMPI_COMM_WORLD_RANK=5\0OMPI_COMM_WORLD_SIZE=6\0"
					       "PMIX_NAMESPACE=prterun-x-1@1\0"),
					   &r),
			0);
	CU_ASSERT_EQUAL(r.source, IDENT_OMPI);
	CU_ASSERT_STRING_EQUAL(r.job, "ompi:prterun-x-1@1");
	CU_ASSERT_EQUAL(ident_from_environ(ENV("PMI_RANK=2\0PMI_SIZE=4\0SLURM_JOB_ID=77\0"), &r),
			0);
	CU_ASSERT_STRING_EQUAL(r.job, "pmi:77");
	CU_ASSERT_EQUAL(ident_from_environ(ENV("SLURM_PROCID=1\0SLURM_STEP_ID=0\0SLURM_JOB_ID=9\0"
					       "SLURM_NTASKS=2\0"),
					   &r),
			0);
	CU_ASSERT_STRING_EQUAL(r.job, "slurm:9:0");
	/* batch script: SLURM_PROCID without a real step is not a rank */
	CU_ASSERT_EQUAL(ident_from_environ(ENV("SLURM_PROCID=0\0SLURM_STEP_ID=4294967294\0"), &r),
			-ENOENT);
	CU_ASSERT_EQUAL(ident_from_environ(ENV("FTBPF_RANK=1\0FTBPF_JOB=my job\"x\0RANK=9\0"
					       "WORLD_SIZE=10\0"),
					   &r),
			0);
	CU_ASSERT_EQUAL(r.source, IDENT_FTBPF);
	CU_ASSERT_STRING_EQUAL(r.job, "my_job_x");
	CU_ASSERT_EQUAL(ident_from_environ(ENV("FTBPF_RANK=abc\0"), &r), -EINVAL);
	CU_ASSERT_EQUAL(ident_from_environ(ENV("RANK=4\0WORLD_SIZE=2\0"), &r), -EINVAL);
	CU_ASSERT_EQUAL(ident_from_environ(ENV("RANK=99999999999999999999\0WORLD_SIZE=2\0"), &r),
			-EINVAL);
	/* unterminated last variable */
	CU_ASSERT_EQUAL(ident_from_environ("FTBPF_RANK=7", 12, &r), 0);
	CU_ASSERT_EQUAL(r.rank, 7);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("ident", NULL, NULL);
	CU_add_test(s, "rank identity from environment", test_ident);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
