/* json-c helpers (see jsonx.h). */
#include "lib/jsonx.h"

#include <json-c/json.h>
#include <stdio.h>

void jstr(struct json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, v ? json_object_new_string(v) : NULL);
}

void jint(struct json_object *o, const char *k, int64_t v)
{
	json_object_object_add(o, k, json_object_new_int64(v));
}

void jdbl(struct json_object *o, const char *k, double v)
{
	char s[32];

	snprintf(s, sizeof(s), "%.3f", v);
	json_object_object_add(o, k, json_object_new_double_s(v, s));
}

void jbool(struct json_object *o, const char *k, int v)
{
	json_object_object_add(o, k, json_object_new_boolean(v));
}

void jnull(struct json_object *o, const char *k)
{
	json_object_object_add(o, k, NULL);
}
