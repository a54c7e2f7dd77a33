/*
 * Small json-c helpers used wherever ftbpf builds JSON (events, replies, reports): a NULL string
 * is JSON null, and seconds are printed to the millisecond (not 3.1659999999999999).
 */
#ifndef FTBPF_JSONX_H
#define FTBPF_JSONX_H

#include <stdint.h>

struct json_object;

void jstr(struct json_object *o, const char *k, const char *v);
void jint(struct json_object *o, const char *k, int64_t v);
void jdbl(struct json_object *o, const char *k, double v);
void jbool(struct json_object *o, const char *k, int v);
void jnull(struct json_object *o, const char *k);

#endif
