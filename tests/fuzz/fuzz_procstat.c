/* libFuzzer target: /proc/PID/stat parser. */
#include <stddef.h>
#include <stdint.h>

#include "os/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_stat st;

	procfs_parse_stat((const char *)data, size, &st);
	return 0;
}
