/* A kernel stack as text frames: see kstack.h. */
#include "lib/kstack.h"

#include <errno.h>
#include <json-c/json.h>
#include <string.h>

void kstack_init(struct kstack *ks)
{
	ks->n = 0;
	ks->len = 0;
	ks->text[0] = 0;
}

/* Append the n bytes at f as a frame. */
static int add_n(struct kstack *ks, const char *f, size_t n)
{
	if (n >= sizeof(ks->text) - ks->len)
		return -ENOSPC;
	memcpy(ks->text + ks->len, f, n);
	ks->text[ks->len + n] = 0;
	ks->len += n + 1;
	ks->n++;
	return 0;
}

int kstack_add(struct kstack *ks, const char *f)
{
	return add_n(ks, f, strlen(f));
}

int kstack_parse_proc(struct kstack *ks, const char *text, int strip_addr)
{
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");
		const char *sp = strip_addr ? memchr(p, ' ', n) : NULL;

		if (n && (sp ? add_n(ks, sp + 1, n - (size_t)(sp + 1 - p)) : add_n(ks, p, n)) < 0)
			return -ENOSPC;
		p += n;
		if (*p)
			p++;
	}
	return 0;
}

const char *kstack_next(const struct kstack *ks, const char *f)
{
	const char *end = ks->text + ks->len;

	f = f ? f + strlen(f) + 1 : ks->text;
	return f < end ? f : NULL;
}

struct json_object *kstack_json(const struct kstack *ks)
{
	struct json_object *arr = json_object_new_array();

	for (const char *f = kstack_next(ks, NULL); f; f = kstack_next(ks, f))
		json_object_array_add(arr, json_object_new_string(f));
	return arr;
}
