/* libFuzzer target: the status -> Prometheus text formatter (lib/metrics_text.c) fed arbitrary
 * JSON. Whatever the status holds, the text ends its lines with newlines and carries no other
 * control byte (label values are escaped). */
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/metrics_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o = json_tokener_parse_ex(tok, (const char *)data, (int)size);
	char *text = NULL;
	size_t len = 0;

	json_tokener_free(tok);
	if (metrics_text_format(o, &text, &len) == 0) {
		if (strlen(text) != len || (len && text[len - 1] != '\n'))
			abort();
		for (size_t i = 0; i < len; i++)
			if ((unsigned char)text[i] < 0x20 && text[i] != '\n')
				abort();
	}
	free(text);
	json_object_put(o);
	return 0;
}
