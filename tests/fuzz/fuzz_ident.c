/* libFuzzer target: rank identity from an environment block. */
#include <stddef.h>
#include <stdint.h>

#include "lib/ident.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rank_ident r;

	ident_from_environ((const char *)data, size, &r);
	return 0;
}
