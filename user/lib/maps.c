/* /proc/PID/maps lines (see maps.h). */
#include "lib/maps.h"

#include <errno.h>
#include <string.h>

static int hex(const char *s, size_t n, size_t *i, uint64_t *ret)
{
	uint64_t v = 0;
	size_t start = *i;

	while (*i < n) {
		char c = s[*i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			break;
		if (v >> 60)
			return -EINVAL;
		v = v << 4 | d;
		(*i)++;
	}
	if (*i == start || *i - start > 16)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int dec(const char *s, size_t n, size_t *i, uint64_t *ret)
{
	uint64_t v = 0;
	size_t start = *i;

	while (*i < n && s[*i] >= '0' && s[*i] <= '9') {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[*i] - '0');
		(*i)++;
	}
	if (*i == start)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int expect(const char *s, size_t n, size_t *i, char c)
{
	if (*i >= n || s[*i] != c)
		return -EINVAL;
	(*i)++;
	return 0;
}

static void spaces(const char *s, size_t n, size_t *i)
{
	while (*i < n && s[*i] == ' ')
		(*i)++;
}

int maps_parse_line(const char *s, size_t n, struct maps_entry *ret)
{
	static const char del[] = " (deleted)";
	struct maps_entry e = {0};
	uint64_t maj, min;
	size_t i = 0;

	if (hex(s, n, &i, &e.start) || expect(s, n, &i, '-') || hex(s, n, &i, &e.end) ||
	    expect(s, n, &i, ' ') || i + 4 > n)
		return -EINVAL;
	memcpy(e.perms, s + i, 4);
	for (int k = 0; k < 4; k++)
		if (!strchr("rwxsp-", e.perms[k]))
			return -EINVAL;
	i += 4;
	if (expect(s, n, &i, ' ') || hex(s, n, &i, &e.offset) || expect(s, n, &i, ' ') ||
	    hex(s, n, &i, &maj) || expect(s, n, &i, ':') || hex(s, n, &i, &min) ||
	    expect(s, n, &i, ' ') || dec(s, n, &i, &e.ino) || e.end < e.start || maj > 0xfff ||
	    min > 0xfffff)
		return -EINVAL;
	e.dev_major = (unsigned)maj;
	e.dev_minor = (unsigned)min;
	spaces(s, n, &i);
	e.path = s + i;
	e.path_len = n - i;
	if (memchr(e.path, 0, e.path_len) || memchr(e.path, '\n', e.path_len))
		return -EINVAL;
	if (e.path_len >= sizeof(del) - 1 &&
	    !memcmp(e.path + e.path_len - (sizeof(del) - 1), del, sizeof(del) - 1)) {
		e.deleted = 1;
		e.path_len -= sizeof(del) - 1;
	}
	*ret = e;
	return 0;
}

const char *maps_basename(const struct maps_entry *e, size_t *ret_len)
{
	size_t k = e->path_len;

	while (k > 0 && e->path[k - 1] != '/')
		k--;
	*ret_len = e->path_len - k;
	return e->path + k;
}
