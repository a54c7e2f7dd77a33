/* libFuzzer target: ftbpf-top's model fed arbitrary JSON as a status reply, an event, an
 * explain and a stacks reply, the input as a /proc/PID/stat line for CPU% and RSS, then
 * rendered at a width from the input. */
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "top/top_render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_tokener *tok;
	struct json_object *o;
	struct top_model m;
	struct top_frame f;
	struct top_procstat ps = {0};
	int width;

	if (size < 2)
		return 0;
	width = 20 + data[0] * 2;
	tok = json_tokener_new();
	o = json_tokener_parse_ex(tok, (const char *)data + 2, (int)(size - 2));
	json_tokener_free(tok);
	top_model_init(&m);
	top_frame_init(&f, width);
	top_model_update(&m, o, 1.0);
	top_model_update(&m, o, 2.0);
	if (top_parse_proc_stat((const char *)data, size, 100, 4, &ps) == 0) {
		for (int i = 0; i < m.nrows && i < 2; i++) {
			ps.pid = m.rows[i].pid;
			top_model_proc_stats(&m, &ps, 1, 2.0 + i);
		}
	}
	top_model_add_event(&m, o);
	top_model_sort(&m, (enum top_col)(data[1] % TC_N), data[1] & 0x80);
	top_model_filter_state(&m, data[1] >> 4);
	top_model_move(&m, (int)(data[1] & 7) - 3);
	top_render_main(&m, &f, width, data[1] & 1 ? 0 : data[0] % 60, "/s", 1);
	top_render_detail(&m, o, "e", &f, width);
	top_render_stacks(o, 1, "e", &f, width);
	top_frame_fini(&f);
	top_model_fini(&m);
	json_object_put(o);
	return 0;
}
