/* libFuzzer target: lib/textsafe.c (the CLI's terminal-safe output) in both modes, in one
 * write and cut in two at a point the input chooses, and /proc/PID/status ids. Checks that
 * the output has no byte a terminal acts on. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/textsafe.h"
#include "os/procfs.h"

static int check(void *ctx, const char *b, size_t n)
{
	(void)ctx;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b[i];

		if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
			abort();
		if (c == 0xc2 && i + 1 < n && (unsigned char)b[i + 1] >= 0x80 &&
		    (unsigned char)b[i + 1] <= 0x9f)
			abort(); /* a C1 control */
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_creds c;

	for (int m = 0; m < 2; m++) {
		struct textsafe ts = {.mode = (enum textsafe_mode)m};
		size_t cut = size ? data[0] % (size + 1) : 0;

		textsafe_write(&ts, (const char *)data, size, 1, check, NULL);
		memset(&ts, 0, sizeof(ts));
		ts.mode = (enum textsafe_mode)m;
		textsafe_write(&ts, (const char *)data, cut, 0, check, NULL);
		textsafe_write(&ts, (const char *)data + cut, size - cut, 1, check, NULL);
	}
	procfs_parse_creds((const char *)data, size, &c);
	return 0;
}
