/* libFuzzer target: control-protocol request parser. */
#include <stddef.h>
#include <stdint.h>

#include "proto/ctl_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctl_request r;
	char err[256];

	ctl_parse_request((const char *)data, size, &r, err, sizeof(err));
	return 0;
}
