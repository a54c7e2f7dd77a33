/*
 * libFuzzer target: the launch id from a rank's environment block (any bytes a process may
 * carry). What it gives is "" or a valid id, always terminated, whose key is 32 hex digits.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/launch_id.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char id[LAUNCH_ID_LEN], key[LAUNCH_KEY_LEN];
	int r = launch_id_from_environ((const char *)data, size, id);

	if (memchr(id, 0, sizeof(id)) == NULL || (r < 0 && id[0]))
		__builtin_trap();
	if (id[0] && (!launch_id_valid(id) || launch_id_key(id, key) < 0 || strlen(key) != 32))
		__builtin_trap();
	return 0;
}
