/* Python stacks as JSON (see pystack_json.h). */
#include "watch/pystack_json.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>

#include "lib/jsonx.h"
#include "watch/pystack.h"

static struct json_object *frames(const struct py_stack *s, const struct py_thread *t)
{
	struct json_object *arr = json_object_new_array();

	for (int i = t->first; i < t->first + t->n && i < s->nframes; i++) {
		struct json_object *f = json_object_new_object();

		jstr(f, "file", s->f[i].file);
		jstr(f, "function", s->f[i].func);
		jint(f, "line", s->f[i].line);
		json_object_array_add(arr, f);
	}
	return arr;
}

void pystack_json(struct json_object *o, const struct py_stack *s, int pid)
{
	struct json_object *threads = json_object_new_array();
	int main = 0;

	for (int i = 0; i < s->nthreads; i++) {
		const struct py_thread *t = &s->t[i];
		struct json_object *to = json_object_new_object();
		char id[24];

		if (t->tid == pid)
			main = i;
		snprintf(id, sizeof(id), "0x%" PRIx64, t->thread_id);
		jstr(to, "thread_id", id);
		jint(to, "tid", t->tid);
		jstr(to, "name", t->name);
		jbool(to, "truncated", t->truncated);
		json_object_object_add(to, "stack", frames(s, t));
		json_object_array_add(threads, to);
	}
	jstr(o, "python_version", s->version);
	json_object_object_add(o, "python_stack",
			       s->nthreads ? frames(s, &s->t[main]) : json_object_new_array());
	json_object_object_add(o, "python_threads", threads);
}

void pystack_json_error(struct json_object *o, int err, const char *why)
{
	if (err == -ENOENT)
		return;
	jstr(o, "python_stack_error", why && *why ? why : "unknown error");
}
