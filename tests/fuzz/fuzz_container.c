/* libFuzzer target: /proc/PID/cgroup text (written by whoever names the cgroups). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/container.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct container_id c;

	if (container_parse_cgroup((const char *)data, size, &c) == 0 &&
	    (strlen(c.pod_uid) >= sizeof(c.pod_uid) || strlen(c.id) >= sizeof(c.id)))
		__builtin_trap();
	return 0;
}
