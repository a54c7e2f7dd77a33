/*
 * Which processes are ranks, from the variables their launcher sets. Order of precedence:
 * FTBPF_RANK/FTBPF_JOB (explicit), torchrun's RANK/WORLD_SIZE, Open MPI, PMI, Slurm tasks.
 * Only the environment is read; nothing here trusts its values beyond the range checks.
 */
#include "lib/ident.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int ident_from_environ(const char *env, size_t len, struct rank_ident *ret)
{
	struct env_view v = {env, len};
	struct rank_ident r = {.rank = -1, .local_rank = -1, .world_size = -1};
	char a[FTBPF_JOB_LEN] = "", b[FTBPF_JOB_LEN] = "";
	int rc, step;

	if ((rc = env_int(&v, "FTBPF_RANK", 0, MAX_RANK, &r.rank)) != 0) {
		if (rc < 0)
			return rc;
		r.source = IDENT_FTBPF;
		if (env_int(&v, "FTBPF_WORLD_SIZE", 1, MAX_RANK, &r.world_size) < 0 ||
		    env_int(&v, "FTBPF_LOCAL_RANK", 0, MAX_RANK, &r.local_rank) < 0)
			return -EINVAL;
		if (!env_str(&v, "FTBPF_JOB", r.job, sizeof(r.job)))
			snprintf(r.job, sizeof(r.job), "default");
	} else if ((rc = env_int(&v, "RANK", 0, MAX_RANK, &r.rank)) != 0 &&
		   env_get(&v, "WORLD_SIZE", &(size_t){0})) {
		if (rc < 0)
			return rc;
		r.source = IDENT_TORCH;
		if (env_int(&v, "WORLD_SIZE", 1, MAX_RANK, &r.world_size) < 0 ||
		    env_int(&v, "LOCAL_RANK", 0, MAX_RANK, &r.local_rank) < 0)
			return -EINVAL;
		/* torchrun's run id is "none" unless --rdzv-id or --standalone gave one: then it
		 * names no job, and two unrelated jobs would merge; the rendezvous store's address
		 * (MASTER_ADDR:MASTER_PORT, unique per job on a host) names it instead */
		if (env_str(&v, "TORCHELASTIC_RUN_ID", a, sizeof(a)) && strcmp(a, "none")) {
			set_job(&r, "torch:", a, NULL);
		} else {
			a[0] = 0;
			env_str(&v, "MASTER_ADDR", a, sizeof(a));
			env_str(&v, "MASTER_PORT", b, sizeof(b));
			set_job(&r, "torch:", a, b);
		}
	} else if ((rc = env_int(&v, "OMPI_COMM_WORLD_RANK", 0, MAX_RANK, &r.rank)) != 0) {
		if (rc < 0)
			return rc;
		r.source = IDENT_OMPI;
		if (env_int(&v, "OMPI_COMM_WORLD_SIZE", 1, MAX_RANK, &r.world_size) < 0 ||
		    env_int(&v, "OMPI_COMM_WORLD_LOCAL_RANK", 0, MAX_RANK, &r.local_rank) < 0)
			return -EINVAL;
		if (!env_str(&v, "PMIX_NAMESPACE", a, sizeof(a)))
			env_str(&v, "OMPI_MCA_ess_base_jobid", a, sizeof(a));
		set_job(&r, "ompi:", a, NULL);
	} else if ((rc = env_int(&v, "PMI_RANK", 0, MAX_RANK, &r.rank)) != 0) {
		if (rc < 0)
			return rc;
		r.source = IDENT_PMI;
		if (env_int(&v, "PMI_SIZE", 1, MAX_RANK, &r.world_size) < 0)
			return -EINVAL;
		if (!env_str(&v, "SLURM_JOB_ID", a, sizeof(a)))
			env_str(&v, "PMI_JOBID", a, sizeof(a));
		set_job(&r, "pmi:", a, NULL);
	} else if ((rc = env_int(&v, "SLURM_PROCID", 0, MAX_RANK, &r.rank)) != 0) {
		if (rc < 0)
			return rc;
		/* The batch script and the extern step carry SLURM_PROCID too: only job steps
		 * launched by srun (a small numeric SLURM_STEP_ID) are ranks. */
		if (env_int(&v, "SLURM_STEP_ID", 0, 0x7ffffff0, &step) != 1)
			return -ENOENT;
		r.source = IDENT_SLURM;
		if (env_int(&v, "SLURM_NTASKS", 1, MAX_RANK, &r.world_size) < 0 ||
		    env_int(&v, "SLURM_LOCALID", 0, MAX_RANK, &r.local_rank) < 0)
			return -EINVAL;
		env_str(&v, "SLURM_JOB_ID", a, sizeof(a));
		snprintf(b, sizeof(b), "%d", step);
		set_job(&r, "slurm:", a, b);
	} else {
		return -ENOENT;
	}
	if (r.world_size > 0 && r.rank >= r.world_size)
		return -EINVAL;
	*ret = r;
	return 0;
}

const char *ident_source_name(enum ident_source s)
{
	switch (s) {
	case IDENT_FTBPF:
		return "ftbpf";
	case IDENT_TORCH:
		return "torchrun";
	case IDENT_OMPI:
		return "openmpi";
	case IDENT_PMI:
		return "pmi";
	case IDENT_SLURM:
		return "slurm";
	case IDENT_CLIENT:
		return "client";
	case IDENT_NONE:
		break;
	}
	return "none";
}
