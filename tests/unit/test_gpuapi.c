/* The CUDA/NCCL symbols to probe (user/lib/gpuapi.c). */
#include <CUnit/Basic.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/gpuapi.h"

/* Every variant the driver exports is one of ours; other functions are not. */
static void test_gpuapi_match(void)
{
	static const struct {
		const char *name;
		int kind;
		const char *base; /* NULL: not probed */
	} cases[] = {
	    {"cuCtxSynchronize", GPUAPI_LIB_CUDA, "cuCtxSynchronize"},
	    {"cuCtxSynchronize_v2", GPUAPI_LIB_CUDA, "cuCtxSynchronize"}, /* CUDA 13 */
	    {"cuStreamSynchronize_ptsz", GPUAPI_LIB_CUDA, "cuStreamSynchronize"},
	    {"cuMemcpyDtoH_v2_ptds", GPUAPI_LIB_CUDA, "cuMemcpyDtoH"},
	    {"cuMemcpy3D_v2", GPUAPI_LIB_CUDA, "cuMemcpy3D"},
	    {"cuLaunchKernelEx_ptsz", GPUAPI_LIB_CUDA, "cuLaunchKernelEx"},
	    {"cuMemcpyDtoHAsync_v2", GPUAPI_LIB_CUDA, NULL}, /* asynchronous: not a wait */
	    {"cuStreamSynchronizeX", GPUAPI_LIB_CUDA, NULL},
	    {"cuCtxSynchronize_v", GPUAPI_LIB_CUDA, NULL},
	    {"ncclAllReduce", GPUAPI_LIB_NCCL, "ncclAllReduce"},
	    {"ncclAllReduce_v2", GPUAPI_LIB_NCCL, NULL}, /* NCCL: exact names */
	    {"cuCtxSynchronize", GPUAPI_LIB_NCCL, NULL},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int k = gpuapi_match(cases[i].name, cases[i].kind);

		if (!cases[i].base) {
			CU_ASSERT_EQUAL(k, -1);
		} else {
			CU_ASSERT_TRUE(k >= 0 && !strcmp(gpuapi_syms[k].name, cases[i].base));
		}
	}
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("gpuapi", NULL, NULL);
	CU_add_test(s, "CUDA/NCCL symbols to probe", test_gpuapi_match);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
