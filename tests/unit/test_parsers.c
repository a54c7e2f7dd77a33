/* Parsers: config file and values, environment identity, control requests, /proc/PID/stat,
 * signal names, syscall classes, and the event log's rotation. */
#include <CUnit/Basic.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/config.h"
#include "proto/ctl_proto.h"
#include "agent/eventlog.h"
#include "lib/gpuapi.h"
#include "lib/ident.h"
#include "os/log.h"
#include "os/procfs.h"
#include "lib/syscalls.h"

#define ENV(s) s, sizeof(s) - 1

static void test_config_ok(void)
{
	struct ftbpf_config c;
	char err[256] = "";
	const char *txt = "# comment\n soft_timeout = 5 \nhard_timeout=7.5\naction = kill\n"
			  "soft_signal = SIGUSR1\nlog_max_bytes = 2M\nonly_jobs = torch:*\n";

	config_defaults(&c);
	CU_ASSERT_EQUAL(config_parse_buffer(&c, "t.conf", txt, strlen(txt), err, sizeof(err)), 0);
	CU_ASSERT_DOUBLE_EQUAL(c.soft_timeout_s, 5, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(c.hard_timeout_s, 7.5, 1e-9);
	CU_ASSERT_EQUAL(c.action, ACTION_KILL);
	CU_ASSERT_EQUAL(c.soft_signal, 10);
	CU_ASSERT_EQUAL(c.log_max_bytes, 2 << 20);
	CU_ASSERT_STRING_EQUAL(c.only_jobs, "torch:*");
}

static void test_config_errors(void)
{
	struct ftbpf_config c;
	char err[256];
	struct {
		const char *txt, *msg;
	} cases[] = {
	    {"soft_timeout = -1\n", "t.conf:1: soft_timeout: -1 is out of range"},
	    {"\n\nsoft_timeout\n", "t.conf:3: expected 'key = value'"},
	    {"bogus = 1\n", "t.conf:1: unknown key 'bogus'"},
	    {"soft_timeout = 1e999\n", "t.conf:1: soft_timeout: '1e999' is not a number"},
	    {"log_keep = 1.5\n", "t.conf:1: log_keep: '1.5' is not a whole number"},
	    {"soft_signal = SIGFOO\n", "t.conf:1: soft_signal: 'SIGFOO' is not a signal"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		config_defaults(&c);
		err[0] = 0;
		CU_ASSERT_EQUAL(config_parse_buffer(&c, "t.conf", cases[i].txt,
						    strlen(cases[i].txt), err, sizeof(err)),
				-EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[i].msg));
		if (!strstr(err, cases[i].msg))
			printf("\n  got: %s\n", err);
	}
}

/* Cross-key checks run once, on the final configuration (file, then flags): a file's
 * hard_timeout that a flag's soft_timeout makes valid is valid. */
static void test_config_cross_checks(void)
{
	struct ftbpf_config c;
	char err[256];
	const char *f = "hard_timeout = 30\n";

	config_defaults(&c); /* soft 60 */
	CU_ASSERT_EQUAL(config_parse_buffer(&c, "t.conf", f, strlen(f), err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_check(&c, err, sizeof(err)), -EINVAL); /* 30 < 60 */
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "hard_timeout (30) is shorter"));
	CU_ASSERT_EQUAL(config_set(&c, "soft_timeout", "10", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_check(&c, err, sizeof(err)), 0);
	CU_ASSERT_FALSE(c.soft_auto);
	/* soft_timeout auto: at most soft_timeout_max (the hard timeout is checked against it) */
	CU_ASSERT_EQUAL(config_set(&c, "soft_timeout", "auto", err, sizeof(err)), 0);
	CU_ASSERT_TRUE(c.soft_auto);
	CU_ASSERT_EQUAL(config_check(&c, err, sizeof(err)), -EINVAL); /* 30 < 60 */
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "soft_timeout_max"));
	CU_ASSERT_EQUAL(config_set(&c, "soft_timeout_max", "20", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_check(&c, err, sizeof(err)), 0);
	CU_ASSERT_DOUBLE_EQUAL(config_soft_ceiling(&c), 20, 1e-9);
	CU_ASSERT_EQUAL(config_set(&c, "soft_timeout", "sometimes", err, sizeof(err)), -EINVAL);
	CU_ASSERT_TRUE(c.soft_auto); /* unchanged by a bad value */
	CU_ASSERT_EQUAL(config_set(&c, "soft_timeout", "10", err, sizeof(err)), 0);
	CU_ASSERT_FALSE(c.soft_auto);
	/* mesh addresses are checked before anything is loaded */
	CU_ASSERT_EQUAL(config_set(&c, "bind", "10.0.0.1:99999", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_set(&c, "key_file", "/k", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_check(&c, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "bind"));
	CU_ASSERT_EQUAL(config_set(&c, "bind", "10.0.0.1:7946", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_set(&c, "peers", "10.0.0.2:7946,nohost", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_check(&c, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "nohost"));
}

static void test_config_long_line_and_nul(void)
{
	struct ftbpf_config c;
	char err[256], big[2000];

	memset(big, 'a', sizeof(big));
	config_defaults(&c);
	CU_ASSERT_EQUAL(config_parse_buffer(&c, "t", big, sizeof(big), err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "line longer"));
	CU_ASSERT_EQUAL(config_parse_buffer(&c, "t", "a\0b\n", 4, err, sizeof(err)), -EINVAL);
}

static void test_signals(void)
{
	CU_ASSERT_EQUAL(config_parse_signal("TERM"), 15);
	CU_ASSERT_EQUAL(config_parse_signal("sigkill"), 9);
	CU_ASSERT_EQUAL(config_parse_signal("10"), 10);
	CU_ASSERT_EQUAL(config_parse_signal("0"), -EINVAL);
	CU_ASSERT_EQUAL(config_parse_signal("65"), -EINVAL);
	CU_ASSERT_EQUAL(config_parse_signal(""), -EINVAL);
	CU_ASSERT_STRING_EQUAL(config_signal_name(2), "INT");
}

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

static void test_ctl_proto(void)
{
	struct ctl_request r;
	char err[256];
	const char *ok = "{\"v\":1,\"cmd\":\"signal\",\"pid\":42,\"signal\":\"TERM\"}";

	CU_ASSERT_EQUAL(ctl_parse_request(ok, strlen(ok), &r, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(r.cmd, CTL_CMD_SIGNAL);
	CU_ASSERT_EQUAL(r.pid, 42);
	CU_ASSERT_EQUAL(r.sig, 15);
	CU_ASSERT_EQUAL(ctl_parse_request("{\"v\":2,\"cmd\":\"status\"}",
					  strlen("{\"v\":2,\"cmd\":\"status\"}"), &r, err,
					  sizeof(err)),
			-EPROTO);
	CU_ASSERT_EQUAL(ctl_parse_request("{\"v\":1,\"cmd\":\"nope\"}",
					  strlen("{\"v\":1,\"cmd\":\"nope\"}"), &r, err,
					  sizeof(err)),
			-EOPNOTSUPP);
	CU_ASSERT_EQUAL(ctl_parse_request("{\"v\":1}", strlen("{\"v\":1}"), &r, err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(ctl_parse_request("{\"v\":1,\"cmd\":\"explain\"}",
					  strlen("{\"v\":1,\"cmd\":\"explain\"}"), &r, err,
					  sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(ctl_parse_request("{\"v\":1,\"cmd\":\"status\"} x",
					  strlen("{\"v\":1,\"cmd\":\"status\"} x"), &r, err,
					  sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(ctl_parse_request("{\"v\":1,\"cmd\":\"events\",\"follow\":1}",
					  strlen("{\"v\":1,\"cmd\":\"events\",\"follow\":1}"), &r,
					  err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(ctl_parse_request("{\"v\":1,\"cmd\":\"status\"",
					  strlen("{\"v\":1,\"cmd\":\"status\""), &r, err,
					  sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(ctl_parse_request("x", CTL_MAX_LINE + 1, &r, err, sizeof(err)), -E2BIG);
}

static void test_proc_stat(void)
{
	struct proc_stat st;
	const char *s =
	    "1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 "
	    "1 0 5000 1000 100";

	CU_ASSERT_EQUAL(procfs_parse_stat(s, strlen(s), &st), 0);
	CU_ASSERT_EQUAL(st.state, 'S');
	CU_ASSERT_EQUAL(st.ppid, 1);
	CU_ASSERT_STRING_EQUAL(st.comm, "a (weird) name");
	CU_ASSERT_EQUAL(st.utime_ns, 250ull * (1000000000ull / sysconf(_SC_CLK_TCK)));
	CU_ASSERT_EQUAL(procfs_parse_stat("garbage", 7, &st), -EINVAL);
	CU_ASSERT_EQUAL(procfs_stat(getpid(), -1, &st), 0);
	CU_ASSERT_EQUAL(st.state, 'R');
}

static void test_syscalls(void)
{
	char b[32];

	CU_ASSERT_STRING_EQUAL(syscalls_name(SYS_futex), "futex");
	CU_ASSERT_STRING_EQUAL(syscalls_format(100000, b, sizeof(b)), "syscall_100000");
	CU_ASSERT_EQUAL(syscalls_class(SYS_futex), 3u);
	CU_ASSERT_EQUAL(syscalls_class(SYS_clock_nanosleep), 2u);
	CU_ASSERT_EQUAL(syscalls_class(SYS_epoll_wait), 1u);
	CU_ASSERT_EQUAL(syscalls_class(SYS_write), 0u);
	CU_ASSERT_TRUE(syscalls_is_comm_wait(SYS_recvfrom));
	CU_ASSERT_FALSE(syscalls_is_comm_wait(SYS_clock_nanosleep));
	CU_ASSERT_TRUE(syscalls_is_sleep(SYS_nanosleep));
#if defined(__x86_64__)
	/* the syscall a return probe makes (x86-64, Linux 6.11+) is never progress */
	CU_ASSERT_EQUAL(syscalls_class(335), 2u);
	CU_ASSERT_STRING_EQUAL(syscalls_name(335), "uretprobe");
#endif
}

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

static int count_cb(void *ctx, const char *line, int64_t uid, uint64_t seq)
{
	(void)line;
	(void)uid;
	(void)seq;
	(*(int *)ctx)++;
	return 0;
}

static void test_eventlog_rotation(void)
{
	char dir[] = "/tmp/ftbpf-ut-XXXXXX", path[128], p1[160], p2[160], p3[160];
	struct eventlog *el;
	struct stat st;
	int n = 0;

	struct eventlog_opts eo = {.max_bytes = 4096, .keep = 2, .mem_keep = 16};
	char err[300], link[160];

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ev.jsonl", dir);
	eo.path = path;
	/* a symbolic link planted where the log goes is refused, its target untouched */
	snprintf(link, sizeof(link), "%s/planted", dir);
	CU_ASSERT_EQUAL(symlink(link, path), 0);
	CU_ASSERT_PTR_NULL(eventlog_new(&eo, err, sizeof(err)));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "symbolic link"));
	CU_ASSERT_NOT_EQUAL(access(link, F_OK), 0);
	unlink(path);
	/* a directory others can write is refused */
	chmod(dir, 01777);
	CU_ASSERT_PTR_NULL(eventlog_new(&eo, err, sizeof(err)));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "writable by other users"));
	chmod(dir, 0700);
	el = eventlog_new(&eo, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(el);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0600); /* root's alone: it holds kernel stacks */
	for (int i = 0; i < 200; i++) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "type", json_object_new_string("test"));
		json_object_object_add(o, "i", json_object_new_int(i));
		eventlog_emit(el, o);
	}
	snprintf(p1, sizeof(p1), "%s.1", path);
	snprintf(p2, sizeof(p2), "%s.2", path);
	snprintf(p3, sizeof(p3), "%s.3", path);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_TRUE(st.st_size < 4096);
	CU_ASSERT_EQUAL(stat(p1, &st), 0);
	CU_ASSERT_EQUAL(stat(p2, &st), 0);
	CU_ASSERT_NOT_EQUAL(stat(p3, &st), 0); /* keep = 2 */
	eventlog_foreach(el, 0, count_cb, &n);
	CU_ASSERT_EQUAL(n, 16);
	CU_ASSERT_EQUAL(eventlog_count(el), 200u);
	eventlog_free(el);
	CU_ASSERT_EQUAL(stat(p1, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0600);
	/* a restarted agent continues the sequence from the file */
	el = eventlog_new(&eo, err, sizeof(err));
	CU_ASSERT_EQUAL(eventlog_load_tail(el), 0);
	CU_ASSERT_EQUAL(eventlog_count(el), 200u);
	eventlog_free(el);
	unlink(path);
	unlink(p1);
	unlink(p2);
	rmdir(dir);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	log_set_level(LOG_ERR); /* the event log echoes events at info level */
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("parsers", NULL, NULL);
	CU_add_test(s, "config: values", test_config_ok);
	CU_add_test(s, "config: errors with file:line", test_config_errors);
	CU_add_test(s, "config: cross checks after the flags", test_config_cross_checks);
	CU_add_test(s, "config: long line, NUL", test_config_long_line_and_nul);
	CU_add_test(s, "signal names", test_signals);
	CU_add_test(s, "rank identity from environment", test_ident);
	CU_add_test(s, "control requests", test_ctl_proto);
	CU_add_test(s, "/proc/PID/stat", test_proc_stat);
	CU_add_test(s, "syscall tables", test_syscalls);
	CU_add_test(s, "CUDA/NCCL symbols to probe", test_gpuapi_match);
	CU_add_test(s, "event log rotation and resume", test_eventlog_rotation);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
