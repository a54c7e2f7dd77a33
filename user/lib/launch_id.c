/* A job's launch identity: see launch_id.h. */
#include "lib/launch_id.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

/* The value of name in the block (the first entry), its length in *ret_n; NULL when absent. */
static const char *env_value(const char *env, size_t len, const char *name, size_t *ret_n)
{
	size_t l = strlen(name);

	for (size_t o = 0; o < len;) {
		const char *e = env + o;
		size_t n = strnlen(e, len - o);

		if (n > l && !memcmp(e, name, l) && e[l] == '=') {
			*ret_n = n - l - 1;
			return e + l + 1;
		}
		o += n + 1;
	}
	return NULL;
}

static int valid_n(const char *s, size_t n)
{
	if (n == 0 || n > LAUNCH_ID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return 0;
	return 1;
}

int launch_id_valid(const char *id)
{
	return valid_n(id, strnlen(id, LAUNCH_ID_MAX + 1));
}

/* "tag:value" (or "tag:value.value2") into out, when it makes a valid id; 0 or -EINVAL. */
static int compose(char out[LAUNCH_ID_LEN], const char *tag, const char *v, size_t n,
		   const char *v2, size_t n2)
{
	char buf[3 * LAUNCH_ID_LEN];
	int w;

	if (!v || n > LAUNCH_ID_MAX || (v2 && n2 > LAUNCH_ID_MAX))
		return -EINVAL;
	if (v2)
		w = snprintf(buf, sizeof(buf), "%s:%.*s.%.*s", tag, (int)n, v, (int)n2, v2);
	else
		w = snprintf(buf, sizeof(buf), "%s:%.*s", tag, (int)n, v);
	if (w <= 0 || (size_t)w >= sizeof(buf) || !valid_n(buf, (size_t)w))
		return -EINVAL;
	memcpy(out, buf, (size_t)w + 1);
	return 0;
}

int launch_id_from_environ(const char *env, size_t len, char out[LAUNCH_ID_LEN])
{
	static const char *const ompi[] = {"OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid"};
	const char *v, *job, *step;
	size_t n, nj = 0, ns = 0;

	out[0] = 0;
	if ((v = env_value(env, len, "FTBPF_LAUNCH_ID", &n))) {
		if (!valid_n(v, n))
			return -EINVAL;
		return compose(out, "ftbpf", v, n, NULL, 0);
	}
	/* Slurm first: an mpirun or torchrun inside a job step is that step's launch */
	job = env_value(env, len, "SLURM_JOB_ID", &nj);
	step = env_value(env, len, "SLURM_STEP_ID", &ns);
	if (job && step && compose(out, "slurm", job, nj, step, ns) == 0)
		return 0;
	if ((v = env_value(env, len, "PMIX_NAMESPACE", &n)) &&
	    compose(out, "pmix", v, n, NULL, 0) == 0)
		return 0;
	for (size_t i = 0; i < sizeof(ompi) / sizeof(ompi[0]); i++)
		if ((v = env_value(env, len, ompi[i], &n)) &&
		    compose(out, "ompi", v, n, NULL, 0) == 0)
			return 0;
	out[0] = 0;
	return 0;
}

int launch_id_key(const char *id, char out[LAUNCH_KEY_LEN])
{
	static const char ctx[] = "ftbpf-launch-id-v1"; /* a key: 16 bytes at least */
	unsigned char h[16];

	out[0] = 0;
	if (!launch_id_valid(id))
		return -EINVAL;
	if (crypto_generichash(h, sizeof(h), (const unsigned char *)id, strlen(id),
			       (const unsigned char *)ctx, sizeof(ctx) - 1) != 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(h); i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
	return 0;
}

enum launch_id_choice launch_id_run_choose(const struct launch_id_view *v, uint64_t *ret_run)
{
	if (!v->have || !v->rec_run) {
		*ret_run = v->cur + 1; /* the first host of the launch: a new run */
		return LAUNCH_ID_NEW;
	}
	*ret_run = v->rec_run;
	/* a run another launch claimed after this one's: the job was launched again since */
	return v->rec_run < v->cur_other ? LAUNCH_ID_STALE : LAUNCH_ID_JOIN;
}
