/* libFuzzer target: torch FileTimerClient request lines. */
#include <stddef.h>
#include <stdint.h>

#include "proto/fifo_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fifo_request r;
	char err[256];

	fifo_parse_line((const char *)data, size, &r, err, sizeof(err));
	return 0;
}
