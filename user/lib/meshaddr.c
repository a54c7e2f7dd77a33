/* Mesh node addresses as text: see meshaddr.h. */
#include <errno.h>
#include <stdio.h>

#include "lib/meshaddr.h"

int meshaddr_parse(const char *s, struct mesh_addr *ret)
{
	unsigned a, b, c, d, port;
	char tail;

	if (sscanf(s, "%u.%u.%u.%u:%u%c", &a, &b, &c, &d, &port, &tail) != 5 || a > 255 ||
	    b > 255 || c > 255 || d > 255 || !port || port > 65535)
		return -EINVAL;
	ret->ip = a << 24 | b << 16 | c << 8 | d;
	ret->port = (uint16_t)port;
	return 0;
}

void meshaddr_format(const struct mesh_addr *a, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u.%u:%u", a->ip >> 24, (a->ip >> 16) & 255, (a->ip >> 8) & 255,
		 a->ip & 255, a->port);
}
