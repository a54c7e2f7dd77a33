/* libFuzzer target: /proc/PID/maps lines, CPython file names and 3.13 debug offsets, all as a
 * watched process can make them (paths it chose, memory it wrote). */
#include <stddef.h>
#include <stdint.h>

#include "lib/maps.h"
#include "lib/pyver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct maps_entry m;
	struct py_layout l;
	struct pyver v;
	char why[128];
	size_t n;

	if (maps_parse_line((const char *)data, size, &m) == 0) {
		const char *b = maps_basename(&m, &n);

		(void)pyver_of_name(b, n, &v);
	}
	(void)pyver_of_name((const char *)data, size, &v);
	(void)pyver_debug_offsets(data, size, &l, why, sizeof(why));
	return 0;
}
