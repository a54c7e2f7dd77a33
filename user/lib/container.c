/* Container and pod of a process from its cgroup paths: see container.h. */
#include "lib/container.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

/* A pod UID after "pod" in a path component: 36 characters of hex and '-' (the systemd driver
 * writes '_' for '-'). */
static int pod_uid(const char *p, const char *end, char *out, size_t outlen)
{
	size_t n = 0;

	for (; p < end && n < 36; p++, n++) {
		if (!(isxdigit((unsigned char)*p) || *p == '-' || *p == '_'))
			return -1;
		if (n + 1 < outlen)
			out[n] = *p == '_' ? '-' : (char)tolower((unsigned char)*p);
	}
	if (n != 36 || n + 1 > outlen)
		return -1;
	out[n] = 0;
	return 0;
}

/* A container id: the 64 hex digits of a component, after a runtime prefix, before ".scope" */
static int container(const char *c, const char *end, struct container_id *ret)
{
	static const struct {
		const char *prefix, *runtime;
	} prefixes[] = {{"cri-containerd-", "containerd"},
			{"containerd-", "containerd"},
			{"crio-conmon-", NULL},
			{"crio-", "cri-o"},
			{"docker-", "docker"},
			{"", ""}};
	size_t len = (size_t)(end - c);

	if (len > 6 && !memcmp(end - 6, ".scope", 6))
		len -= 6;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i].prefix);

		if (len < pl || memcmp(c, prefixes[i].prefix, pl))
			continue;
		if (!prefixes[i].runtime || len - pl != 64)
			return -1;
		for (size_t k = pl; k < len; k++)
			if (!isxdigit((unsigned char)c[k]))
				return -1;
		memcpy(ret->id, c + pl, 64);
		ret->id[64] = 0;
		if (*prefixes[i].runtime)
			strcpy(ret->runtime, prefixes[i].runtime);
		return 0;
	}
	return -1;
}

int container_parse_cgroup(const char *text, size_t len, struct container_id *ret)
{
	const char *p = text, *end = text + len;

	memset(ret, 0, sizeof(*ret));
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *path, *c;

		if (!eol)
			eol = end;
		/* "ID:CONTROLLERS:PATH" */
		path = memchr(p, ':', (size_t)(eol - p));
		path = path ? memchr(path + 1, ':', (size_t)(eol - path - 1)) : NULL;
		for (c = path ? path + 1 : eol; c < eol;) {
			const char *ce = memchr(c, '/', (size_t)(eol - c)), *pod;

			if (!ce)
				ce = eol;
			if (ce > c) {
				/* "pod<uid>", "kubepods-burstable-pod<uid>.slice" */
				for (pod = c; pod + 3 < ce && !*ret->pod_uid; pod++)
					if (!memcmp(pod, "pod", 3) &&
					    (pod == c || pod[-1] == '-') &&
					    pod_uid(pod + 3, ce, ret->pod_uid,
						    sizeof(ret->pod_uid)) < 0)
						ret->pod_uid[0] = 0;
				if (!*ret->id)
					container(c, ce, ret);
			}
			c = ce + 1;
		}
		if (*ret->id)
			break;
		p = eol + 1;
	}
	if (!*ret->id)
		ret->runtime[0] = 0;
	return *ret->pod_uid || *ret->id ? 0 : -ENOENT;
}
