/* NCCL RAS: the ranks' environment and the JSON STATUS reply (see ras_proto.h). */
#include "proto/ras_proto.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define RAS_RANKS_MAX (1 << 20) /* a communicator's size or rank, at most */

/* ---- the environment ---- */

static int addr_byte_ok(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_' || c == '%';
}

int ras_env_parse(const char *env, size_t len, struct ras_env *ret)
{
	struct ras_env e = {.enabled = 1};
	int r = 0;

	snprintf(e.addr, sizeof(e.addr), "%s", RAS_DEFAULT_ADDR);
	for (size_t i = 0; i < len;) {
		const char *s = env + i;
		size_t n = strnlen(s, len - i);

		i += n + 1;
		if (n > 16 && !strncmp(s, "NCCL_RAS_ENABLE=", 16)) {
			char v[24]; /* the block's last string may have no NUL */

			snprintf(v, sizeof(v), "%.*s", (int)(n - 16 < 23 ? n - 16 : 23), s + 16);
			e.enabled = strtol(v, NULL, 10) != 0;
		} else if (n >= 14 && !strncmp(s, "NCCL_RAS_ADDR=", 14)) {
			size_t m = n - 14;
			int ok = m > 0 && m < sizeof(e.addr);

			for (size_t k = 0; ok && k < m; k++)
				ok = addr_byte_ok((unsigned char)s[14 + k]);
			if (!ok) {
				r = -EINVAL;
				continue;
			}
			memcpy(e.addr, s + 14, m);
			e.addr[m] = '\0';
		}
	}
	*ret = e;
	return r;
}

int ras_addr_split(const char *addr, char *host, size_t hostlen, char *port, size_t portlen)
{
	const char *colon, *h = addr, *he;
	const char *p = "28028";

	if (!addr || !*addr)
		return -EINVAL;
	if (*addr == '[') { /* [v6]:port */
		he = strchr(addr, ']');
		if (!he)
			return -EINVAL;
		h = addr + 1;
		if (he[1] == ':')
			p = he + 2;
		else if (he[1])
			return -EINVAL;
	} else {
		colon = strrchr(addr, ':');
		if (colon && strchr(addr, ':') != colon)
			colon = NULL; /* a bare IPv6 address */
		he = colon ? colon : addr + strlen(addr);
		if (colon)
			p = colon + 1;
	}
	if (he == h || (size_t)(he - h) >= hostlen || !*p || strlen(p) >= portlen ||
	    strspn(p, "0123456789") != strlen(p) || atoi(p) < 1 || atoi(p) > 65535)
		return -EINVAL;
	memcpy(host, h, (size_t)(he - h));
	host[he - h] = '\0';
	snprintf(port, portlen, "%s", p);
	return 0;
}

int ras_is_server_hello(const char *line)
{
	return !strncasecmp(line, "SERVER PROTOCOL ", 16) && line[16] >= '0' && line[16] <= '9';
}

int ras_json_accepted(const char *line)
{
	return !strncasecmp(line, "OK", 2) &&
	       (line[2] == '\0' || line[2] == '\n' || line[2] == '\r');
}

/* ---- the JSON reply ---- */

struct parse {
	char *why;
	size_t whylen;
};

static int bad(struct parse *p, const char *what)
{
	snprintf(p->why, p->whylen, "not an NCCL RAS reply: %s", what);
	return -EINVAL;
}

static struct json_object *get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* An integer field in [lo, hi]; absent: def. 0, or -EINVAL. */
static int get_int(struct json_object *o, const char *key, int64_t lo, int64_t hi, int64_t def,
		   int64_t *ret)
{
	struct json_object *v = get(o, key);
	int64_t x;

	if (!v) {
		*ret = def;
		return 0;
	}
	if (!json_object_is_type(v, json_type_int))
		return -EINVAL;
	errno = 0;
	x = json_object_get_int64(v);
	if (errno || x < lo || x > hi)
		return -EINVAL;
	*ret = x;
	return 0;
}

/* A boolean (or 0/1) field; absent: 0. */
static int get_flag(struct json_object *o, const char *key)
{
	struct json_object *v = get(o, key);

	if (!v)
		return 0;
	if (json_object_is_type(v, json_type_boolean))
		return json_object_get_boolean(v);
	if (json_object_is_type(v, json_type_int))
		return json_object_get_int64(v) != 0;
	return 0;
}

/* A short printable string field into buf ("" when absent; -EINVAL when not text or long). */
static int get_text(struct json_object *o, const char *key, char *buf, size_t len)
{
	struct json_object *v = get(o, key);
	const char *s;

	buf[0] = '\0';
	if (!v)
		return 0;
	if (json_object_is_type(v, json_type_int)) { /* a hash printed as a number */
		snprintf(buf, len, "0x%llx", (unsigned long long)json_object_get_int64(v));
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	s = json_object_get_string(v);
	if ((size_t)json_object_get_string_len(v) >= len)
		return -EINVAL;
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			return -EINVAL;
	snprintf(buf, len, "%s", s);
	return 0;
}

/* rank, host, pid of a rank entry. */
static int rank_ident(struct parse *p, struct json_object *e, int size, struct ras_rank *r)
{
	int64_t v;

	memset(r, 0, sizeof(*r));
	if (!json_object_is_type(e, json_type_object))
		return bad(p, "a rank is not an object");
	if (!get(e, "rank") || get_int(e, "rank", 0, size > 0 ? size - 1 : RAS_RANKS_MAX, 0, &v))
		return bad(p, "a rank's \"rank\" is missing or out of range");
	r->rank = (int)v;
	if (get_int(e, "pid", -1, INT_MAX, -1, &v))
		return bad(p, "a rank's \"pid\" is not a process id");
	r->pid = (int)v;
	if (get_text(e, "host", r->host, sizeof(r->host)))
		return bad(p, "a rank's \"host\" is not a host name");
	return 0;
}

static int pid_in(int pid, const int *pids, int npids)
{
	for (int i = 0; pid > 0 && i < npids; i++)
		if (pids[i] == pid)
			return 1;
	return 0;
}

/* A rank that answered: its counts (the sum over every collective) and errors. */
static int answered_rank(struct parse *p, struct json_object *e, int size, struct ras_rank *r)
{
	struct json_object *st, *cc;
	int64_t v;
	int rc = rank_ident(p, e, size, r);

	if (rc)
		return rc;
	st = get(e, "status");
	if (st && json_object_is_type(st, json_type_object)) {
		if (get_int(st, "async_error", INT_MIN, INT_MAX, 0, &v))
			return bad(p, "\"async_error\" is not a number");
		r->async_error = (int)v;
		r->abort = get_flag(st, "abort_flag");
	} else if (st) {
		return bad(p, "a rank's \"status\" is not an object");
	}
	cc = get(e, "collective_counts");
	if (cc && !json_object_is_type(cc, json_type_object))
		return bad(p, "\"collective_counts\" is not an object");
	if (cc) {
		json_object_object_foreach (cc, k, c) {
			(void)k;
			if (!json_object_is_type(c, json_type_int) || json_object_get_int64(c) < 0)
				return bad(p, "a collective count is not a number");
			r->collectives += (uint64_t)json_object_get_int64(c);
		}
	}
	return 0;
}

static void keep(struct ras_rank *list, int *n, const struct ras_rank *r)
{
	if (*n < RAS_LIST_MAX)
		list[(*n)++] = *r;
}

static int cmp_behind(const void *a, const void *b)
{
	const struct ras_rank *x = a, *y = b;

	if (x->collectives != y->collectives)
		return x->collectives < y->collectives ? -1 : 1;
	return x->rank - y->rank;
}

static int parse_comm(struct parse *p, struct json_object *c, const int *pids, int npids,
		      struct ras_comm *out)
{
	struct json_object *ranks = get(c, "ranks"), *miss = get(c, "missing_ranks");
	struct ras_rank *all = NULL;
	uint64_t most = 0;
	int64_t v;
	size_t n;
	int rc = 0, nall = 0;

	memset(out, 0, sizeof(*out));
	if (!json_object_is_type(c, json_type_object))
		return bad(p, "a communicator is not an object");
	if (get_text(c, "hash", out->hash, sizeof(out->hash)))
		return bad(p, "a communicator's \"hash\" is not text");
	if (get_int(c, "size", 0, RAS_RANKS_MAX, 0, &v))
		return bad(p, "a communicator's \"size\" is out of range");
	out->size = (int)v;
	if (get_int(c, "ranks_count", 0, RAS_RANKS_MAX, 0, &v))
		return bad(p, "\"ranks_count\" is out of range");
	out->ranks_count = (int)v;
	if (get_int(c, "missing_ranks_count", 0, RAS_RANKS_MAX, 0, &v))
		return bad(p, "\"missing_ranks_count\" is out of range");
	out->missing_count = (int)v;
	if ((ranks && !json_object_is_type(ranks, json_type_array)) ||
	    (miss && !json_object_is_type(miss, json_type_array)))
		return bad(p, "\"ranks\" or \"missing_ranks\" is not a list");
	n = ranks ? json_object_array_length(ranks) : 0;
	if (n > RAS_RANKS_MAX)
		return bad(p, "too many ranks");
	all = n ? calloc(n, sizeof(*all)) : NULL;
	if (n && !all) {
		snprintf(p->why, p->whylen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		rc = answered_rank(p, json_object_array_get_idx(ranks, i), out->size, &all[nall]);
		if (rc)
			break;
		out->local += pid_in(all[nall].pid, pids, npids);
		if (all[nall].async_error || all[nall].abort)
			keep(out->error, &out->nerror, &all[nall]);
		most = all[nall].collectives > most ? all[nall].collectives : most;
		nall++;
	}
	if (!rc && nall > 1) { /* ranks behind the most any rank launched, fewest first */
		qsort(all, (size_t)nall, sizeof(*all), cmp_behind);
		for (int i = 0; i < nall && all[i].collectives < most; i++) {
			all[i].most = most;
			keep(out->behind, &out->nbehind, &all[i]);
		}
	}
	free(all);
	if (rc)
		return rc;
	n = miss ? json_object_array_length(miss) : 0;
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(miss, i), *st;
		struct ras_rank r;

		rc = rank_ident(p, e, out->size, &r);
		if (rc)
			return rc;
		out->local += pid_in(r.pid, pids, npids);
		st = get(e, "status");
		if (st && !json_object_is_type(st, json_type_object))
			return bad(p, "a missing rank's \"status\" is not an object");
		r.unresponsive = st ? get_flag(st, "unresponsive") : 0;
		r.dead = st ? get_flag(st, "considered_dead") : 0;
		keep(out->missing, &out->nmissing, &r);
	}
	return 0;
}

/* NCCL 2.28.7-2.28.9 print no comma after a missing rank's "nvml_dev": N. A copy with it put
 * back (the caller frees), or NULL when the reply is of no such version (or on ENOMEM). */
static char *repair_missing_comma(const char *text, size_t len)
{
	const char *v = memmem(text, len, "\"nccl_version\"", 14), *end = text + len;
	char *out, *o;

	if (!v)
		return NULL;
	v += 14;
	while (v < end && (*v == ' ' || *v == ':' || *v == '\t' || *v == '\n' || *v == '"'))
		v++;
	if (end - v < 5 || memcmp(v, "2.28.", 5))
		return NULL;
	out = malloc(len + len / 8 + 2); /* a comma per "nvml_dev" at most */
	if (!out)
		return NULL;
	o = out;
	for (const char *s = text; s < end;) {
		const char *k = memmem(s, (size_t)(end - s), "\"nvml_dev\"", 10), *q;

		if (!k) {
			memcpy(o, s, (size_t)(end - s));
			o += end - s;
			break;
		}
		q = k + 10;
		while (q < end && (*q == ' ' || *q == ':' || *q == '\t'))
			q++;
		if (q < end && *q == '-')
			q++;
		while (q < end && *q >= '0' && *q <= '9')
			q++;
		memcpy(o, s, (size_t)(q - s));
		o += q - s;
		s = q;
		while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
			q++;
		if (q < end && *q == '"')
			*o++ = ',';
	}
	*o = '\0';
	return out;
}

static struct json_object *parse_text(const char *text, size_t len)
{
	struct json_tokener *tok = json_tokener_new_ex(16);
	struct json_object *o;

	if (!tok)
		return NULL;
	o = json_tokener_parse_ex(tok, text, (int)len);
	if (o && json_tokener_get_parse_end(tok) < len) {
		/* what follows the value must be blank */
		for (size_t i = json_tokener_get_parse_end(tok); i < len; i++)
			if (text[i] != ' ' && text[i] != '\n' && text[i] != '\r' &&
			    text[i] != '\t') {
				json_object_put(o);
				o = NULL;
				break;
			}
	}
	json_tokener_free(tok);
	return o;
}

int ras_json_parse(const char *text, size_t len, const int *pids, int npids, struct ras_report *ret,
		   char *why, size_t whylen)
{
	struct parse p = {why, whylen};
	struct json_object *o, *comms, *ras;
	struct ras_report *rep = ret;
	int64_t v;
	int rc = 0, repaired = 0;

	if (len > RAS_REPLY_MAX) {
		snprintf(why, whylen, "the RAS reply is longer than %u bytes", RAS_REPLY_MAX);
		return -E2BIG;
	}
	o = parse_text(text, len);
	if (!o) {
		char *fixed = repair_missing_comma(text, len);

		if (fixed)
			o = parse_text(fixed, strlen(fixed));
		free(fixed);
		repaired = o != NULL;
	}
	if (!o)
		return bad(&p, "not JSON");
	memset(rep, 0, sizeof(*rep));
	rep->repaired = repaired;
	if (!json_object_is_type(o, json_type_object)) {
		rc = bad(&p, "not an object");
		goto out;
	}
	if (get_text(o, "nccl_version", rep->nccl_version, sizeof(rep->nccl_version))) {
		rc = bad(&p, "\"nccl_version\" is not text");
		goto out;
	}
	comms = get(o, "communicators");
	if (!comms || !json_object_is_type(comms, json_type_array)) {
		rc = bad(&p, "no \"communicators\" list");
		goto out;
	}
	ras = get(o, "ras");
	if (ras && json_object_is_type(ras, json_type_object)) {
		struct json_object *t = get(ras, "collection_time_sec");

		if (t && (json_object_is_type(t, json_type_double) ||
			  json_object_is_type(t, json_type_int)))
			rep->collection_s = json_object_get_double(t);
		if (!get_int(ras, "timeouts_count", 0, INT_MAX, 0, &v))
			rep->timeouts = (int)v;
	}
	rep->comms_total = (int)json_object_array_length(comms);
	for (int i = 0; i < rep->comms_total; i++) {
		struct ras_comm c;

		rc = parse_comm(&p, json_object_array_get_idx(comms, i), pids, npids, &c);
		if (rc)
			goto out;
		if ((npids == 0 || c.local > 0) && rep->ncomms < RAS_COMMS_MAX)
			rep->comms[rep->ncomms++] = c;
	}
out:
	json_object_put(o);
	return rc;
}
