/* A byte buffer that grows by doubling (from 4 KiB): the control server's output buffers and
 * the etcd client's reply buffer; and arrays that grow by doubling (the part book, the cadence
 * parts, the job parts' tables). */
#ifndef FTBPF_GROWBUF_H
#define FTBPF_GROWBUF_H

#include <errno.h>
#include <stdlib.h>

/* Make *buf (of *cap bytes, owned by the caller, NULL with 0) hold at least need bytes.
 * 0, or -ENOMEM with *buf and *cap unchanged. */
static inline int growbuf_reserve(char **buf, size_t *cap, size_t need)
{
	size_t c = *cap ? *cap : 4096;
	char *nb;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	nb = realloc(*buf, c);
	if (!nb)
		return -ENOMEM;
	*buf = nb;
	*cap = c;
	return 0;
}

/* Make the array *v (of *cap items of size bytes, n of them in use) hold one more: doubled,
 * from 16. 0, or -ENOMEM with *v and *cap unchanged. */
static inline int growbuf_items(void **v, int *cap, int n, size_t size)
{
	void *nv;
	int c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 16;
	nv = realloc(*v, (size_t)c * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

#endif
