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
	/* ... and a loopback master is the same on every host: the job is this host's */
	CU_ASSERT_TRUE(r.host_local);
	ident_scope(&r, "node-a");
	CU_ASSERT_STRING_EQUAL(r.job, "torch:127.0.0.1:29501@node-a");
	CU_ASSERT_EQUAL(r.restart_count, -1);
	/* a routable master names the job on every host: no node */
	CU_ASSERT_EQUAL(ident_from_environ(ENV("RANK=1\0WORLD_SIZE=2\0MASTER_ADDR=10.1.2.3\0"
					       "MASTER_PORT=29500\0TORCHELASTIC_RESTART_COUNT=2\0"),
					   &r),
			0);
	CU_ASSERT_FALSE(r.host_local);
	CU_ASSERT_EQUAL(r.restart_count, 2);
	ident_scope(&r, "node-a");
	CU_ASSERT_STRING_EQUAL(r.job, "torch:10.1.2.3:29500");
	/* localhost, ::1, and no master at all are local too; FTBPF_JOB is the user's name */
	CU_ASSERT_EQUAL(ident_from_environ(ENV("RANK=0\0WORLD_SIZE=1\0MASTER_ADDR=localhost\0"
					       "MASTER_PORT=1\0"),
					   &r),
			0);
	CU_ASSERT_TRUE(r.host_local);
	CU_ASSERT_EQUAL(ident_from_environ(ENV("RANK=0\0WORLD_SIZE=1\0"), &r), 0);
	CU_ASSERT_TRUE(r.host_local);
	CU_ASSERT_EQUAL(ident_from_environ(ENV("FTBPF_RANK=0\0FTBPF_JOB=mine\0"), &r), 0);
	CU_ASSERT_FALSE(r.host_local);
	CU_ASSERT_EQUAL(ident_from_environ(ENV("FTBPF_RANK=0\0"), &r), 0);
	CU_ASSERT_TRUE(r.host_local); /* "default" */
	CU_ASSERT_TRUE(ident_addr_is_loopback("127.0.0.1"));
	CU_ASSERT_TRUE(ident_addr_is_loopback("127.1.2.3"));
	CU_ASSERT_TRUE(ident_addr_is_loopback("::1"));
	CU_ASSERT_TRUE(ident_addr_is_loopback("LOCALHOST"));
	CU_ASSERT_TRUE(ident_addr_is_loopback("::ffff:127.0.0.1"));
	CU_ASSERT_FALSE(ident_addr_is_loopback("10.0.0.1"));
	CU_ASSERT_FALSE(ident_addr_is_loopback("node127.example"));
	CU_ASSERT_FALSE(ident_addr_is_loopback("1270.0.0.1"));
	/* a long id keeps the node whole */
	{
		struct rank_ident l = {.host_local = 1};

		memset(l.job, 'x', sizeof(l.job) - 1);
		l.job[sizeof(l.job) - 1] = 0;
		ident_scope(&l, "node-b");
		CU_ASSERT_EQUAL(strlen(l.job), sizeof(l.job) - 1);
		CU_ASSERT_STRING_EQUAL(l.job + strlen(l.job) - 7, "@node-b");
	}
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
	CU_ASSERT_EQUAL(ident_from_environ(ENV("SLURM_PROCID=1\0SLURM_STEP_ID=0\0SLURM_JOB_ID=9\0"
					       "SLURM_RESTART_COUNT=3\0"),
					   &r),
			0);
	CU_ASSERT_EQUAL(r.restart_count, 3);
	CU_ASSERT_FALSE(r.host_local);
}

/* The launcher table (ident.c's launchers[]): each row's names, precedence, the job-id rule of
 * each launcher and its fallbacks. */
static void test_ident_launchers(void)
{
	struct rank_ident r;

	CU_ASSERT_STRING_EQUAL(ident_source_name(IDENT_FTBPF), "ftbpf");
	CU_ASSERT_STRING_EQUAL(ident_source_name(IDENT_TORCH), "torchrun");
	CU_ASSERT_STRING_EQUAL(ident_source_name(IDENT_OMPI), "openmpi");
	CU_ASSERT_STRING_EQUAL(ident_source_name(IDENT_PMI), "pmi");
	CU_ASSERT_STRING_EQUAL(ident_source_name(IDENT_SLURM), "slurm");
	CU_ASSERT_STRING_EQUAL(ident_source_name(IDENT_CLIENT), "client");
	CU_ASSERT_STRING_EQUAL(ident_source_name(IDENT_ASSIGNED), "assigned");
	CU_ASSERT_STRING_EQUAL(ident_source_name(IDENT_NONE), "none");
	/* precedence: torch over Open MPI over PMI over Slurm tasks */
	CU_ASSERT_EQUAL(ident_from_environ(ENV("SLURM_PROCID=3\0SLURM_STEP_ID=0\0PMI_RANK=2\0"
					       "OMPI_COMM_WORLD_RANK=1\0RANK=0\0WORLD_SIZE=4\0"),
					   &r),
			0);
	CU_ASSERT_EQUAL(r.source, IDENT_TORCH);
	CU_ASSERT_EQUAL(r.rank, 0);
	CU_ASSERT_EQUAL(ident_from_environ(ENV("SLURM_PROCID=3\0SLURM_STEP_ID=0\0PMI_RANK=2\0"
					       "OMPI_COMM_WORLD_RANK=1\0RANK=0\0"),
					   &r),
			0);
	CU_ASSERT_EQUAL(r.source, IDENT_OMPI);
	CU_ASSERT_EQUAL(r.rank, 1);
	CU_ASSERT_EQUAL(
	    ident_from_environ(ENV("SLURM_PROCID=3\0SLURM_STEP_ID=0\0PMI_RANK=2\0"), &r), 0);
	CU_ASSERT_EQUAL(r.source, IDENT_PMI);
	CU_ASSERT_EQUAL(r.rank, 2);
	CU_ASSERT_EQUAL(r.local_rank, -1); /* PMI names no local rank */
	/* each launcher's second job variable, and no job variable at all: host-local */
	CU_ASSERT_EQUAL(ident_from_environ(ENV("OMPI_COMM_WORLD_RANK=0\0"
					       "OMPI_COMM_WORLD_LOCAL_RANK=0\0"
					       "OMPI_MCA_ess_base_jobid=123\0"),
					   &r),
			0);
	CU_ASSERT_STRING_EQUAL(r.job, "ompi:123");
	CU_ASSERT_EQUAL(r.local_rank, 0);
	CU_ASSERT_FALSE(r.host_local);
	CU_ASSERT_EQUAL(ident_from_environ(ENV("OMPI_COMM_WORLD_RANK=0\0"), &r), 0);
	CU_ASSERT_STRING_EQUAL(r.job, "ompi:");
	CU_ASSERT_TRUE(r.host_local);
	CU_ASSERT_EQUAL(ident_from_environ(ENV("PMI_RANK=0\0PMI_JOBID=kvs_5\0"), &r), 0);
	CU_ASSERT_STRING_EQUAL(r.job, "pmi:kvs_5");
	CU_ASSERT_EQUAL(r.restart_count, -1);
	/* a malformed size or local rank of the chosen launcher is an error, not the next row */
	CU_ASSERT_EQUAL(ident_from_environ(ENV("OMPI_COMM_WORLD_RANK=0\0OMPI_COMM_WORLD_SIZE=0\0"
					       "PMI_RANK=0\0"),
					   &r),
			-EINVAL);
	CU_ASSERT_EQUAL(ident_from_environ(ENV("SLURM_PROCID=0\0SLURM_STEP_ID=1\0"
					       "SLURM_LOCALID=x\0"),
					   &r),
			-EINVAL);
	CU_ASSERT_EQUAL(ident_from_environ(ENV("PMI_RANK=-1\0"), &r), -EINVAL);
}

/* The program classes: one row per name, each a comm can hold, the class rules hold for every
 * row (a shell is a wrapper and no launcher; a user switcher is no launcher), and the questions
 * the agent asks answer from the table, row by row. */
static void test_ident_progs(void)
{
	size_t n;
	const struct ident_prog *p = ident_progs(&n);

	CU_ASSERT_TRUE(n > 40);
	for (size_t i = 0; i < n; i++) {
		unsigned c = p[i].classes;
		char path[64];

		CU_ASSERT_TRUE(strlen(p[i].name) >= 1 && strlen(p[i].name) <= 15);
		for (size_t j = 0; j < i; j++)
			CU_ASSERT_STRING_NOT_EQUAL(p[i].name, p[j].name);
		CU_ASSERT_NOT_EQUAL(c, 0);
		if (c & IDENT_PROG_SHELL)
			CU_ASSERT_TRUE((c & IDENT_PROG_WRAPPER) && (c & IDENT_PROG_NOT_LAUNCHER));
		if (c & IDENT_PROG_SWITCHES_USER)
			CU_ASSERT_TRUE(c & IDENT_PROG_NOT_LAUNCHER);
		CU_ASSERT_EQUAL(ident_is_wrapper(p[i].name), !!(c & IDENT_PROG_WRAPPER));
		CU_ASSERT_EQUAL(ident_switches_user(p[i].name), !!(c & IDENT_PROG_SWITCHES_USER));
		CU_ASSERT_EQUAL(ident_may_be_launcher(p[i].name), !(c & IDENT_PROG_NOT_LAUNCHER));
		snprintf(path, sizeof(path), "/usr/bin/%s (deleted)", p[i].name);
		CU_ASSERT_EQUAL(ident_is_shell_exe(path), !!(c & IDENT_PROG_SHELL));
	}
	/* programs in no row: in no class, and may be launchers */
	CU_ASSERT_FALSE(ident_is_wrapper("torchrun") || ident_is_shell_exe("/usr/bin/python3"));
	CU_ASSERT_TRUE(ident_may_be_launcher("torchrun") && ident_may_be_launcher("mpirun"));
	CU_ASSERT_FALSE(ident_is_shell_exe("/bin/bashful") || ident_is_shell_exe("/bin/bas"));
	CU_ASSERT_TRUE(ident_is_shell_exe("bash") && ident_is_shell_exe("/bin/sh"));
	/* doas execs its command: a user switcher that leaves no wrapper behind */
	CU_ASSERT_TRUE(ident_switches_user("doas") && !ident_is_wrapper("doas"));
}

/* Wrappers hand the rank over to their child: which programs are wrappers, which rank is the
 * same. */
static void test_ident_wrappers(void)
{
	struct rank_ident a, b;

	CU_ASSERT_TRUE(ident_is_wrapper("timeout"));
	CU_ASSERT_TRUE(ident_is_wrapper("bash"));
	CU_ASSERT_TRUE(ident_is_wrapper("sh"));
	CU_ASSERT_TRUE(ident_is_wrapper("uv"));
	CU_ASSERT_FALSE(ident_is_wrapper("python3"));
	CU_ASSERT_FALSE(ident_is_wrapper("torchrun"));
	CU_ASSERT_FALSE(ident_is_wrapper("gcc"));
	CU_ASSERT_FALSE(ident_is_wrapper(""));
	/* wrappers that run their command as another user: root's hand the rank over */
	CU_ASSERT_TRUE(ident_switches_user("runuser"));
	CU_ASSERT_TRUE(ident_switches_user("su"));
	CU_ASSERT_TRUE(ident_switches_user("sudo"));
	CU_ASSERT_FALSE(ident_switches_user("timeout"));
	CU_ASSERT_FALSE(ident_switches_user("setpriv")); /* it execs: the rank itself changes */
	/* never a launcher to stop: shells, multiplexers, containers' inits and monitors */
	CU_ASSERT_TRUE(ident_may_be_launcher("torchrun"));
	CU_ASSERT_TRUE(ident_may_be_launcher("mpirun"));
	CU_ASSERT_TRUE(ident_may_be_launcher("python3"));
	CU_ASSERT_FALSE(ident_may_be_launcher("bash"));
	CU_ASSERT_FALSE(ident_may_be_launcher("screen"));
	CU_ASSERT_FALSE(ident_may_be_launcher("SCREEN"));
	CU_ASSERT_FALSE(ident_may_be_launcher("tmux: server"));
	CU_ASSERT_FALSE(ident_may_be_launcher("conmon"));
	CU_ASSERT_FALSE(ident_may_be_launcher("tini"));
	CU_ASSERT_FALSE(ident_may_be_launcher("dumb-init"));
	CU_ASSERT_FALSE(ident_may_be_launcher("runuser"));
	CU_ASSERT_FALSE(ident_may_be_launcher("systemd"));
	/* a `#!` script runs a shell whatever its name: by the program, not the comm */
	CU_ASSERT_TRUE(ident_is_shell_exe("/usr/bin/bash"));
	CU_ASSERT_TRUE(ident_is_shell_exe("/bin/sh"));
	CU_ASSERT_TRUE(ident_is_shell_exe("/usr/bin/dash (deleted)"));
	CU_ASSERT_TRUE(ident_is_shell_exe("zsh"));
	CU_ASSERT_TRUE(ident_is_shell_exe("/bin/rbash"));
	CU_ASSERT_TRUE(ident_is_shell_exe("/usr/bin/ksh93"));
	CU_ASSERT_TRUE(ident_is_shell_exe("/bin/lksh"));
	CU_ASSERT_TRUE(ident_is_shell_exe("/usr/bin/posh"));
	CU_ASSERT_FALSE(ident_is_shell_exe("/usr/bin/python3.11"));
	CU_ASSERT_FALSE(ident_is_shell_exe("/usr/bin/bashful"));
	CU_ASSERT_FALSE(ident_is_shell_exe("/opt/sh/torchrun"));
	CU_ASSERT_FALSE(ident_is_shell_exe("/usr/bin/"));
	CU_ASSERT_FALSE(ident_is_shell_exe(""));
	CU_ASSERT_EQUAL(ident_from_environ(ENV("RANK=1\0WORLD_SIZE=2\0MASTER_ADDR=127.0.0.1\0"
					       "MASTER_PORT=5\0"),
					   &a),
			0);
	b = a;
	CU_ASSERT_TRUE(ident_same_rank(&a, &b));
	b.rank = 0;
	CU_ASSERT_FALSE(ident_same_rank(&a, &b));
	b = a;
	ident_scope(&b, "n");
	CU_ASSERT_FALSE(ident_same_rank(&a, &b));
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("ident", NULL, NULL);
	CU_add_test(s, "rank identity from environment", test_ident);
	CU_add_test(s, "the launcher table", test_ident_launchers);
	CU_add_test(s, "wrappers and the same rank", test_ident_wrappers);
	CU_add_test(s, "the program classes table", test_ident_progs);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
