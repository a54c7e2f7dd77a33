/* libFuzzer target: the cluster's node keys file (lib/nodekeys.c), as an operator writes it. A
 * file that parses has nodes each findable by its name and its address. */
#include <stdint.h>
#include <stdlib.h>

#include "lib/nodekeys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nodekeys k;
	char err[128];

	if (nodekeys_parse((const char *)data, size, &k, err, sizeof(err)) == 0) {
		for (int i = 0; i < k.n; i++)
			if (nodekeys_by_name(&k, k.v[i].name) != &k.v[i] ||
			    nodekeys_by_addr(&k, &k.v[i].addr) != &k.v[i])
				abort();
		nodekeys_free(&k);
	}
	return 0;
}
