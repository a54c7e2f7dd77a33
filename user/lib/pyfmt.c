/* Python stacks in faulthandler's layout (see pyfmt.h). */
#include "lib/pyfmt.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *str(struct json_object *o, const char *k)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static void clean(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

void pyfmt_thread_header(struct json_object *t, char *buf, size_t len)
{
	const char *id = str(t, "thread_id");
	unsigned long long v = id ? strtoull(id, NULL, 16) : 0;

	snprintf(buf, len, "Thread 0x%016llx (most recent call first):", v);
}

void pyfmt_frame(struct json_object *f, char *buf, size_t len)
{
	const char *file = str(f, "file"), *fn = str(f, "function");
	struct json_object *l;
	int64_t line = json_object_object_get_ex(f, "line", &l) ? json_object_get_int64(l) : -1;
	char num[24] = "???";

	if (line >= 0)
		snprintf(num, sizeof(num), "%lld", (long long)line);
	if (file)
		snprintf(buf, len, "  File \"%s\", line %s in %s", file, num, fn ? fn : "???");
	else
		snprintf(buf, len, "  File ???, line %s in %s", num, fn ? fn : "???");
	clean(buf);
}

int pyfmt_lines(struct json_object *threads, pyfmt_emit_fn emit, void *ctx)
{
	char line[512];
	size_t n;

	if (!threads || !json_object_is_type(threads, json_type_array))
		return 0;
	n = json_object_array_length(threads);
	for (size_t i = 0; i < n; i++) {
		struct json_object *t = json_object_array_get_idx(threads, i), *st, *tr;

		if (i)
			emit(ctx, "");
		pyfmt_thread_header(t, line, sizeof(line));
		emit(ctx, line);
		if (json_object_object_get_ex(t, "stack", &st) &&
		    json_object_is_type(st, json_type_array))
			for (size_t k = 0; k < json_object_array_length(st); k++) {
				pyfmt_frame(json_object_array_get_idx(st, k), line, sizeof(line));
				emit(ctx, line);
			}
		if (json_object_object_get_ex(t, "truncated", &tr) && json_object_get_boolean(tr))
			emit(ctx, "  ...");
	}
	return (int)n;
}
