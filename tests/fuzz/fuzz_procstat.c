/* libFuzzer target: /proc/PID/stat and /proc/PID/status (ids, capabilities) parsers. */
#include <stddef.h>
#include <stdint.h>

#include "os/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_stat st;
	struct proc_creds cr;

	procfs_parse_stat((const char *)data, size, &st);
	procfs_parse_creds((const char *)data, size, &cr);
	return 0;
}
