/* libFuzzer target: config file parser. */
#include <stddef.h>
#include <stdint.h>

#include "lib/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ftbpf_config c;
	char err[512];

	config_defaults(&c);
	config_parse_buffer(&c, "fuzz.conf", (const char *)data, size, err, sizeof(err));
	return 0;
}
