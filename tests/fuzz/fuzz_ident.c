/* libFuzzer target: rank identity from an environment block. */
#include <stddef.h>
#include <stdint.h>

#include "lib/ident.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rank_ident r, q;

	if (ident_from_environ((const char *)data, size, &r) == 0) {
		/* the host-local id: always a terminated string that ends with the node */
		q = r;
		ident_scope(&q, "node-with-a-long-name-0123456789");
		if (q.job[sizeof(q.job) - 1] != 0 || !ident_same_rank(&r, &r))
			__builtin_trap();
		(void)ident_is_wrapper(r.job);
	}
	return 0;
}
