/* The cluster's node keys file: see nodekeys.h. */
#include "lib/nodekeys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nodekeys_hex(const char *s, size_t len, uint8_t ret[NODEKEY_BYTES])
{
	uint8_t out[NODEKEY_BYTES];

	if (len != 2 * NODEKEY_BYTES)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)s[i], d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -EINVAL;
		if (i % 2)
			out[i / 2] |= (uint8_t)d;
		else
			out[i / 2] = (uint8_t)(d << 4);
	}
	memcpy(ret, out, NODEKEY_BYTES);
	return 0;
}

/* A node name as decisions use them: printable, no space, quote or slash. */
static int name_ok(const char *s, size_t n)
{
	if (!n || n >= NODEKEY_NAME_LEN)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e || s[i] == '"' || s[i] == '\\' || s[i] == '/')
			return 0;
	return 1;
}

/* The next space-separated field of [*p, end): its start and length; 0 when none. */
static size_t field(const char **p, const char *end, const char **ret)
{
	const char *s = *p;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	*ret = s;
	while (s < end && *s != ' ' && *s != '\t')
		s++;
	*p = s;
	return (size_t)(s - *ret);
}

static int bad(char *err, size_t errlen, int line, const char *why)
{
	snprintf(err, errlen, "line %d: %s", line, why);
	return -EINVAL;
}

static int parse_line(const char *s, const char *end, struct nodekey *k, int line, char *err,
		      size_t errlen)
{
	const char *f[4];
	size_t n[4];
	char addr[32];

	for (int i = 0; i < 4; i++)
		n[i] = field(&s, end, &f[i]);
	if (!n[0] || !n[1] || !n[2] || n[3])
		return bad(err, errlen, line, "want NAME ADDR:PORT PUBKEY");
	if (!name_ok(f[0], n[0]))
		return bad(err, errlen, line, "a node name is printable, without / or quotes");
	memcpy(k->name, f[0], n[0]);
	k->name[n[0]] = 0;
	if (n[1] >= sizeof(addr))
		return bad(err, errlen, line, "not an address ADDR:PORT");
	memcpy(addr, f[1], n[1]);
	addr[n[1]] = 0;
	if (meshaddr_parse(addr, &k->addr) < 0)
		return bad(err, errlen, line, "not an address ADDR:PORT");
	if (nodekeys_hex(f[2], n[2], k->pub) < 0)
		return bad(err, errlen, line, "a public key is 64 hex digits");
	return 0;
}

int nodekeys_parse(const char *text, size_t len, struct nodekeys *ret, char *err, size_t errlen)
{
	const char *p = text, *end = text + len;
	struct nodekeys k = {calloc(NODEKEYS_MAX, sizeof(struct nodekey)), 0};
	int line = 0, r = 0;

	if (!k.v)
		return -ENOMEM;
	while (p < end && !r) {
		const char *e = memchr(p, '\n', (size_t)(end - p)), *q = p;

		if (!e)
			e = end;
		line++;
		while (q < e && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (memchr(p, 0, (size_t)(e - p))) {
			r = bad(err, errlen, line, "a NUL byte");
		} else if (q < e && *q != '#') {
			const char *le = e;

			while (le > q && (le[-1] == '\r' || le[-1] == ' ' || le[-1] == '\t'))
				le--;
			if (k.n == NODEKEYS_MAX)
				r = bad(err, errlen, line, "more nodes than the most (1,024)");
			else
				r = parse_line(q, le, &k.v[k.n], line, err, errlen);
			for (int i = 0; !r && i < k.n; i++)
				if (!strcmp(k.v[i].name, k.v[k.n].name) ||
				    meshaddr_eq(&k.v[i].addr, &k.v[k.n].addr) ||
				    !memcmp(k.v[i].pub, k.v[k.n].pub, NODEKEY_BYTES))
					r = bad(err, errlen, line,
						"a name, address or key listed twice");
			k.n += !r;
		}
		p = e < end ? e + 1 : end;
	}
	if (!r && !k.n)
		r = bad(err, errlen, line, "no node listed");
	if (r < 0) {
		free(k.v);
		return r;
	}
	*ret = k;
	return 0;
}

void nodekeys_free(struct nodekeys *k)
{
	if (!k)
		return;
	free(k->v);
	k->v = NULL;
	k->n = 0;
}

const struct nodekey *nodekeys_by_addr(const struct nodekeys *k, const struct mesh_addr *a)
{
	for (int i = 0; k && i < k->n; i++)
		if (meshaddr_eq(&k->v[i].addr, a))
			return &k->v[i];
	return NULL;
}

const struct nodekey *nodekeys_by_name(const struct nodekeys *k, const char *name)
{
	for (int i = 0; k && name && i < k->n; i++)
		if (!strcmp(k->v[i].name, name))
			return &k->v[i];
	return NULL;
}
