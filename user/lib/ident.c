/*
 * Which processes are ranks, from the variables their launcher sets (the table `launchers[]`,
 * in order of precedence: FTBPF_RANK/FTBPF_JOB (explicit), torchrun's RANK/WORLD_SIZE, Open
 * MPI, PMI, Slurm tasks).
 * Only the environment is read; nothing here trusts its values beyond the range checks.
 */
#include "lib/ident.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_RANK 16777216

struct env_view {
	const char *env;
	size_t len;
};

/* Find "name=" in the block; returns the value (not NUL-terminated if at the very end). */
static const char *env_get(const struct env_view *v, const char *name, size_t *ret_len)
{
	size_t nl = strlen(name), pos = 0;

	while (pos < v->len) {
		const char *s = v->env + pos;
		const char *end = memchr(s, 0, v->len - pos);
		size_t sl = end ? (size_t)(end - s) : v->len - pos;

		if (sl > nl && !memcmp(s, name, nl) && s[nl] == '=') {
			*ret_len = sl - nl - 1;
			return s + nl + 1;
		}
		pos += sl + 1;
	}
	return NULL;
}

/* 0: absent, 1: parsed, -EINVAL: malformed. */
static int env_int(const struct env_view *v, const char *name, long min, long max, int *ret)
{
	char buf[24];
	size_t n;
	const char *s = env_get(v, name, &n);
	char *end;
	long x;

	if (!s)
		return 0;
	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = 0;
	if (!isdigit((unsigned char)buf[0]) && buf[0] != '-')
		return -EINVAL;
	errno = 0;
	x = strtol(buf, &end, 10);
	if (errno || *end || x < min || x > max)
		return -EINVAL;
	*ret = (int)x;
	return 1;
}

/* One byte of a job id: printable ASCII but for quotes and backslashes; else '_'. */
static char job_char(unsigned char c)
{
	return (c < 0x21 || c > 0x7e || c == '"' || c == '\\') ? '_' : (char)c;
}

void ident_job_sanitize(char *job)
{
	for (; *job; job++)
		*job = job_char((unsigned char)*job);
}

/* Copy a value as a job-id component, replacing control characters and quotes. */
static size_t env_str(const struct env_view *v, const char *name, char *out, size_t outlen)
{
	size_t n, i;
	const char *s = env_get(v, name, &n);

	if (!s || !n || outlen == 0)
		return 0;
	if (n >= outlen)
		n = outlen - 1;
	for (i = 0; i < n; i++)
		out[i] = job_char((unsigned char)s[i]);
	out[n] = 0;
	return n;
}

static void set_job(struct rank_ident *r, const char *prefix, const char *a, const char *b)
{
	if (b && *b)
		snprintf(r->job, sizeof(r->job), "%s%s%s%s", prefix, a, *a ? ":" : "", b);
	else
		snprintf(r->job, sizeof(r->job), "%s%s", prefix, a);
}

/* torchrun's run id is "none" unless --rdzv-id or --standalone gave one: then it names no job,
 * and two unrelated jobs would merge; the rendezvous store's address (MASTER_ADDR:MASTER_PORT,
 * unique per job on a host) names it instead. */
static int job_torch(const struct env_view *v, struct rank_ident *r)
{
	char a[FTBPF_JOB_LEN] = "", b[FTBPF_JOB_LEN] = "";

	if (env_str(v, "TORCHELASTIC_RUN_ID", a, sizeof(a)) && strcmp(a, "none")) {
		set_job(r, "torch:", a, NULL);
		return 0;
	}
	a[0] = 0;
	env_str(v, "MASTER_ADDR", a, sizeof(a));
	env_str(v, "MASTER_PORT", b, sizeof(b));
	set_job(r, "torch:", a, b);
	r->host_local = !*a || ident_addr_is_loopback(a);
	return 0;
}

/* The batch script and the extern step carry SLURM_PROCID too: only job steps launched by srun
 * (a small numeric SLURM_STEP_ID) are ranks. The job is the step: JOB:STEP. */
static int job_slurm(const struct env_view *v, struct rank_ident *r)
{
	char a[FTBPF_JOB_LEN] = "", b[16];
	int step;

	if (env_int(v, "SLURM_STEP_ID", 0, 0x7ffffff0, &step) != 1)
		return -ENOENT;
	env_str(v, "SLURM_JOB_ID", a, sizeof(a));
	snprintf(b, sizeof(b), "%d", step);
	set_job(r, "slurm:", a, b);
	r->host_local = !*a;
	return 0;
}

/*
 * The launchers, in order of precedence: the first whose rank variable is set (and, where
 * named, whose `requires` variable is present) decides. A launcher's job id is `prefix` + the
 * first of `job_vars` that is set, else `prefix` + `no_job` and host-local; `job` replaces that
 * rule where a launcher needs its own (0, or -ENOENT: not a rank after all). Supporting a new
 * launcher is one row here (and its source in ident.h) plus its case in tests/unit/test_ident.c.
 */
struct launcher {
	enum ident_source source;
	const char *name;     /* ident_source_name, "source" in status and events */
	const char *rank;     /* 0..MAX_RANK */
	const char *requires; /* must be present too (NULL: nothing) */
	const char *world;    /* 1..MAX_RANK, optional */
	const char *local;    /* 0..MAX_RANK, optional (NULL: the launcher has none) */
	const char *restarts; /* the restart count, optional (NULL: none) */
	const char *prefix;
	const char *job_vars[2];
	const char *no_job;
	int (*job)(const struct env_view *v, struct rank_ident *r);
};

static const struct launcher launchers[] = {
    {.source = IDENT_FTBPF,
     .name = "ftbpf",
     .rank = "FTBPF_RANK",
     .world = "FTBPF_WORLD_SIZE",
     .local = "FTBPF_LOCAL_RANK",
     .prefix = "",
     .job_vars = {"FTBPF_JOB"},
     .no_job = "default"},
    {.source = IDENT_TORCH,
     .name = "torchrun",
     .rank = "RANK",
     .requires = "WORLD_SIZE",
     .world = "WORLD_SIZE",
     .local = "LOCAL_RANK",
     .restarts = "TORCHELASTIC_RESTART_COUNT",
     .job = job_torch},
    {.source = IDENT_OMPI,
     .name = "openmpi",
     .rank = "OMPI_COMM_WORLD_RANK",
     .world = "OMPI_COMM_WORLD_SIZE",
     .local = "OMPI_COMM_WORLD_LOCAL_RANK",
     .prefix = "ompi:",
     .job_vars = {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"},
     .no_job = ""},
    {.source = IDENT_PMI,
     .name = "pmi",
     .rank = "PMI_RANK",
     .world = "PMI_SIZE",
     .restarts = "SLURM_RESTART_COUNT",
     .prefix = "pmi:",
     .job_vars = {"SLURM_JOB_ID", "PMI_JOBID"},
     .no_job = ""},
    {.source = IDENT_SLURM,
     .name = "slurm",
     .rank = "SLURM_PROCID",
     .world = "SLURM_NTASKS",
     .local = "SLURM_LOCALID",
     .restarts = "SLURM_RESTART_COUNT",
     .job = job_slurm},
};

#define NLAUNCHERS (sizeof(launchers) / sizeof(launchers[0]))

static void job_from_vars(const struct launcher *l, const struct env_view *v, struct rank_ident *r)
{
	char a[FTBPF_JOB_LEN] = "";

	for (size_t i = 0; i < 2 && l->job_vars[i]; i++)
		if (env_str(v, l->job_vars[i], a, sizeof(a)))
			break;
	r->host_local = !*a;
	set_job(r, l->prefix, *a ? a : l->no_job, NULL);
}

int ident_from_environ(const char *env, size_t len, struct rank_ident *ret)
{
	struct env_view v = {env, len};
	struct rank_ident r = {.rank = -1, .local_rank = -1, .world_size = -1, .restart_count = -1};
	const struct launcher *l = NULL;
	int rc;

	for (size_t i = 0; i < NLAUNCHERS && !l; i++) {
		rc = env_int(&v, launchers[i].rank, 0, MAX_RANK, &r.rank);
		if (!rc ||
		    (launchers[i].requires && !env_get(&v, launchers[i].requires, &(size_t){0})))
			continue;
		if (rc < 0)
			return rc;
		l = &launchers[i];
	}
	if (!l)
		return -ENOENT;
	r.source = l->source;
	if (l->job) {
		if ((rc = l->job(&v, &r)) < 0)
			return rc;
	} else {
		job_from_vars(l, &v, &r);
	}
	if (env_int(&v, l->world, 1, MAX_RANK, &r.world_size) < 0 ||
	    (l->local && env_int(&v, l->local, 0, MAX_RANK, &r.local_rank) < 0))
		return -EINVAL;
	if (l->restarts)
		(void)env_int(&v, l->restarts, 0, INT32_MAX, &r.restart_count);
	if (r.world_size > 0 && r.rank >= r.world_size)
		return -EINVAL;
	*ret = r;
	return 0;
}

const char *ident_source_name(enum ident_source s)
{
	for (size_t i = 0; i < NLAUNCHERS; i++)
		if (launchers[i].source == s)
			return launchers[i].name;
	return s == IDENT_CLIENT ? "client" : s == IDENT_ASSIGNED ? "assigned" : "none";
}

int ident_addr_is_loopback(const char *a)
{
	static const char *const names[] = {
	    "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", "::1",
	    "[::1]",	 "0:0:0:0:0:0:0:1"};

	if (!strncmp(a, "127.", 4) || !strncmp(a, "::ffff:127.", 11))
		return 1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(a, names[i]))
			return 1;
	return 0;
}

void ident_scope(struct rank_ident *r, const char *node)
{
	char base[FTBPF_JOB_LEN];
	size_t nl = strlen(node);

	if (!r->host_local || !*node)
		return;
	if (nl > FTBPF_JOB_LEN / 2)
		nl = FTBPF_JOB_LEN / 2;
	memcpy(base, r->job, sizeof(base));
	/* the node always fits: the id's own part is cut if it must be */
	snprintf(r->job, sizeof(r->job), "%.*s@%.*s", (int)(FTBPF_JOB_LEN - 2 - nl), base, (int)nl,
		 node);
}

int ident_same_rank(const struct rank_ident *a, const struct rank_ident *b)
{
	return a->source == b->source && a->rank == b->rank && !strcmp(a->job, b->job);
}

/*
 * The program classes: one row per program the agent knows by name (its comm, or an
 * executable's base name; comm holds 15 bytes). A shell forks the command it runs and waits
 * for it, and starts no job itself: every shell is a wrapper and no launcher (the table test
 * checks it). A wrapper forks its command and waits (those that exec it, env, nice, taskset,
 * numactl, stdbuf, setpriv, nohup, doas, leave no wrapper behind). No launcher: a session,
 * terminal multiplexer, login or privilege tool, a container's init or monitor, a service
 * manager, a debugger: a rank started by hand or from a script has no launcher to stop.
 */
#define SHELL	     (IDENT_PROG_SHELL | IDENT_PROG_WRAPPER | IDENT_PROG_NOT_LAUNCHER)
#define WRAPPER	     IDENT_PROG_WRAPPER
#define NOT_LAUNCHER IDENT_PROG_NOT_LAUNCHER
#define SWITCHER     IDENT_PROG_SWITCHES_USER
static const struct ident_prog progs[] = {
    {"sh", SHELL},
    {"bash", SHELL},
    {"rbash", SHELL},
    {"dash", SHELL},
    {"zsh", SHELL},
    {"ksh", SHELL},
    {"ksh93", SHELL},
    {"mksh", SHELL},
    {"lksh", SHELL},
    {"pdksh", SHELL},
    {"oksh", SHELL},
    {"posh", SHELL},
    {"ash", SHELL},
    {"fish", SHELL},
    {"tcsh", SHELL},
    {"csh", SHELL},
    {"busybox", SHELL},
    {"yash", SHELL},
    {"su", WRAPPER | NOT_LAUNCHER | SWITCHER},
    {"runuser", WRAPPER | NOT_LAUNCHER | SWITCHER},
    {"sudo", WRAPPER | NOT_LAUNCHER | SWITCHER},
    {"doas", NOT_LAUNCHER | SWITCHER},
    {"timeout", WRAPPER | NOT_LAUNCHER},
    {"setsid", WRAPPER | NOT_LAUNCHER},
    {"tini", WRAPPER | NOT_LAUNCHER},
    {"dumb-init", WRAPPER | NOT_LAUNCHER},
    {"strace", WRAPPER | NOT_LAUNCHER},
    {"time", WRAPPER},
    {"flock", WRAPPER},
    {"unshare", WRAPPER},
    {"nsenter", WRAPPER},
    {"uv", WRAPPER},
    {"srun", WRAPPER},
    {"apptainer", WRAPPER},
    {"singularity", WRAPPER},
    {"starter", WRAPPER},
    {"starter-suid", WRAPPER},
    {"nsys", WRAPPER},
    {"py-spy", WRAPPER},
    {"perf", WRAPPER},
    {"ltrace", WRAPPER},
    {"xargs", WRAPPER},
    {"catchsegv", WRAPPER},
    {"ddtrace-run", WRAPPER},
    {"sshd", NOT_LAUNCHER},
    {"login", NOT_LAUNCHER},
    {"tmux", NOT_LAUNCHER},
    {"tmux: server", NOT_LAUNCHER},
    {"screen", NOT_LAUNCHER},
    {"SCREEN", NOT_LAUNCHER},
    {"systemd", NOT_LAUNCHER},
    {"init", NOT_LAUNCHER},
    {"containerd-shim", NOT_LAUNCHER},
    {"conmon", NOT_LAUNCHER},
    {"catatonit", NOT_LAUNCHER},
    {"s6-svscan", NOT_LAUNCHER},
    {"runsv", NOT_LAUNCHER},
    {"nohup", NOT_LAUNCHER},
    {"setpriv", NOT_LAUNCHER},
    {"env", NOT_LAUNCHER},
    {"nice", NOT_LAUNCHER},
    {"ionice", NOT_LAUNCHER},
    {"taskset", NOT_LAUNCHER},
    {"numactl", NOT_LAUNCHER},
    {"chrt", NOT_LAUNCHER},
    {"stdbuf", NOT_LAUNCHER},
    {"script", NOT_LAUNCHER},
    {"gdb", NOT_LAUNCHER},
};
#undef SHELL
#undef WRAPPER
#undef NOT_LAUNCHER
#undef SWITCHER

const struct ident_prog *ident_progs(size_t *ret_n)
{
	*ret_n = sizeof(progs) / sizeof(progs[0]);
	return progs;
}

/* The classes of the program named by the first n bytes of name (0: none of the table's). */
static unsigned prog_class(const char *name, size_t n)
{
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		if (strlen(progs[i].name) == n && !strncmp(name, progs[i].name, n))
			return progs[i].classes;
	return 0;
}

int ident_is_wrapper(const char *comm)
{
	return !!(prog_class(comm, strlen(comm)) & IDENT_PROG_WRAPPER);
}

int ident_switches_user(const char *comm)
{
	return !!(prog_class(comm, strlen(comm)) & IDENT_PROG_SWITCHES_USER);
}

int ident_may_be_launcher(const char *comm)
{
	return !(prog_class(comm, strlen(comm)) & IDENT_PROG_NOT_LAUNCHER);
}

int ident_is_shell_exe(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	/* "bash (deleted)" after an upgrade */
	return !!(prog_class(b, strcspn(b, " ")) & IDENT_PROG_SHELL);
}
