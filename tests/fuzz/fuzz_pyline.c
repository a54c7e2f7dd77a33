/* libFuzzer target: CPython 3.11 location tables as ftbpf-ci reads them from another process. */
#include <stddef.h>
#include <stdint.h>

#include "watch/pystack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	pystack_line_of(data + 2, size - 2, data[0], data[1]);
	return 0;
}
